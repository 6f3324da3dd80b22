// gpu/detail/host_completion.hpp
//
// One completion point of the host backend: what a recorded event, a synchronize or an
// injected hang waits for. Completes once, with an outcome and a steady-clock stamp; parked
// streams subscribe a resume callback instead of blocking.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu::detail {

class host_completion {
 public:
  using clock = std::chrono::steady_clock;

  // Calls `resume` once the point completes and answers true; answers false (and keeps
  // nothing) if it already has.
  bool subscribe(std::function<void()> resume) {
    std::lock_guard<std::mutex> lock{mutex_};
    if (done_) return false;
    subscribers_.push_back(std::move(resume));
    return true;
  }

  // The first call wins; later ones are ignored.
  void complete(status outcome, clock::time_point when = clock::now()) {
    std::vector<std::function<void()>> subscribers;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      if (done_) return;
      done_ = true;
      outcome_ = std::move(outcome);
      when_ = when;
      subscribers.swap(subscribers_);
    }
    changed_.notify_all();
    for (auto& resume : subscribers) resume();
  }

  [[nodiscard]] bool done() const {
    std::lock_guard<std::mutex> lock{mutex_};
    return done_;
  }
  [[nodiscard]] status outcome() const {
    std::lock_guard<std::mutex> lock{mutex_};
    return outcome_;
  }
  [[nodiscard]] clock::time_point when() const {
    std::lock_guard<std::mutex> lock{mutex_};
    return when_;
  }

  // Blocks; for synchronize() only, which actors never call.
  void wait() {
    std::unique_lock<std::mutex> lock{mutex_};
    changed_.wait(lock, [this] { return done_; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
  status outcome_;
  clock::time_point when_{};
  std::vector<std::function<void()>> subscribers_;
};

}  // namespace cudactor::gpu::detail
