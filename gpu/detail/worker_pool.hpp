// gpu/detail/worker_pool.hpp
//
// The host backend's threads: a fixed number of workers serving three priority lanes (a
// higher lane is always served first) and a timer heap, so a slow operation parks its stream
// until a deadline instead of sleeping on a worker. Tasks never block here; anything that
// must wait parks and is re-posted.
//
// An idle worker may spin for idle_spin before it sleeps (one worker at a time), and post()
// wakes a sleeper only when no worker is spinning: work that arrives back to back (a
// pipelined client) then costs no futex wake-up per task, at the price of the core.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace cudactor::gpu::detail {

class worker_pool {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr int lanes = 3;  // 0 is served first
  worker_pool(unsigned threads, std::chrono::microseconds idle_spin);
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;
  ~worker_pool();  // stop()

  void post(int lane, std::function<void()> task);
  // Runs `task` on a worker no earlier than `when`.
  void post_at(clock::time_point when, std::function<void()> task);

  // Runs every queued task (and whatever they post) to the end, fires pending timers early,
  // and joins the workers. Idempotent.
  void stop();

  // Whether a posted task waits for a worker (a hint: it may change at once).
  [[nodiscard]] bool waiting() const noexcept {
    return queued_.load(std::memory_order_relaxed) > 0;
  }

  [[nodiscard]] unsigned size() const noexcept { return static_cast<unsigned>(threads_.size()); }

 private:
  struct timer {
    clock::time_point when;
    std::uint64_t order;  // FIFO among equal deadlines
    std::function<void()> task;
    bool operator>(const timer& other) const {
      return when != other.when ? when > other.when : order > other.order;
    }
  };

  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> lanes_[lanes];
  std::priority_queue<timer, std::vector<timer>, std::greater<timer>> timers_;
  std::uint64_t timer_order_ = 0;
  const std::chrono::microseconds idle_spin_;
  unsigned busy_ = 0;
  unsigned sleepers_ = 0;
  bool spinning_ = false;  // one idle worker watches queued_ instead of sleeping
  std::atomic<std::size_t> queued_{0};
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace cudactor::gpu::detail
