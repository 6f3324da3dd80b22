#include "cudactor/facade/cancellation.hpp"

#include <atomic>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cudactor {

struct cancellation::state {
  std::mutex mutex;
  bool cancelled = false;
  std::unordered_map<std::uint64_t, std::function<void()>> open;
};

cancellation::cancellation() : state_(std::make_shared<state>()) {}

void cancellation::cancel() const {
  std::unordered_map<std::uint64_t, std::function<void()>> open;
  {
    std::lock_guard<std::mutex> lock{state_->mutex};
    if (state_->cancelled) return;
    state_->cancelled = true;
    open.swap(state_->open);
  }
  for (auto& [key, withdraw] : open) withdraw();
}

bool cancellation::cancelled() const {
  std::lock_guard<std::mutex> lock{state_->mutex};
  return state_->cancelled;
}

bool cancellation::keep(std::uint64_t key, std::function<void()> withdraw) const {
  {
    std::lock_guard<std::mutex> lock{state_->mutex};
    if (!state_->cancelled) {
      state_->open.emplace(key, std::move(withdraw));
      return true;
    }
  }
  withdraw();
  return false;
}

void cancellation::forget(std::uint64_t key) const {
  std::lock_guard<std::mutex> lock{state_->mutex};
  state_->open.erase(key);
}

namespace detail {

std::uint64_t next_wait_key() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace detail

}  // namespace cudactor
