// examples/distributed_training.cpp
//
// A data-parallel training control plane: it starts N cudactor-node processes on 127.0.0.1,
// each serving its own Prometheus endpoint on its own port, connects to them, makes them a
// communicator (the cluster is its rendezvous: Gloo on the host backend, NCCL on CUDA),
// gives each the model's buffers, and drives them through training steps. In each step every
// node computes the gradient of its own shard of the samples, the gradients are all-reduced
// across the nodes, and every node applies the optimizer to its own copy of the weights
// (demo/data_parallel.hpp), with a busy kernel of a node-specific length standing in for the
// rest of an uneven shard's work; then a barrier across all nodes ends the step. From the
// second step on, each node replays that step, recorded once on it (docs/replay.md), its
// all-reduce inside (--no-replay submits a graph every step). At the end
// every node's weights are read back: they must be identical, and equal to a single-process
// reference bit for bit (the data are chosen so that every sum is exact in any order). Then it
// scrapes every node's /metrics and checks that each ran exactly the operations it was given.
// The run itself is demo/node_training.hpp's, which cudactor-demo --nodes shares.
//
//   distributed_training [--nodes=3] [--steps=10] [--step-us=20000] [--width=16384]
//                        [--node-program=PATH] [--node-backend=auto|host|cuda] [--no-replay]
//                        [cudactor options for the control plane, e.g. --cudactor.tls.*]
#include <caf/all.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "build_tree.hpp"
#include "cudactor/actors/runtime.hpp"
#include "node_training.hpp"

using namespace cudactor;

namespace {

std::string flag(std::vector<std::string>& args, const std::string& name, std::string fallback) {
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (it->rfind("--" + name + "=", 0) == 0) {
      fallback = it->substr(name.size() + 3);
      args.erase(it);
      break;
    }
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  demo::node_training_options o;
  o.nodes = std::stoul(flag(args, "nodes", "3"));
  o.steps = std::stoul(flag(args, "steps", "10"));
  o.step_us = std::stoull(flag(args, "step-us", "20000"));
  o.width = std::stoull(flag(args, "width", "16384"));
  o.backend = flag(args, "node-backend", "auto");
  if (auto it = std::find(args.begin(), args.end(), "--no-replay"); it != args.end()) {
    o.replay = false;
    args.erase(it);
  }
  // --node-program, else $CUDACTOR_NODE, else cudactor-node beside this program, else the
  // one this build made.
  const auto beside = std::filesystem::path{argv[0]}.parent_path() / "cudactor-node";
  const char* from_environment = std::getenv("CUDACTOR_NODE");
  o.program = flag(args, "node-program",
                   from_environment != nullptr       ? std::string{from_environment}
                   : std::filesystem::exists(beside) ? beside.string()
                                                     : std::string{cudactor::build_tree::node_program()});
  runtime_config config;  // the control plane needs cudactor's types and the network
  config.enable_network();
  if (auto err = config.parse(args)) {
    std::fprintf(stderr, "distributed_training: %s\n", cudactor::describe(err).c_str());
    return 2;
  }
  caf::actor_system system{config};
  return demo::run_node_training(system, o);
}
