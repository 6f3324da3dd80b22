// gpu/detail/host_engine.hpp
//
// How the host backend runs work: each stream is an in-order queue of operations, posted to
// the worker pool's lane for its priority and drained by one worker at a time. An operation
// that must wait (a cross-stream wait, an injected hang or delay) parks its stream instead of
// blocking a worker; the awaited completion or a timer re-posts it. Losing the device fails
// everything pending on every stream, so every operation still ends exactly once. The
// backend's handle tables and argument checks live in host_backend.cpp; this is the engine.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "cudactor/gpu/detail/allocation_table.hpp"
#include "cudactor/gpu/detail/host_completion.hpp"
#include "cudactor/gpu/detail/host_scratch.hpp"
#include "cudactor/gpu/detail/worker_pool.hpp"
#include "cudactor/gpu/handle_id.hpp"
#include "cudactor/gpu/host_timeline.hpp"
#include "cudactor/gpu/launch_context.hpp"

namespace cudactor::gpu::detail {

// "Device" memory of the host backend: aligned like CUDA allocations.
inline constexpr std::align_val_t host_memory_alignment{256};
void free_host_memory(void* data) noexcept;

// What one entry of a host stream's queue does (the host engine's own; not op_type).
enum class host_op_kind : std::uint8_t {
  work,          // body(): a kernel, copy, fill or prefetch
  record,        // completes `point` with the stream's pending failure
  sync,          // completes `point`; reports nothing
  wait,          // holds the stream until `point` completes
  order,         // holds the stream until `point` completes; its failure is not carried
  gate,          // injected hang: holds the stream until released
  delay,         // injected slow operation
  callback,      // host callback
  signal,        // advances the timeline to `value`
  fail,          // injected failure
  device_fault,  // injected device loss
  free_memory,   // stream-ordered free
};

struct host_stream;

struct op {
  host_op_kind type = host_op_kind::work;
  std::function<status()> body;
  // The user's work, run with a launch context for `stream` (held as it is, not wrapped in
  // `body`: the wrapper did not fit std::function's inline room and cost an allocation).
  work_fn work;
  stream_ref stream;
  std::shared_ptr<host_completion> point;
  std::string what;
  // A wait or an order: the stream whose point `value` it waits for, named only if the wait
  // fails (a text built for every wait cost more than the rest of queueing it). Weak: two
  // streams waiting on each other would otherwise hold each other.
  std::weak_ptr<host_stream> awaited;
  host_callback callback;
  timeline_point value = 0;
  std::chrono::nanoseconds duration{0};
  std::chrono::steady_clock::time_point deadline{};
  bool started = false;
  // A work op that then marks `value` on the timeline, as a signal op after it would
  // (backend::enqueue_signalled): one op queued and run, not two.
  bool then_signal = false;
  void* memory = nullptr;
};

struct host_stream {
  handle_id id;
  std::string name;
  std::string label;  // "stream 'name' (#3.1)"
  stream_priority priority = stream_priority::normal;
  std::shared_ptr<host_timeline> timeline;

  std::mutex mutex;
  std::vector<op> queue;  // pushed by anyone, taken only by the draining worker
  // Operations the draining worker moved out of `queue` in one go, so that a busy stream costs
  // one lock per batch rather than two per operation; taken[next_taken] is the next to run.
  // Only the draining worker touches them; they keep their order ahead of `queue` across
  // parks and yields. Vectors swapped back and forth keep their room: a busy stream allocates
  // nothing per operation (a deque allocated and freed a block every few).
  std::vector<op> taken;
  std::size_t next_taken = 0;
  bool scheduled = false;  // a drain is queued or running
  bool parked = false;     // the front operation waits for a completion or a deadline
  // Both touched only by the draining worker. A failure goes to the first event recorded
  // after it (pending_error, once) and to the next timeline signal (failed_since_signal),
  // which the timeline's readers (barriers, wait_point) rely on: an event recorded in between,
  // as a stream actor's timing events are, does not take it from the timeline.
  status pending_error;
  status failed_since_signal;

  // Other streams waiting for a value of this one's timeline (backend::wait_point), in value
  // order. The count keeps a signal to one load when nobody waits.
  std::mutex point_mutex;
  std::atomic<std::size_t> point_waiter_count{0};
  std::vector<std::pair<timeline_point, std::shared_ptr<host_completion>>> point_waiters;
};
using stream_ptr = std::shared_ptr<host_stream>;

// What the calling thread's open batch deferred (host_engine::begin_batch) goes to its
// engine's workers now: called before the thread blocks on a timeline.
void hand_over_thread_batch() noexcept;

class host_engine : public std::enable_shared_from_this<host_engine> {
 public:
  // Stream-ordered frees remove their entries from `scratch.table`; works' scratch counts
  // against it (gpu/detail/host_scratch.hpp).
  host_engine(unsigned workers, std::chrono::microseconds idle_spin, host_scratch_budget scratch);

  [[nodiscard]] unsigned workers() const noexcept { return pool_.size(); }

  // A new stream, known to the engine until recover() (for losing the device and quiescing).
  [[nodiscard]] stream_ptr open_stream(handle_id id, std::string name, stream_priority priority);

  void push(const stream_ptr& s, op o);
  // A completion that completes when `s`'s timeline reaches `value`, with that value's outcome.
  [[nodiscard]] std::shared_ptr<host_completion> point_of(const stream_ptr& s,
                                                          timeline_point value);
  // Builds the operation under the stream's mutex, so that what it reserves (a timeline
  // value) follows queue order.
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

  // ok, or the device_lost status every operation now fails with.
  [[nodiscard]] status loss() const;
  [[nodiscard]] bool lost() const noexcept { return lost_.load(std::memory_order_acquire); }
  // Fails everything pending on every stream and refuses nothing itself: callers check lost().
  void lose_device(std::string why);
  // Waits until every stream has run (or failed) everything enqueued so far. Blocking.
  void quiesce();
  // Forgets every stream and the loss (backend reset). Call after quiesce().
  void recover();
  // Loses the device with `why`, then runs what is left and joins the workers.
  void shutdown(std::string why);

  [[nodiscard]] std::uint64_t callback_exceptions() const noexcept {
    return callback_exceptions_.load(std::memory_order_relaxed);
  }
  // backend::begin_batch / end_batch: while this thread's batch is open, the streams it
  // schedules wait in it and go to the workers together when it ends. A thread's batch is one
  // engine's: false (nothing deferred) when it is another's.
  bool begin_batch() noexcept;
  void end_batch() noexcept;
  // What this thread's batch deferred goes to the workers now; the batch stays open.
  void hand_over_batch() noexcept;

  // Host threads held up on the device: synchronize and timeline waits, counted at the call.
  // What the caller's batch deferred is handed over first: it may be what the wait is for.
  void note_host_wait() noexcept {
    hand_over_batch();
    host_waits_->fetch_add(1, std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t host_waits() const noexcept {
    return host_waits_->load(std::memory_order_relaxed);
  }

 private:
  using clock = std::chrono::steady_clock;
  enum class step { done, again, parked };

  [[nodiscard]] std::vector<stream_ptr> all_streams();
  void schedule(const stream_ptr& s);
  void resume(const stream_ptr& s);
  step park_on(const stream_ptr& s, const std::shared_ptr<host_completion>& point);
  step park_until(const stream_ptr& s, clock::time_point deadline);
  step settle_park(const stream_ptr& s, bool waiting);
  void drain(const stream_ptr& s);
  void note_failure(host_stream& s, status why);
  void invoke(const host_callback& callback, const status& outcome);
  step run(const stream_ptr& s, op& o);
  step fail(host_stream& s, op& o);
  // A signal's effect: `s`'s timeline reaches `value`, failed if work since the last one did.
  static void reach(host_stream& s, timeline_point value);
  // Completes the waiters on `s`'s timeline up to `value` with `outcome`.
  static void release_point_waiters(host_stream& s, timeline_point value, const status& outcome);
  // What a wait op waits for, in words (an event, or a point of a stream).
  [[nodiscard]] static std::string waited_on(const op& o);

  host_scratch_budget scratch_;
  allocation_table& allocations_;  // scratch_'s
  std::atomic<std::uint64_t> callback_exceptions_{0};
  // Shared with every stream's timeline, which may outlive the engine.
  std::shared_ptr<std::atomic<std::uint64_t>> host_waits_ =
      std::make_shared<std::atomic<std::uint64_t>>(0);
  mutable std::mutex mutex_;                              // guards every_stream_ and lost_status_
  std::vector<std::weak_ptr<host_stream>> every_stream_;  // live and destroyed-but-draining
  std::atomic<bool> lost_{false};
  status lost_status_;
  worker_pool pool_;  // joined by shutdown()
};

}  // namespace cudactor::gpu::detail
