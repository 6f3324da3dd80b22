#include "cudactor/gpu/detail/host_engine.hpp"

#include <algorithm>
#include <exception>
#include <iterator>

namespace cudactor::gpu::detail {
namespace {

// Operations one drain runs before yielding its worker to other streams.
constexpr int drain_batch = 64;

// The streams a thread scheduled inside its batch (backend::begin_batch), each once: a stream
// is scheduled again only after a worker drained it, and a deferred one is not drained.
struct thread_batch {
  host_engine* engine = nullptr;
  int depth = 0;
  std::vector<stream_ptr> streams;
};
thread_local thread_batch this_thread_batch;

int lane_of(stream_priority priority) {
  switch (priority) {
    case stream_priority::high: return 0;
    case stream_priority::normal: return 1;
    case stream_priority::low: return 2;
  }
  return 1;
}

}  // namespace

void free_host_memory(void* data) noexcept { ::operator delete(data, host_memory_alignment); }

host_engine::host_engine(unsigned workers, std::chrono::microseconds idle_spin,
                         host_scratch_budget scratch)
    : scratch_(std::move(scratch)), allocations_(*scratch_.table), pool_(workers, idle_spin) {}

stream_ptr host_engine::open_stream(handle_id id, std::string name, stream_priority priority) {
  auto s = std::make_shared<host_stream>();
  s->id = id;
  s->priority = priority;
  s->label = "stream '" + name + "' (" + to_string(id) + ")";
  s->timeline = std::make_shared<host_timeline>(name, host_waits_);
  s->name = std::move(name);
  std::lock_guard<std::mutex> lock{mutex_};
  // Drop streams that are gone now and then, so the list does not grow with churn.
  if (every_stream_.size() >= 64 && every_stream_.size() % 64 == 0) {
    every_stream_.erase(std::remove_if(every_stream_.begin(), every_stream_.end(),
                                       [](auto& weak) { return weak.expired(); }),
                        every_stream_.end());
  }
  every_stream_.push_back(s);
  return s;
}

void host_engine::recover() {
  std::lock_guard<std::mutex> lock{mutex_};
  every_stream_.clear();
  lost_status_ = {};
  lost_.store(false, std::memory_order_seq_cst);
}

void host_engine::shutdown(std::string why) {
  lose_device(std::move(why));
  pool_.stop();
}

status host_engine::loss() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return lost_.load(std::memory_order_acquire) ? lost_status_ : status{};
}

std::vector<stream_ptr> host_engine::all_streams() {
  std::lock_guard<std::mutex> lock{mutex_};
  std::vector<stream_ptr> out;
  for (auto& weak : every_stream_)
    if (auto s = weak.lock()) out.push_back(std::move(s));
  return out;
}

void host_engine::push(const stream_ptr& s, op o) {
  push_with(s, [&] { return std::move(o); });
}

void host_engine::schedule(const stream_ptr& s) {
  thread_batch& batch = this_thread_batch;
  if (batch.depth > 0 && batch.engine == this) {
    batch.streams.push_back(s);
    return;
  }
  pool_.post(lane_of(s->priority), [this, s] { drain(s); });
}

bool host_engine::begin_batch() noexcept {
  thread_batch& batch = this_thread_batch;
  if (batch.depth > 0 && batch.engine != this) return false;
  batch.engine = this;
  ++batch.depth;
  return true;
}

void host_engine::end_batch() noexcept {
  thread_batch& batch = this_thread_batch;
  if (batch.depth == 0 || batch.engine != this) return;
  if (--batch.depth == 0) {
    hand_over_batch();
    batch.engine = nullptr;
  }
}

void hand_over_thread_batch() noexcept {
  if (host_engine* engine = this_thread_batch.engine) engine->hand_over_batch();
}

void host_engine::hand_over_batch() noexcept {
  thread_batch& batch = this_thread_batch;
  if (batch.engine != this || batch.streams.empty()) return;
  std::vector<stream_ptr> streams;
  streams.swap(batch.streams);
  for (const auto& s : streams) pool_.post(lane_of(s->priority), [this, s] { drain(s); });
  streams.clear();
  if (batch.streams.empty()) batch.streams.swap(streams);  // keep the capacity
}

void host_engine::resume(const stream_ptr& s) {
  bool post = false;
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    if (!s->parked) return;  // spurious: the drain re-checks anyway
    s->parked = false;
    if (!s->scheduled) post = s->scheduled = true;
  }
  if (post) schedule(s);
}

// Parks `s` until `point` completes. `again` when it already has (or the device was lost,
// which must not be waited out), `parked` when the drain must stop.
host_engine::step host_engine::park_on(const stream_ptr& s,
                                       const std::shared_ptr<host_completion>& point) {
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    s->parked = true;
  }
  // A completion (an injected hang, say) can outlive the backend: hold it weakly.
  const bool waiting = point->subscribe([self = weak_from_this(), s] {
    if (auto alive = self.lock()) alive->resume(s);
  });
  return settle_park(s, waiting);
}

host_engine::step host_engine::park_until(const stream_ptr& s, clock::time_point deadline) {
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    s->parked = true;
  }
  pool_.post_at(deadline, [this, s] { resume(s); });
  return settle_park(s, true);
}

host_engine::step host_engine::settle_park(const stream_ptr& s, bool waiting) {
  std::lock_guard<std::mutex> lock{s->mutex};
  // lose_device() sets `lost_` before it resumes parked streams under their mutex, so either
  // it sees this stream parked, or this check sees the loss.
  if (!waiting || !s->parked || lost_.load(std::memory_order_acquire)) {
    s->parked = false;
    return step::again;
  }
  s->scheduled = false;
  return step::parked;
}

// Runs operations of `s` in order until it empties or parks. After a batch it gives its worker
// to another stream if one is waiting, and otherwise goes on.
void host_engine::drain(const stream_ptr& s) {
  for (int budget = drain_batch;;) {
    if (s->next_taken == s->taken.size()) {
      // The room of a rare flood is not kept: past this many operations it goes.
      constexpr std::size_t room_kept = 4096;
      if (s->taken.capacity() > room_kept) {
        std::vector<op>{}.swap(s->taken);
      } else {
        s->taken.clear();
      }
      s->next_taken = 0;
      std::lock_guard<std::mutex> lock{s->mutex};
      if (s->queue.empty() || s->parked) {
        s->scheduled = false;
        return;
      }
      s->taken.swap(s->queue);
    }
    op& front = s->taken[s->next_taken];
    const step outcome = lost_.load(std::memory_order_acquire) ? fail(*s, front) : run(s, front);
    if (outcome == step::parked) return;
    if (outcome == step::again) continue;
    front = op{};  // what it holds (its work's captures) goes now, as a pop would
    ++s->next_taken;
    if (--budget == 0) {
      if (pool_.waiting()) break;
      budget = drain_batch;
    }
  }
  bool post = false;
  {
    std::lock_guard<std::mutex> lock{s->mutex};
    if ((s->next_taken == s->taken.size() && s->queue.empty()) || s->parked) {
      s->scheduled = false;
    } else {
      post = true;  // still scheduled: give other streams a turn, then go on
    }
  }
  if (post) schedule(s);
}

void host_engine::note_failure(host_stream& s, status why) {
  if (s.failed_since_signal.ok()) s.failed_since_signal = why;
  if (s.pending_error.ok()) s.pending_error = std::move(why);
}

void host_engine::invoke(const host_callback& callback, const status& outcome) {
  try {
    callback(outcome);
  } catch (...) {
    callback_exceptions_.fetch_add(1, std::memory_order_relaxed);
  }
}

host_engine::step host_engine::run(const stream_ptr& s, op& o) {
  switch (o.type) {
    case host_op_kind::work: {
      status outcome;
      try {
        if (o.work) {
          host_run_scratch scratch{scratch_};  // freed once the work returns: it is done then
          outcome = o.work(launch_context{backend_kind::host, o.stream, nullptr, false, &scratch});
        } else {
          outcome = o.body();
        }
      } catch (const std::exception& e) {
        outcome = status{status_code::op_failed, std::string{"threw: "} + e.what()};
      } catch (...) {
        outcome = status{status_code::op_failed, "threw a non-standard exception"};
      }
      if (!outcome.ok()) {
        note_failure(
            *s, status{status_code::op_failed, "work on " + s->label + " failed: " + outcome.to_string()});
      }
      if (o.then_signal) reach(*s, o.value);
      return step::done;
    }
    case host_op_kind::record:
      o.point->complete(std::exchange(s->pending_error, {}));
      return step::done;
    case host_op_kind::sync: o.point->complete({}); return step::done;
    case host_op_kind::wait: {
      if (!o.point->done()) return park_on(s, o.point);
      status outcome = o.point->outcome();
      if (!outcome.ok()) {
        note_failure(
            *s, status{status_code::dependency_failed, s->label + " waited on " + waited_on(o) +
                                                    ", whose work failed: " + outcome.to_string()});
      }
      return step::done;
    }
    case host_op_kind::order:
    case host_op_kind::gate:
      if (!o.point->done()) return park_on(s, o.point);
      return step::done;
    case host_op_kind::delay: {
      const auto now = clock::now();
      if (!o.started) {
        o.started = true;
        o.deadline = now + o.duration;
      }
      if (now < o.deadline) return park_until(s, o.deadline);
      return step::done;
    }
    case host_op_kind::callback: invoke(o.callback, {}); return step::done;
    case host_op_kind::signal: reach(*s, o.value); return step::done;
    case host_op_kind::fail:
      note_failure(*s, status{status_code::op_failed, "injected failure on " + s->label + ": " + o.what});
      return step::done;
    case host_op_kind::device_fault:
      lose_device("fault injected on " + s->label + ": " + o.what);
      return step::done;
    case host_op_kind::free_memory:
      allocations_.remove(o.memory);
      free_host_memory(o.memory);
      return step::done;
  }
  return step::done;
}

void host_engine::reach(host_stream& s, timeline_point value) {
  // The first failure since the last signal, whether or not an event reported it; what no
  // event took yet is reported here, once.
  status failure = std::exchange(s.failed_since_signal, {});
  s.pending_error = {};
  if (failure.ok()) {
    s.timeline->set(value);
  } else {
    s.timeline->fail(value, failure);
  }
  release_point_waiters(s, value, failure);
}

std::string host_engine::waited_on(const op& o) {
  if (!o.what.empty()) return o.what;  // an event
  const stream_ptr awaited = o.awaited.lock();
  return "point " + std::to_string(o.value) + " of " +
         (awaited ? awaited->label : std::string{"a stream since destroyed"});
}

// The device is lost: the operation ends without running, reporting the loss.
host_engine::step host_engine::fail(host_stream& s, op& o) {
  const status why = loss();
  switch (o.type) {
    case host_op_kind::record:
    case host_op_kind::sync: o.point->complete(why); break;
    case host_op_kind::work:
      if (!o.then_signal) break;
      [[fallthrough]];
    case host_op_kind::signal:
      s.timeline->fail(o.value, why);
      release_point_waiters(s, o.value, why);
      break;
    case host_op_kind::callback: invoke(o.callback, why); break;
    case host_op_kind::free_memory:
      allocations_.remove(o.memory);
      free_host_memory(o.memory);
      break;
    default: break;
  }
  return step::done;
}

std::shared_ptr<host_completion> host_engine::point_of(const stream_ptr& s, timeline_point value) {
  auto point = std::make_shared<host_completion>();
  {
    std::lock_guard<std::mutex> lock{s->point_mutex};
    // The signal raises the timeline before it looks for waiters (both seq_cst), so either it
    // sees this waiter or this check sees the value reached.
    s->point_waiter_count.fetch_add(1, std::memory_order_seq_cst);
    if (s->timeline->completed() < value) {
      // Kept in value order (after the equal ones), so that a signal releases a prefix. Waits
      // come mostly for recent points: the insertion is at or near the end.
      auto& waiters = s->point_waiters;
      auto at = waiters.end();
      while (at != waiters.begin() && std::prev(at)->first > value) --at;
      waiters.emplace(at, value, point);
      return point;
    }
    s->point_waiter_count.fetch_sub(1, std::memory_order_seq_cst);
  }
  const query_result reached = s->timeline->query(value);
  point->complete(reached.failed() ? reached.error : status{});
  return point;
}

void host_engine::release_point_waiters(host_stream& s, timeline_point value,
                                        const status& outcome) {
  if (s.point_waiter_count.load(std::memory_order_seq_cst) == 0) return;
  std::vector<std::shared_ptr<host_completion>> due;
  {
    std::lock_guard<std::mutex> lock{s.point_mutex};
    // In value order: the due ones are a prefix. Scanning them all and erasing each from the
    // middle made every signal cost as much as the waits outstanding on its stream (a random
    // graph on 8 streams keeps dozens), on the host workers the coordinator shares cores with.
    auto& waiters = s.point_waiters;
    auto end = waiters.begin();
    while (end != waiters.end() && end->first <= value) ++end;
    if (end == waiters.begin()) return;
    due.reserve(static_cast<std::size_t>(end - waiters.begin()));
    for (auto it = waiters.begin(); it != end; ++it) due.push_back(std::move(it->second));
    waiters.erase(waiters.begin(), end);
    s.point_waiter_count.store(waiters.size(), std::memory_order_seq_cst);
  }
  for (auto& point : due) point->complete(outcome);
}

void host_engine::lose_device(std::string why) {
  std::vector<stream_ptr> streams_now;
  status loss;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    if (!lost_.load(std::memory_order_acquire)) {
      lost_status_ = status{status_code::device_lost, std::move(why)};
      lost_.store(true, std::memory_order_seq_cst);
    }
    loss = lost_status_;
    for (auto& weak : every_stream_)
      if (auto s = weak.lock()) streams_now.push_back(std::move(s));
  }
  for (auto& s : streams_now) {
    s->timeline->poison(loss);
    resume(s);  // a parked stream must run to fail what it holds
  }
}

// Waits until every stream has run everything enqueued so far (or failed it).
void host_engine::quiesce() {
  std::vector<std::shared_ptr<host_completion>> points;
  for (auto& s : all_streams()) {
    auto point = std::make_shared<host_completion>();
    points.push_back(point);
    op o;
    o.type = host_op_kind::sync;
    o.point = point;
    push(s, std::move(o));
  }
  hand_over_batch();  // a caller inside a batch: the syncs must reach the workers
  for (auto& point : points) point->wait();
}

}  // namespace cudactor::gpu::detail
