// demo/node_training.hpp
//
// Data-parallel training on cudactor-node processes that this process starts on 127.0.0.1,
// as a training control plane does it: the nodes made a cluster and a communicator (the
// cluster is its rendezvous), the model's buffers given to each node, then every step one
// graph per node (the rest of an uneven shard's work, then the gradient of its shard, the
// all-reduce and the optimizer of demo/data_parallel.hpp) and a barrier across the nodes;
// from the second step on that graph is a step recorded once on each node and replayed. At
// the end every node's weights are read back and must equal the single-process reference bit
// for bit, and every node's /metrics must count exactly the work it was given. The example
// distributed_training and cudactor-demo --nodes run it.
#pragma once

#include <caf/actor_system.hpp>

#include <cstdint>
#include <string>

namespace cudactor::demo {

struct node_training_options {
  std::string name = "distributed_training";  // how the lines it prints begin
  std::size_t nodes = 3;
  std::size_t steps = 10;         // at most data_parallel::max_steps
  std::uint64_t step_us = 20000;  // node i's other work per step: step_us * (1 + i / 4)
  std::uint64_t width = 16384;    // weights
  std::string program;            // the cudactor-node to start
  std::string backend = "auto";   // the nodes' cudactor.backend
  // From the second step on, each node replays the step recorded once on it (docs/replay.md),
  // its all-reduce inside; false: every step is submitted as a graph.
  bool replay = true;
};

// Runs it, printing a line per node, per step and per check: 0 when every check passed, 1
// when one failed (said on stderr), 2 for options out of range. `system` must have cudactor's
// message types and the network (runtime_config::enable_network).
[[nodiscard]] int run_node_training(caf::actor_system& system, const node_training_options& o);

}  // namespace cudactor::demo
