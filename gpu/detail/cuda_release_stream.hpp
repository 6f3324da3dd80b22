// gpu/detail/cuda_release_stream.hpp
//
// Where device memory goes when its stream is gone. cudaFree would not wait for the work
// still using it, and a blocking wait has no place on an actor's thread. So the backend
// records an event at the end of each stream's work just before destroying the stream
// (retire), and memory of a destroyed stream is freed in stream order on a stream of the
// backend's own, after that event (cudaStreamWaitEvent, then cudaFreeAsync). Ends already
// reached are forgotten at the next retire: memory freed after them needs no wait. Every
// CUDA answer goes through the backend's check (which notices a lost device). Thread-safe;
// the caller has selected the device. Internal to gpu/: needs cuda_runtime.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu::detail {

class cuda_release_stream {
 public:
  using checker = std::function<status(cudaError_t, std::string_view)>;

  explicit cuda_release_stream(checker check) : check_(std::move(check)) {}
  // Destroys the recorded ends and the stream; the device must be idle (the backend
  // synchronised it).
  ~cuda_release_stream();
  cuda_release_stream(const cuda_release_stream&) = delete;
  cuda_release_stream& operator=(const cuda_release_stream&) = delete;

  // Records the end of the work of `stream` (known by `key`, unique for the backend's life),
  // which is about to be destroyed.
  [[nodiscard]] status retire(std::uint64_t key, cudaStream_t stream, const std::string& label);

  // Frees `data`, allocated on the stream known by `key` and since destroyed, after that
  // stream's work.
  [[nodiscard]] status free(void* data, std::uint64_t key, const std::string& doing);

 private:
  checker check_;
  std::mutex mutex_;
  cudaStream_t stream_ = nullptr;  // made at the first free
  std::map<std::uint64_t, cudaEvent_t> ends_;
};

}  // namespace cudactor::gpu::detail
