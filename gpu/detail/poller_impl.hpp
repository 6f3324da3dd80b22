// gpu/detail/poller_impl.hpp
//
// The completion poller's insides, shared by its two source files: completion_poller.cpp
// (construction and everything callers' threads do: watch, cancel, subscribe, stop, stats)
// and detail/poller_loop.cpp (everything the loop's thread does: ticks, queries, answers,
// deadlines, the watchdog, pacing, shutdown). The inbox in poller_core is where the two
// meet; nothing else is touched from both sides.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <time.h>

#include <atomic>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "cudactor/gpu/completion_poller.hpp"
#include "cudactor/gpu/detail/watch_queue.hpp"

namespace cudactor::gpu {

namespace detail {

struct watch_command {
  stream_ref stream;
  watch_entry entry;
  watch_deadline deadline;
};
struct cancel_command {
  watch_id id;
};
struct subscribe_command {
  stream_ref stream;
  progress_callback callback;
};
using command = std::variant<watch_command, cancel_command, subscribe_command>;

struct deadline_entry {
  watch_clock::time_point when;
  std::uint64_t sequence;
  std::uint64_t stream_key;
};
// std::push_heap builds a max-heap; this order puts the earliest deadline on top.
inline bool later(const deadline_entry& a, const deadline_entry& b) noexcept {
  return a.when > b.when;
}

// The poller's thread is the only writer of its counters: a plain load and store is enough
// and avoids a locked instruction per completion.
inline void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

inline std::chrono::nanoseconds cpu_time_of(clockid_t clock) noexcept {
  timespec now{};
  if (clock_gettime(clock, &now) != 0) return std::chrono::nanoseconds{-1};
  return std::chrono::seconds{now.tv_sec} + std::chrono::nanoseconds{now.tv_nsec};
}

// Stream states kept for streams with no pending watch, so that a stream that comes back
// does not look up its timeline again. Beyond this many, idle ones are forgotten.
constexpr std::size_t stream_cache_limit = 4096;
// Inbox commands taken per tick at most (see drain_inbox).
constexpr std::size_t commands_per_tick = 1024;
// Below this many entries the deadline heap is never compacted.
constexpr std::size_t deadline_compaction_floor = 256;

// What backend callbacks reach. It can outlive the poller (a CUDA callback may run after the
// poller is gone), so they hold it by shared_ptr; whatever they post then is never run.
struct poller_core {
  boost::asio::io_context io{1};
  std::mutex mutex;  // guards inbox, next_sequence, closed
  std::vector<command> inbox;
  std::uint64_t next_sequence = 1;
  bool closed = false;
  std::atomic<bool> inbox_ready{false};
  // True while the loop sleeps (timer or idle); whoever flips it back posts the wake-up.
  std::atomic<bool> asleep{true};
  std::atomic<bool> notified{false};
  std::atomic<bool> watching{false};  // the loop holds pending watches
  // Streams with a host callback on its way to wake the loop (by handle_id::value), under
  // `mutex`: at most one per stream.
  std::unordered_set<std::uint64_t> armed;
  std::atomic<std::uint64_t> host_notifications{0};
  std::atomic<std::uint64_t> wakeups{0};
  // When a backend callback last said a watched stream moved (watch_clock, in ns).
  std::atomic<std::int64_t> notified_ns{0};
  std::function<void()> on_wake;  // set once, before the loop starts

  void kick() {
    if (asleep.exchange(false)) {
      wakeups.fetch_add(1, std::memory_order_relaxed);
      boost::asio::post(io, [this] { on_wake(); });
    }
  }
  // A backend callback: the stream got somewhere. A timeline tells its listeners of every
  // move, watched or not; with nothing pending that is no reason to wake the loop (a watch
  // made meanwhile wakes it itself, and its first tick queries the stream).
  void notify() {
    notified.store(true);
    if (watching.load()) {
      notified_ns.store(watch_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
      kick();
    }
  }
};

}  // namespace detail

class completion_poller::impl {
  using nanoseconds = std::chrono::nanoseconds;
  using time_point = watch_clock::time_point;
  using watch_entry = detail::watch_entry;
  using watch_command = detail::watch_command;
  using subscribe_command = detail::subscribe_command;
  using cancel_command = detail::cancel_command;
  using command = detail::command;
  using deadline_entry = detail::deadline_entry;

 public:
  impl(backend& device, poller_options options);
  ~impl() { stop(); }

  result<watch_id> watch(stream_ref s, watch_entry entry, watch_deadline deadline);
  status watch_points(stream_ref s, timeline_point first, timeline_point last);
  // Callback mode: a host callback on `s` at its current end that wakes the loop, unless one
  // is on its way already: at most one per stream, since each stalls its stream while the
  // host runs it. Called by whoever watches, never by the loop (adding a callback blocks
  // while the stream's queue is full, and the loop must not). Watches made while one is on
  // its way are seen when it fires (the loop then spins for spin_window) or at the backstop.
  void wake_when_reached(stream_ref s);
  bool cancel(const watch_id& id);
  status subscribe(stream_ref s, progress_callback callback);
  void stop();
  poller_stats stats() const;

  backend& device_;
  const poller_options options_;
  const delivery_mode mode_;

 private:
  // What the loop keeps per stream it has watched: its FIFO of watches and how it moves.
  struct watched_stream {
    stream_ref ref;
    std::shared_ptr<timeline> line;  // empty when the stream could not be found
    status line_error;
    std::string name;
    detail::watch_queue queue;
    detail::duration_learner learner;
    time_point head_since{};  // since when the front watch has been the front
    time_point last_miss{};   // the last tick that found the front watch not yet done
    progress_callback progress;
    std::uint64_t stuck_reported = 0;  // sequence of the last watch reported stuck
    std::uint64_t listener = 0;        // callback mode: our listener on `line`, 0 if none
    bool active = false;
  };

  struct counters {
    std::atomic<std::uint64_t> completed{0}, failed{0}, timed_out{0}, cancelled{0}, ticks{0},
        queries{0}, stuck_total{0}, stuck_now{0}, callback_errors{0}, active_streams{0}, busy_ns{0},
        learned_sleeps{0}, spins{0}, spins_skipped{0};
  };

  [[nodiscard]] status check_stream(stream_ref s) const;

  // --- the loop's thread -------------------------------------------------------------------
  void on_wake();
  void tick();
  void drain_inbox();
  void accept(watch_command&& command);
  void cancel_now(const watch_id& id);
  void subscribe_now(subscribe_command&& command);
  bool poll(watched_stream& s);
  [[nodiscard]] query_result query_point(watched_stream& s, timeline_point point);
  void answer(watched_stream& s, watch_entry&& entry, watch_outcome outcome, status error,
              time_point when);
  void expire_deadlines(time_point now);
  void compact_deadlines();
  void check_stuck(time_point now);
  void schedule(time_point now, bool progressed);
  void note_spin_outcome(nanoseconds gap);
  // Spin while at least a quarter of the recent completions came within its reach: work
  // that ends back to back keeps every bit set, work that ends further apart clears them, and
  // the odd close pair among the latter does not bring the spin back.
  [[nodiscard]] bool spin_pays() const noexcept { return std::bitset<16>{spin_paid_}.count() >= 4; }
  [[nodiscard]] time_point next_poll(time_point now);
  [[nodiscard]] time_point advance_backoff(time_point next);
  void spin();
  void sleep_until(std::optional<time_point> when);
  void disarm_timer();
  void shut_down();
  watched_stream* find_state(const handle_id& stream);
  watched_stream* find_state_by_key(std::uint64_t key);
  watched_stream& state_for(stream_ref s);

  std::shared_ptr<detail::poller_core> core_;
  boost::asio::steady_timer timer_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
  clockid_t cpu_clock_{};
  bool have_cpu_clock_ = false;
  std::atomic<bool> running_{false};
  std::atomic<std::int64_t> final_cpu_ns_{0};
  std::atomic<bool> stop_requested_{false};
  // Callback mode: whether this backend's timelines tell listeners when they move (host) or
  // each watch needs a host callback on its stream (CUDA). Unknown until the first stream.
  enum class notify_support : int { unknown, listeners, callbacks };
  std::atomic<notify_support> notify_support_{notify_support::unknown};
  std::mutex join_mutex_;
  counters counters_;

  // Owned by the loop's thread.
  bool stopped_ = false;
  std::unordered_map<std::uint64_t, std::unique_ptr<watched_stream>> streams_;
  std::vector<watched_stream*> active_;
  std::vector<deadline_entry> deadlines_;  // a heap, earliest on top; may hold answered ones
  std::size_t live_deadlines_ = 0;
  std::vector<command> batch_;  // taken from the inbox; batch_[batch_next_..] still to do
  std::size_t batch_next_ = 0;
  std::uint64_t generation_ = 0;  // invalidates scheduled continuations
  bool timer_armed_ = false;
  std::size_t pending_ = 0;  // live watches held in the queues
  time_point last_activity_{};
  // Whether a spin would have paid after each of the last 16 completions that left watches
  // pending (bit set: the next completion came within its reach), newest in bit 0.
  std::uint16_t spin_paid_ = 0xffff;
  bool pending_at_activity_ = false;  // watches were pending after the last completion
  nanoseconds backoff_;
  time_point next_watchdog_{};
  time_point tick_started_{};
};

}  // namespace cudactor::gpu
