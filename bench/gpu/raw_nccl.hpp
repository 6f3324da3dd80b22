// bench/gpu/raw_nccl.hpp
//
// NCCL called directly, as a program without cudactor would call it: the baseline of
// collective_gpu_bench. One rank (this process, device 0) made with ncclCommInitRank, an
// all-reduce (sum of floats) from one device buffer to another, on a CUDA stream of its own. NCCL
// is loaded from libnccl.so.2 as cudactor loads it (never linked). Callable from plain C++: no CUDA
// or NCCL header reaches the caller.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace cudactor::bench {

class raw_nccl {
 public:
  // Loads NCCL and makes the communicator, its stream and two buffers of `max_bytes`.
  explicit raw_nccl(std::size_t max_bytes);
  raw_nccl(const raw_nccl&) = delete;
  raw_nccl& operator=(const raw_nccl&) = delete;
  ~raw_nccl();

  // Why it cannot run (empty when it can): NCCL missing, or a CUDA or NCCL call failed.
  [[nodiscard]] const std::string& failure() const noexcept;

  // `rounds` all-reduces of `bytes`, each followed by cudaStreamSynchronize: microseconds
  // from each call to its synchronize's return. Empty, with failure() set, when one failed.
  [[nodiscard]] std::vector<double> single(std::size_t bytes, int rounds);
  // `rounds` all-reduces of `bytes` enqueued back to back, then one synchronize:
  // microseconds per all-reduce, or a negative number with failure() set.
  [[nodiscard]] double pipelined(std::size_t bytes, int rounds);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace cudactor::bench
