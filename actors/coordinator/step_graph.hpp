// actors/coordinator/step_graph.hpp
//
// A recorded step's backend graph (gpu/work_graph.hpp), when it replays as one
// (coordinator_options::step_graphs, docs/replay.md): which node each operation is, which work
// each node holds now (the recorded one, or the one a replay's bindings resolved), and a
// replay's launch, made by the work of the replay's own operation on its stream: the nodes
// whose work this replay's bindings change are given it first (in place, on CUDA without
// instantiating), then the graph is launched, each node's outcome noted to the replay where
// the backend tells. Launches of one step are serialized by its stream, which runs them in
// order; the graph's own lock keeps that true whatever calls it. No CAF actor.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "cudactor/gpu/communicator.hpp"
#include "cudactor/gpu/work_graph.hpp"
#include "cudactor/messaging/buffer_types.hpp"

namespace cudactor::detail {

class step_replay;

class step_graph {
 public:
  // `op_of_node[k]`: the operation (graph index) node k runs, for every operation.
  step_graph(std::unique_ptr<gpu::work_graph> graph, std::vector<std::uint32_t> op_of_node);
  // The graph goes before the communicators: NCCL's abort of a broken one waits until the
  // graphs that captured its calls are destroyed, and its watchdog, which runs the abort, is
  // joined when the last reference goes, which may be ours.
  ~step_graph() { graph_.reset(); }
  step_graph(const step_graph&) = delete;
  step_graph& operator=(const step_graph&) = delete;

  // Operation `op` is a collective on `comm`: a launch checks it first (a graph replays the
  // NCCL calls captured at record without going through the communicator, which may have been
  // aborted since: its memory is gone), and where the graph captured its work, `comm` watches
  // each launch (gpu::communicator::watch_launch: a rank that hangs inside it breaks the
  // communicator at its timeout) and `counted` counts each launch as the collective's run
  // (the capture itself was not counted).
  void add_communicator(std::uint32_t op, std::shared_ptr<gpu::communicator> comm,
                        std::function<void(const gpu::status&)> counted);

  // What the replay's operation runs on its stream, `on` its context.
  [[nodiscard]] gpu::status launch(const gpu::launch_context& on, step_replay& replay);
  // Whether a launch names the operations that failed (else only the step's outcome).
  [[nodiscard]] bool observes_operations() const noexcept { return graph_->observes_nodes(); }

  // Instantiations, in-place updates and scratch bytes held (by the step's work, from the
  // graph's pool) since the last call (the coordinator's thread only: the metrics).
  struct changes {
    std::uint64_t instantiations = 0;
    std::uint64_t updates = 0;
    std::int64_t scratch_bytes = 0;
  };
  [[nodiscard]] changes take_changes();
  // The step was released: minus the scratch bytes reported so far, and none from now on
  // (the graph gives them back once no replay holds it).
  [[nodiscard]] std::int64_t forget_scratch();

 private:
  std::unique_ptr<gpu::work_graph> graph_;
  std::vector<std::uint32_t> op_of_node_;
  std::vector<std::uint32_t> node_of_op_;
  struct collective {
    std::uint32_t op = 0;
    std::shared_ptr<gpu::communicator> comm;
    std::function<void(const gpu::status&)> counted;
  };
  std::vector<collective> communicators_;
  // After a captured graph's launch: each communicator watches it; the first that cannot
  // fails the launch, naming its collective (the others watch all the same).
  [[nodiscard]] gpu::status watch_collectives(const gpu::launch_context& on, step_replay& replay);
  std::mutex mutex_;  // guards what follows
  // Per operation: the buffers its node's work was resolved against, when a binding's (empty:
  // the recorded work); and the operations whose node holds a bound work.
  std::vector<std::vector<buffer_id>> held_;
  std::vector<std::uint32_t> rebound_;
  changes reported_;  // the coordinator's thread only; its scratch_bytes the total so far
  bool forgotten_ = false;
};

}  // namespace cudactor::detail
