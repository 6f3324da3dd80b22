#include "cudactor/gpu/detail/cuda_timeline.hpp"

#include <algorithm>
#include <iterator>
#include <thread>

#include "cudactor/gpu/detail/cuda_device.hpp"
#include "cudactor/gpu/detail/cuda_status.hpp"

namespace cudactor::gpu::detail {

cuda_timeline::marker_event::~marker_event() {
  if (event == nullptr || abandoned) return;
  if (select_device(device).ok()) (void)cudaEventDestroy(event);
}

cuda_timeline::cuda_timeline(cudaStream_t stream, std::string name, int device,
                             std::size_t max_in_flight)
    : stream_(stream),
      name_(std::move(name)),
      device_(device),
      max_in_flight_(std::max<std::size_t>(1, max_in_flight)) {}

cuda_timeline::~cuda_timeline() {
  std::lock_guard<std::mutex> lock{mutex_};
  in_flight_.clear();
  spare_.clear();
}

void cuda_timeline::poison_locked(status why) {
  if (poison_.ok()) poison_ = std::move(why);
}

void cuda_timeline::retire_locked() {
  if (!poison_.ok()) return;  // nothing is asked of CUDA once poisoned
  if (in_flight_.empty()) return;
  if (auto selected = select_device(device_); !selected.ok()) {
    poison_locked(std::move(selected));
    return;
  }
  while (!in_flight_.empty()) {
    entry& front = in_flight_.front();
    const cudaError_t answer = cudaEventQuery(front.marker->event);
    if (answer == cudaErrorNotReady) {
      clear_not_ready();
      return;
    }
    if (answer != cudaSuccess) {
      // Not seen to finish: the value and every later one fail, completed() stays.
      (void)cudaGetLastError();
      poison_locked(
          from_cuda(answer, "timeline '" + name_ + "' at value " + std::to_string(front.value)));
      return;
    }
    completed_.store(front.value, std::memory_order_release);
    // Recycle the event unless a waiter still holds it.
    if (front.marker.use_count() == 1) spare_.push_back(std::move(front.marker));
    in_flight_.pop_front();
  }
}

// One work's late failure: told before the next signal, it waits for the value to be bound.
class cuda_late_failure final : public late_failure {
 public:
  explicit cuda_late_failure(std::weak_ptr<cuda_timeline> timeline)
      : timeline_(std::move(timeline)) {}

  void fail(status why) noexcept override {
    timeline_point value = 0;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      if (failed_) return;
      failed_ = true;
      if (value_ == 0) {
        why_ = std::move(why);  // bind() notes it
        return;
      }
      value = value_;
    }
    // Outside this lock: bind() is called under the timeline's.
    if (auto t = timeline_.lock()) {
      try {
        t->fail_late(value, std::move(why));
      } catch (...) {
        // Out of memory for the note: the point then reads as its device says.
      }
    }
  }

  // The value the work's run ends at (the timeline's lock held); the failure told before it.
  [[nodiscard]] status bind(timeline_point value) {
    std::lock_guard<std::mutex> lock{mutex_};
    value_ = value;
    return failed_ ? std::exchange(why_, status{}) : status{};
  }

 private:
  const std::weak_ptr<cuda_timeline> timeline_;
  std::mutex mutex_;  // guards what follows
  timeline_point value_ = 0;
  bool failed_ = false;
  status why_;
};

std::shared_ptr<late_failure> cuda_timeline::make_late_failure() {
  auto made = std::make_shared<cuda_late_failure>(weak_from_this());
  std::lock_guard<std::mutex> lock{mutex_};
  unbound_.push_back(made);
  // Work enqueued without a point after it, again and again, must not grow this without
  // limit: past the bound on values in flight the oldest goes (its failure then fails
  // nothing; the work it belonged to had no point of its own to fail).
  if (unbound_.size() > max_in_flight_) unbound_.pop_front();
  return made;
}

void cuda_timeline::fail_late(timeline_point value, status why) {
  std::lock_guard<std::mutex> lock{mutex_};
  retire_locked();  // reached already: it stays so
  if (completed_.load(std::memory_order_acquire) >= value || !poison_.ok()) return;
  add_failure_locked(value, std::move(why));
}

void cuda_timeline::add_failure_locked(timeline_point value, status why) {
  auto at = failures_.end();
  while (at != failures_.begin() && std::prev(at)->first > value) --at;
  if (at != failures_.begin() && std::prev(at)->first == value) return;  // the first counts
  failures_.emplace(at, value, std::move(why));
  // Only failures of values reached go: one still to be reached must fail it when it is
  // (those are bounded by the values in flight).
  const timeline_point reached = completed_.load(std::memory_order_acquire);
  while (failures_.size() > failure_history && failures_.front().first <= reached) {
    failures_.pop_front();
  }
}

const status* cuda_timeline::failure_locked(timeline_point value) const {
  for (auto it = failures_.rbegin(); it != failures_.rend(); ++it) {
    if (it->first == value) return &it->second;
    if (it->first < value) break;  // ordered by value
  }
  return nullptr;
}

query_result cuda_timeline::query_locked(timeline_point value) const {
  if (completed_.load(std::memory_order_acquire) >= value) {
    if (const status* failed = failure_locked(value)) return {event_state::failed, *failed};
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
    std::shared_ptr<marker_event> target;
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
      status why = select_device(device_);
      if (why.ok()) {
        const cudaError_t answer = cudaEventSynchronize(target->event);
        if (answer != cudaSuccess) {
          (void)cudaGetLastError();
          why = from_cuda(answer, "waiting on timeline '" + name_ + "'");
        }
      }
      if (!why.ok()) {
        poison(std::move(why));  // the next round answers it
      }
      continue;
    }
    if (bounded && clock::now() >= deadline) {
      return {status_code::timeout, "timeline '" + name_ + "' did not reach " + std::to_string(value) +
                                 " within " + std::to_string(timeout.count()) + " ms (at " +
                                 std::to_string(completed_.load()) + ")"};
    }
    // Bounded, or the value is not even signalled yet: poll with a growing pause.
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::microseconds{1000});
  }
}

status cuda_timeline::enqueue_wait(cudaStream_t waiter, timeline_point value,
                                   const std::string& waiter_label, bool carry_failure,
                                   status* carried) {
  std::shared_ptr<marker_event> target;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    if (value > signalled_.load(std::memory_order_acquire)) {
      return status{status_code::invalid_argument, waiter_label + " cannot wait for point " +
                                                std::to_string(value) + " of timeline '" + name_ +
                                                "': not signalled yet (newest " +
                                                std::to_string(signalled_.load()) + ")"};
    }
    // Work that failed at launch is known before the device gets there: the waiter's next
    // point carries it (the caller fails it), and the wait is placed all the same.
    if (const status* failed = failure_locked(value);
        failed != nullptr && carry_failure && carried != nullptr) {
      *carried =
          status{status_code::dependency_failed, waiter_label + " waited on point " +
                                              std::to_string(value) + " of timeline '" + name_ +
                                              "', whose work failed: " + failed->to_string()};
    }
    retire_locked();
    const query_result answer = query_locked(value);
    if (answer.failed()) {
      // Reached, its own work failed (*carried says so): nothing to wait for.
      if (completed_.load(std::memory_order_acquire) >= value) return {};
      return carry_failure || answer.error.code() == status_code::device_lost ? answer.error : status{};
    }
    if (answer.ready()) return {};
    auto found = std::lower_bound(in_flight_.begin(), in_flight_.end(), value,
                                  [](const entry& e, timeline_point v) { return e.value < v; });
    if (found == in_flight_.end()) return {};  // retired between the two checks: reached
    target = found->marker;  // held: the event cannot be recycled while we enqueue the wait
  }
  // Outside the lock: enqueueing on a full stream blocks, and the poller must not wait for it.
  if (auto selected = select_device(device_); !selected.ok()) return selected;
  const cudaError_t waited = cudaStreamWaitEvent(waiter, target->event, 0);
  if (waited != cudaSuccess) {
    (void)cudaGetLastError();
    status why = from_cuda(waited, waiter_label + " waiting for point " + std::to_string(value) +
                                       " of timeline '" + name_ + "'");
    if (is_sticky(waited)) poison(why);
    return why;
  }
  return {};
}

status cuda_timeline::room_locked() {
  if (!poison_.ok()) return poison_;
  if (in_flight_.size() >= max_in_flight_) retire_locked();
  if (!poison_.ok()) return poison_;
  if (in_flight_.size() >= max_in_flight_) {
    return status{status_code::resource_exhausted,
                  "timeline '" + name_ + "' has " + std::to_string(in_flight_.size()) +
                      " values in flight, its limit (max_in_flight)"};
  }
  return {};
}

result<timeline_point> cuda_timeline::signal() {
  std::lock_guard<std::mutex> ordered{signal_mutex_};
  return record_next();
}

std::pair<status, result<timeline_point>> cuda_timeline::signal_after(
    const std::function<status()>& launch) {
  std::lock_guard<std::mutex> ordered{signal_mutex_};
  {
    std::lock_guard<std::mutex> lock{mutex_};
    // Only signals take room, and they wait for signal_mutex_: the room stays until the record.
    if (auto full = room_locked(); !full.ok()) return {full, full};
  }
  status launched = launch();
  if (launched.code() == status_code::device_lost) return {launched, launched};
  return {std::move(launched), record_next()};
}

result<timeline_point> cuda_timeline::record_next() {
  std::shared_ptr<marker_event> marker;
  // The late failures of work enqueued before this record, taken now: one made meanwhile by
  // work another thread enqueues is not behind this event and waits for the next.
  std::deque<std::shared_ptr<cuda_late_failure>> binding;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    if (auto full = room_locked(); !full.ok()) return full;
    if (!spare_.empty()) {
      marker = std::move(spare_.back());
      spare_.pop_back();
    }
    binding.swap(unbound_);
  }
  // Not recorded: they wait for the next signal, before any made since.
  const auto unbind = [&] { unbound_.insert(unbound_.begin(), binding.begin(), binding.end()); };
  // The CUDA calls, outside the lock the poller takes: cudaEventRecord blocks while the
  // stream's queue is full (the bound above keeps it from filling with our own events).
  if (auto selected = select_device(device_); !selected.ok()) {
    std::lock_guard<std::mutex> lock{mutex_};
    unbind();
    return selected;
  }
  if (!marker) {
    marker = std::make_shared<marker_event>();
    marker->device = device_;
    const cudaError_t made = cudaEventCreateWithFlags(&marker->event, cudaEventDisableTiming);
    if (made != cudaSuccess) {
      (void)cudaGetLastError();
      marker->event = nullptr;
      std::lock_guard<std::mutex> lock{mutex_};
      unbind();
      return from_cuda(made, "creating an event for timeline '" + name_ + "'");
    }
  }
  const cudaError_t recorded = cudaEventRecord(marker->event, stream_);
  std::lock_guard<std::mutex> lock{mutex_};
  if (recorded != cudaSuccess) {
    (void)cudaGetLastError();
    unbind();
    status why = from_cuda(recorded, "signalling timeline '" + name_ + "'");
    if (is_sticky(recorded)) poison_locked(why);
    if (poison_.ok()) spare_.push_back(std::move(marker));
    return why;
  }
  if (!poison_.ok()) {  // abandoned or lost while we recorded
    unbind();
    return poison_;
  }
  const timeline_point value = signalled_.load(std::memory_order_relaxed) + 1;
  signalled_.store(value, std::memory_order_release);
  in_flight_.push_back(entry{value, std::move(marker)});
  if (!next_failure_.ok()) {
    add_failure_locked(value, std::exchange(next_failure_, status{}));
    next_event_failure_ = status{};  // reported here: later events are clean
  }
  for (const auto& late : binding) {
    if (status told = late->bind(value); !told.ok()) add_failure_locked(value, std::move(told));
  }
  return value;
}

void cuda_timeline::fail_next(status why) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (next_event_failure_.ok()) next_event_failure_ = why;
  if (next_failure_.ok()) next_failure_ = std::move(why);
}

status cuda_timeline::take_event_failure() {
  std::lock_guard<std::mutex> lock{mutex_};
  return std::exchange(next_event_failure_, status{});
}

void cuda_timeline::poison(status why) {
  std::lock_guard<std::mutex> lock{mutex_};
  poison_locked(std::move(why));
}

void cuda_timeline::abandon(status why) {
  std::lock_guard<std::mutex> lock{mutex_};
  poison_locked(std::move(why));
  const bool selected = select_device(device_).ok();
  auto release = [selected](std::shared_ptr<marker_event>& marker) {
    // One a waiter holds is left alone: destroying it under the waiter is worse than a leak.
    if (marker.use_count() == 1 && selected && marker->event != nullptr) {
      (void)cudaEventDestroy(marker->event);
    }
    marker->abandoned = true;
  };
  for (auto& pending : in_flight_) release(pending.marker);
  for (auto& marker : spare_) release(marker);
  in_flight_.clear();
  spare_.clear();
}

}  // namespace cudactor::gpu::detail
