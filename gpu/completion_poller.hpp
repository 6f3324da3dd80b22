// gpu/completion_poller.hpp
//
// Turns "the GPU reached this point" into a callback, without any thread blocking on the GPU.
// One Boost.Asio loop on its own thread. Per stream, watches wait in a FIFO and only the
// oldest is queried, because a stream completes in order: a tick costs O(active streams), not
// O(watches in flight). With nothing to watch the loop sleeps until a watch arrives; with
// watches pending it spins briefly after each completion, then backs off to a bounded
// interval, and sleeps through the part of an operation it has learned to predict.
//
// Every watch is answered exactly once: completed, failed, timed out or cancelled. stop()
// (and the destructor) answers whatever is still pending with cancelled; no callback runs
// after it returns.
//
// Two ways to learn of a completion, chosen per backend (see default_mode): polling the
// stream, or being told: the host timeline tells its listeners when it moves, and on CUDA
// each watch adds a host callback on its stream (cudaStreamAddCallback); either only wakes
// the loop, which then queries as usual.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/watch.hpp"

namespace cudactor::gpu {

enum class delivery_mode : std::uint8_t {
  polling,   // the loop queries each active stream's oldest watch
  callback,  // the backend tells the loop when the stream moves; the loop then queries
};

[[nodiscard]] std::string_view to_string(delivery_mode value) noexcept;

struct poller_options {
  // Empty: completion_poller::default_mode(backend kind).
  std::optional<delivery_mode> mode;

  // Pace. After a completion the loop polls without pause for spin_window, in either mode,
  // so that work completing back to back is seen at once. Then, polling, it sleeps
  // min_interval, doubling each time up to max_interval, until something completes.
  std::chrono::nanoseconds spin_window = std::chrono::microseconds{50};
  // Spin only while spinning pays: when fewer than 4 of the last 16 completions that left
  // watches pending were followed by the next within the window (work that ends further
  // apart, collectives across processes say), the loop sleeps instead, until enough are. A
  // spin that cannot pay only takes a core from the threads that would end the work: on a
  // machine with fewer cores than busy threads it slows them down.
  bool adaptive_spin = true;
  std::chrono::nanoseconds min_interval = std::chrono::microseconds{10};
  std::chrono::nanoseconds max_interval = std::chrono::microseconds{40};

  // Learned sleep: once a stream has completed a few watches, the loop sleeps until
  // learned_fraction of the shortest recent one has passed before polling it.
  bool learn_durations = true;
  double learned_fraction = 0.75;

  // In callback mode, how often the loop still looks while watches are pending, so that a
  // callback that comes late (work enqueued between the point and the watch) costs at most
  // this much.
  std::chrono::nanoseconds callback_backstop = std::chrono::milliseconds{2};

  // The watchdog: a stream whose oldest watch has been its oldest for this long (the stream
  // has not moved) is reported once per watch through on_stuck and the stuck counters; the
  // report's age counts from when the watch was added. Zero turns it off.
  std::chrono::nanoseconds stuck_after = std::chrono::seconds{10};
  stuck_callback on_stuck;  // runs on the poller's thread, like watch callbacks

  // Called on the poller's thread each time a pass over a stream finds it has moved on, with
  // how late that was seen: from the later of the last look that found the stream short of
  // its oldest watch, the backend's last word that a stream moved (callback mode), and the
  // moment the watch became the oldest, to the look that found it done. An upper bound of the
  // detection delay when polling; close to it when told. Must be quick (a histogram).
  std::function<void(std::chrono::nanoseconds)> on_detected;

  // Linux timer slack for the poller's thread. The default slack (50 µs) would stretch every
  // short sleep by that much.
  std::chrono::nanoseconds timer_slack = std::chrono::microseconds{1};

  std::string thread_name = "cudactor-poll";  // at most 15 characters are kept
};

// Counters for dashboards and tests; a snapshot, consistent to within one tick.
struct poller_stats {
  std::uint64_t watches = 0;    // accepted by watch()
  std::uint64_t completed = 0;  // answered completed
  std::uint64_t failed = 0;
  std::uint64_t timed_out = 0;
  std::uint64_t cancelled = 0;
  std::uint64_t in_flight = 0;        // accepted and not yet answered
  std::uint64_t active_streams = 0;   // streams with a pending watch
  std::uint64_t ticks = 0;            // passes of the loop
  std::uint64_t queries = 0;          // timeline or event queries made
  std::uint64_t wakeups = 0;          // sleeps cut short by a new watch or a callback
  std::uint64_t learned_sleeps = 0;   // sleeps taken on a learned duration (polling)
  std::uint64_t spins = 0;            // completions followed by a spin, not a sleep
  std::uint64_t spins_skipped = 0;    // completions followed by a sleep, not a spin (adaptive_spin)
  std::uint64_t stuck_total = 0;      // watchdog reports
  std::uint64_t stuck_now = 0;        // streams whose oldest watch is past the threshold now
  std::uint64_t callback_errors = 0;  // callbacks that threw (caught and counted)
  // Callback mode without timeline listeners (CUDA): host callbacks added to streams to wake
  // the loop. At most one is outstanding per stream (each stalls its stream while the host
  // runs it), so this grows with the streams' progress, not with the watches.
  std::uint64_t host_notifications = 0;
  std::chrono::nanoseconds cpu_time{0};  // CPU time of the poller's thread
  // Wall time spent in ticks that answered something: the cost of the work itself, without
  // the empty looks in between.
  std::chrono::nanoseconds busy_time{0};
};

class completion_poller {
 public:
  // Starts the loop's thread. The backend must outlive the poller.
  explicit completion_poller(backend& device, poller_options options = {});
  completion_poller(const completion_poller&) = delete;
  completion_poller& operator=(const completion_poller&) = delete;
  // stop(). Must not run on the poller's own thread (i.e. inside one of its callbacks).
  ~completion_poller();

  // Polling on CUDA until measured otherwise on a GPU; on the host backend the mode the
  // benchmark found better (docs/benchmarks.md).
  [[nodiscard]] static delivery_mode default_mode(backend_kind kind) noexcept;

  // Calls `callback` once `s`'s timeline reaches `point` (or the point fails, or the deadline
  // passes, or the watch is cancelled). Watches on one stream are best made in stream order:
  // the oldest is queried first, so a watch made out of order is answered once those made
  // before it are. A point beyond anything signalled so far waits like any other (the
  // watchdog reports it if it never comes). An empty callback is allowed: the watch then only
  // feeds the stream's progress report.
  //
  // Errors (no callback is made): invalid_argument for an empty stream, foreign_handle for
  // another backend's, cancelled once the poller is stopping. A stale stream is found out on
  // the poller's thread and answered through the callback (failed, invalid_handle).
  [[nodiscard]] result<watch_id> watch(stream_ref s, timeline_point point, watch_deadline deadline,
                                       watch_callback callback);
  // Progress-only watches (no callback, no deadline) on every point from `first` to `last` of
  // `s`, as if watch(s, p, std::nullopt, {}) were called for each in order, at the cost of
  // one: one lock, one clock read, at most one wake-up. For bursts of work whose completions
  // are learned from the stream's progress report. Errors as for watch(); invalid_argument
  // for an empty range.
  [[nodiscard]] status watch_points(stream_ref s, timeline_point first, timeline_point last);
  // Calls `callback` once event `e`, recorded on `s`, completes. `s` decides which FIFO the
  // watch waits in.
  [[nodiscard]] result<watch_id> watch(stream_ref s, event_ref e, watch_deadline deadline,
                                       watch_callback callback);

  // Asks for the watch to be answered cancelled. Exactly one answer either way: if the watch
  // completes first, it is answered completed and the cancel does nothing. False when the
  // poller is stopped or the id is empty.
  bool cancel(const watch_id& id);

  // Once per tick in which watches on `s` were answered, calls `callback` with how far the
  // stream got. Replaces an earlier subscription; an empty callback ends it.
  [[nodiscard]] status subscribe(stream_ref s, progress_callback callback);

  // Answers every pending watch with cancelled and joins the thread. Idempotent. Called from
  // one of the poller's own callbacks it only begins the stop; the destructor finishes it.
  void stop();

  [[nodiscard]] poller_stats stats() const;
  [[nodiscard]] delivery_mode mode() const noexcept;
  [[nodiscard]] const poller_options& options() const noexcept;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace cudactor::gpu
