#include "cudactor/gpu/completion_poller.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <pthread.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <atomic>
#include <cassert>
#include <functional>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "cudactor/gpu/detail/watch_queue.hpp"

namespace cudactor::gpu {

namespace asio = boost::asio;
using detail::watch_entry;
using std::chrono::nanoseconds;
using time_point = watch_clock::time_point;

std::string_view to_string(delivery_mode value) noexcept {
  switch (value) {
    case delivery_mode::polling: return "polling";
    case delivery_mode::callback: return "callback";
  }
  return "unknown";
}

namespace {

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
  time_point when;
  std::uint64_t sequence;
  std::uint64_t stream_key;
};
// std::push_heap builds a max-heap; this order puts the earliest deadline on top.
bool later(const deadline_entry& a, const deadline_entry& b) noexcept { return a.when > b.when; }

// The poller's thread is the only writer of its counters: a plain load and store is enough
// and avoids a locked instruction per completion.
void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

nanoseconds cpu_time_of(clockid_t clock) noexcept {
  timespec now{};
  if (clock_gettime(clock, &now) != 0) return nanoseconds{-1};
  return std::chrono::seconds{now.tv_sec} + nanoseconds{now.tv_nsec};
}

// Stream states kept for streams with no pending watch, so that a stream that comes back
// does not look up its timeline again. Beyond this many, idle ones are forgotten.
constexpr std::size_t stream_cache_limit = 4096;
// Inbox commands taken per tick at most (see drain_inbox).
constexpr std::size_t commands_per_tick = 1024;
// Below this many entries the deadline heap is never compacted.
constexpr std::size_t deadline_compaction_floor = 256;

}  // namespace

// What backend callbacks reach. It can outlive the poller (a CUDA callback may run after the
// poller is gone), so they hold it by shared_ptr; whatever they post then is never run.
struct poller_core {
  asio::io_context io{1};
  std::mutex mutex;  // guards inbox, next_sequence, closed
  std::vector<command> inbox;
  std::uint64_t next_sequence = 1;
  bool closed = false;
  std::atomic<bool> inbox_ready{false};
  // True while the loop sleeps (timer or idle); whoever flips it back posts the wake-up.
  std::atomic<bool> asleep{true};
  std::atomic<bool> notified{false};
  std::atomic<std::uint64_t> wakeups{0};
  std::function<void()> on_wake;  // set once, before the loop starts

  void kick() {
    if (asleep.exchange(false)) {
      wakeups.fetch_add(1, std::memory_order_relaxed);
      asio::post(io, [this] { on_wake(); });
    }
  }
  // A backend callback: the stream got somewhere.
  void notify() {
    notified.store(true);
    kick();
  }
};

class completion_poller::impl {
 public:
  impl(backend& device, poller_options options);
  ~impl() { stop(); }

  result<watch_id> watch(stream_ref s, watch_entry entry, watch_deadline deadline);
  bool cancel(const watch_id& id);
  status subscribe(stream_ref s, progress_callback callback);
  void stop();
  poller_stats stats() const;

  backend& device_;
  const poller_options options_;
  const delivery_mode mode_;

 private:
  struct stream_state {
    stream_ref ref;
    std::shared_ptr<timeline> line;  // empty when the stream could not be found
    status line_error;
    std::string name;
    detail::watch_queue queue;
    detail::duration_learner learner;
    time_point head_since{};  // since when the front watch has been the front
    progress_callback progress;
    std::uint64_t stuck_reported = 0;  // sequence of the last watch reported stuck
    std::uint64_t listener = 0;        // callback mode: our listener on `line`, 0 if none
    bool active = false;
  };

  struct counters {
    std::atomic<std::uint64_t> completed{0}, failed{0}, timed_out{0}, cancelled{0}, ticks{0},
        queries{0}, stuck_total{0}, stuck_now{0}, callback_errors{0}, active_streams{0}, busy_ns{0};
  };

  [[nodiscard]] status check_stream(stream_ref s) const;

  // --- the loop's thread -------------------------------------------------------------------
  void on_wake();
  void tick();
  void drain_inbox(time_point now);
  void accept(watch_command&& command, time_point now);
  void cancel_now(const watch_id& id);
  void subscribe_now(subscribe_command&& command);
  bool poll(stream_state& s);
  [[nodiscard]] query_result query_point(stream_state& s, timeline_point point);
  void answer(stream_state& s, watch_entry&& entry, watch_outcome outcome, status error,
              time_point when);
  void expire_deadlines(time_point now);
  void compact_deadlines();
  void check_stuck(time_point now);
  void schedule(time_point now, bool progressed);
  [[nodiscard]] time_point next_poll(time_point now);
  [[nodiscard]] time_point advance_backoff(time_point next);
  void spin();
  void sleep_until(std::optional<time_point> when);
  void shut_down();
  stream_state* find_state(const handle_id& stream);
  stream_state* find_state_by_key(std::uint64_t key);
  stream_state& state_for(stream_ref s);

  std::shared_ptr<poller_core> core_;
  asio::steady_timer timer_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
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
  std::unordered_map<std::uint64_t, std::unique_ptr<stream_state>> streams_;
  std::vector<stream_state*> active_;
  std::vector<deadline_entry> deadlines_;  // a heap, earliest on top; may hold answered ones
  std::size_t live_deadlines_ = 0;
  std::vector<command> batch_;  // taken from the inbox; batch_[batch_next_..] still to do
  std::size_t batch_next_ = 0;
  std::uint64_t generation_ = 0;  // invalidates scheduled continuations
  bool timer_armed_ = false;
  std::size_t pending_ = 0;  // live watches held in the queues
  time_point last_activity_{};
  nanoseconds backoff_;
  time_point next_watchdog_{};
};

// --- construction, the caller's side ---------------------------------------------------------

namespace {

delivery_mode pick_mode(const backend& device, const poller_options& options) {
  return options.mode ? *options.mode : completion_poller::default_mode(device.kind());
}

void validate(const poller_options& o) {
  auto bad = [](const char* what) {
    throw std::invalid_argument{std::string{"poller_options: "} + what};
  };
  if (o.spin_window.count() < 0) bad("spin_window must not be negative");
  if (o.min_interval.count() <= 0) bad("min_interval must be positive");
  if (o.max_interval < o.min_interval) bad("max_interval must be at least min_interval");
  if (!(o.learned_fraction > 0.0 && o.learned_fraction <= 1.0)) {
    bad("learned_fraction must be in (0, 1]");
  }
  if (o.callback_backstop.count() <= 0) bad("callback_backstop must be positive");
  if (o.stuck_after.count() < 0) bad("stuck_after must not be negative");
  if (o.timer_slack.count() <= 0) bad("timer_slack must be positive");
}

}  // namespace

completion_poller::impl::impl(backend& device, poller_options options)
    : device_(device),
      options_((validate(options), std::move(options))),
      mode_(pick_mode(device, options_)),
      core_(std::make_shared<poller_core>()),
      timer_(core_->io),
      guard_(asio::make_work_guard(core_->io)),
      backoff_(options_.min_interval) {
  core_->on_wake = [this] { on_wake(); };
  running_.store(true);
  thread_ = std::thread{[this] {
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(options_.timer_slack.count()), 0, 0, 0);
    pthread_setname_np(pthread_self(), options_.thread_name.substr(0, 15).c_str());
#endif
    core_->io.run();
    final_cpu_ns_.store(cpu_time_of(CLOCK_THREAD_CPUTIME_ID).count());
    running_.store(false);
  }};
  have_cpu_clock_ = pthread_getcpuclockid(thread_.native_handle(), &cpu_clock_) == 0;
}

status completion_poller::impl::check_stream(stream_ref s) const {
  if (s.empty()) return {errc::invalid_argument, "watch on an empty stream reference"};
  if (s.id().instance != device_.instance()) {
    return {errc::foreign_handle,
            "stream " + to_string(s.id()) + " belongs to another backend than the poller's"};
  }
  return {};
}

result<watch_id> completion_poller::impl::watch(stream_ref s, watch_entry entry,
                                                watch_deadline deadline) {
  if (auto bad = check_stream(s); !bad.ok()) return bad;
  if (entry.is_event && entry.event.empty()) {
    return status{errc::invalid_argument, "watch on an empty event reference"};
  }
  entry.added = watch_clock::now();
  const bool entry_is_event = entry.is_event;
  std::uint64_t sequence = 0;
  {
    std::lock_guard<std::mutex> lock{core_->mutex};
    if (core_->closed) return status{errc::cancelled, "the completion poller is stopped"};
    sequence = entry.sequence = core_->next_sequence++;
    core_->inbox.push_back(watch_command{s, std::move(entry), deadline});
    core_->inbox_ready.store(true);
  }
  core_->kick();
  if (mode_ == delivery_mode::callback &&
      (entry_is_event || notify_support_.load() != notify_support::listeners)) {
    // Runs on a backend thread once the stream gets here (cudaStreamAddCallback on CUDA); it
    // only wakes the loop, which then queries as usual. If it cannot be added (a stale
    // stream), the loop still answers at its backstop.
    device_.add_callback(s, [core = core_](const status&) { core->notify(); }).ignore();
  }
  return watch_id{sequence, s.id()};
}

bool completion_poller::impl::cancel(const watch_id& id) {
  if (id.empty()) return false;
  {
    std::lock_guard<std::mutex> lock{core_->mutex};
    if (core_->closed) return false;
    core_->inbox.push_back(cancel_command{id});
    core_->inbox_ready.store(true);
  }
  core_->kick();
  return true;
}

status completion_poller::impl::subscribe(stream_ref s, progress_callback callback) {
  if (auto bad = check_stream(s); !bad.ok()) return bad;
  {
    std::lock_guard<std::mutex> lock{core_->mutex};
    if (core_->closed) return {errc::cancelled, "the completion poller is stopped"};
    core_->inbox.push_back(subscribe_command{s, std::move(callback)});
    core_->inbox_ready.store(true);
  }
  core_->kick();
  return {};
}

void completion_poller::impl::stop() {
  {
    std::lock_guard<std::mutex> lock{core_->mutex};
    core_->closed = true;
  }
  stop_requested_.store(true);
  // From one of our own callbacks: the tick that runs it finishes the stop.
  if (std::this_thread::get_id() == thread_.get_id()) return;
  std::lock_guard<std::mutex> lock{join_mutex_};
  if (!thread_.joinable()) return;
  asio::post(core_->io, [this] { shut_down(); });
  thread_.join();
}

poller_stats completion_poller::impl::stats() const {
  poller_stats out;
  {
    std::lock_guard<std::mutex> lock{core_->mutex};
    out.watches = core_->next_sequence - 1;
  }
  const auto load = [](const std::atomic<std::uint64_t>& c) {
    return c.load(std::memory_order_relaxed);
  };
  out.completed = load(counters_.completed);
  out.failed = load(counters_.failed);
  out.timed_out = load(counters_.timed_out);
  out.cancelled = load(counters_.cancelled);
  const std::uint64_t answered = out.completed + out.failed + out.timed_out + out.cancelled;
  out.in_flight = out.watches > answered ? out.watches - answered : 0;
  out.active_streams = load(counters_.active_streams);
  out.ticks = load(counters_.ticks);
  out.queries = load(counters_.queries);
  out.wakeups = load(core_->wakeups);
  out.stuck_total = load(counters_.stuck_total);
  out.stuck_now = load(counters_.stuck_now);
  out.callback_errors = load(counters_.callback_errors);
  out.busy_time = nanoseconds{load(counters_.busy_ns)};
  nanoseconds cpu{-1};
  if (have_cpu_clock_ && running_.load()) cpu = cpu_time_of(cpu_clock_);
  // The thread may have ended between the two reads; then its last word counts.
  if (cpu.count() < 0) cpu = nanoseconds{final_cpu_ns_.load()};
  out.cpu_time = cpu;
  return out;
}

// --- the loop ---------------------------------------------------------------------------------

void completion_poller::impl::on_wake() {
  if (stopped_) return;
  ++generation_;
  if (timer_armed_) {
    timer_.cancel();
    timer_armed_ = false;
  }
  tick();
}

void completion_poller::impl::tick() {
  if (stopped_) return;
  bump(counters_.ticks);
  const time_point now = watch_clock::now();
  if (batch_next_ < batch_.size() || core_->inbox_ready.load()) drain_inbox(now);
  // Cleared before looking: a callback that fires from here on sets it again.
  core_->notified.store(false);
  bool progressed = false;
  for (std::size_t i = 0; i < active_.size();) {
    stream_state& s = *active_[i];
    progressed |= poll(s);
    if (s.queue.empty()) {
      s.active = false;
      active_[i] = active_.back();
      active_.pop_back();
    } else {
      ++i;
    }
  }
  if (!deadlines_.empty() && deadlines_.front().when <= now) expire_deadlines(now);
  if (options_.stuck_after.count() > 0 && now >= next_watchdog_) check_stuck(now);
  counters_.active_streams.store(active_.size(), std::memory_order_relaxed);
  if (stop_requested_.load()) {
    shut_down();
    return;
  }
  const time_point end = watch_clock::now();
  if (progressed) bump(counters_.busy_ns, static_cast<std::uint64_t>((end - now).count()));
  schedule(end, progressed);
}

void completion_poller::impl::drain_inbox(time_point now) {
  if (batch_next_ == batch_.size()) {
    batch_.clear();
    batch_next_ = 0;
    std::lock_guard<std::mutex> lock{core_->mutex};
    batch_.swap(core_->inbox);
    core_->inbox_ready.store(false);
  }
  // A flood of watches is taken a slice per tick, so that completions keep being seen
  // while it is worked off.
  const std::size_t end = std::min(batch_.size(), batch_next_ + commands_per_tick);
  for (; batch_next_ < end; ++batch_next_) {
    auto& command = batch_[batch_next_];
    if (auto* w = std::get_if<watch_command>(&command)) {
      accept(std::move(*w), now);
    } else if (auto* c = std::get_if<cancel_command>(&command)) {
      cancel_now(c->id);
    } else {
      subscribe_now(std::move(std::get<subscribe_command>(command)));
    }
  }
}

void completion_poller::impl::accept(watch_command&& command, time_point now) {
  stream_state& s = state_for(command.stream);
  watch_entry& entry = command.entry;
  if (command.deadline) {
    entry.has_deadline = true;
    if (deadlines_.size() >= deadline_compaction_floor && deadlines_.size() > 4 * live_deadlines_) {
      compact_deadlines();
    }
    deadlines_.push_back({*command.deadline, entry.sequence, command.stream.id().value()});
    std::push_heap(deadlines_.begin(), deadlines_.end(), later);
    ++live_deadlines_;
  }
  if (pending_ == 0) backoff_ = options_.min_interval;  // the loop was idle: start afresh
  ++pending_;
  if (s.queue.empty()) s.head_since = now;
  s.queue.push(std::move(entry));
  if (!s.active) {
    s.active = true;
    active_.push_back(&s);
  }
}

void completion_poller::impl::cancel_now(const watch_id& id) {
  stream_state* s = find_state(id.stream);
  if (s == nullptr) return;
  watch_entry* entry = s->queue.find(id.sequence);
  if (entry == nullptr) return;  // already answered: the cancel does nothing
  watch_entry taken = s->queue.take(*entry);
  answer(*s, std::move(taken), watch_outcome::cancelled,
         {errc::cancelled,
          "watch " + std::to_string(id.sequence) + " on stream '" + s->name + "' was cancelled"},
         watch_clock::now());
}

void completion_poller::impl::subscribe_now(subscribe_command&& command) {
  state_for(command.stream).progress = std::move(command.callback);
}

bool completion_poller::impl::poll(stream_state& s) {
  bool any = false;
  time_point when{};
  stream_progress report;
  bool report_any = false;
  std::uint64_t queries = 0;
  while (watch_entry* head = s.queue.front()) {
    const query_result answer_now =
        head->is_event ? device_.query(head->event) : query_point(s, head->point);
    ++queries;
    if (!answer_now.done()) break;
    if (!any) {
      any = true;
      when = watch_clock::now();
      // Only the first answer of a pass measures how long the work took; the rest were done
      // before we looked.
      if (options_.learn_durations) s.learner.observe(when - std::max(s.head_since, head->added));
    }
    watch_entry entry = s.queue.pop_front();
    if (!entry.is_event) {
      report_any = true;
      report.reached = std::max(report.reached, entry.point);
      if (answer_now.failed()) report.failures.emplace_back(entry.point, answer_now.error);
    }
    answer(s, std::move(entry),
           answer_now.ready() ? watch_outcome::completed : watch_outcome::failed, answer_now.error,
           when);
  }
  bump(counters_.queries, queries);
  if (!any) return false;
  s.head_since = when;
  if (report_any && s.progress) {
    report.stream = s.ref;
    report.detected = when;
    try {
      s.progress(report);
    } catch (...) {
      bump(counters_.callback_errors);
    }
  }
  return true;
}

query_result completion_poller::impl::query_point(stream_state& s, timeline_point point) {
  if (!s.line) return {event_state::failed, s.line_error};
  return s.line->query(point);
}

void completion_poller::impl::answer(stream_state& s, watch_entry&& entry, watch_outcome outcome,
                                     status error, time_point when) {
  assert(pending_ > 0);
  --pending_;
  if (entry.has_deadline) --live_deadlines_;
  switch (outcome) {
    case watch_outcome::completed: bump(counters_.completed); break;
    case watch_outcome::failed: bump(counters_.failed); break;
    case watch_outcome::timed_out: bump(counters_.timed_out); break;
    case watch_outcome::cancelled: bump(counters_.cancelled); break;
  }
  if (!entry.callback) return;
  const watch_result result{watch_id{entry.sequence, s.ref.id()}, outcome, std::move(error),
                            entry.is_event ? 0 : entry.point, when};
  try {
    entry.callback(result);
  } catch (...) {
    bump(counters_.callback_errors);
  }
}

void completion_poller::impl::expire_deadlines(time_point now) {
  while (!deadlines_.empty() && deadlines_.front().when <= now) {
    std::pop_heap(deadlines_.begin(), deadlines_.end(), later);
    const deadline_entry due = deadlines_.back();
    deadlines_.pop_back();
    stream_state* s = find_state_by_key(due.stream_key);
    if (s == nullptr) continue;
    watch_entry* entry = s->queue.find(due.sequence);
    if (entry == nullptr) continue;  // answered before its deadline
    watch_entry taken = s->queue.take(*entry);
    const std::string what =
        taken.is_event ? std::string{"an event"} : "point " + std::to_string(taken.point);
    answer(*s, std::move(taken), watch_outcome::timed_out,
           {errc::timeout, "watch of " + what + " on stream '" + s->name + "' passed its deadline"},
           now);
  }
}

void completion_poller::impl::compact_deadlines() {
  auto answered = [this](const deadline_entry& d) {
    stream_state* s = find_state_by_key(d.stream_key);
    return s == nullptr || s->queue.find(d.sequence) == nullptr;
  };
  deadlines_.erase(std::remove_if(deadlines_.begin(), deadlines_.end(), answered),
                   deadlines_.end());
  std::make_heap(deadlines_.begin(), deadlines_.end(), later);
}

void completion_poller::impl::check_stuck(time_point now) {
  next_watchdog_ =
      now + std::max<nanoseconds>(options_.stuck_after / 8, std::chrono::milliseconds{1});
  std::uint64_t stuck = 0;
  for (stream_state* s : active_) {
    const watch_entry* head = s->queue.front();
    if (head == nullptr) continue;
    const nanoseconds age = now - head->added;
    if (age < options_.stuck_after) continue;
    ++stuck;
    if (s->stuck_reported == head->sequence) continue;
    s->stuck_reported = head->sequence;
    bump(counters_.stuck_total);
    if (!options_.on_stuck) continue;
    try {
      options_.on_stuck(stuck_watch{watch_id{head->sequence, s->ref.id()}, s->ref, s->name,
                                    head->is_event ? 0 : head->point, age, s->queue.live() - 1});
    } catch (...) {
      bump(counters_.callback_errors);
    }
  }
  counters_.stuck_now.store(stuck, std::memory_order_relaxed);
}

void completion_poller::impl::schedule(time_point now, bool progressed) {
  if (progressed) {
    last_activity_ = now;
    backoff_ = options_.min_interval;
  }
  if (batch_next_ < batch_.size()) {
    spin();  // a backlog of commands to take in
    return;
  }
  if (pending_ == 0) {
    counters_.stuck_now.store(0, std::memory_order_relaxed);
    sleep_until(std::nullopt);  // nothing to watch: no timer, a new watch wakes the loop
    return;
  }
  // Right after a completion more tend to follow (back-to-back work): look again at once,
  // in either mode, rather than pay for a sleep and a wake-up per completion.
  if (now - last_activity_ < options_.spin_window) {
    spin();
    return;
  }
  time_point next =
      mode_ == delivery_mode::callback ? now + options_.callback_backstop : next_poll(now);
  if (!deadlines_.empty()) next = std::min(next, deadlines_.front().when);
  if (options_.stuck_after.count() > 0) next = std::min(next, next_watchdog_);
  sleep_until(next);
}

time_point completion_poller::impl::next_poll(time_point now) {
  const time_point backed_off = now + backoff_;
  // Sleep longer only when every active stream is predicted to need longer.
  if (options_.learn_durations) {
    time_point earliest = time_point::max();
    for (stream_state* s : active_) {
      if (s->queue.empty()) continue;
      const auto shortest = s->learner.shortest();
      if (!shortest) return advance_backoff(backed_off);
      earliest = std::min(earliest, s->head_since + std::chrono::duration_cast<nanoseconds>(
                                                        *shortest * options_.learned_fraction));
    }
    if (earliest != time_point::max() && earliest > backed_off) {
      backoff_ = options_.min_interval;  // poll closely once the predicted time has come
      return earliest;
    }
  }
  return advance_backoff(backed_off);
}

time_point completion_poller::impl::advance_backoff(time_point next) {
  backoff_ = std::min(backoff_ * 2, options_.max_interval);
  return next;
}

void completion_poller::impl::spin() {
  asio::post(core_->io, [this, g = ++generation_] {
    if (g == generation_) tick();
  });
}

void completion_poller::impl::sleep_until(std::optional<time_point> when) {
  const std::uint64_t g = ++generation_;
  if (when) {
    timer_.expires_at(*when);
    timer_armed_ = true;
    timer_.async_wait([this, g](const boost::system::error_code& error) {
      if (error || g != generation_ || stopped_) return;
      timer_armed_ = false;
      core_->asleep.store(false);
      tick();
    });
  } else if (timer_armed_) {
    timer_.cancel();
    timer_armed_ = false;
  }
  core_->asleep.store(true);
  // A watch or a callback that came before `asleep` was set found the loop awake and posted
  // nothing; look again now that it is set.
  if (core_->inbox_ready.load() || core_->notified.load()) {
    if (core_->asleep.exchange(false)) {
      if (timer_armed_) {
        timer_.cancel();
        timer_armed_ = false;
      }
      spin();
    }
  }
}

void completion_poller::impl::shut_down() {
  if (stopped_) return;
  // Commands not yet taken: what is left of the current batch, then the inbox.
  std::vector<command> untaken(std::make_move_iterator(batch_.begin() + batch_next_),
                               std::make_move_iterator(batch_.end()));
  batch_.clear();
  batch_next_ = 0;
  {
    std::lock_guard<std::mutex> lock{core_->mutex};
    core_->closed = true;
    std::move(core_->inbox.begin(), core_->inbox.end(), std::back_inserter(untaken));
    core_->inbox.clear();
    core_->inbox_ready.store(false);
  }
  const time_point now = watch_clock::now();
  const status why{errc::cancelled, "the completion poller stopped"};
  // Queued watches are older than those still in the inbox: answer them first.
  for (auto& [key, s] : streams_) {
    s->queue.drain([&](watch_entry&& entry) {
      answer(*s, std::move(entry), watch_outcome::cancelled, why, now);
    });
  }
  for (auto& command : untaken) {
    if (auto* w = std::get_if<watch_command>(&command)) {
      stream_state& s = state_for(w->stream);
      ++pending_;
      if (w->deadline) {
        w->entry.has_deadline = true;
        ++live_deadlines_;
      }
      answer(s, std::move(w->entry), watch_outcome::cancelled, why, now);
    }
  }
  stopped_ = true;
  for (auto& [key, s] : streams_) {
    if (s->listener != 0) s->line->remove_listener(s->listener);
    s->listener = 0;
  }
  deadlines_.clear();
  active_.clear();
  counters_.active_streams.store(0, std::memory_order_relaxed);
  counters_.stuck_now.store(0, std::memory_order_relaxed);
  timer_.cancel();
  timer_armed_ = false;
  guard_.reset();
  core_->io.stop();
}

completion_poller::impl::stream_state* completion_poller::impl::find_state(
    const handle_id& stream) {
  if (stream.instance != device_.instance()) return nullptr;
  return find_state_by_key(stream.value());
}

completion_poller::impl::stream_state* completion_poller::impl::find_state_by_key(
    std::uint64_t key) {
  auto found = streams_.find(key);
  return found == streams_.end() ? nullptr : found->second.get();
}

completion_poller::impl::stream_state& completion_poller::impl::state_for(stream_ref s) {
  const std::uint64_t key = s.id().value();
  if (auto found = streams_.find(key); found != streams_.end()) return *found->second;
  if (streams_.size() >= stream_cache_limit) {
    for (auto it = streams_.begin(); it != streams_.end();) {
      const stream_state& old = *it->second;
      const bool idle = !old.active && old.queue.held() == 0 && !old.progress;
      if (idle && old.listener != 0) old.line->remove_listener(old.listener);
      it = idle ? streams_.erase(it) : std::next(it);
    }
  }
  auto state = std::make_unique<stream_state>();
  state->ref = s;
  if (auto line = device_.timeline_of(s)) {
    state->line = std::move(line.value());
  } else {
    state->line_error = line.error();
  }
  auto name = device_.stream_name(s);
  state->name = name ? std::move(name.value()) : to_string(s.id());
  if (mode_ == delivery_mode::callback && state->line) {
    // "Notify at completion": the timeline tells us itself when it moves, if it can.
    state->listener = state->line->add_listener([core = core_] { core->notify(); });
    notify_support_.store(state->listener != 0 ? notify_support::listeners
                                               : notify_support::callbacks);
  }
  return *streams_.emplace(key, std::move(state)).first->second;
}

// --- the public face --------------------------------------------------------------------------

completion_poller::completion_poller(backend& device, poller_options options)
    : impl_(std::make_unique<impl>(device, std::move(options))) {}

completion_poller::~completion_poller() = default;

delivery_mode completion_poller::default_mode(backend_kind kind) noexcept {
  switch (kind) {
    // Measured by bench/poller_bench on the host backend (docs/benchmarks.md): the host
    // timeline's own notification detects sparse work ~5x sooner at a tenth of the CPU, and
    // matches polling on back-to-back work, where both spin.
    case backend_kind::host: return delivery_mode::callback;
    // Until measured on a GPU: cudaStreamAddCallback costs a driver thread hop per watch.
    case backend_kind::cuda: return delivery_mode::polling;
  }
  return delivery_mode::polling;
}

result<watch_id> completion_poller::watch(stream_ref s, timeline_point point,
                                          watch_deadline deadline, watch_callback callback) {
  watch_entry entry;
  entry.point = point;
  entry.callback = std::move(callback);
  return impl_->watch(s, std::move(entry), deadline);
}

result<watch_id> completion_poller::watch(stream_ref s, event_ref e, watch_deadline deadline,
                                          watch_callback callback) {
  watch_entry entry;
  entry.is_event = true;
  entry.event = e;
  entry.callback = std::move(callback);
  return impl_->watch(s, std::move(entry), deadline);
}

bool completion_poller::cancel(const watch_id& id) { return impl_->cancel(id); }

status completion_poller::subscribe(stream_ref s, progress_callback callback) {
  return impl_->subscribe(s, std::move(callback));
}

void completion_poller::stop() { impl_->stop(); }

poller_stats completion_poller::stats() const { return impl_->stats(); }

delivery_mode completion_poller::mode() const noexcept { return impl_->mode_; }

const poller_options& completion_poller::options() const noexcept { return impl_->options_; }

}  // namespace cudactor::gpu
