// gpu/detail/cuda_work_graph.hpp
//
// The CUDA backend's work_graph (gpu/work_graph.hpp): a CUDA graph whose nodes are child
// graphs, each captured from one node's work on a capture stream of the node's priority
// (cudaStreamCaptureModeThreadLocal: only the capturing thread is restricted), with the nodes'
// dependencies as edges; a node whose work launched nothing is an empty node. Instantiated
// with cudaGraphInstantiateFlagUseNodePriority and uploaded once. set_work captures the one
// node again and swaps it into the executable graph (cudaGraphExecChildGraphNodeSetParams);
// when the node's shape changed (the update is refused, or it became or stopped being empty)
// the graph is assembled from every node's current work and instantiated anew. What the nodes
// take as scratch while captured comes from the graph's pool (cuda_graph_pool, graph_scratch).
//
// Failures come back as statuses from gpu::detail::from_cuda; a sticky one reaches the backend
// at its next call, which marks the device lost. The caller of build, set_work and launch has
// selected the device; the destructor selects it. Internal to gpu/: needs cuda_runtime.h.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cudactor/gpu/detail/cuda_scratch.hpp"
#include "cudactor/gpu/detail/graph_scratch.hpp"
#include "cudactor/gpu/work_graph.hpp"

namespace cudactor::gpu::detail {

class cuda_work_graph final : public work_graph {
 public:
  // The native priority of each stream_priority (indexed by it): the capture streams'.
  using priorities = std::array<int, 3>;

  // `nodes` checked (check_graph_nodes). Captures every node now. `device_bytes`: the device's
  // memory, the most a node's scratch may ask for.
  [[nodiscard]] static result<std::unique_ptr<work_graph>> build(int ordinal,
                                                                 std::size_t device_bytes,
                                                                 priorities native,
                                                                 std::vector<graph_node> nodes);
  ~cuda_work_graph() override;

  [[nodiscard]] std::size_t size() const noexcept override { return nodes_.size(); }
  [[nodiscard]] bool observes_nodes() const noexcept override { return false; }
  [[nodiscard]] bool captured() const noexcept override { return true; }
  [[nodiscard]] status set_work(std::uint32_t node, work_fn work) override;
  [[nodiscard]] status launch(const launch_context& on, const node_observer* observer) override;

 private:
  struct node_state {
    work_fn work;
    std::vector<std::uint32_t> after;
    stream_priority priority = stream_priority::normal;
    cudaGraphNode_t handle = nullptr;  // in graph_
    bool empty = false;                // its work launched nothing: an empty node
    std::string label;
  };

  cuda_work_graph(int ordinal, std::size_t device_bytes, priorities native, std::size_t nodes)
      : ordinal_(ordinal),
        native_(native),
        pool_(ordinal, device_bytes),
        scratch_(nodes, [this](std::size_t bytes) { return pool_.allocate(bytes); }) {}

  // Runs `work` on node `node`'s capture stream under capture; `out` is what it launched
  // (destroyed by the caller). Names the node on failure.
  [[nodiscard]] status capture(std::uint32_t node, const work_fn& work, cudaGraph_t& out);
  // A graph of every node's current work and an executable graph of it, replacing graph_ and
  // exec_ (the old executable graph is freed when its launches end).
  [[nodiscard]] status assemble();
  [[nodiscard]] status capture_stream(stream_priority p, cudaStream_t& out);
  [[nodiscard]] std::string label(std::uint32_t node) const;

  int ordinal_;
  priorities native_;
  std::mutex mutex_;  // one launcher at a time
  std::vector<node_state> nodes_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::array<cudaStream_t, 3> streams_{};  // capture streams, made when first needed
  cuda_graph_pool pool_;
  graph_scratch scratch_;
};

}  // namespace cudactor::gpu::detail
