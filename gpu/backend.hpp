// gpu/backend.hpp
//
// The narrow interface every part of cudactor uses to drive a device: streams with
// priorities, regular and timing events, record / stream-wait / query / elapsed time, async
// copies, fills and prefetches, stream-ordered allocation, enqueued work, host callbacks and
// per-stream timelines. Two implementations: host_backend (CPU threads with CUDA's
// semantics, for machines without a GPU and for tests) and cuda_backend (the CUDA runtime).
// open_backend() picks one.
//
// Every call is thread-safe and non-blocking except synchronize() and reset(), which are for
// code that is not an actor. Expected failures come back as a status naming the stream,
// event or allocation; nothing throws.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cudactor/gpu/buffer.hpp"
#include "cudactor/gpu/event.hpp"
#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/gpu/status.hpp"
#include "cudactor/gpu/stream.hpp"
#include "cudactor/gpu/timeline.hpp"
#include "cudactor/gpu/types.hpp"
#include "cudactor/gpu/work_graph.hpp"

namespace cudactor::gpu {

// What backend::enqueue_signalled did: the work's launch and the point marked after it.
struct signalled_work {
  status launched;
  result<timeline_point> point;
};

class backend {
 public:
  backend();
  backend(const backend&) = delete;
  backend& operator=(const backend&) = delete;
  virtual ~backend() = default;

  [[nodiscard]] virtual backend_kind kind() const noexcept = 0;
  [[nodiscard]] virtual const device_info& device() const noexcept = 0;
  // Distinguishes this backend's handles from any other's.
  [[nodiscard]] std::uint32_t instance() const noexcept { return instance_; }

  // --- streams ---------------------------------------------------------------------------
  [[nodiscard]] virtual result<stream> create_stream(const stream_options& options) = 0;
  // Work already enqueued still runs; the ref is stale from now on.
  [[nodiscard]] virtual status destroy_stream(stream_ref s) = 0;
  [[nodiscard]] virtual result<std::string> stream_name(stream_ref s) const = 0;
  [[nodiscard]] virtual result<stream_priority> priority(stream_ref s) const = 0;

  // --- events ----------------------------------------------------------------------------
  [[nodiscard]] virtual result<event> create_event(event_kind kind) = 0;
  [[nodiscard]] virtual status destroy_event(event_ref e) = 0;
  // Captures the work enqueued on s so far; replaces any earlier record of e.
  [[nodiscard]] virtual status record(event_ref e, stream_ref s) = 0;
  // Work enqueued on s later does not start before e's most recent record completes. A wait
  // on a never-recorded event does not wait. If e's work failed, s's next completion point
  // reports dependency_failed.
  [[nodiscard]] virtual status wait(stream_ref s, event_ref e) = 0;
  // Work enqueued on s later does not start before `other`'s timeline reaches `value`: a
  // timeline-semaphore wait, on the device, with no event of the caller's. A value already
  // reached adds nothing (CUDA) or only its failure; a value not yet signalled on `other` is
  // invalid_argument. If the work before `value` failed, s's next completion point reports
  // dependency_failed, as for wait().
  [[nodiscard]] virtual status wait_point(stream_ref s, stream_ref other, timeline_point value) = 0;
  // Like wait_point, but it orders only: work enqueued on s later starts after the work before
  // `value` on `other` has ended, however it ended; a failure there is not carried to s. For
  // work that must come after another without consuming what it produced (a write after a
  // read, or after another write: actors/coordinator/buffer_uses.hpp).
  [[nodiscard]] virtual status order_after(stream_ref s, stream_ref other,
                                           timeline_point value) = 0;
  [[nodiscard]] virtual query_result query(event_ref e) = 0;
  // end - start; both timing events, recorded and complete.
  [[nodiscard]] virtual result<std::chrono::nanoseconds> elapsed(event_ref start,
                                                                 event_ref end) = 0;

  // --- memory ----------------------------------------------------------------------------
  // Stream-ordered: usable by work enqueued on s after this call.
  [[nodiscard]] virtual result<buffer> allocate(stream_ref s, std::size_t bytes) = 0;
  [[nodiscard]] virtual result<buffer> allocate_managed(std::size_t bytes) = 0;
  [[nodiscard]] virtual result<buffer> allocate_pinned(std::size_t bytes) = 0;
  // Frees device memory once s reaches this point (work enqueued before may still use it).
  // On success `memory` is left empty; on failure it is untouched. From this call on, a copy
  // or fill on its range is refused ("being freed") on both backends.
  [[nodiscard]] virtual status free_async(stream_ref s, buffer& memory) = 0;

  [[nodiscard]] virtual status copy(stream_ref s, void* dst, const void* src, std::size_t bytes,
                                    copy_kind direction) = 0;
  [[nodiscard]] virtual status fill(stream_ref s, void* dst, std::uint8_t value,
                                    std::size_t bytes) = 0;
  // Moves managed memory towards the device or the host ahead of use.
  [[nodiscard]] virtual status prefetch(stream_ref s, const void* data, std::size_t bytes,
                                        prefetch_target target) = 0;

  // --- work --------------------------------------------------------------------------------
  // Work whose answer is a failure, whatever its code (device_lost too: only the device can
  // say it is lost), fails the stream's next point and first event after it with "work on
  // <stream> failed: <code>: <its words>"; the stream goes on. CUDA runs the work (a launch)
  // in this call and also answers that failure here; the host backend runs it later, on the
  // stream, and answers ok. Read failures from the points, which agree on both.
  [[nodiscard]] virtual status enqueue(stream_ref s, work_fn work) = 0;
  [[nodiscard]] virtual status add_callback(stream_ref s, host_callback callback) = 0;

  // --- graphs --------------------------------------------------------------------------------
  // Builds `nodes` into a graph launched as one piece of work (gpu/work_graph.hpp): on CUDA each
  // node's work runs now, captured; a node that cannot be captured fails the build, named.
  // invalid_argument for nodes check_graph_nodes refuses; device_lost when the device is.
  [[nodiscard]] virtual result<std::unique_ptr<work_graph>> build_graph(
      std::vector<graph_node> nodes) = 0;

  // A burst of operations issued by this thread until the matching end_batch() reaches the
  // backend's workers at once: the host backend hands each stream to a worker once for the
  // burst, not once per operation (each hand-over can wake a sleeping worker, and a worker
  // woken for the first operation tends to finish it and sleep again before the second comes,
  // so that enqueue and signal each pay for a wake-up). CUDA starts work as it is launched and
  // ignores it. Batches nest; the outermost end hands the burst over. A blocking call made
  // inside a batch (synchronize, reset) hands over what is deferred first. False when this
  // thread's batch belongs to another backend: then this one defers nothing, and end_batch()
  // must not be called for it (batch_scope keeps the pairing).
  [[nodiscard]] virtual bool begin_batch() noexcept { return true; }
  virtual void end_batch() noexcept {}

  // --- timelines ---------------------------------------------------------------------------
  // Marks the next timeline value at the current end of s and returns it. At most
  // max_in_flight() values signalled and not yet reached per stream: one more is refused
  // (resource_exhausted), so callers bound what they issue by it.
  [[nodiscard]] virtual result<timeline_point> signal(stream_ref s) = 0;
  // The bound signal() keeps per stream (on CUDA each value in flight holds an event, and a
  // stream queues only about a thousand operations before a launch blocks the caller).
  [[nodiscard]] virtual std::size_t max_in_flight() const noexcept = 0;
  // enqueue(s, work) then signal(s), each answered as that call answers it, in one call: the
  // stream actor issues its untimed work this way, so the stream is found once, not twice,
  // and the host backend queues one operation, not two. The point is marked whether or not
  // the work launched (a failed launch fails that point); a stream that takes no work (lost
  // device, destroyed stream) or has no room for the point (max_in_flight) refuses both, and
  // the work is not run.
  [[nodiscard]] virtual signalled_work enqueue_signalled(stream_ref s, work_fn work);
  // The stream's timeline; it stays usable after the stream is destroyed.
  [[nodiscard]] virtual result<std::shared_ptr<timeline>> timeline_of(stream_ref s) = 0;

  // --- blocking calls, for code that is not an actor ---------------------------------------
  [[nodiscard]] virtual status synchronize(stream_ref s) = 0;
  [[nodiscard]] virtual status synchronize() = 0;

  // --- health ----------------------------------------------------------------------------
  // ok, or the device_lost status that poisons the backend.
  [[nodiscard]] virtual status health() const = 0;
  // Recovers from device_lost where the backend can. The host backend waits for outstanding
  // work to end, then invalidates every stream, event and allocation and clears the error
  // (owning handles that outlive it release nothing and count nothing). A lost CUDA device
  // cannot be recovered in the process (CUDA 13): the CUDA backend answers device_lost,
  // saying the process must restart, and with nothing lost answers ok and changes nothing.
  [[nodiscard]] virtual status reset() = 0;

  // --- interop -------------------------------------------------------------------------------
  // cudaStream_t / cudaEvent_t as void*; not_supported on the host backend.
  [[nodiscard]] virtual result<void*> native_handle(stream_ref s) const = 0;
  [[nodiscard]] virtual result<void*> native_handle(event_ref e) const = 0;

  // Destroys and frees that failed inside destructors of owning handles (they never throw).
  [[nodiscard]] std::uint64_t failed_releases() const noexcept {
    return failed_releases_.load(std::memory_order_relaxed);
  }

 protected:
  // Releases a buffer's memory; device memory in the order of `s`. Called by buffer.
  [[nodiscard]] virtual status release_memory(void* data, memory_kind kind, stream_ref s) = 0;

  [[nodiscard]] handle_id make_id(std::uint32_t slot, std::uint32_t generation) const noexcept {
    return handle_id{instance_, slot, generation};
  }
  // invalid_argument for an empty reference, foreign_handle for another backend's; `what`
  // is "stream" or "event".
  [[nodiscard]] status check_handle(const handle_id& id, const char* what) const;

 private:
  friend class stream;
  friend class event;
  friend class buffer;
  // An owning handle's destructor could not release; invalid_handle (already gone, e.g. after
  // reset()) is not a failure.
  void count_failed_release(const status& why) noexcept;

  std::uint32_t instance_;
  std::atomic<std::uint64_t> failed_releases_{0};
};

// begin_batch() and end_batch() of one backend, for a scope: what this thread issues to that
// backend inside it is handed over when it ends.
class batch_scope {
 public:
  explicit batch_scope(backend& device) noexcept
      : device_(device.begin_batch() ? &device : nullptr) {}
  ~batch_scope() {
    if (device_ != nullptr) device_->end_batch();
  }
  batch_scope(const batch_scope&) = delete;
  batch_scope& operator=(const batch_scope&) = delete;

 private:
  backend* device_;
};

}  // namespace cudactor::gpu
