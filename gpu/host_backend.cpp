#include "cudactor/gpu/host_backend.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "cudactor/gpu/detail/allocation_table.hpp"
#include "cudactor/gpu/detail/handle_table.hpp"
#include "cudactor/gpu/detail/host_completion.hpp"
#include "cudactor/gpu/detail/worker_pool.hpp"
#include "cudactor/gpu/host_timeline.hpp"

namespace cudactor::gpu {
namespace {

using detail::host_completion;
using clock = std::chrono::steady_clock;

constexpr std::align_val_t memory_alignment{256};
// Operations one drain runs before yielding its worker to other streams.
constexpr int drain_batch = 64;

enum class op_type : std::uint8_t {
  work,          // body(): a kernel, copy, fill or prefetch
  record,        // completes `point` with the stream's pending failure
  sync,          // completes `point`; reports nothing
  wait,          // holds the stream until `point` completes
  gate,          // injected hang: holds the stream until released
  delay,         // injected slow operation
  callback,      // host callback
  signal,        // advances the timeline to `value`
  fail,          // injected failure
  device_fault,  // injected device loss
  free_memory,   // stream-ordered free
};

struct op {
  op_type type = op_type::work;
  std::function<status()> body;
  std::shared_ptr<host_completion> point;
  std::string what;
  host_callback callback;
  timeline_point value = 0;
  std::chrono::nanoseconds duration{0};
  clock::time_point deadline{};
  bool started = false;
  void* memory = nullptr;
};

struct host_stream {
  handle_id id;
  std::string name;
  std::string label;  // "stream 'name' (#3.1)"
  stream_priority priority = stream_priority::normal;
  std::shared_ptr<host_timeline> timeline;

  std::mutex mutex;
  std::deque<op> queue;    // pushed by anyone, popped only by the draining worker
  bool scheduled = false;  // a drain is queued or running
  bool parked = false;     // the front operation waits for a completion or a deadline
  status pending_error;    // touched only by the draining worker
};
using stream_ptr = std::shared_ptr<host_stream>;

struct host_event {
  event_kind kind = event_kind::regular;
  std::shared_ptr<host_completion> latest;  // null until first recorded
};

int lane_of(stream_priority priority) {
  switch (priority) {
    case stream_priority::high: return 0;
    case stream_priority::normal: return 1;
    case stream_priority::low: return 2;
  }
  return 1;
}

unsigned default_workers() { return std::clamp(std::thread::hardware_concurrency(), 2u, 4u); }

void free_host_memory(void* data) { ::operator delete(data, memory_alignment); }

enum class step { done, again, parked };

}  // namespace

// ------------------------------------------------------------------------------------------

struct host_backend::impl : std::enable_shared_from_this<host_backend::impl> {
  impl(host_backend& self, host_backend_options opts)
      : owner(self),
        options(std::move(opts)),
        pool(options.workers == 0 ? default_workers() : options.workers) {
    info.kind = backend_kind::host;
    info.name = options.name + " (" + std::to_string(pool.size()) + " workers)";
    info.total_memory = options.memory_limit;
    info.greatest_priority = lane_of(stream_priority::high);
    info.least_priority = lane_of(stream_priority::low);
  }

  host_backend& owner;
  host_backend_options options;
  device_info info;
  detail::allocation_table allocations{true};
  std::atomic<std::uint64_t> callback_exceptions{0};

  mutable std::mutex mutex;  // guards the tables, every_stream and lost_status
  detail::handle_table<stream_ptr> streams;
  detail::handle_table<host_event> events;
  std::vector<std::weak_ptr<host_stream>> every_stream;  // live and destroyed-but-draining
  std::atomic<bool> lost{false};
  status lost_status;

  detail::worker_pool pool;  // stopped explicitly by shutdown()

  // --- lookups (mutex held) ----------------------------------------------------------------

  result<stream_ptr> find_stream_locked(stream_ref s) const {
    if (auto bad = owner.check_handle(s.id(), "stream"); !bad.ok()) return bad;
    const stream_ptr* found = streams.find(s.id().slot, s.id().generation);
    if (found == nullptr) {
      return status{errc::invalid_handle, "stream " + to_string(s.id()) + " was destroyed"};
    }
    return *found;
  }

  result<host_event*> find_event_locked(event_ref e) {
    if (auto bad = owner.check_handle(e.id(), "event"); !bad.ok()) return bad;
    host_event* found = events.find(e.id().slot, e.id().generation);
    if (found == nullptr) {
      return status{errc::invalid_handle, "event " + to_string(e.id()) + " was destroyed"};
    }
    return found;
  }

  // The stream, if it exists and the device is not lost.
  result<stream_ptr> usable_stream(stream_ref s) const {
    std::lock_guard<std::mutex> lock{mutex};
    if (lost.load(std::memory_order_acquire)) return lost_status;
    return find_stream_locked(s);
  }

  status current_loss() const {
    std::lock_guard<std::mutex> lock{mutex};
    return lost.load(std::memory_order_acquire) ? lost_status : status{};
  }

  std::vector<stream_ptr> all_streams() {
    std::lock_guard<std::mutex> lock{mutex};
    std::vector<stream_ptr> out;
    for (auto& weak : every_stream)
      if (auto s = weak.lock()) out.push_back(std::move(s));
    return out;
  }

  // --- queueing ----------------------------------------------------------------------------

  template <class MakeOp>
  void push_with(const stream_ptr& s, MakeOp&& make) {
    bool post = false;
    {
      std::lock_guard<std::mutex> lock{s->mutex};
      s->queue.push_back(make());
      if (!s->scheduled && !s->parked) post = s->scheduled = true;
    }
    if (post) schedule(s);
  }

  void push(const stream_ptr& s, op o) {
    push_with(s, [&] { return std::move(o); });
  }

  // Queues `o` on `s` if the stream exists and the device is not lost.
  status submit(stream_ref s, op o) {
    auto target = usable_stream(s);
    if (!target) return target.error();
    push(target.value(), std::move(o));
    return {};
  }

  void schedule(const stream_ptr& s) {
    pool.post(lane_of(s->priority), [this, s] { drain(s); });
  }

  void resume(const stream_ptr& s) {
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
  step park_on(const stream_ptr& s, const std::shared_ptr<host_completion>& point) {
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

  step park_until(const stream_ptr& s, clock::time_point deadline) {
    {
      std::lock_guard<std::mutex> lock{s->mutex};
      s->parked = true;
    }
    pool.post_at(deadline, [this, s] { resume(s); });
    return settle_park(s, true);
  }

  step settle_park(const stream_ptr& s, bool waiting) {
    std::lock_guard<std::mutex> lock{s->mutex};
    // lose_device() sets `lost` before it resumes parked streams under their mutex, so either
    // it sees this stream parked, or this check sees the loss.
    if (!waiting || !s->parked || lost.load(std::memory_order_acquire)) {
      s->parked = false;
      return step::again;
    }
    s->scheduled = false;
    return step::parked;
  }

  // Runs operations of `s` in order until it empties, parks, or used its batch.
  void drain(const stream_ptr& s) {
    for (int budget = drain_batch; budget > 0;) {
      op* front = nullptr;
      {
        std::lock_guard<std::mutex> lock{s->mutex};
        if (s->queue.empty() || s->parked) {
          s->scheduled = false;
          return;
        }
        front = &s->queue.front();  // deque references survive push_back
      }
      step outcome = lost.load(std::memory_order_acquire) ? fail(*s, *front) : run(s, *front);
      if (outcome == step::parked) return;
      if (outcome == step::again) continue;
      {
        std::lock_guard<std::mutex> lock{s->mutex};
        s->queue.pop_front();
      }
      --budget;
    }
    bool post = false;
    {
      std::lock_guard<std::mutex> lock{s->mutex};
      if (s->queue.empty() || s->parked) {
        s->scheduled = false;
      } else {
        post = true;  // still scheduled: give other streams a turn, then go on
      }
    }
    if (post) schedule(s);
  }

  void note_failure(host_stream& s, status why) {
    if (s.pending_error.ok()) s.pending_error = std::move(why);
  }

  void invoke(const host_callback& callback, const status& outcome) {
    try {
      callback(outcome);
    } catch (...) {
      callback_exceptions.fetch_add(1, std::memory_order_relaxed);
    }
  }

  step run(const stream_ptr& s, op& o) {
    switch (o.type) {
      case op_type::work: {
        status outcome;
        try {
          outcome = o.body();
        } catch (const std::exception& e) {
          outcome = status{errc::op_failed, std::string{"threw: "} + e.what()};
        } catch (...) {
          outcome = status{errc::op_failed, "threw a non-standard exception"};
        }
        if (!outcome.ok()) {
          note_failure(*s, status{errc::op_failed,
                                  "work on " + s->label + " failed: " + outcome.to_string()});
        }
        return step::done;
      }
      case op_type::record:
        o.point->complete(std::exchange(s->pending_error, {}));
        return step::done;
      case op_type::sync: o.point->complete({}); return step::done;
      case op_type::wait: {
        if (!o.point->done()) return park_on(s, o.point);
        status outcome = o.point->outcome();
        if (!outcome.ok()) {
          note_failure(*s, status{errc::dependency_failed,
                                  s->label + " waited on " + o.what +
                                      ", whose work failed: " + outcome.to_string()});
        }
        return step::done;
      }
      case op_type::gate:
        if (!o.point->done()) return park_on(s, o.point);
        return step::done;
      case op_type::delay: {
        const auto now = clock::now();
        if (!o.started) {
          o.started = true;
          o.deadline = now + o.duration;
        }
        if (now < o.deadline) return park_until(s, o.deadline);
        return step::done;
      }
      case op_type::callback: invoke(o.callback, {}); return step::done;
      case op_type::signal: {
        status failure = std::exchange(s->pending_error, {});
        if (failure.ok()) {
          s->timeline->set(o.value);
        } else {
          s->timeline->fail(o.value, std::move(failure));
        }
        return step::done;
      }
      case op_type::fail:
        note_failure(*s,
                     status{errc::op_failed, "injected failure on " + s->label + ": " + o.what});
        return step::done;
      case op_type::device_fault:
        lose_device("fault injected on " + s->label + ": " + o.what);
        return step::done;
      case op_type::free_memory:
        allocations.remove(o.memory);
        free_host_memory(o.memory);
        return step::done;
    }
    return step::done;
  }

  // The device is lost: the operation ends without running, reporting the loss.
  step fail(host_stream& s, op& o) {
    const status why = current_loss();
    switch (o.type) {
      case op_type::record:
      case op_type::sync: o.point->complete(why); break;
      case op_type::signal: s.timeline->fail(o.value, why); break;
      case op_type::callback: invoke(o.callback, why); break;
      case op_type::free_memory:
        allocations.remove(o.memory);
        free_host_memory(o.memory);
        break;
      default: break;
    }
    return step::done;
  }

  void lose_device(std::string why) {
    std::vector<stream_ptr> streams_now;
    status loss;
    {
      std::lock_guard<std::mutex> lock{mutex};
      if (!lost.load(std::memory_order_acquire)) {
        lost_status = status{errc::device_lost, std::move(why)};
        lost.store(true, std::memory_order_seq_cst);
      }
      loss = lost_status;
      for (auto& weak : every_stream)
        if (auto s = weak.lock()) streams_now.push_back(std::move(s));
    }
    for (auto& s : streams_now) {
      s->timeline->poison(loss);
      resume(s);  // a parked stream must run to fail what it holds
    }
  }

  // Waits until every stream has run everything enqueued so far (or failed it).
  void quiesce() {
    std::vector<std::shared_ptr<host_completion>> points;
    for (auto& s : all_streams()) {
      auto point = std::make_shared<host_completion>();
      points.push_back(point);
      op o;
      o.type = op_type::sync;
      o.point = point;
      push(s, std::move(o));
    }
    for (auto& point : points) point->wait();
  }

  void free_everything() {
    for (auto& entry : allocations.take_all()) {
      free_host_memory(reinterpret_cast<void*>(entry.first));
    }
  }

  result<buffer> allocate(std::size_t bytes, memory_kind kind, stream_ref s) {
    if (bytes == 0) return status{errc::invalid_argument, "allocation of zero bytes"};
    if (!allocations.try_reserve(bytes, options.memory_limit)) {
      return status{errc::out_of_memory,
                    "cannot allocate " + std::to_string(bytes) + " bytes of " +
                        std::string{to_string(kind)} + " memory on '" + options.name +
                        "': " + std::to_string(allocations.bytes_in_use()) + " of " +
                        std::to_string(options.memory_limit) + " bytes in use"};
    }
    void* data = ::operator new(bytes, memory_alignment, std::nothrow);
    if (data == nullptr) {
      allocations.unreserve(bytes);
      return status{errc::out_of_memory,
                    "the host could not provide " + std::to_string(bytes) + " bytes"};
    }
    allocations.add(data, detail::allocation{bytes, kind, s, false});
    return buffer{owner, data, bytes, kind, s};
  }
};

// ------------------------------------------------------------------------------------------

void hang_release::release() const {
  if (gate_) gate_->complete({});
}

bool hang_release::released() const { return gate_ && gate_->done(); }

host_backend::host_backend(host_backend_options options)
    : impl_(std::make_shared<impl>(*this, std::move(options))) {}

host_backend::~host_backend() {
  impl_->lose_device("host backend '" + impl_->options.name + "' was destroyed");
  impl_->pool.stop();
  impl_->free_everything();
}

const device_info& host_backend::device() const noexcept { return impl_->info; }

unsigned host_backend::workers() const noexcept { return impl_->pool.size(); }

result<stream> host_backend::create_stream(const stream_options& options) {
  auto s = std::make_shared<host_stream>();
  s->priority = options.priority;
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    if (impl_->lost.load(std::memory_order_acquire)) return impl_->lost_status;
    auto key = impl_->streams.insert(s);
    s->id = make_id(key.slot, key.generation);
    s->name = options.name.empty() ? "stream-" + std::to_string(key.slot) : options.name;
    s->label = "stream '" + s->name + "' (" + to_string(s->id) + ")";
    s->timeline = std::make_shared<host_timeline>(s->name);
    auto& all = impl_->every_stream;
    if (all.size() > 2 * impl_->streams.size() + 16) {
      all.erase(std::remove_if(all.begin(), all.end(), [](auto& w) { return w.expired(); }),
                all.end());
    }
    all.push_back(s);
  }
  return stream{*this, stream_ref{s->id}};
}

status host_backend::destroy_stream(stream_ref s) {
  std::lock_guard<std::mutex> lock{impl_->mutex};
  auto found = impl_->find_stream_locked(s);
  if (!found) return found.error();
  // Queued work keeps the stream object alive until it has run, as with cudaStreamDestroy.
  (void)impl_->streams.erase(s.id().slot, s.id().generation);
  return {};
}

result<std::string> host_backend::stream_name(stream_ref s) const {
  std::lock_guard<std::mutex> lock{impl_->mutex};
  auto found = impl_->find_stream_locked(s);
  if (!found) return found.error();
  return found.value()->name;
}

result<stream_priority> host_backend::priority(stream_ref s) const {
  std::lock_guard<std::mutex> lock{impl_->mutex};
  auto found = impl_->find_stream_locked(s);
  if (!found) return found.error();
  return found.value()->priority;
}

result<event> host_backend::create_event(event_kind kind) {
  if (kind != event_kind::regular && kind != event_kind::timing) {
    return status{errc::invalid_argument, "unknown event kind"};
  }
  std::lock_guard<std::mutex> lock{impl_->mutex};
  if (impl_->lost.load(std::memory_order_acquire)) return impl_->lost_status;
  auto key = impl_->events.insert(host_event{kind, nullptr});
  return event{*this, event_ref{make_id(key.slot, key.generation)}, kind};
}

status host_backend::destroy_event(event_ref e) {
  std::lock_guard<std::mutex> lock{impl_->mutex};
  auto found = impl_->find_event_locked(e);
  if (!found) return found.error();
  // Streams already waiting hold the completion itself, so destroying is safe at any time.
  (void)impl_->events.erase(e.id().slot, e.id().generation);
  return {};
}

status host_backend::record(event_ref e, stream_ref s) {
  stream_ptr target;
  auto point = std::make_shared<host_completion>();
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    if (impl_->lost.load(std::memory_order_acquire)) return impl_->lost_status;
    auto found_stream = impl_->find_stream_locked(s);
    if (!found_stream) return found_stream.error();
    auto found_event = impl_->find_event_locked(e);
    if (!found_event) return found_event.error();
    target = std::move(found_stream.value());
    found_event.value()->latest = point;
  }
  op o;
  o.type = op_type::record;
  o.point = std::move(point);
  impl_->push(target, std::move(o));
  return {};
}

status host_backend::wait(stream_ref s, event_ref e) {
  stream_ptr target;
  std::shared_ptr<host_completion> point;
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    if (impl_->lost.load(std::memory_order_acquire)) return impl_->lost_status;
    auto found_stream = impl_->find_stream_locked(s);
    if (!found_stream) return found_stream.error();
    auto found_event = impl_->find_event_locked(e);
    if (!found_event) return found_event.error();
    target = std::move(found_stream.value());
    point = found_event.value()->latest;  // binds to the most recent record, now
  }
  if (!point) return {};  // never recorded: CUDA does not wait
  op o;
  o.type = op_type::wait;
  o.point = std::move(point);
  o.what = "event " + to_string(e.id());
  impl_->push(target, std::move(o));
  return {};
}

query_result host_backend::query(event_ref e) {
  std::shared_ptr<host_completion> point;
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    if (impl_->lost.load(std::memory_order_acquire)) {
      return {event_state::failed, impl_->lost_status};
    }
    auto found = impl_->find_event_locked(e);
    if (!found) return {event_state::failed, found.error()};
    point = found.value()->latest;
  }
  if (!point) return {event_state::ready, {}};
  if (!point->done()) return {event_state::not_ready, {}};
  status outcome = point->outcome();
  if (!outcome.ok()) return {event_state::failed, std::move(outcome)};
  return {event_state::ready, {}};
}

result<std::chrono::nanoseconds> host_backend::elapsed(event_ref start, event_ref end) {
  std::shared_ptr<host_completion> first;
  std::shared_ptr<host_completion> last;
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    if (impl_->lost.load(std::memory_order_acquire)) return impl_->lost_status;
    auto a = impl_->find_event_locked(start);
    if (!a) return a.error();
    auto b = impl_->find_event_locked(end);
    if (!b) return b.error();
    for (auto [found, ref] : {std::pair{a.value(), start}, std::pair{b.value(), end}}) {
      if (found->kind != event_kind::timing) {
        return status{errc::not_timing,
                      "event " + to_string(ref.id()) + " was created without timing"};
      }
      if (!found->latest) {
        return status{errc::not_recorded, "event " + to_string(ref.id()) + " was never recorded"};
      }
    }
    first = a.value()->latest;
    last = b.value()->latest;
  }
  for (auto& point : {first, last}) {
    if (!point->done()) {
      return status{errc::not_ready, "the work before a timing event has not finished"};
    }
    if (status outcome = point->outcome(); !outcome.ok()) return outcome;
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(last->when() - first->when());
}

result<buffer> host_backend::allocate(stream_ref s, std::size_t bytes) {
  auto target = impl_->usable_stream(s);
  if (!target) return target.error();
  return impl_->allocate(bytes, memory_kind::device, s);
}

result<buffer> host_backend::allocate_managed(std::size_t bytes) {
  if (auto loss = impl_->current_loss(); !loss.ok()) return loss;
  return impl_->allocate(bytes, memory_kind::managed, {});
}

result<buffer> host_backend::allocate_pinned(std::size_t bytes) {
  if (auto loss = impl_->current_loss(); !loss.ok()) return loss;
  return impl_->allocate(bytes, memory_kind::pinned_host, {});
}

status host_backend::free_async(stream_ref s, buffer& memory) {
  if (!memory.valid()) return {errc::invalid_argument, "free of an empty buffer"};
  if (memory.owner() != this) {
    return {errc::foreign_handle, "the buffer at " + detail::format_address(memory.data()) +
                                      " belongs to another backend"};
  }
  if (memory.kind() != memory_kind::device) {
    return {errc::invalid_argument, "stream-ordered free takes device memory; the buffer at " +
                                        detail::format_address(memory.data()) + " is " +
                                        std::string{to_string(memory.kind())} +
                                        " memory (destroy it instead)"};
  }
  // The stream first: if it is gone the caller must keep its buffer.
  auto target = impl_->usable_stream(s);
  if (!target) return target.error();
  auto marked = impl_->allocations.begin_free(memory.data());
  if (!marked) return marked.error();
  op o;
  o.type = op_type::free_memory;
  o.memory = memory.release();
  impl_->push(target.value(), std::move(o));
  return {};
}

status host_backend::release_memory(void* data, memory_kind kind, stream_ref s) {
  if (kind == memory_kind::device && !s.empty()) {
    // In the order of its stream, if that stream still exists; otherwise now.
    auto target = impl_->usable_stream(s);
    if (target) {
      auto marked = impl_->allocations.begin_free(data);
      if (!marked) return marked.error();
      op o;
      o.type = op_type::free_memory;
      o.memory = data;
      impl_->push(target.value(), std::move(o));
      return {};
    }
  }
  auto marked = impl_->allocations.begin_free(data);
  if (!marked) return marked.error();
  impl_->allocations.remove(data);
  free_host_memory(data);
  return {};
}

status host_backend::copy(stream_ref s, void* dst, const void* src, std::size_t bytes,
                          copy_kind direction) {
  if (auto bad = impl_->allocations.check_copy(dst, src, bytes, direction); !bad.ok()) {
    return bad;
  }
  op o;
  o.body = [dst, src, bytes] {
    std::memcpy(dst, src, bytes);
    return status{};
  };
  return impl_->submit(s, std::move(o));
}

status host_backend::fill(stream_ref s, void* dst, std::uint8_t value, std::size_t bytes) {
  if (auto bad = impl_->allocations.check(dst, bytes, detail::memory_side::device, "destination");
      !bad.ok()) {
    return bad;
  }
  op o;
  o.body = [dst, value, bytes] {
    std::memset(dst, value, bytes);
    return status{};
  };
  return impl_->submit(s, std::move(o));
}

status host_backend::prefetch(stream_ref s, const void* data, std::size_t bytes,
                              prefetch_target target_side) {
  if (target_side != prefetch_target::device && target_side != prefetch_target::host) {
    return {errc::invalid_argument, "unknown prefetch target"};
  }
  if (auto bad = impl_->allocations.check(data, bytes, detail::memory_side::device, "prefetch");
      !bad.ok()) {
    return bad;
  }
  auto owner = impl_->allocations.containing(data);
  if (!owner || owner->kind != memory_kind::managed) {
    return {errc::invalid_argument,
            "prefetch needs managed memory; " + detail::format_address(data) + " is " +
                (owner ? std::string{to_string(owner->kind)} + " memory" : "not managed memory")};
  }
  // Host memory is already where it is used: the prefetch only takes its place in order.
  op o;
  o.body = [] { return status{}; };
  return impl_->submit(s, std::move(o));
}

status host_backend::enqueue(stream_ref s, work_fn work) {
  if (!work) return {errc::invalid_argument, "empty work function"};
  op o;
  o.body = [work = std::move(work), context = launch_context{backend_kind::host, s, nullptr}] {
    return work(context);
  };
  return impl_->submit(s, std::move(o));
}

status host_backend::add_callback(stream_ref s, host_callback callback) {
  if (!callback) return {errc::invalid_argument, "empty host callback"};
  op o;
  o.type = op_type::callback;
  o.callback = std::move(callback);
  return impl_->submit(s, std::move(o));
}

result<timeline_point> host_backend::signal(stream_ref s) {
  auto target = impl_->usable_stream(s);
  if (!target) return target.error();
  timeline_point value = 0;
  impl_->push_with(target.value(), [&] {
    // Reserved under the stream's mutex so that values follow queue order.
    op o;
    o.type = op_type::signal;
    o.value = value = target.value()->timeline->reserve();
    return o;
  });
  return value;
}

result<std::shared_ptr<timeline>> host_backend::timeline_of(stream_ref s) {
  std::lock_guard<std::mutex> lock{impl_->mutex};
  auto found = impl_->find_stream_locked(s);
  if (!found) return found.error();
  return std::shared_ptr<timeline>{found.value()->timeline};
}

status host_backend::synchronize(stream_ref s) {
  stream_ptr target;
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    auto found = impl_->find_stream_locked(s);
    if (!found) return found.error();
    target = std::move(found.value());
  }
  auto point = std::make_shared<host_completion>();
  op o;
  o.type = op_type::sync;
  o.point = point;
  impl_->push(target, std::move(o));
  point->wait();
  return point->outcome();
}

status host_backend::synchronize() {
  impl_->quiesce();
  return impl_->current_loss();
}

status host_backend::health() const { return impl_->current_loss(); }

status host_backend::reset() {
  impl_->quiesce();  // outstanding work ends first (fails fast when the device is lost)
  std::lock_guard<std::mutex> lock{impl_->mutex};
  impl_->streams.clear([](stream_ptr&) {});
  impl_->events.clear([](host_event&) {});
  impl_->every_stream.clear();
  impl_->free_everything();
  impl_->lost_status = {};
  impl_->lost.store(false, std::memory_order_seq_cst);
  return {};
}

result<void*> host_backend::native_handle(stream_ref s) const {
  auto found = impl_->usable_stream(s);
  if (!found) return found.error();
  return status{errc::not_supported, "the host backend has no native stream handles"};
}

result<void*> host_backend::native_handle(event_ref) const {
  return status{errc::not_supported, "the host backend has no native event handles"};
}

status host_backend::inject_failure(stream_ref s, std::string why) {
  op o;
  o.type = op_type::fail;
  o.what = std::move(why);
  return impl_->submit(s, std::move(o));
}

result<hang_release> host_backend::inject_hang(stream_ref s) {
  auto target = impl_->usable_stream(s);
  if (!target) return target.error();
  auto gate = std::make_shared<host_completion>();
  op o;
  o.type = op_type::gate;
  o.point = gate;
  impl_->push(target.value(), std::move(o));
  return hang_release{std::move(gate)};
}

status host_backend::inject_delay(stream_ref s, std::chrono::nanoseconds duration) {
  if (duration.count() < 0) return {errc::invalid_argument, "negative delay"};
  op o;
  o.type = op_type::delay;
  o.duration = duration;
  return impl_->submit(s, std::move(o));
}

status host_backend::inject_device_fault(stream_ref s, std::string why) {
  op o;
  o.type = op_type::device_fault;
  o.what = std::move(why);
  return impl_->submit(s, std::move(o));
}

void host_backend::lose_device(std::string why) { impl_->lose_device(std::move(why)); }

std::size_t host_backend::memory_in_use() const { return impl_->allocations.bytes_in_use(); }

}  // namespace cudactor::gpu
