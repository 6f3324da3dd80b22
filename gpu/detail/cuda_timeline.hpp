// gpu/detail/cuda_timeline.hpp
//
// The CUDA timeline: signal() records an event at the end of the stream for the next value;
// the events in flight form a queue, oldest first, and only the oldest is queried (a stream
// completes in order), so completed() costs one query per retired value plus one. Retired
// events are recycled; a waiter blocked on one keeps it alive until it returns. The number in
// flight is bounded: past the bound signal() answers resource_exhausted rather than growing
// without limit or dropping points.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/gpu/timeline.hpp"

namespace cudactor::gpu::detail {

class cuda_timeline final : public timeline {
 public:
  static constexpr std::size_t default_max_in_flight = 4096;

  cuda_timeline(cudaStream_t stream, std::string name,
                std::size_t max_in_flight = default_max_in_flight);
  ~cuda_timeline() override;

  [[nodiscard]] timeline_point submitted() const noexcept override {
    return submitted_.load(std::memory_order_acquire);
  }
  [[nodiscard]] timeline_point completed() override;
  [[nodiscard]] query_result query(timeline_point value) override;
  [[nodiscard]] status wait(timeline_point value, std::chrono::milliseconds timeout) override;

  // Makes `waiter` wait on the device for `value` (cudaStreamWaitEvent on the value's event,
  // under the lock so that the event cannot be recycled meanwhile). Nothing when reached.
  [[nodiscard]] status enqueue_wait(cudaStream_t waiter, timeline_point value,
                                    const std::string& waiter_label);
  // Records the next value on the stream. Called with the stream known to be alive.
  [[nodiscard]] result<timeline_point> signal();
  // Every value not yet reached fails with `why` (device lost).
  void poison(status why);
  // After a device reset the events are gone: forget them without calling CUDA.
  void abandon(status why);

 private:
  struct slot {
    cudaEvent_t event = nullptr;
    bool abandoned = false;
    ~slot();
  };
  struct entry {
    timeline_point value;
    std::shared_ptr<slot> marker;
  };

  // Retires completed entries, oldest first. Mutex held.
  void retire_locked();
  [[nodiscard]] query_result query_locked(timeline_point value) const;

  cudaStream_t stream_;
  std::string name_;
  std::size_t max_in_flight_;
  std::atomic<timeline_point> submitted_{0};
  std::atomic<timeline_point> completed_{0};
  mutable std::mutex mutex_;
  std::deque<entry> in_flight_;
  std::vector<std::shared_ptr<slot>> spare_;
  std::deque<std::pair<timeline_point, status>> failures_;
  status poison_;
};

}  // namespace cudactor::gpu::detail
