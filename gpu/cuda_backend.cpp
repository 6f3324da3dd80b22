// The CUDA backend: every member of the backend interface over the runtime API, with the
// argument checks and the loss handling each needs, and the failures of work that failed at
// launch carried to the stream's next point and event as the host backend carries them. Long
// (some 800 lines) because the interface is; what stands on its own is apart: the timeline
// (cuda_timeline.cpp), freeing after a destroyed stream (cuda_release_stream.cpp), device selection
// and driver versions (cuda_device.cpp), error classes (cuda_status.cpp).
#include "cudactor/gpu/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "cudactor/gpu/detail/allocation_table.hpp"
#include "cudactor/gpu/detail/cuda_device.hpp"
#include "cudactor/gpu/detail/cuda_release_stream.hpp"
#include "cudactor/gpu/detail/cuda_scratch.hpp"
#include "cudactor/gpu/detail/cuda_status.hpp"
#include "cudactor/gpu/detail/cuda_timeline.hpp"
#include "cudactor/gpu/detail/cuda_work_graph.hpp"
#include "cudactor/gpu/detail/handle_table.hpp"

namespace cudactor::gpu {
namespace {

using detail::from_cuda;

struct cuda_stream_entry {
  cudaStream_t handle = nullptr;
  std::string name;
  std::string label;  // "stream 'name' (#3.1)"
  stream_priority priority = stream_priority::normal;
  std::shared_ptr<detail::cuda_timeline> timeline;
};

// Set by record() under the table's shared lock, read concurrently by elapsed(): atomic.
// Movable so that the entry fits the handle table.
struct recorded_flag {
  std::atomic<bool> value{false};
  recorded_flag() = default;
  recorded_flag(recorded_flag&& other) noexcept : value(other.value.load()) {}
  recorded_flag& operator=(recorded_flag&& other) noexcept {
    value.store(other.value.load());
    return *this;
  }
};

struct cuda_event_entry {
  cudaEvent_t handle = nullptr;
  event_kind kind = event_kind::regular;
  recorded_flag recorded;
  // The launch failure its latest record came after (cuda_timeline::take_event_failure), or
  // empty. Set by record() and read by query(), wait() and elapsed() under the table's shared
  // lock: read and written atomically.
  std::shared_ptr<const status> failure;

  [[nodiscard]] std::shared_ptr<const status> failed() const {
    return std::atomic_load_explicit(&failure, std::memory_order_acquire);
  }
};

}  // namespace

result<int> cuda_device_count() {
  int count = 0;
  const cudaError_t answer = cudaGetDeviceCount(&count);
  if (answer != cudaSuccess) {
    (void)cudaGetLastError();  // the failed probe must not surface as a later launch error
    return detail::explain_no_device(answer, detail::query_versions());
  }
  return count;
}

struct cuda_backend::impl {
  int ordinal = 0;
  std::size_t max_in_flight = cuda_default_max_in_flight;
  device_info info;
  int least_priority = 0;
  int greatest_priority = 0;

  mutable std::shared_mutex mutex;  // tables: shared for use, exclusive for create/destroy
  detail::handle_table<cuda_stream_entry> streams;
  detail::handle_table<cuda_event_entry> events;
  detail::allocation_table allocations{false};

  mutable std::mutex lost_mutex;
  std::atomic<bool> lost{false};
  status lost_status;

  // Every timeline this backend made, its streams' gone or not: a poller may keep one past
  // its stream and past the backend. Each is poisoned when the device is lost and abandoned
  // when the backend closes, so none calls CUDA afterwards.
  std::mutex timelines_mutex;
  std::vector<std::weak_ptr<detail::cuda_timeline>> timelines;

  // check(), for the parts that report through it.
  const detail::cuda_checker checker{
      [this](cudaError_t answer, std::string_view doing) { return check(answer, doing); }};

  // Memory whose stream is gone is freed there, after the end of that stream's work.
  detail::cuda_release_stream released{checker};

  cuda_backend* owner = nullptr;

  [[nodiscard]] status activate() const { return detail::select_device(ordinal); }

  void track(const std::shared_ptr<detail::cuda_timeline>& made) {
    std::lock_guard<std::mutex> lock{timelines_mutex};
    timelines.erase(std::remove_if(timelines.begin(), timelines.end(),
                                   [](const auto& weak) { return weak.expired(); }),
                    timelines.end());
    timelines.push_back(made);
  }

  // A copy from or to pageable host memory is synchronous for the calling thread (the driver
  // stages it): refused, so that no actor thread ever blocks in one.
  status check_pinned(const void* host, std::size_t bytes, copy_kind direction,
                      const std::string& label) {
    if (auto mine = allocations.containing(host); mine && mine->kind != memory_kind::device) {
      return {};
    }
    cudaPointerAttributes attributes{};
    const std::string doing = "copying " + std::to_string(bytes) + " bytes " +
                              std::string{to_string(direction)} + " on " + label;
    if (auto bad = check(cudaPointerGetAttributes(&attributes, host), doing); !bad.ok()) {
      return bad;
    }
    if (attributes.type == cudaMemoryTypeUnregistered) {
      return {status_code::invalid_argument,
              doing + ": the host memory at " + detail::format_address(host) +
                  " is pageable, and a copy from or to it blocks the calling thread; use "
                  "allocate_pinned() or register it with cudaHostRegister"};
    }
    return {};
  }

  template <class F>
  void for_each_timeline(F&& f) {
    std::lock_guard<std::mutex> lock{timelines_mutex};
    for (auto& weak : timelines) {
      if (auto alive = weak.lock()) f(*alive);
    }
  }

  // Every CUDA answer passes through here: a sticky one loses the device for everyone.
  status check(cudaError_t answer, std::string_view doing) {
    if (answer == cudaSuccess) return {};
    status why = from_cuda(answer, doing);
    if (why.code() == status_code::device_lost) mark_lost(why);
    if (answer == cudaErrorNotReady) detail::clear_not_ready();
    return why;
  }

  void mark_lost(const status& why) {
    status lost_now;
    {
      std::lock_guard<std::mutex> lock{lost_mutex};
      if (lost.load(std::memory_order_acquire)) return;
      lost_status = status{status_code::device_lost, why.message()};
      lost.store(true, std::memory_order_release);
      lost_now = lost_status;
    }
    // Every stream's pending values fail now, and no timeline asks the lost context again.
    for_each_timeline([&](detail::cuda_timeline& t) { t.poison(lost_now); });
  }

  [[nodiscard]] status loss() const {
    if (!lost.load(std::memory_order_acquire)) return {};
    std::lock_guard<std::mutex> lock{lost_mutex};
    return lost_status;
  }

  // Ready to use the device: selected and not lost.
  [[nodiscard]] status usable() const {
    if (auto why = loss(); !why.ok()) return why;
    return activate();
  }

  [[nodiscard]] int native_priority(stream_priority p) const {
    switch (p) {
      case stream_priority::high: return greatest_priority;
      case stream_priority::low: return least_priority;
      case stream_priority::normal: break;
    }
    // Numerically lower is higher priority; the middle, rounded towards "least".
    return (least_priority + greatest_priority) / 2;
  }

  // Mutex held (shared or exclusive).
  result<cuda_stream_entry*> find_stream(stream_ref s) {
    if (auto bad = owner->check_handle(s.id(), "stream"); !bad.ok()) return bad;
    cuda_stream_entry* found = streams.find(s.id().slot, s.id().generation);
    if (found == nullptr) {
      return status{status_code::invalid_handle, "stream " + to_string(s.id()) + " was destroyed"};
    }
    return found;
  }

  // Runs f(entry) with the stream found and the table locked for use; refuses first when the
  // device is lost or cannot be selected. f returns a status or a result<T>.
  template <class F>
  auto with_stream(stream_ref s, F&& f) -> decltype(f(std::declval<cuda_stream_entry&>())) {
    if (auto bad = usable(); !bad.ok()) return bad;
    std::shared_lock<std::shared_mutex> lock{mutex};
    auto target = find_stream(s);
    if (!target) return target.error();
    return f(*target.value());
  }

  // wait_point (carry_failure) and order_after (not).
  status wait_for_point(stream_ref s, stream_ref other, timeline_point value, bool carry_failure) {
    return with_stream(s, [&](cuda_stream_entry& target) -> status {
      auto awaited = find_stream(other);
      if (!awaited) return awaited.error();
      if (value == 0) return {};
      status carried;
      auto waited = awaited.value()->timeline->enqueue_wait(target.handle, value, target.label,
                                                            carry_failure, &carried);
      if (waited.code() == status_code::device_lost) mark_lost(waited);
      // The work waited for failed at launch: the waiter's next point fails with it, as
      // backend::wait_point says (the host backend's wait fails it when the stream gets there).
      if (waited.ok() && !carried.ok() && target.timeline) target.timeline->fail_next(carried);
      return waited;
    });
  }

  // The handle and label of a stream, for calls made without holding the table lock.
  result<std::pair<cudaStream_t, std::string>> snapshot(stream_ref s) {
    return with_stream(s, [](cuda_stream_entry& entry) {
      return result<std::pair<cudaStream_t, std::string>>{std::pair{entry.handle, entry.label}};
    });
  }

  // What enqueue needs of a stream, without copying its label (named only on failure).
  result<std::pair<cudaStream_t, std::shared_ptr<detail::cuda_timeline>>> launch_target(
      stream_ref s) {
    return with_stream(s, [](cuda_stream_entry& entry) {
      return result<std::pair<cudaStream_t, std::shared_ptr<detail::cuda_timeline>>>{
          std::pair{entry.handle, entry.timeline}};
    });
  }

  // Runs `work` on `handle` without the table lock: it is user code and may take its time
  // launching. A stream destroyed concurrently with its own launches is a race in CUDA too.
  status launch(stream_ref s, cudaStream_t handle, detail::cuda_timeline& timeline, work_fn& work) {
    (void)cudaGetLastError();  // start from a clean slate so the check below is about this work
    status outcome;
    detail::cuda_run_scratch scratch{handle, checker, info.total_memory};
    try {
      outcome = work(launch_context{backend_kind::cuda, s, static_cast<void*>(handle), false,
                                    &scratch, &timeline});
    } catch (const std::exception& e) {
      outcome = status{status_code::op_failed, std::string{"threw: "} + e.what()};
    } catch (...) {
      outcome = status{status_code::op_failed, "threw a non-standard exception"};
    }
    const cudaError_t launched = cudaGetLastError();
    // Freed after what the work launched, in stream order: nothing waits for it here.
    const status given = scratch.give_back();
    if (launched == cudaSuccess && outcome.ok() && given.ok()) return {};
    const std::string label = label_of(s);
    status failed;
    if (launched != cudaSuccess) {
      status why = check(launched, "launching work on " + label);
      if (why.code() == status_code::device_lost) return why;  // CUDA says so: marked lost
      failed = status{status_code::op_failed, why.message()};
    } else if (outcome.ok()) {
      if (given.code() == status_code::device_lost) return given;
      failed = status{status_code::op_failed, "work on " + label + ": " + given.message()};
    } else {
      // The work's own answer, whatever its code (device_lost too: only CUDA can say the
      // device is lost), fails its operation, as on the host backend.
      failed = status{status_code::op_failed, "work on " + label + " failed: " + outcome.to_string()};
    }
    // The stream's next point fails with it, as on the host backend, so that whoever reads
    // the timeline (a barrier, a wait_point on another stream) learns of it, not only this
    // caller.
    timeline.fail_next(failed);
    return failed;
  }

  std::string label_of(stream_ref s) {
    std::shared_lock<std::shared_mutex> lock{mutex};
    auto target = find_stream(s);
    return target ? target.value()->label : "stream " + to_string(s.id());
  }

  result<cuda_event_entry*> find_event(event_ref e) {
    if (auto bad = owner->check_handle(e.id(), "event"); !bad.ok()) return bad;
    cuda_event_entry* found = events.find(e.id().slot, e.id().generation);
    if (found == nullptr) {
      return status{status_code::invalid_handle, "event " + to_string(e.id()) + " was destroyed"};
    }
    return found;
  }
};

cuda_backend::cuda_backend(int device_ordinal, std::size_t max_in_flight)
    : impl_(std::make_unique<impl>()) {
  impl_->ordinal = device_ordinal;
  impl_->max_in_flight = max_in_flight == 0 ? 1 : max_in_flight;
  impl_->owner = this;
}

result<std::unique_ptr<cuda_backend>> cuda_backend::open(int device_ordinal,
                                                         std::size_t max_in_flight) {
  auto count = cuda_device_count();
  if (!count) return count.error();
  if (count.value() == 0) return status{status_code::no_device, "no CUDA device"};
  if (device_ordinal < 0 || device_ordinal >= count.value()) {
    return status{status_code::invalid_argument, "CUDA device " + std::to_string(device_ordinal) +
                                              " does not exist (" + std::to_string(count.value()) +
                                              " present)"};
  }
  std::unique_ptr<cuda_backend> self{new cuda_backend(device_ordinal, max_in_flight)};
  impl& state = *self->impl_;
  if (auto bad = state.activate(); !bad.ok()) return bad;
  // Creates the primary context now, so the first real call does not pay for it.
  if (auto bad = from_cuda(cudaFree(nullptr), "initialising the CUDA context"); !bad.ok()) {
    return bad;
  }
  cudaDeviceProp props{};
  if (auto bad =
          from_cuda(cudaGetDeviceProperties(&props, device_ordinal), "reading device properties");
      !bad.ok()) {
    return bad;
  }
  if (auto bad = from_cuda(
          cudaDeviceGetStreamPriorityRange(&state.least_priority, &state.greatest_priority),
          "reading the stream priority range");
      !bad.ok()) {
    return bad;
  }
  // Keep freed stream-ordered memory in the pool instead of returning it on every
  // synchronize: reuse without driver round trips is the point of cudaMallocAsync.
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, device_ordinal) == cudaSuccess) {
    std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
    (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  }
  (void)cudaGetLastError();  // a pool without the attribute must not leave an error behind
  state.info.kind = backend_kind::cuda;
  state.info.name = props.name;
  state.info.ordinal = device_ordinal;
  state.info.total_memory = props.totalGlobalMem;
  state.info.compute_capability_major = props.major;
  state.info.compute_capability_minor = props.minor;
  state.info.greatest_priority = state.greatest_priority;
  state.info.least_priority = state.least_priority;
  return self;
}

cuda_backend::~cuda_backend() {
  if (impl_->activate().ok()) (void)cudaDeviceSynchronize();
  const status closed{status_code::invalid_handle, "the CUDA backend was closed"};
  impl_->for_each_timeline([&](detail::cuda_timeline& t) { t.abandon(closed); });
  std::unique_lock<std::shared_mutex> lock{impl_->mutex};
  impl_->streams.clear([](cuda_stream_entry& s) { (void)cudaStreamDestroy(s.handle); });
  impl_->events.clear([](cuda_event_entry& e) { (void)cudaEventDestroy(e.handle); });
  for (auto& entry : impl_->allocations.take_all()) {
    void* data = reinterpret_cast<void*>(entry.first);
    if (entry.second.kind == memory_kind::pinned_host) {
      (void)cudaFreeHost(data);
    } else {
      (void)cudaFree(data);
    }
  }
}

const device_info& cuda_backend::device() const noexcept { return impl_->info; }

std::size_t cuda_backend::max_in_flight() const noexcept { return impl_->max_in_flight; }

// --- streams ----------------------------------------------------------------------------

result<stream> cuda_backend::create_stream(const stream_options& options) {
  if (auto bad = impl_->usable(); !bad.ok()) return bad;
  cudaStream_t handle = nullptr;
  const int native = impl_->native_priority(options.priority);
  if (auto bad = impl_->check(cudaStreamCreateWithPriority(&handle, cudaStreamNonBlocking, native),
                              "creating a stream");
      !bad.ok()) {
    return bad;
  }
  std::unique_lock<std::shared_mutex> lock{impl_->mutex};
  auto key = impl_->streams.insert(cuda_stream_entry{handle, {}, {}, options.priority, nullptr});
  cuda_stream_entry& entry = *impl_->streams.find(key.slot, key.generation);
  const handle_id id = make_id(key.slot, key.generation);
  entry.name = options.name.empty() ? "stream-" + std::to_string(key.slot) : options.name;
  entry.label = "stream '" + entry.name + "' (" + to_string(id) + ")";
  entry.timeline = std::make_shared<detail::cuda_timeline>(handle, entry.name, impl_->ordinal,
                                                           impl_->max_in_flight);
  impl_->track(entry.timeline);
  return stream{*this, stream_ref{id}};
}

status cuda_backend::destroy_stream(stream_ref s) {
  // The end of the stream's work, for memory allocated on it and freed after it is gone.
  // Recorded before the table is locked: the record blocks while the stream's queue is full.
  status retired;
  if (auto target = impl_->snapshot(s)) {
    retired = impl_->released.retire(s.id().value(), target.value().first, target.value().second);
  }
  std::unique_lock<std::shared_mutex> lock{impl_->mutex};
  auto found = impl_->find_stream(s);
  if (!found) return found.error();
  auto entry = impl_->streams.erase(s.id().slot, s.id().generation);
  if (auto bad = impl_->activate(); !bad.ok()) return bad;
  // Returns at once; the driver releases the stream after its work completes. The timeline
  // keeps its events, so waiters on it still get answers.
  auto destroyed = impl_->check(cudaStreamDestroy(entry->handle), "destroying " + entry->label);
  return destroyed.ok() ? retired : destroyed;
}

result<std::string> cuda_backend::stream_name(stream_ref s) const {
  std::shared_lock<std::shared_mutex> lock{impl_->mutex};
  auto found = impl_->find_stream(s);
  if (!found) return found.error();
  return found.value()->name;
}

result<stream_priority> cuda_backend::priority(stream_ref s) const {
  std::shared_lock<std::shared_mutex> lock{impl_->mutex};
  auto found = impl_->find_stream(s);
  if (!found) return found.error();
  return found.value()->priority;
}

// --- events ----------------------------------------------------------------------------

result<event> cuda_backend::create_event(event_kind kind) {
  if (kind != event_kind::regular && kind != event_kind::timing) {
    return status{status_code::invalid_argument, "unknown event kind"};
  }
  if (auto bad = impl_->usable(); !bad.ok()) return bad;
  cudaEvent_t handle = nullptr;
  const unsigned flags = kind == event_kind::timing ? cudaEventDefault : cudaEventDisableTiming;
  if (auto bad = impl_->check(cudaEventCreateWithFlags(&handle, flags), "creating an event");
      !bad.ok()) {
    return bad;
  }
  std::unique_lock<std::shared_mutex> lock{impl_->mutex};
  cuda_event_entry entry;
  entry.handle = handle;
  entry.kind = kind;
  auto key = impl_->events.insert(std::move(entry));
  return event{*this, event_ref{make_id(key.slot, key.generation)}, kind};
}

status cuda_backend::destroy_event(event_ref e) {
  std::unique_lock<std::shared_mutex> lock{impl_->mutex};
  auto found = impl_->find_event(e);
  if (!found) return found.error();
  auto entry = impl_->events.erase(e.id().slot, e.id().generation);
  if (auto bad = impl_->activate(); !bad.ok()) return bad;
  return impl_->check(cudaEventDestroy(entry->handle), "destroying event " + to_string(e.id()));
}

status cuda_backend::record(event_ref e, stream_ref s) {
  return impl_->with_stream(s, [&](cuda_stream_entry& target) -> status {
    auto found = impl_->find_event(e);
    if (!found) return found.error();
    if (auto bad = impl_->check(cudaEventRecord(found.value()->handle, target.handle),
                                "recording event " + to_string(e.id()) + " on " + target.label);
        !bad.ok()) {
      return bad;
    }
    found.value()->recorded.value.store(true, std::memory_order_release);
    // As on the host backend: the first event after work that failed at launch reports it.
    status failed = target.timeline ? target.timeline->take_event_failure() : status{};
    std::atomic_store_explicit(
        &found.value()->failure,
        failed.ok() ? nullptr : std::make_shared<const status>(std::move(failed)),
        std::memory_order_release);
    return {};
  });
}

status cuda_backend::wait(stream_ref s, event_ref e) {
  return impl_->with_stream(s, [&](cuda_stream_entry& target) -> status {
    auto found = impl_->find_event(e);
    if (!found) return found.error();
    auto waited = impl_->check(cudaStreamWaitEvent(target.handle, found.value()->handle, 0),
                               target.label + " waiting on event " + to_string(e.id()));
    // The event's work failed at launch: the waiter's next point reports it, as backend::wait
    // says (the wait is placed all the same).
    if (auto failed = found.value()->failed(); waited.ok() && failed && target.timeline) {
      target.timeline->fail_next(
          status{status_code::dependency_failed, target.label + " waited on event " + to_string(e.id()) +
                                              ", whose work failed: " + failed->to_string()});
    }
    return waited;
  });
}

status cuda_backend::wait_point(stream_ref s, stream_ref other, timeline_point value) {
  return impl_->wait_for_point(s, other, value, true);
}

status cuda_backend::order_after(stream_ref s, stream_ref other, timeline_point value) {
  return impl_->wait_for_point(s, other, value, false);
}

query_result cuda_backend::query(event_ref e) {
  if (auto bad = impl_->usable(); !bad.ok()) return {event_state::failed, bad};
  std::shared_lock<std::shared_mutex> lock{impl_->mutex};
  auto found = impl_->find_event(e);
  if (!found) return {event_state::failed, found.error()};
  const cudaError_t answer = cudaEventQuery(found.value()->handle);
  if (answer == cudaSuccess) {
    if (auto failed = found.value()->failed()) return {event_state::failed, *failed};
    return {event_state::ready, {}};
  }
  if (answer == cudaErrorNotReady) {
    detail::clear_not_ready();
    return {event_state::not_ready, {}};
  }
  return {event_state::failed, impl_->check(answer, "querying event " + to_string(e.id()))};
}

result<std::chrono::nanoseconds> cuda_backend::elapsed(event_ref start, event_ref end) {
  if (auto bad = impl_->usable(); !bad.ok()) return bad;
  std::shared_lock<std::shared_mutex> lock{impl_->mutex};
  auto a = impl_->find_event(start);
  if (!a) return a.error();
  auto b = impl_->find_event(end);
  if (!b) return b.error();
  for (auto [found, ref] : {std::pair{a.value(), start}, std::pair{b.value(), end}}) {
    if (found->kind != event_kind::timing) {
      return status{status_code::not_timing,
                    "event " + to_string(ref.id()) + " was created without timing"};
    }
    if (!found->recorded.value.load(std::memory_order_acquire)) {
      return status{status_code::not_recorded, "event " + to_string(ref.id()) + " was never recorded"};
    }
  }
  float milliseconds = 0.0F;
  const cudaError_t answer =
      cudaEventElapsedTime(&milliseconds, a.value()->handle, b.value()->handle);
  // Unfinished first, as on the host backend, even when a failure before it is known already.
  if (answer == cudaErrorNotReady) {
    detail::clear_not_ready();
    return status{status_code::not_ready, "the work before a timing event has not finished"};
  }
  // Time over failed work is no figure (as on the host backend): the failure is the answer.
  for (auto* found : {a.value(), b.value()}) {
    if (auto failed = found->failed()) return *failed;
  }
  if (answer != cudaSuccess) {
    return impl_->check(answer,
                        "timing events " + to_string(start.id()) + " and " + to_string(end.id()));
  }
  return std::chrono::nanoseconds{static_cast<std::int64_t>(double{milliseconds} * 1e6)};
}

// --- memory ----------------------------------------------------------------------------

result<buffer> cuda_backend::allocate(stream_ref s, std::size_t bytes) {
  if (bytes == 0) return status{status_code::invalid_argument, "allocation of zero bytes"};
  return impl_->with_stream(s, [&](cuda_stream_entry& target) -> result<buffer> {
    void* data = nullptr;
    if (auto bad =
            impl_->check(cudaMallocAsync(&data, bytes, target.handle),
                         "allocating " + std::to_string(bytes) + " bytes on " + target.label);
        !bad.ok()) {
      return bad;
    }
    (void)impl_->allocations.try_reserve(bytes, std::numeric_limits<std::size_t>::max());
    impl_->allocations.add(data, detail::allocation{bytes, memory_kind::device, s, false});
    return buffer{*this, data, bytes, memory_kind::device, s};
  });
}

result<buffer> cuda_backend::allocate_managed(std::size_t bytes) {
  if (bytes == 0) return status{status_code::invalid_argument, "allocation of zero bytes"};
  if (auto bad = impl_->usable(); !bad.ok()) return bad;
  void* data = nullptr;
  if (auto bad = impl_->check(cudaMallocManaged(&data, bytes, cudaMemAttachGlobal),
                              "allocating " + std::to_string(bytes) + " bytes of managed memory");
      !bad.ok()) {
    return bad;
  }
  (void)impl_->allocations.try_reserve(bytes, std::numeric_limits<std::size_t>::max());
  impl_->allocations.add(data, detail::allocation{bytes, memory_kind::managed, {}, false});
  return buffer{*this, data, bytes, memory_kind::managed, {}};
}

result<buffer> cuda_backend::allocate_pinned(std::size_t bytes) {
  if (bytes == 0) return status{status_code::invalid_argument, "allocation of zero bytes"};
  if (auto bad = impl_->usable(); !bad.ok()) return bad;
  void* data = nullptr;
  if (auto bad = impl_->check(cudaMallocHost(&data, bytes),
                              "allocating " + std::to_string(bytes) + " bytes of pinned memory");
      !bad.ok()) {
    return bad;
  }
  (void)impl_->allocations.try_reserve(bytes, std::numeric_limits<std::size_t>::max());
  impl_->allocations.add(data, detail::allocation{bytes, memory_kind::pinned_host, {}, false});
  return buffer{*this, data, bytes, memory_kind::pinned_host, {}};
}

status cuda_backend::free_async(stream_ref s, buffer& memory) {
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
  return impl_->with_stream(s, [&](cuda_stream_entry& target) -> status {
    auto marked = impl_->allocations.begin_free(memory.data());
    if (!marked) return marked.error();
    if (auto bad = impl_->check(
            cudaFreeAsync(memory.data(), target.handle),
            "freeing " + detail::format_address(memory.data()) + " on " + target.label);
        !bad.ok()) {
      impl_->allocations.cancel_free(memory.data());  // a failure leaves the buffer untouched
      return bad;
    }
    // Kept as freed, not forgotten: a copy or fill on it is refused, as on the host backend.
    impl_->allocations.retire(memory.release());
    return status{};
  });
}

status cuda_backend::release_memory(void* data, memory_kind kind, stream_ref s) {
  auto marked = impl_->allocations.begin_free(data);
  if (!marked) return marked.error();
  // The buffer is gone either way (this is its destructor's call). Device memory freed in
  // stream order stays known as freed until memory there is allocated again; pinned and
  // managed memory is freed now, and its addresses may come back from anyone.
  if (kind == memory_kind::device) {
    impl_->allocations.retire(data);
  } else {
    impl_->allocations.remove(data);
  }
  if (auto bad = impl_->activate(); !bad.ok()) return bad;
  const std::string doing = "freeing " + detail::format_address(data);
  switch (kind) {
    case memory_kind::pinned_host: return impl_->check(cudaFreeHost(data), doing);
    case memory_kind::managed: return impl_->check(cudaFree(data), doing);
    case memory_kind::device: break;
  }
  {
    std::shared_lock<std::shared_mutex> lock{impl_->mutex};
    if (!s.empty()) {
      if (auto target = impl_->find_stream(s)) {
        return impl_->check(cudaFreeAsync(data, target.value()->handle), doing);
      }
    }
  }
  // Its stream is gone: cudaFree would not wait for the work that still uses the memory.
  return impl_->released.free(data, s.id().value(), doing);
}

status cuda_backend::copy(stream_ref s, void* dst, const void* src, std::size_t bytes,
                          copy_kind direction) {
  if (auto bad = impl_->allocations.check_copy(dst, src, bytes, direction); !bad.ok()) {
    return bad;
  }
  cudaMemcpyKind native = cudaMemcpyDeviceToDevice;
  if (direction == copy_kind::host_to_device) native = cudaMemcpyHostToDevice;
  if (direction == copy_kind::device_to_host) native = cudaMemcpyDeviceToHost;
  return impl_->with_stream(s, [&](cuda_stream_entry& target) -> status {
    if (direction != copy_kind::device_to_device) {
      const void* host = direction == copy_kind::host_to_device ? src : dst;
      if (auto bad = impl_->check_pinned(host, bytes, direction, target.label); !bad.ok()) {
        return bad;
      }
    }
    return impl_->check(cudaMemcpyAsync(dst, src, bytes, native, target.handle),
                        std::string{"copying "} + std::to_string(bytes) + " bytes " +
                            std::string{to_string(direction)} + " on " + target.label);
  });
}

status cuda_backend::fill(stream_ref s, void* dst, std::uint8_t value, std::size_t bytes) {
  if (auto bad = impl_->allocations.check(dst, bytes, detail::memory_side::device, "destination");
      !bad.ok()) {
    return bad;
  }
  return impl_->with_stream(s, [&](cuda_stream_entry& target) -> status {
    return impl_->check(cudaMemsetAsync(dst, value, bytes, target.handle),
                        "filling " + std::to_string(bytes) + " bytes on " + target.label);
  });
}

status cuda_backend::prefetch(stream_ref s, const void* data, std::size_t bytes,
                              prefetch_target where) {
  if (where != prefetch_target::device && where != prefetch_target::host) {
    return {status_code::invalid_argument, "unknown prefetch target"};
  }
  if (auto bad = impl_->allocations.check(data, bytes, detail::memory_side::device, "prefetch");
      !bad.ok()) {
    return bad;
  }
  if (auto owner = impl_->allocations.containing(data);
      owner && owner->kind != memory_kind::managed) {
    return {status_code::invalid_argument, "prefetch needs managed memory; " +
                                        detail::format_address(data) + " is " +
                                        std::string{to_string(owner->kind)} + " memory"};
  }
  return impl_->with_stream(s, [&](cuda_stream_entry& target) -> status {
    const std::string doing = "prefetching " + std::to_string(bytes) + " bytes on " + target.label;
#if CUDART_VERSION >= 13000
    cudaMemLocation location{};
    location.type =
        where == prefetch_target::device ? cudaMemLocationTypeDevice : cudaMemLocationTypeHost;
    location.id = where == prefetch_target::device ? impl_->ordinal : 0;
    return impl_->check(cudaMemPrefetchAsync(data, bytes, location, 0, target.handle), doing);
#else  // CUDA 12: a device ordinal, cudaCpuDeviceId for the host
    const int to = where == prefetch_target::device ? impl_->ordinal : cudaCpuDeviceId;
    return impl_->check(cudaMemPrefetchAsync(data, bytes, to, target.handle), doing);
#endif
  });
}

// --- work ------------------------------------------------------------------------------

status cuda_backend::enqueue(stream_ref s, work_fn work) {
  if (!work) return {status_code::invalid_argument, "empty work function"};
  auto target = impl_->launch_target(s);
  if (!target) return target.error();
  return impl_->launch(s, target.value().first, *target.value().second, work);
}

signalled_work cuda_backend::enqueue_signalled(stream_ref s, work_fn work) {
  if (!work) {
    return signalled_work{status{status_code::invalid_argument, "empty work function"}, signal(s)};
  }
  // One lookup for both (enqueue and signal each made their own, and enqueue copied the
  // stream's label, needed only if the launch fails).
  auto target = impl_->launch_target(s);
  if (!target) return signalled_work{target.error(), target.error()};
  auto& [handle, timeline] = target.value();
  // Room for the point is made sure of before the work is launched: both go on the stream or
  // neither does (a full timeline refuses both), as on the host backend.
  auto [launched, value] = timeline->signal_after([&, handle = handle, line = timeline.get()] {
    return impl_->launch(s, handle, *line, work);
  });
  if (!value && value.code() == status_code::device_lost) impl_->mark_lost(value.error());
  return signalled_work{std::move(launched), std::move(value)};
}

namespace {

void CUDART_CB run_host_callback(cudaStream_t, cudaError_t answer, void* data) {
  std::unique_ptr<host_callback> callback{static_cast<host_callback*>(data)};
  // No CUDA call is allowed here, not even to name the error.
  const status outcome = detail::from_cuda_code(answer, "before a host callback");
  try {
    (*callback)(outcome);
  } catch (...) {
    // Nowhere to report from a driver thread; the callback's owner must not throw.
  }
}

}  // namespace

result<std::unique_ptr<work_graph>> cuda_backend::build_graph(std::vector<graph_node> nodes) {
  if (auto bad = check_graph_nodes(nodes); !bad.ok()) return bad;
  if (auto bad = impl_->usable(); !bad.ok()) return bad;
  const detail::cuda_work_graph::priorities native{impl_->native_priority(stream_priority::low),
                                                   impl_->native_priority(stream_priority::normal),
                                                   impl_->native_priority(stream_priority::high)};
  auto built = detail::cuda_work_graph::build(impl_->ordinal, impl_->info.total_memory, native,
                                              std::move(nodes));
  if (!built && built.code() == status_code::device_lost) impl_->mark_lost(built.error());
  return built;
}

status cuda_backend::add_callback(stream_ref s, host_callback callback) {
  if (!callback) return {status_code::invalid_argument, "empty host callback"};
  return impl_->with_stream(s, [&](cuda_stream_entry& target) -> status {
    auto owned = std::make_unique<host_callback>(std::move(callback));
    // cudaStreamAddCallback, not cudaLaunchHostFunc: it runs exactly once even after a device
    // error, and says which, so every callback ends.
    if (auto bad =
            impl_->check(cudaStreamAddCallback(target.handle, &run_host_callback, owned.get(), 0),
                         "adding a host callback on " + target.label);
        !bad.ok()) {
      return bad;
    }
    (void)owned.release();  // the trampoline owns it now
    return {};
  });
}

// --- timelines -------------------------------------------------------------------------

result<timeline_point> cuda_backend::signal(stream_ref s) {
  auto found = impl_->with_stream(s, [](cuda_stream_entry& target) {
    return result<std::shared_ptr<detail::cuda_timeline>>{target.timeline};
  });
  if (!found) return found.error();
  // Without the table lock: the record may block on a full stream queue (the timeline's
  // bound keeps it from filling with our own events, not with the user's launches).
  auto value = found.value()->signal();
  if (!value && value.code() == status_code::device_lost) impl_->mark_lost(value.error());
  return value;
}

result<std::shared_ptr<timeline>> cuda_backend::timeline_of(stream_ref s) {
  std::shared_lock<std::shared_mutex> lock{impl_->mutex};
  auto target = impl_->find_stream(s);
  if (!target) return target.error();
  return std::shared_ptr<timeline>{target.value()->timeline};
}

// --- blocking calls --------------------------------------------------------------------

status cuda_backend::synchronize(stream_ref s) {
  auto target = impl_->snapshot(s);
  if (!target) return target.error();
  auto [handle, label] = std::move(target.value());
  return impl_->check(cudaStreamSynchronize(handle), "synchronizing " + label);
}

status cuda_backend::synchronize() {
  if (auto bad = impl_->usable(); !bad.ok()) return bad;
  return impl_->check(cudaDeviceSynchronize(), "synchronizing the device");
}

status cuda_backend::health() const { return impl_->loss(); }

// A lost CUDA device is lost for this process: CUDA 13 documents that a sticky error needs
// the process to restart, and cudaDeviceReset does not free cudaMallocAsync memory. So there
// is no in-process recovery to attempt; the error says what to do instead.
status cuda_backend::reset() {
  const status lost = impl_->loss();
  if (lost.ok()) return {};  // nothing to recover
  return {status_code::device_lost,
          "the CUDA device cannot be recovered in this process: restart the process (" +
              lost.message() + ")"};
}

// --- interop ---------------------------------------------------------------------------

result<void*> cuda_backend::native_handle(stream_ref s) const {
  std::shared_lock<std::shared_mutex> lock{impl_->mutex};
  auto target = impl_->find_stream(s);
  if (!target) return target.error();
  return static_cast<void*>(target.value()->handle);
}

result<void*> cuda_backend::native_handle(event_ref e) const {
  std::shared_lock<std::shared_mutex> lock{impl_->mutex};
  auto found = impl_->find_event(e);
  if (!found) return found.error();
  return static_cast<void*>(found.value()->handle);
}

}  // namespace cudactor::gpu
