#include "cudactor/gpu/host_timeline.hpp"

#include <algorithm>

#include "cudactor/gpu/detail/host_engine.hpp"

namespace cudactor::gpu {
namespace {

// fetch_max for C++17 atomics; returns the value before.
timeline_point raise(std::atomic<timeline_point>& target, timeline_point value) noexcept {
  // seq_cst: the raise must be ordered before notify_waiters() reads waiters_.
  timeline_point current = target.load(std::memory_order_seq_cst);
  while (current < value && !target.compare_exchange_weak(current, value)) {
  }
  return current;
}

}  // namespace

host_timeline::host_timeline(std::string name, timeline_point initial)
    : name_(std::move(name)), signalled_(initial), completed_(initial) {}

host_timeline::host_timeline(std::string name, std::shared_ptr<std::atomic<std::uint64_t>> waits)
    : name_(std::move(name)), signalled_(0), completed_(0), waits_(std::move(waits)) {}

query_result host_timeline::query(timeline_point value) {
  if (completed_.load(std::memory_order_acquire) >= value) {
    std::lock_guard<std::mutex> lock{mutex_};
    for (auto it = failures_.rbegin(); it != failures_.rend(); ++it) {
      if (it->first == value) return {event_state::failed, it->second};
      if (it->first < value) break;  // failures_ is ordered by value
    }
    return {event_state::ready, {}};
  }
  if (poisoned_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock{mutex_};
    return {event_state::failed, poison_};
  }
  return {event_state::not_ready, {}};
}

status host_timeline::wait(timeline_point value, std::chrono::milliseconds timeout) {
  if (waits_) waits_->fetch_add(1, std::memory_order_relaxed);
  detail::hand_over_thread_batch();  // what this thread deferred may be what it waits for
  auto settled = [&] {
    return completed_.load(std::memory_order_acquire) >= value ||
           poisoned_.load(std::memory_order_acquire);
  };
  if (!settled()) {
    std::unique_lock<std::mutex> lock{mutex_};
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    if (timeout.count() <= 0) {
      changed_.wait(lock, settled);
    } else if (!changed_.wait_for(lock, timeout, settled)) {
      waiters_.fetch_sub(1, std::memory_order_seq_cst);
      return {status_code::timeout, "timeline '" + name_ + "' did not reach " + std::to_string(value) +
                                 " within " + std::to_string(timeout.count()) + " ms (at " +
                                 std::to_string(completed_.load()) + ")"};
    }
    waiters_.fetch_sub(1, std::memory_order_seq_cst);
  }
  auto answer = query(value);
  if (answer.failed()) return answer.error;
  return {};
}

void host_timeline::set(timeline_point value) {
  raise(signalled_, value);
  if (raise(completed_, value) < value) {
    notify_waiters();
    notify_listeners();
  }
}

void host_timeline::fail(timeline_point value, status why) {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    // Keep failures_ ordered; values normally arrive in order, so this is an append.
    auto it = failures_.end();
    while (it != failures_.begin() && std::prev(it)->first > value) --it;
    failures_.emplace(it, value, std::move(why));
    if (failures_.size() > failure_history) failures_.pop_front();
  }
  set(value);
}

void host_timeline::poison(status why) {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    poison_ = std::move(why);
    poisoned_.store(true, std::memory_order_release);
  }
  changed_.notify_all();
  notify_listeners();
}

void host_timeline::clear_poison() {
  std::lock_guard<std::mutex> lock{mutex_};
  poisoned_.store(false, std::memory_order_release);
  poison_ = {};
}

void host_timeline::notify_waiters() {
  // The waiter registers under the mutex before checking; taking the mutex here orders this
  // notification after that check, so no wake-up is lost.
  if (waiters_.load(std::memory_order_seq_cst) == 0) return;
  { std::lock_guard<std::mutex> lock{mutex_}; }
  changed_.notify_all();
}

std::uint64_t host_timeline::add_listener(std::function<void()> listener) {
  if (!listener) return 0;
  std::lock_guard<std::mutex> lock{listener_mutex_};
  const std::uint64_t id = next_listener_++;
  listeners_.emplace_back(id, std::move(listener));
  listener_count_.store(listeners_.size(), std::memory_order_seq_cst);
  return id;
}

void host_timeline::remove_listener(std::uint64_t id) {
  std::lock_guard<std::mutex> lock{listener_mutex_};
  listeners_.erase(std::remove_if(listeners_.begin(), listeners_.end(),
                                  [id](const auto& entry) { return entry.first == id; }),
                   listeners_.end());
  listener_count_.store(listeners_.size(), std::memory_order_seq_cst);
}

void host_timeline::notify_listeners() {
  // seq_cst, paired with add_listener(): a listener added before a move is told of it.
  if (listener_count_.load(std::memory_order_seq_cst) == 0) return;
  std::lock_guard<std::mutex> lock{listener_mutex_};
  for (auto& [id, listener] : listeners_) listener();
}

}  // namespace cudactor::gpu
