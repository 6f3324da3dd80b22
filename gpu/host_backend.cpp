// The host backend: every member of the backend interface over the host engine, with the
// tables of streams and events and the argument checks each member needs. Past 600 lines
// because the interface is (some 40 members, each a few lines of checks); what stands on its
// own is apart: running the work (detail/host_engine), the timeline (host_timeline.cpp),
// memory (detail/allocation_table, detail/host_scratch), graphs (detail/host_work_graph).
#include "cudactor/gpu/host_backend.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include "cudactor/gpu/detail/allocation_table.hpp"
#include "cudactor/gpu/detail/handle_table.hpp"
#include "cudactor/gpu/detail/host_completion.hpp"
#include "cudactor/gpu/detail/host_engine.hpp"
#include "cudactor/gpu/detail/host_work_graph.hpp"

namespace cudactor::gpu {
namespace {

using detail::host_completion;
using detail::host_op_kind;
using detail::op;
using detail::stream_ptr;

struct host_event {
  event_kind kind = event_kind::regular;
  std::shared_ptr<host_completion> latest;  // null until first recorded
};

unsigned default_workers() { return std::clamp(std::thread::hardware_concurrency(), 2u, 4u); }

}  // namespace

// ------------------------------------------------------------------------------------------

// The backend's tables and argument checks; running the work is the engine's.
struct host_backend::impl {
  impl(host_backend& self, host_backend_options opts)
      : owner(self),
        options(std::move(opts)),
        engine(std::make_shared<detail::host_engine>(
            options.workers == 0 ? default_workers() : options.workers, options.idle_spin,
            scratch)) {
    info.kind = backend_kind::host;
    info.name = options.name + " (" + std::to_string(engine->workers()) + " workers)";
    info.total_memory = options.memory_limit;
    info.greatest_priority = 0;  // the engine's lanes: 0 is served first
    info.least_priority = 2;
  }

  host_backend& owner;
  host_backend_options options;
  device_info info;
  // Before engine, which refers to it; shared with the works' scratch, which a graph may hold
  // past the backend (gpu/detail/host_scratch.hpp).
  detail::host_scratch_budget scratch{std::make_shared<detail::allocation_table>(true),
                                      options.memory_limit};
  detail::allocation_table& allocations = *scratch.table;

  mutable std::mutex mutex;  // guards the tables
  detail::handle_table<stream_ptr> streams;
  detail::handle_table<host_event> events;

  // Shared: parked streams' resume callbacks hold it weakly and may outlive the backend.
  std::shared_ptr<detail::host_engine> engine;

  // --- lookups (mutex held) ----------------------------------------------------------------

  result<stream_ptr> find_stream_locked(stream_ref s) const {
    if (auto bad = owner.check_handle(s.id(), "stream"); !bad.ok()) return bad;
    const stream_ptr* found = streams.find(s.id().slot, s.id().generation);
    if (found == nullptr) {
      return status{status_code::invalid_handle, "stream " + to_string(s.id()) + " was destroyed"};
    }
    return *found;
  }

  result<host_event*> find_event_locked(event_ref e) {
    if (auto bad = owner.check_handle(e.id(), "event"); !bad.ok()) return bad;
    host_event* found = events.find(e.id().slot, e.id().generation);
    if (found == nullptr) {
      return status{status_code::invalid_handle, "event " + to_string(e.id()) + " was destroyed"};
    }
    return found;
  }

  // The stream, if it exists and the device is not lost.
  result<stream_ptr> usable_stream(stream_ref s) const {
    // The flag first: reading the loss itself takes the engine's lock, on every submit.
    if (engine->lost()) {
      if (auto loss = engine->loss(); !loss.ok()) return loss;
    }
    std::lock_guard<std::mutex> lock{mutex};
    return find_stream_locked(s);
  }

  // Queues `o` on `s` if the stream exists and the device is not lost.
  status submit(stream_ref s, op o) {
    auto target = usable_stream(s);
    if (!target) return target.error();
    engine->push(target.value(), std::move(o));
    return {};
  }

  // wait_point (kind wait: a failure is carried) and order_after (kind order: it is not).
  status wait_for_point(stream_ref s, stream_ref other, timeline_point value, host_op_kind kind) {
    stream_ptr target;
    stream_ptr awaited;
    {
      std::lock_guard<std::mutex> lock{mutex};
      if (auto loss = engine->loss(); !loss.ok()) return loss;
      auto found_stream = find_stream_locked(s);
      if (!found_stream) return found_stream.error();
      auto found_other = find_stream_locked(other);
      if (!found_other) return found_other.error();
      target = std::move(found_stream.value());
      awaited = std::move(found_other.value());
    }
    if (value == 0) return {};
    if (value > awaited->timeline->signalled()) {
      return {status_code::invalid_argument, target->label + " cannot wait for point " +
                                          std::to_string(value) + " of " + awaited->label +
                                          ": not signalled yet (newest " +
                                          std::to_string(awaited->timeline->signalled()) + ")"};
    }
    auto point = engine->point_of(awaited, value);
    // Reached cleanly (or, for an order, reached at all): nothing to wait for.
    if (point->done() && (kind == host_op_kind::order || point->outcome().ok())) return {};
    op o;
    o.type = kind;
    o.point = std::move(point);
    o.value = value;
    o.awaited = awaited;
    engine->push(target, std::move(o));
    return {};
  }

  // The bound on values in flight per stream: an option of 0 means 1, as on CUDA.
  [[nodiscard]] std::size_t in_flight_bound() const noexcept {
    return std::max<std::size_t>(options.max_in_flight, 1);
  }

  // Refuses a signal past the bound, as the CUDA timeline does. Only the stream's one issuer
  // signals, and completions only lower the count, so the check needs no lock.

  status room_for_signal(detail::host_stream& target) {
    const timeline_point signalled = target.timeline->signalled();
    const timeline_point completed = target.timeline->completed();
    const std::uint64_t in_flight = signalled > completed ? signalled - completed : 0;
    if (in_flight < in_flight_bound()) return {};
    return {status_code::resource_exhausted, "timeline of " + target.label + " has " +
                                          std::to_string(in_flight) +
                                          " values in flight, its limit (max_in_flight)"};
  }

  void free_everything() {
    for (auto& entry : allocations.take_all()) {
      detail::free_host_memory(reinterpret_cast<void*>(entry.first));
    }
  }

  result<buffer> allocate(std::size_t bytes, memory_kind kind, stream_ref s) {
    if (bytes == 0) return status{status_code::invalid_argument, "allocation of zero bytes"};
    if (!allocations.try_reserve(bytes, options.memory_limit)) {
      return status{status_code::out_of_memory,
                    "cannot allocate " + std::to_string(bytes) + " bytes of " +
                        std::string{to_string(kind)} + " memory on '" + options.name +
                        "': " + std::to_string(allocations.bytes_in_use()) + " of " +
                        std::to_string(options.memory_limit) + " bytes in use"};
    }
    void* data = ::operator new(bytes, detail::host_memory_alignment, std::nothrow);
    if (data == nullptr) {
      allocations.unreserve(bytes);
      return status{status_code::out_of_memory,
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
    : impl_(std::make_unique<impl>(*this, std::move(options))) {}

host_backend::~host_backend() {
  impl_->engine->shutdown("host backend '" + impl_->options.name + "' was destroyed");
  impl_->free_everything();
}

const device_info& host_backend::device() const noexcept { return impl_->info; }

unsigned host_backend::workers() const noexcept { return impl_->engine->workers(); }

std::size_t host_backend::max_in_flight() const noexcept { return impl_->in_flight_bound(); }

result<stream> host_backend::create_stream(const stream_options& options) {
  if (auto loss = impl_->engine->loss(); !loss.ok()) return loss;
  std::lock_guard<std::mutex> lock{impl_->mutex};
  // The slot names the stream, so take it first and fill it in.
  auto key = impl_->streams.insert(nullptr);
  const handle_id id = make_id(key.slot, key.generation);
  *impl_->streams.find(key.slot, key.generation) = impl_->engine->open_stream(
      id, options.name.empty() ? "stream-" + std::to_string(key.slot) : options.name,
      options.priority);
  return stream{*this, stream_ref{id}};
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
    return status{status_code::invalid_argument, "unknown event kind"};
  }
  std::lock_guard<std::mutex> lock{impl_->mutex};
  if (auto loss = impl_->engine->loss(); !loss.ok()) return loss;
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
    if (auto loss = impl_->engine->loss(); !loss.ok()) return loss;
    auto found_stream = impl_->find_stream_locked(s);
    if (!found_stream) return found_stream.error();
    auto found_event = impl_->find_event_locked(e);
    if (!found_event) return found_event.error();
    target = std::move(found_stream.value());
    found_event.value()->latest = point;
  }
  op o;
  o.type = host_op_kind::record;
  o.point = std::move(point);
  impl_->engine->push(target, std::move(o));
  return {};
}

status host_backend::wait(stream_ref s, event_ref e) {
  stream_ptr target;
  std::shared_ptr<host_completion> point;
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    if (auto loss = impl_->engine->loss(); !loss.ok()) return loss;
    auto found_stream = impl_->find_stream_locked(s);
    if (!found_stream) return found_stream.error();
    auto found_event = impl_->find_event_locked(e);
    if (!found_event) return found_event.error();
    target = std::move(found_stream.value());
    point = found_event.value()->latest;  // binds to the most recent record, now
  }
  if (!point) return {};  // never recorded: CUDA does not wait
  op o;
  o.type = host_op_kind::wait;
  o.point = std::move(point);
  o.what = "event " + to_string(e.id());
  impl_->engine->push(target, std::move(o));
  return {};
}

status host_backend::wait_point(stream_ref s, stream_ref other, timeline_point value) {
  return impl_->wait_for_point(s, other, value, host_op_kind::wait);
}

status host_backend::order_after(stream_ref s, stream_ref other, timeline_point value) {
  return impl_->wait_for_point(s, other, value, host_op_kind::order);
}

query_result host_backend::query(event_ref e) {
  std::shared_ptr<host_completion> point;
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    if (auto loss = impl_->engine->loss(); !loss.ok()) return {event_state::failed, loss};
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
    if (auto loss = impl_->engine->loss(); !loss.ok()) return loss;
    auto a = impl_->find_event_locked(start);
    if (!a) return a.error();
    auto b = impl_->find_event_locked(end);
    if (!b) return b.error();
    for (auto [found, ref] : {std::pair{a.value(), start}, std::pair{b.value(), end}}) {
      if (found->kind != event_kind::timing) {
        return status{status_code::not_timing,
                      "event " + to_string(ref.id()) + " was created without timing"};
      }
      if (!found->latest) {
        return status{status_code::not_recorded, "event " + to_string(ref.id()) + " was never recorded"};
      }
    }
    first = a.value()->latest;
    last = b.value()->latest;
  }
  for (auto& point : {first, last}) {
    if (!point->done()) {
      return status{status_code::not_ready, "the work before a timing event has not finished"};
    }
    if (status outcome = point->outcome(); !outcome.ok()) return outcome;
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(last->when() - first->when());
}

// Arguments are checked before the stream or the device, as on CUDA: allocating zero bytes is
// invalid_argument whatever the stream's or the device's state.
result<buffer> host_backend::allocate(stream_ref s, std::size_t bytes) {
  if (bytes == 0) return status{status_code::invalid_argument, "allocation of zero bytes"};
  auto target = impl_->usable_stream(s);
  if (!target) return target.error();
  return impl_->allocate(bytes, memory_kind::device, s);
}

result<buffer> host_backend::allocate_managed(std::size_t bytes) {
  if (bytes == 0) return status{status_code::invalid_argument, "allocation of zero bytes"};
  if (auto loss = impl_->engine->loss(); !loss.ok()) return loss;
  return impl_->allocate(bytes, memory_kind::managed, {});
}

result<buffer> host_backend::allocate_pinned(std::size_t bytes) {
  if (bytes == 0) return status{status_code::invalid_argument, "allocation of zero bytes"};
  if (auto loss = impl_->engine->loss(); !loss.ok()) return loss;
  return impl_->allocate(bytes, memory_kind::pinned_host, {});
}

status host_backend::free_async(stream_ref s, buffer& memory) {
  if (!memory.valid()) return {status_code::invalid_argument, "free of an empty buffer"};
  if (memory.owner() != this) {
    return {status_code::foreign_handle, "the buffer at " + detail::format_address(memory.data()) +
                                      " belongs to another backend"};
  }
  if (memory.kind() != memory_kind::device) {
    return {status_code::invalid_argument, "stream-ordered free takes device memory; the buffer at " +
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
  o.type = host_op_kind::free_memory;
  o.memory = memory.release();
  impl_->engine->push(target.value(), std::move(o));
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
      o.type = host_op_kind::free_memory;
      o.memory = data;
      impl_->engine->push(target.value(), std::move(o));
      return {};
    }
  }
  auto marked = impl_->allocations.begin_free(data);
  if (!marked) return marked.error();
  impl_->allocations.remove(data);
  detail::free_host_memory(data);
  return {};
}

status host_backend::copy(stream_ref s, void* dst, const void* src, std::size_t bytes,
                          copy_kind direction) {
  if (auto bad = impl_->allocations.check_copy(dst, src, bytes, direction); !bad.ok()) {
    return bad;
  }
  // CUDA refuses a copy from or to pageable host memory (it would block the calling thread):
  // so does the host backend, or a program that passes here would fail on its first GPU. The
  // host side must lie in pinned or managed memory of this backend (it has no
  // cudaHostRegister).
  if (direction != copy_kind::device_to_device) {
    const void* host = direction == copy_kind::host_to_device ? src : dst;
    if (!impl_->allocations.containing(host)) {
      return {status_code::invalid_argument,
              "copying " + std::to_string(bytes) + " bytes " + std::string{to_string(direction)} +
                  ": the host memory at " + detail::format_address(host) +
                  " is pageable, and a copy from or to it blocks the calling thread; use "
                  "allocate_pinned()"};
    }
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
    return {status_code::invalid_argument, "unknown prefetch target"};
  }
  if (auto bad = impl_->allocations.check(data, bytes, detail::memory_side::device, "prefetch");
      !bad.ok()) {
    return bad;
  }
  auto owner = impl_->allocations.containing(data);
  if (!owner || owner->kind != memory_kind::managed) {
    return {status_code::invalid_argument,
            "prefetch needs managed memory; " + detail::format_address(data) + " is " +
                (owner ? std::string{to_string(owner->kind)} + " memory" : "not managed memory")};
  }
  // Host memory is already where it is used: the prefetch only takes its place in order.
  op o;
  o.body = [] { return status{}; };
  return impl_->submit(s, std::move(o));
}

status host_backend::enqueue(stream_ref s, work_fn work) {
  if (!work) return {status_code::invalid_argument, "empty work function"};
  op o;
  o.work = std::move(work);
  o.stream = s;
  return impl_->submit(s, std::move(o));
}

result<std::unique_ptr<work_graph>> host_backend::build_graph(std::vector<graph_node> nodes) {
  if (auto bad = check_graph_nodes(nodes); !bad.ok()) return bad;
  if (auto lost = impl_->engine->loss(); !lost.ok()) return lost;
  return std::unique_ptr<work_graph>{
      std::make_unique<detail::host_work_graph>(std::move(nodes), impl_->scratch)};
}

status host_backend::add_callback(stream_ref s, host_callback callback) {
  if (!callback) return {status_code::invalid_argument, "empty host callback"};
  op o;
  o.type = host_op_kind::callback;
  o.callback = std::move(callback);
  return impl_->submit(s, std::move(o));
}

result<timeline_point> host_backend::signal(stream_ref s) {
  auto target = impl_->usable_stream(s);
  if (!target) return target.error();
  if (auto full = impl_->room_for_signal(*target.value()); !full.ok()) return full;
  timeline_point value = 0;
  impl_->engine->push_with(target.value(), [&] {
    // Reserved under the stream's mutex so that values follow queue order.
    op o;
    o.type = host_op_kind::signal;
    o.value = value = target.value()->timeline->reserve();
    return o;
  });
  return value;
}

signalled_work host_backend::enqueue_signalled(stream_ref s, work_fn work) {
  if (!work) {
    return signalled_work{status{status_code::invalid_argument, "empty work function"}, signal(s)};
  }
  auto target = impl_->usable_stream(s);
  if (!target) return signalled_work{target.error(), target.error()};
  if (auto full = impl_->room_for_signal(*target.value()); !full.ok()) {
    return signalled_work{full, full};  // neither the work nor its point went on the stream
  }
  timeline_point value = 0;
  impl_->engine->push_with(target.value(), [&] {
    op o;
    o.work = std::move(work);
    o.stream = s;
    o.then_signal = true;
    o.value = value = target.value()->timeline->reserve();  // in queue order, as signal()
    return o;
  });
  return signalled_work{status{}, value};
}

bool host_backend::begin_batch() noexcept { return impl_->engine->begin_batch(); }

void host_backend::end_batch() noexcept { impl_->engine->end_batch(); }

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
  o.type = host_op_kind::sync;
  o.point = point;
  impl_->engine->push(target, std::move(o));
  impl_->engine->note_host_wait();
  point->wait();
  return point->outcome();
}

status host_backend::synchronize() {
  impl_->engine->note_host_wait();
  impl_->engine->quiesce();
  return impl_->engine->loss();
}

status host_backend::health() const { return impl_->engine->loss(); }

status host_backend::reset() {
  impl_->engine->note_host_wait();
  impl_->engine->quiesce();  // outstanding work ends first (fails fast when the device is lost)
  std::lock_guard<std::mutex> lock{impl_->mutex};
  impl_->streams.clear([](stream_ptr&) {});
  impl_->events.clear([](host_event&) {});
  impl_->free_everything();
  impl_->engine->recover();
  return {};
}

// The reference is checked first, as on CUDA (which answers a live handle even after the
// device is lost): a stale or foreign one is named; a good one has no native handle here.
result<void*> host_backend::native_handle(stream_ref s) const {
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    if (auto found = impl_->find_stream_locked(s); !found) return found.error();
  }
  return status{status_code::not_supported, "the host backend has no native stream handles"};
}

result<void*> host_backend::native_handle(event_ref e) const {
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    if (auto found = impl_->find_event_locked(e); !found) return found.error();
  }
  return status{status_code::not_supported, "the host backend has no native event handles"};
}

status host_backend::inject_failure(stream_ref s, std::string why) {
  op o;
  o.type = host_op_kind::fail;
  o.what = std::move(why);
  return impl_->submit(s, std::move(o));
}

result<hang_release> host_backend::inject_hang(stream_ref s) {
  auto target = impl_->usable_stream(s);
  if (!target) return target.error();
  auto gate = std::make_shared<host_completion>();
  op o;
  o.type = host_op_kind::gate;
  o.point = gate;
  impl_->engine->push(target.value(), std::move(o));
  return hang_release{std::move(gate)};
}

status host_backend::inject_delay(stream_ref s, std::chrono::nanoseconds duration) {
  if (duration.count() < 0) return {status_code::invalid_argument, "negative delay"};
  op o;
  o.type = host_op_kind::delay;
  o.duration = duration;
  return impl_->submit(s, std::move(o));
}

status host_backend::inject_device_fault(stream_ref s, std::string why) {
  op o;
  o.type = host_op_kind::device_fault;
  o.what = std::move(why);
  return impl_->submit(s, std::move(o));
}

void host_backend::lose_device(std::string why) { impl_->engine->lose_device(std::move(why)); }

std::size_t host_backend::memory_in_use() const { return impl_->allocations.bytes_in_use(); }

std::uint64_t host_backend::host_waits() const noexcept { return impl_->engine->host_waits(); }

}  // namespace cudactor::gpu
