// gpu/detail/cuda_timeline.hpp
//
// The CUDA timeline: signal() records an event at the end of the stream for the next value;
// the events in flight form a queue, oldest first, and only the oldest is queried (a stream
// completes in order), so completed() costs one query per retired value plus one. Retired
// events are recycled; a waiter blocked on one keeps it alive until it returns. The number in
// flight is bounded below the depth at which the stream stops accepting work: past the bound
// signal() answers resource_exhausted rather than growing without limit, dropping points, or
// blocking in cudaEventRecord.
//
// Only cudaSuccess from cudaEventQuery advances the timeline. Any other answer (a sticky
// fault, or an invalid handle, or a runtime being unloaded) poisons it without moving
// completed(): the GPU has not been seen to finish that work, so nothing after it may be
// reported done. The mutex the poller takes (queries) is never held across a CUDA call that
// can block: cudaEventRecord and cudaStreamWaitEvent are made outside it. Every CUDA call
// first selects the timeline's device on the calling thread (the poller's thread included).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/gpu/late_failure.hpp"
#include "cudactor/gpu/timeline.hpp"

namespace cudactor::gpu::detail {

class cuda_late_failure;  // cuda_timeline.cpp

// Also the late_failure_source of the work launched on its stream (gpu/late_failure.hpp): a
// late failure is bound to the next value signalled, the point the work's run ends at.
class cuda_timeline final : public timeline,
                            public late_failure_source,
                            public std::enable_shared_from_this<cuda_timeline> {
 public:
  cuda_timeline(cudaStream_t stream, std::string name, int device, std::size_t max_in_flight);
  ~cuda_timeline() override;

  [[nodiscard]] timeline_point signalled() const noexcept override {
    return signalled_.load(std::memory_order_acquire);
  }
  [[nodiscard]] timeline_point completed() override;
  [[nodiscard]] query_result query(timeline_point value) override;
  [[nodiscard]] status wait(timeline_point value, std::chrono::milliseconds timeout) override;

  // Makes `waiter` wait on the device for `value` (cudaStreamWaitEvent on the value's event,
  // under the lock so that the event cannot be recycled meanwhile). Nothing when reached.
  // `carry_failure` (wait_point): a poisoned timeline's error is the answer, and when the work
  // before `value` failed at launch (fail_next), *carried says so (dependency_failed) for the
  // waiter's next point, the wait placed all the same. Without it (order_after) a failure
  // counts as reached, unless the device is lost.
  [[nodiscard]] status enqueue_wait(cudaStream_t waiter, timeline_point value,
                                    const std::string& waiter_label, bool carry_failure,
                                    status* carried);
  // Records the next value on the stream. Called with the stream known to be alive.
  [[nodiscard]] result<timeline_point> signal();
  // signal() after `launch` (enqueue_signalled), with the room for the value made sure of
  // first, under the lock that orders signals: the work and its point go on the stream
  // together, or neither does (resource_exhausted, or the timeline's poison, answered for
  // both). A launch that lost the device is the answer for both. `launch` must not signal
  // this timeline.
  [[nodiscard]] std::pair<status, result<timeline_point>> signal_after(
      const std::function<status()>& launch);
  // Work enqueued on the stream failed at its launch with `why`: the value the next signal()
  // records fails with it (query, and a wait_point on it), as a host stream's failed work
  // fails the point after it; so does the first event recorded after it, once
  // (take_event_failure). The first failure before a signal is the one kept.
  void fail_next(status why);
  // A late failure of the work being launched now, bound to the value the next signal()
  // records. Made by a shared_ptr only (it keeps a weak one).
  [[nodiscard]] std::shared_ptr<late_failure> make_late_failure() override;
  // `value` fails with `why` unless the device has been seen to reach it (late_failure::fail),
  // or the timeline is poisoned (then every value not reached fails anyway).
  void fail_late(timeline_point value, status why);
  // The failure the next recorded event reports, taken: ok when none. A signal takes it too.
  [[nodiscard]] status take_event_failure();
  // Every value not yet reached fails with `why` (device lost).
  void poison(status why);
  // After a device reset the events are gone: forget them without calling CUDA.
  void abandon(status why);

 private:
  // ok when a value can be signalled now (retiring reached ones to make room). Called with
  // mutex_ held.
  [[nodiscard]] status room_locked();
  // signal()'s body. Called with signal_mutex_ held.
  [[nodiscard]] result<timeline_point> record_next();

  struct marker_event {
    cudaEvent_t event = nullptr;
    int device = 0;
    bool abandoned = false;
    ~marker_event();
  };
  struct entry {
    timeline_point value;
    std::shared_ptr<marker_event> marker;
  };

  // Retires completed entries, oldest first. Mutex held.
  void retire_locked();
  // Poisons with `why` unless poisoned already. Mutex held.
  void poison_locked(status why);
  [[nodiscard]] query_result query_locked(timeline_point value) const;
  // The failure of the work before `value` (fail_next, fail_late), or nullptr. Mutex held.
  [[nodiscard]] const status* failure_locked(timeline_point value) const;
  // Notes `value`'s failure in order, unless one is noted already. Mutex held.
  void add_failure_locked(timeline_point value, status why);

  cudaStream_t stream_;
  std::string name_;
  int device_;
  std::size_t max_in_flight_;
  std::atomic<timeline_point> signalled_{0};
  std::atomic<timeline_point> completed_{0};
  // Orders signal() callers among themselves: values are recorded in the order they are
  // numbered. Never taken by queries, so a signal blocked in the driver holds up no poller.
  std::mutex signal_mutex_;
  mutable std::mutex mutex_;  // everything below
  std::deque<entry> in_flight_;
  std::vector<std::shared_ptr<marker_event>> spare_;
  status poison_;
  // Values whose work failed (at launch, or late), in order; of those reached the newest 256
  // are kept (older ones read as reached), as host_timeline keeps its own; none not reached
  // is dropped (they are at most the values in flight).
  static constexpr std::size_t failure_history = 256;
  std::deque<std::pair<timeline_point, status>> failures_;
  status next_failure_;        // for the next signal()
  status next_event_failure_;  // for the next event recorded, unless a signal came first
  // Late failures handed out since the last signal: the next one binds them to its value.
  std::deque<std::shared_ptr<cuda_late_failure>> unbound_;
};

}  // namespace cudactor::gpu::detail
