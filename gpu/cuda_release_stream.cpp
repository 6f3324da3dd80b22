#include "cudactor/gpu/detail/cuda_release_stream.hpp"

#include "cudactor/gpu/detail/cuda_status.hpp"

namespace cudactor::gpu::detail {

cuda_release_stream::~cuda_release_stream() {
  std::lock_guard<std::mutex> lock{mutex_};
  for (auto& end : ends_) (void)cudaEventDestroy(end.second);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

status cuda_release_stream::retire(std::uint64_t key, cudaStream_t stream,
                                   const std::string& label) {
  // Made and recorded outside the lock: the record blocks while the stream's queue is full.
  cudaEvent_t end = nullptr;
  if (auto bad = check_(cudaEventCreateWithFlags(&end, cudaEventDisableTiming),
                        "recording the end of " + label);
      !bad.ok()) {
    return bad;
  }
  if (auto bad = check_(cudaEventRecord(end, stream), "recording the end of " + label);
      !bad.ok()) {
    (void)cudaEventDestroy(end);
    return bad;
  }
  std::lock_guard<std::mutex> lock{mutex_};
  for (auto it = ends_.begin(); it != ends_.end();) {
    const cudaError_t answer = cudaEventQuery(it->second);
    if (answer == cudaErrorNotReady) {
      clear_not_ready();
      ++it;
      continue;
    }
    // Reached, or never will be (a lost device, which the check records): no wait needed.
    (void)check_(answer, "querying the end of a destroyed stream");
    (void)cudaEventDestroy(it->second);
    it = ends_.erase(it);
  }
  ends_[key] = end;
  return {};
}

status cuda_release_stream::free(void* data, std::uint64_t key, const std::string& doing) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (stream_ == nullptr) {
    if (auto bad = check_(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                          "creating the stream that frees memory of destroyed streams");
        !bad.ok()) {
      stream_ = nullptr;
      return bad;
    }
  }
  if (auto end = ends_.find(key); end != ends_.end()) {
    if (auto bad = check_(cudaStreamWaitEvent(stream_, end->second, 0), doing); !bad.ok()) {
      return bad;
    }
  }
  return check_(cudaFreeAsync(data, stream_), doing);
}

}  // namespace cudactor::gpu::detail
