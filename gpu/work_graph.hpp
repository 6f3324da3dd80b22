// gpu/work_graph.hpp
//
// Work built once into a graph and launched many times as one piece of stream work: what a
// recorded step replays as (docs/replay.md). backend::build_graph makes one from nodes, each a
// work function with the earlier nodes it comes after.
//
//  - On CUDA it is a CUDA graph. Each node's work is run once, at build, on a capture stream
//    of the node's priority, and what it launched there becomes a child graph; the nodes'
//    dependencies become the graph's edges (no events); the graph is instantiated once (node
//    priorities kept: cudaGraphInstantiateFlagUseNodePriority) and uploaded. A launch is one
//    cudaGraphLaunch. Anything the work does besides launching on the stream it is given runs
//    at capture only (a launch on another stream too: CUDA does not see it); a work that
//    cannot be captured (it synchronizes, calls the backend) fails the build, naming its node.
//  - On the host backend the nodes run in their order inside the work that launches the graph,
//    each noted to the launch's observer: CUDA graph semantics on one stream, so that what
//    launches graphs is tested without a GPU.
//
// set_work gives a node another work from the next launch on (launches already enqueued keep
// theirs, as cudaGraphExec updates do): on CUDA that node alone is captured again and the
// instantiated graph's node updated in place (cudaGraphExecChildGraphNodeSetParams); only a
// node whose captured shape changed makes the graph instantiate again. instantiations() and
// updates() count both.
//
// A node's work may ask its context for scratch (launch_context::scratch): the graph's own,
// per node the same memory in the same order at every launch (on CUDA from a memory pool the
// graph owns), kept until the graph is gone; scratch_bytes() is what it holds.
//
// One launcher at a time: set_work and launch are serialized by the graph. The graph may be
// destroyed while launches are in flight (CUDA frees an executable graph when its launches end).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/gpu/status.hpp"
#include "cudactor/gpu/types.hpp"

namespace cudactor::gpu {

struct graph_node {
  work_fn work;
  std::vector<std::uint32_t> after;  // nodes it comes after, each before it in the list
  stream_priority priority = stream_priority::normal;  // of its kernels on the device
  std::string label;  // what failures call it (empty: "graph node <its index>")
};

// Hears how each node of a launch went, on the thread that runs it, where the backend knows
// (the host backend; on CUDA a failure on the device does not name its node).
using node_observer = std::function<void(std::uint32_t node, const status& outcome)>;

class work_graph {
 public:
  work_graph() = default;
  work_graph(const work_graph&) = delete;
  work_graph& operator=(const work_graph&) = delete;
  virtual ~work_graph() = default;

  [[nodiscard]] virtual std::size_t size() const noexcept = 0;
  // Whether a launch tells its observer how each node went (else only the launch's outcome).
  [[nodiscard]] virtual bool observes_nodes() const noexcept = 0;
  // Whether the nodes' work ran once, captured at build (CUDA), rather than at every launch
  // (the host): then a launch runs what the work launched, and the work does not run.
  [[nodiscard]] virtual bool captured() const noexcept = 0;
  // Node `node` runs `work` from the next launch on. On failure (the work cannot be captured)
  // the node keeps its work.
  [[nodiscard]] virtual status set_work(std::uint32_t node, work_fn work) = 0;
  // Enqueues the graph on the stream `on` names: call it from work enqueued on a stream of the
  // backend that built it, with that work's context. The answer is the launch's (on the host,
  // the first node that failed; every node runs, as work after a failure on a stream does).
  [[nodiscard]] virtual status launch(const launch_context& on, const node_observer* observer) = 0;

  // Times the graph was instantiated (once at build; again when a node's shape changed).
  [[nodiscard]] std::uint64_t instantiations() const noexcept {
    return instantiations_.load(std::memory_order_relaxed);
  }
  // Nodes given another work in place, without instantiating.
  [[nodiscard]] std::uint64_t updates() const noexcept {
    return updates_.load(std::memory_order_relaxed);
  }
  // Bytes of scratch the graph holds for its nodes (readable from any thread).
  [[nodiscard]] std::size_t scratch_bytes() const noexcept {
    return scratch_bytes_.load(std::memory_order_relaxed);
  }

 protected:
  void count_instantiation() noexcept { instantiations_.fetch_add(1, std::memory_order_relaxed); }
  void count_update() noexcept { updates_.fetch_add(1, std::memory_order_relaxed); }
  void hold_scratch(std::size_t bytes) noexcept {
    scratch_bytes_.store(bytes, std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint64_t> instantiations_{0};
  std::atomic<std::uint64_t> updates_{0};
  std::atomic<std::size_t> scratch_bytes_{0};
};

// invalid_argument unless every node has work and comes after earlier nodes only; names the
// node. Both backends check this first.
[[nodiscard]] status check_graph_nodes(const std::vector<graph_node>& nodes);
// Node i's label, or "graph node <i>".
[[nodiscard]] std::string graph_node_label(const std::vector<graph_node>& nodes, std::size_t i);

}  // namespace cudactor::gpu
