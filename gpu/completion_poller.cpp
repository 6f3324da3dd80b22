#include "cudactor/gpu/completion_poller.hpp"

#include <pthread.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cudactor/gpu/detail/poller_impl.hpp"

namespace cudactor::gpu {

namespace asio = boost::asio;
using detail::cpu_time_of;
using detail::watch_entry;
using std::chrono::nanoseconds;

std::string_view to_string(delivery_mode value) noexcept {
  switch (value) {
    case delivery_mode::polling: return "polling";
    case delivery_mode::callback: return "callback";
  }
  return "unknown";
}

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
      core_(std::make_shared<detail::poller_core>()),
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
  if (s.empty()) return {status_code::invalid_argument, "watch on an empty stream reference"};
  if (s.id().instance != device_.instance()) {
    return {status_code::foreign_handle,
            "stream " + to_string(s.id()) + " belongs to another backend than the poller's"};
  }
  return {};
}

result<watch_id> completion_poller::impl::watch(stream_ref s, watch_entry entry,
                                                watch_deadline deadline) {
  if (auto bad = check_stream(s); !bad.ok()) return bad;
  if (entry.is_event && entry.event.empty()) {
    return status{status_code::invalid_argument, "watch on an empty event reference"};
  }
  entry.added = watch_clock::now();
  const bool entry_is_event = entry.is_event;
  std::uint64_t sequence = 0;
  {
    std::lock_guard<std::mutex> lock{core_->mutex};
    if (core_->closed) return status{status_code::cancelled, "the completion poller is stopped"};
    sequence = entry.sequence = core_->next_sequence++;
    core_->inbox.push_back(watch_command{s, std::move(entry), deadline});
    core_->inbox_ready.store(true);
  }
  core_->kick();
  if (mode_ == delivery_mode::callback &&
      (entry_is_event || notify_support_.load() != notify_support::listeners)) {
    wake_when_reached(s);
  }
  return watch_id{sequence, s.id()};
}

void completion_poller::impl::wake_when_reached(stream_ref s) {
  const std::uint64_t key = s.id().value();
  {
    std::lock_guard<std::mutex> lock{core_->mutex};
    if (core_->closed || !core_->armed.insert(key).second) return;  // one is on its way
  }
  // Runs on a backend thread once the stream gets here (cudaStreamAddCallback on CUDA); it
  // only wakes the loop, which then queries as usual. If it cannot be added (a stale
  // stream), the loop still answers at its backstop.
  auto added = device_.add_callback(s, [core = core_, key](const status&) {
    {
      std::lock_guard<std::mutex> lock{core->mutex};
      core->armed.erase(key);
    }
    core->notify();
  });
  if (added.ok()) {
    core_->host_notifications.fetch_add(1, std::memory_order_relaxed);
  } else {
    std::lock_guard<std::mutex> lock{core_->mutex};
    core_->armed.erase(key);
  }
}

status completion_poller::impl::watch_points(stream_ref s, timeline_point first,
                                             timeline_point last) {
  if (auto bad = check_stream(s); !bad.ok()) return bad;
  if (first == 0 || last < first) {
    return status{status_code::invalid_argument, "watch_points: points " + std::to_string(first) + " to " +
                                              std::to_string(last) + " is no range"};
  }
  const auto added = watch_clock::now();
  {
    std::lock_guard<std::mutex> lock{core_->mutex};
    if (core_->closed) return status{status_code::cancelled, "the completion poller is stopped"};
    // Room grown geometrically: reserve() to the exact size takes a new block, and copies
    // everything waiting, each time the inbox has not been drained since the last call, which
    // made a burst of watches quadratic.
    const std::size_t needed = core_->inbox.size() + static_cast<std::size_t>(last - first + 1);
    if (needed > core_->inbox.capacity()) {
      core_->inbox.reserve(std::max(needed, 2 * core_->inbox.capacity()));
    }
    for (timeline_point p = first; p <= last; ++p) {
      watch_entry entry;
      entry.point = p;
      entry.added = added;
      entry.sequence = core_->next_sequence++;
      core_->inbox.push_back(watch_command{s, std::move(entry), std::nullopt});
    }
    core_->inbox_ready.store(true);
  }
  core_->kick();
  if (mode_ == delivery_mode::callback && notify_support_.load() != notify_support::listeners) {
    wake_when_reached(s);  // one wake-up at the last point covers the whole range
  }
  return {};
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
    if (core_->closed) return {status_code::cancelled, "the completion poller is stopped"};
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
  out.host_notifications = load(core_->host_notifications);
  out.busy_time = nanoseconds{load(counters_.busy_ns)};
  out.learned_sleeps = load(counters_.learned_sleeps);
  out.spins = load(counters_.spins);
  out.spins_skipped = load(counters_.spins_skipped);
  nanoseconds cpu{-1};
  if (have_cpu_clock_ && running_.load()) cpu = cpu_time_of(cpu_clock_);
  // The thread may have ended between the two reads; then its last word counts.
  if (cpu.count() < 0) cpu = nanoseconds{final_cpu_ns_.load()};
  out.cpu_time = cpu;
  return out;
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
    // Measured by bench/gpu/detection_gpu_bench on an H200 (docs/gpu-validation.md,
    // 2026-11-26): polling learns of a kernel's end 5x (work back to back: 6.7 against 35 us,
    // p50) to 10x (sparse work: 26 against 259 us) sooner than cudaStreamAddCallback's driver
    // thread, at 11% of a core against 3% when work is sparse.
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

status completion_poller::watch_points(stream_ref s, timeline_point first, timeline_point last) {
  return impl_->watch_points(s, first, last);
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
