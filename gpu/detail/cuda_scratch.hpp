// gpu/detail/cuda_scratch.hpp
//
// Scratch on CUDA (launch_context::scratch); nothing here blocks the calling thread.
//
//  - cuda_run_scratch: a lone run's. cudaMallocAsync on the work's stream, and once the work
//    returned, cudaFreeAsync on the same stream (give_back): the memory is free again when
//    what the work launched is done, with no event and no wait, and the device's default
//    pool hands it out again without a driver call.
//  - cuda_graph_pool: a graph's (a recorded step's), from a memory pool the graph owns
//    (cudaMemPoolCreate). Its blocks are allocated while a node is captured, on a stream of
//    the pool's own: on the capture stream an allocation would become a memory node, which
//    CUDA does not take inside the child graph a node is. So the graph's first launch after
//    an allocation waits for it (an event), each launch marks where the graph's use ends (an
//    event; a launch on another stream than the last waits for it, since an executable graph
//    made anew is not ordered behind the one it replaced), and when the graph goes the blocks
//    are freed on the pool's stream after that mark and the pool destroyed (CUDA releases it
//    once those frees ran).
//
// CUDA answers go through the backend's check (which notices a lost device). Internal to
// gpu/: needs cuda_runtime.h. The caller has selected the device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "cudactor/gpu/detail/graph_scratch.hpp"
#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu::detail {

using cuda_checker = std::function<status(cudaError_t, std::string_view)>;

class cuda_run_scratch final : public scratch_source {
 public:
  // `device_bytes`: the device's memory; a request past it is out_of_memory without asking
  // CUDA (which may answer such a size as an invalid value).
  cuda_run_scratch(cudaStream_t stream, const cuda_checker& check,
                   std::size_t device_bytes) noexcept
      : stream_(stream), check_(&check), device_bytes_(device_bytes) {}
  // Gives back, best effort, what give_back did not.
  ~cuda_run_scratch() override;
  cuda_run_scratch(const cuda_run_scratch&) = delete;
  cuda_run_scratch& operator=(const cuda_run_scratch&) = delete;

  [[nodiscard]] result<void*> take(std::size_t bytes) override;
  // Frees every block on the stream, after what the work launched there; the first failure.
  [[nodiscard]] status give_back();

 private:
  cudaStream_t stream_;
  const cuda_checker* check_;
  std::size_t device_bytes_;
  std::vector<void*> taken_;
};

class cuda_graph_pool {
 public:
  // `device_bytes` as cuda_run_scratch takes it.
  cuda_graph_pool(int ordinal, std::size_t device_bytes) noexcept
      : ordinal_(ordinal), device_bytes_(device_bytes) {}
  // Frees nothing: release() does, with the graph's blocks.
  ~cuda_graph_pool() = default;
  cuda_graph_pool(const cuda_graph_pool&) = delete;
  cuda_graph_pool& operator=(const cuda_graph_pool&) = delete;

  // A block from the pool (made at the first), callable while the thread captures.
  [[nodiscard]] result<void*> allocate(std::size_t bytes);
  // Around each launch of the graph on `s`: the first after an allocation waits for it, one
  // on another stream than the last waits for that one; each marks the end of the graph's
  // use.
  [[nodiscard]] status before_launch(cudaStream_t s);
  [[nodiscard]] status after_launch(cudaStream_t s);
  // The graph is gone: `blocks` (every one allocate() gave) are freed after its last launch.
  void release(const std::vector<graph_scratch::block>& blocks) noexcept;

 private:
  [[nodiscard]] status open();

  int ordinal_;
  std::size_t device_bytes_;
  cudaMemPool_t pool_ = nullptr;
  cudaStream_t stream_ = nullptr;    // where blocks are allocated and freed
  cudaEvent_t allocated_ = nullptr;  // after the newest allocation
  cudaEvent_t used_ = nullptr;       // after the newest launch
  bool pending_ = false;             // an allocation the next launch must wait for
  bool launched_ = false;
  cudaStream_t last_ = nullptr;  // the newest launch's stream
};

}  // namespace cudactor::gpu::detail
