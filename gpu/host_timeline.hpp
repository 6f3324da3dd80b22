// gpu/host_timeline.hpp
//
// The CPU timeline: an atomic counter that only grows (concurrent setters never move it
// back), a condition variable for waiters, a bounded record of the points that failed, a
// terminal error for a lost device, and listeners told of every move (the completion
// poller's "notify at completion" on the host backend). The host backend advances one per stream;
// anything that needs a monotonic "how far has this got" counter between threads can use one
// directly.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/gpu/timeline.hpp"

namespace cudactor::gpu {

class host_timeline final : public timeline {
 public:
  // Failures remembered for query(); older ones are forgotten (and reported as ready).
  static constexpr std::size_t failure_history = 256;

  explicit host_timeline(std::string name, timeline_point initial = 0);
  // `waits` counts every wait() call: the host backend's tally of host threads held up on
  // the device (host_backend::host_waits()).
  host_timeline(std::string name, std::shared_ptr<std::atomic<std::uint64_t>> waits);

  [[nodiscard]] timeline_point signalled() const noexcept override {
    return signalled_.load(std::memory_order_acquire);
  }
  [[nodiscard]] timeline_point completed() override {
    return completed_.load(std::memory_order_acquire);
  }
  [[nodiscard]] query_result query(timeline_point value) override;
  [[nodiscard]] status wait(timeline_point value, std::chrono::milliseconds timeout) override;
  [[nodiscard]] std::uint64_t add_listener(std::function<void()> listener) override;
  void remove_listener(std::uint64_t id) override;

  // Takes the next value for a signal and returns it.
  [[nodiscard]] timeline_point reserve() noexcept {
    return signalled_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }

  // Raises the completed value to at least `value`; a smaller value changes nothing. Also
  // raises signalled(), so a timeline used without reserve() stays consistent.
  void set(timeline_point value);
  // Like set(), and remembers that the work before `value` failed.
  void fail(timeline_point value, status why);
  // Every value not yet reached fails with `why` from now on (device lost).
  void poison(status why);
  // Forgets the terminal error (after a backend reset).
  void clear_poison();

  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  void notify_waiters();
  void notify_listeners();

  std::string name_;
  std::atomic<timeline_point> signalled_;
  std::atomic<timeline_point> completed_;
  std::atomic<bool> poisoned_{false};
  std::atomic<int> waiters_{0};
  mutable std::mutex mutex_;  // guards failures_, poison_ and the condition variable
  std::condition_variable changed_;
  std::deque<std::pair<timeline_point, status>> failures_;
  status poison_;
  // Listeners are few and change rarely; the count keeps set() to one load when there are
  // none. listener_mutex_ is held while they run, so remove_listener() waits out a running one.
  std::atomic<std::size_t> listener_count_{0};
  std::mutex listener_mutex_;
  std::vector<std::pair<std::uint64_t, std::function<void()>>> listeners_;
  std::uint64_t next_listener_ = 1;
  std::shared_ptr<std::atomic<std::uint64_t>> waits_;  // may be empty
};

}  // namespace cudactor::gpu
