#include "cudactor/gpu/detail/cuda_timeline.hpp"

#include <algorithm>
#include <thread>

#include "cudactor/gpu/detail/cuda_status.hpp"

namespace cudactor::gpu::detail {
namespace {

constexpr std::size_t failure_history = 256;

}  // namespace

cuda_timeline::slot::~slot() {
  if (event != nullptr && !abandoned) (void)cudaEventDestroy(event);
}

cuda_timeline::cuda_timeline(cudaStream_t stream, std::string name, std::size_t max_in_flight)
    : stream_(stream),
      name_(std::move(name)),
      max_in_flight_(std::max<std::size_t>(1, max_in_flight)) {}

cuda_timeline::~cuda_timeline() {
  std::lock_guard<std::mutex> lock{mutex_};
  in_flight_.clear();
  spare_.clear();
}

void cuda_timeline::retire_locked() {
  if (!poison_.ok()) return;  // a lost context answers every query with the same error
  while (!in_flight_.empty()) {
    entry& front = in_flight_.front();
    const cudaError_t answer = cudaEventQuery(front.marker->event);
    if (answer == cudaErrorNotReady) {
      clear_not_ready();
      return;
    }
    if (answer != cudaSuccess) {
      status why =
          from_cuda(answer, "timeline '" + name_ + "' at value " + std::to_string(front.value));
      if (is_sticky(answer)) {
        poison_ = std::move(why);
        return;
      }
      failures_.emplace_back(front.value, std::move(why));
      if (failures_.size() > failure_history) failures_.pop_front();
    }
    completed_.store(front.value, std::memory_order_release);
    // Recycle the event unless a waiter still holds it (copies are only made under mutex_).
    if (front.marker.use_count() == 1) spare_.push_back(std::move(front.marker));
    in_flight_.pop_front();
  }
}

query_result cuda_timeline::query_locked(timeline_point value) const {
  if (completed_.load(std::memory_order_acquire) >= value) {
    for (auto it = failures_.rbegin(); it != failures_.rend(); ++it) {
      if (it->first == value) return {event_state::failed, it->second};
      if (it->first < value) break;
    }
    return {event_state::ready, {}};
  }
  if (!poison_.ok()) return {event_state::failed, poison_};
  return {event_state::not_ready, {}};
}

timeline_point cuda_timeline::completed() {
  std::lock_guard<std::mutex> lock{mutex_};
  retire_locked();
  return completed_.load(std::memory_order_acquire);
}

query_result cuda_timeline::query(timeline_point value) {
  std::lock_guard<std::mutex> lock{mutex_};
  retire_locked();
  return query_locked(value);
}

status cuda_timeline::wait(timeline_point value, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const bool bounded = timeout.count() > 0;
  const auto deadline = clock::now() + timeout;
  auto backoff = std::chrono::microseconds{1};
  for (;;) {
    std::shared_ptr<slot> target;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      retire_locked();
      const query_result answer = query_locked(value);
      if (answer.failed()) return answer.error;
      if (answer.ready()) return {};
      for (auto& pending : in_flight_) {
        if (pending.value >= value) {
          target = pending.marker;  // keeps the event from being recycled while we block
          break;
        }
      }
    }
    if (target && !bounded) {
      // Unbounded and the value is in flight: let the driver block us.
      const cudaError_t answer = cudaEventSynchronize(target->event);
      if (answer != cudaSuccess && is_sticky(answer)) {
        poison(from_cuda(answer, "waiting on timeline '" + name_ + "'"));
      }
      continue;
    }
    if (bounded && clock::now() >= deadline) {
      return {errc::timeout, "timeline '" + name_ + "' did not reach " + std::to_string(value) +
                                 " within " + std::to_string(timeout.count()) + " ms (at " +
                                 std::to_string(completed_.load()) + ")"};
    }
    // Bounded, or the value is not even signalled yet: poll with a growing pause.
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::microseconds{1000});
  }
}

status cuda_timeline::enqueue_wait(cudaStream_t waiter, timeline_point value,
                                   const std::string& waiter_label) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (value > submitted_.load(std::memory_order_acquire)) {
    return status{errc::invalid_argument, waiter_label + " cannot wait for point " +
                                              std::to_string(value) + " of timeline '" + name_ +
                                              "': not signalled yet (newest " +
                                              std::to_string(submitted_.load()) + ")"};
  }
  retire_locked();
  const query_result answer = query_locked(value);
  if (answer.failed()) return answer.error;
  if (answer.ready()) return {};
  auto found = std::lower_bound(in_flight_.begin(), in_flight_.end(), value,
                                [](const entry& e, timeline_point v) { return e.value < v; });
  if (found == in_flight_.end()) return {};  // retired between the two checks: reached
  const cudaError_t waited = cudaStreamWaitEvent(waiter, found->marker->event, 0);
  if (waited != cudaSuccess) {
    status why = from_cuda(waited, waiter_label + " waiting for point " + std::to_string(value) +
                                       " of timeline '" + name_ + "'");
    if (is_sticky(waited)) poison_ = why;
    return why;
  }
  return {};
}

result<timeline_point> cuda_timeline::signal() {
  std::lock_guard<std::mutex> lock{mutex_};
  if (!poison_.ok()) return poison_;
  if (in_flight_.size() >= max_in_flight_) retire_locked();
  if (in_flight_.size() >= max_in_flight_) {
    return status{errc::resource_exhausted, "timeline '" + name_ + "' has " +
                                                std::to_string(in_flight_.size()) +
                                                " values in flight, its limit"};
  }
  std::shared_ptr<slot> marker;
  if (!spare_.empty()) {
    marker = std::move(spare_.back());
    spare_.pop_back();
  } else {
    marker = std::make_shared<slot>();
    const cudaError_t made = cudaEventCreateWithFlags(&marker->event, cudaEventDisableTiming);
    if (made != cudaSuccess) {
      marker->event = nullptr;
      return from_cuda(made, "creating an event for timeline '" + name_ + "'");
    }
  }
  const cudaError_t recorded = cudaEventRecord(marker->event, stream_);
  if (recorded != cudaSuccess) {
    status why = from_cuda(recorded, "signalling timeline '" + name_ + "'");
    if (is_sticky(recorded)) poison_ = why;
    spare_.push_back(std::move(marker));
    return why;
  }
  const timeline_point value = submitted_.load(std::memory_order_relaxed) + 1;
  submitted_.store(value, std::memory_order_release);
  in_flight_.push_back(entry{value, std::move(marker)});
  return value;
}

void cuda_timeline::poison(status why) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (poison_.ok()) poison_ = std::move(why);
}

void cuda_timeline::abandon(status why) {
  std::lock_guard<std::mutex> lock{mutex_};
  for (auto& pending : in_flight_) pending.marker->abandoned = true;
  for (auto& marker : spare_) marker->abandoned = true;
  in_flight_.clear();
  spare_.clear();
  if (poison_.ok()) poison_ = std::move(why);
}

}  // namespace cudactor::gpu::detail
