#include "cudactor/gpu/detail/worker_pool.hpp"

#include <pthread.h>

#include <algorithm>
#include <string>

namespace cudactor::gpu::detail {

worker_pool::worker_pool(unsigned threads, std::chrono::microseconds idle_spin)
    : idle_spin_(std::max(idle_spin, std::chrono::microseconds{0})) {
  threads = std::max(1u, threads);
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i] {
      // Named so that top, perf and gdb tell the backend's threads from CAF's.
      pthread_setname_np(pthread_self(), ("cudactor-host-" + std::to_string(i)).c_str());
      run();
    });
  }
}

worker_pool::~worker_pool() { stop(); }

void worker_pool::post(int lane, std::function<void()> task) {
  lane = std::clamp(lane, 0, lanes - 1);
  bool wake;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    lanes_[lane].push_back(std::move(task));
    const std::size_t waiting = queued_.fetch_add(1, std::memory_order_release) + 1;
    // A spinning worker takes the first task; wake a sleeper for any more.
    wake = sleepers_ > 0 && (!spinning_ || waiting > 1);
  }
  if (wake) wake_.notify_one();
}

void worker_pool::post_at(clock::time_point when, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    timers_.push(timer{when, timer_order_++, std::move(task)});
  }
  // Every worker may be sleeping until a later deadline: wake them all to re-arm.
  wake_.notify_all();
}

void worker_pool::stop() {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_)
    if (thread.joinable()) thread.join();
  threads_.clear();
}

void worker_pool::run() {
  std::unique_lock<std::mutex> lock{mutex_};
  bool spun = false;  // spun since the last task: sleep now
  for (;;) {
    std::function<void()> task;
    // Due timers first: a parked stream's deadline has passed.
    if (!timers_.empty() && timers_.top().when <= clock::now()) {
      task = std::move(const_cast<timer&>(timers_.top()).task);
      timers_.pop();
    } else {
      for (auto& lane : lanes_) {
        if (!lane.empty()) {
          task = std::move(lane.front());
          lane.pop_front();
          queued_.fetch_sub(1, std::memory_order_relaxed);
          break;
        }
      }
    }
    if (task) {
      spun = false;
      ++busy_;
      lock.unlock();
      task();
      task = nullptr;  // destroy captures outside the lock
      lock.lock();
      --busy_;
      if (stopping_) wake_.notify_all();  // others may be waiting for busy_ == 0
      continue;
    }
    if (stopping_) {
      // Nothing queued; a busy worker may still post more, so stay until all are idle.
      if (busy_ == 0) {
        if (!timers_.empty()) {
          // Fire pending timers early rather than drop them: what they resume must still run
          // (and fail) so that every operation ends exactly once.
          task = std::move(const_cast<timer&>(timers_.top()).task);
          timers_.pop();
          ++busy_;
          lock.unlock();
          task();
          task = nullptr;
          lock.lock();
          --busy_;
          continue;
        }
        wake_.notify_all();
        return;
      }
      ++sleepers_;
      wake_.wait(lock);
      --sleepers_;
      continue;
    }
    if (!spun && !spinning_ && idle_spin_.count() > 0) {
      spinning_ = spun = true;
      lock.unlock();
      const auto until = clock::now() + idle_spin_;
      while (queued_.load(std::memory_order_acquire) == 0 && clock::now() < until) {
        std::this_thread::yield();
      }
      lock.lock();
      spinning_ = false;
      continue;
    }
    ++sleepers_;
    if (timers_.empty()) {
      wake_.wait(lock);
    } else {
      wake_.wait_until(lock, timers_.top().when);
    }
    --sleepers_;
  }
}

}  // namespace cudactor::gpu::detail
