// bench/poller_bench.cpp
//
// How fast and how cheaply the completion poller learns that work finished, on the host
// backend, against baselines measured in the same run:
//   busy   back-to-back operations on one stream; detection delay (stamped inside the work ->
//          callback) in polling and callback modes, and for a thread spinning on query()
//   sparse one operation in flight at a time, 0.5-5 ms each; detection delay and the poller
//          thread's CPU per wall second
//   idle   no watch pending: the poller thread's CPU per wall second
//   scale  the poller's cost per completed watch as watches in flight grow 1 -> 100k over 1, 8
//          and 64 streams, against HPX-style polling that queries every pending watch each
//          pass. Completions are driven through the streams' host timelines directly, so the
//          cost measured is the detector's, not the host backend's.
// Prints a table, then one JSON object on the last line. --quick finishes in well under 20 s.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/report.hpp"
#include "cudactor/gpu/completion_poller.hpp"
#include "cudactor/gpu/host_backend.hpp"
#include "cudactor/gpu/host_timeline.hpp"

using namespace cudactor;
using namespace cudactor::bench;
using namespace std::chrono_literals;
using gpu::delivery_mode;

namespace {

template <class T>
T must(gpu::result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "poller_bench: %s: %s\n", what, r.error().to_string().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

void must(const gpu::status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "poller_bench: %s: %s\n", what, s.to_string().c_str());
    std::exit(1);
  }
}

std::unique_ptr<gpu::completion_poller> make_poller(gpu::backend& b, delivery_mode mode) {
  gpu::poller_options options;
  options.mode = mode;
  return std::make_unique<gpu::completion_poller>(b, options);
}

double cpu_ns(const gpu::completion_poller& p) {
  return static_cast<double>(p.stats().cpu_time.count());
}

void wait_until(const std::atomic<int>& counter, int target) {
  while (counter.load(std::memory_order_acquire) < target) std::this_thread::sleep_for(200us);
}

// Counts answers; the waiting thread blocks instead of waking up to look (a thread waking
// every few hundred microseconds is one more contender for the two cores).
class countdown {
 public:
  explicit countdown(int n) : left_(n) {}
  void count() {
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock{mutex_};
      done_.notify_all();
    }
  }
  void wait() {
    std::unique_lock<std::mutex> lock{mutex_};
    done_.wait(lock, [&] { return left_.load(std::memory_order_acquire) <= 0; });
  }

 private:
  std::atomic<int> left_;
  std::mutex mutex_;
  std::condition_variable done_;
};

// How often this machine takes a spinning thread off its core for more than 100 µs while
// another thread spins beside it: the noise floor under every tail latency measured here.
struct stall_probe {
  double stalls_per_s = 0;
  double max_stall_us = 0;
};

stall_probe probe_stalls(std::chrono::milliseconds span) {
  std::atomic<std::int64_t> stalls{0}, worst{0};
  auto spin = [&] {
    const auto end = now_ns() + std::chrono::nanoseconds{span}.count();
    std::int64_t previous = now_ns(), count = 0, longest = 0;
    for (std::int64_t t = previous; t < end; t = now_ns()) {
      const std::int64_t gap = t - previous;
      if (gap > 100'000) ++count;
      longest = std::max(longest, gap);
      previous = t;
    }
    stalls += count;
    if (longest > worst.load()) worst = longest;
  };
  std::thread other{spin};
  spin();
  other.join();
  const double seconds = std::chrono::duration<double>(span).count();
  return {static_cast<double>(stalls.load()) / (2 * seconds), worst.load() / 1e3};
}

// --- busy ------------------------------------------------------------------------------------

struct latency_run {
  percentiles delay;
  double cpu_pct = 0;  // of one core, over the measured phase
  std::vector<double> samples_us;
};

// `mode` empty: the baseline, a thread spinning on query() with no sleep or yield.
latency_run busy(gpu::host_backend& b, std::optional<delivery_mode> mode, int n) {
  constexpr std::int64_t op_ns = 5'000;  // each operation computes for 5 µs
  auto s = must(b.create_stream({"busy"}), "create stream");
  auto line = must(b.timeline_of(s), "timeline");
  std::vector<std::int64_t> done(n), seen(n);
  std::vector<gpu::timeline_point> points(n);
  countdown answered{n};
  auto poller = mode ? make_poller(b, *mode) : nullptr;
  auto gate = must(b.inject_hang(s), "hold");
  for (int i = 0; i < n; ++i) {
    must(b.enqueue(s,
                   [&done, i](const gpu::launch_context&) {
                     const auto until = now_ns() + op_ns;
                     while (now_ns() < until) {
                     }
                     done[i] = now_ns();
                     return gpu::status{};
                   }),
         "enqueue");
    points[i] = must(b.signal(s), "signal");
    if (poller) {
      must(poller->watch(s, points[i], std::nullopt,
                         [&seen, &answered, i](const gpu::watch_result&) {
                           seen[i] = now_ns();
                           answered.count();
                         }),
           "watch");
    }
  }
  std::atomic<std::int64_t> spinner_cpu{0};
  std::atomic<bool> go{false};
  std::thread spinner;
  if (!poller) {
    spinner = std::thread{[&] {
      while (!go.load()) std::this_thread::sleep_for(1ms);
      const auto cpu0 = thread_cpu_ns();
      for (int i = 0; i < n; ++i) {
        while (!line->query(points[i]).done()) {
        }
        seen[i] = now_ns();
      }
      spinner_cpu = thread_cpu_ns() - cpu0;
      answered.count();
    }};
  }
  // Let the poller take all watches in first: this measures detection, not registration.
  std::this_thread::sleep_for(50ms);
  // CPU is counted from the release for the poller, from the start of spinning for the
  // spinner (which spins while it waits, as a real one would).
  auto wall0 = now_ns();
  go = true;
  std::this_thread::sleep_for(5ms);  // the spinner is spinning by now
  const double cpu0 = poller ? cpu_ns(*poller) : 0;
  if (poller) wall0 = now_ns();
  gate.release();
  if (spinner.joinable()) {
    spinner.join();
  } else {
    answered.wait();
  }
  const double wall = static_cast<double>(now_ns() - wall0);
  latency_run out;
  out.cpu_pct = 100.0 * (poller ? cpu_ns(*poller) - cpu0 : spinner_cpu.load()) / wall;
  std::vector<double> delays(n);
  for (int i = 0; i < n; ++i) delays[i] = static_cast<double>(seen[i] - done[i]) / 1e3;
  out.delay = summarize_us(delays);
  out.samples_us = std::move(delays);
  must(b.synchronize(s), "synchronize");
  return out;
}

// Busy work in rounds: a multi-millisecond stall of a thread by the OS (2 cores, 3 threads
// wanting them) lands in one round, not in every percentile. Reports the median round's
// percentiles, the worst round's p99 and the overall max.
struct busy_result {
  latency_run median;
  double worst_p99 = 0;
  percentiles all;  // over every sample of every round
};

busy_result busy_rounds(gpu::host_backend& b, std::optional<delivery_mode> mode, int rounds,
                        int n) {
  std::vector<latency_run> runs;
  std::vector<double> all;
  for (int r = 0; r < rounds; ++r) {
    runs.push_back(busy(b, mode, n));
    all.insert(all.end(), runs.back().samples_us.begin(), runs.back().samples_us.end());
  }
  std::sort(runs.begin(), runs.end(),
            [](const auto& x, const auto& y) { return x.delay.p99 < y.delay.p99; });
  busy_result out;
  out.all = summarize_us(std::move(all));
  out.median = runs[runs.size() / 2];
  out.median.samples_us.clear();
  out.worst_p99 = runs.back().delay.p99;
  std::vector<double> p50s;
  for (const auto& run : runs) {
    out.median.delay.max = std::max(out.median.delay.max, run.delay.max);
    p50s.push_back(run.delay.p50);
  }
  std::sort(p50s.begin(), p50s.end());
  out.median.delay.p50 = p50s[p50s.size() / 2];
  out.median.delay.n = static_cast<std::size_t>(rounds) * static_cast<std::size_t>(n);
  return out;
}

// --- sparse ----------------------------------------------------------------------------------

latency_run sparse(gpu::host_backend& b, std::optional<delivery_mode> mode, int n) {
  auto s = must(b.create_stream({"sparse"}), "create stream");
  auto line = must(b.timeline_of(s), "timeline");
  auto poller = mode ? make_poller(b, *mode) : nullptr;
  std::mt19937 random{42};
  std::uniform_int_distribution<std::int64_t> duration_us{500, 5000};
  std::vector<double> delays;
  std::mutex mutex;
  std::condition_variable answered;
  std::int64_t done = 0, seen = 0;
  bool have_answer = false;
  const double cpu0 = poller ? cpu_ns(*poller) : static_cast<double>(thread_cpu_ns());
  const auto wall0 = now_ns();
  for (int i = 0; i < n; ++i) {
    const auto busy_for = std::chrono::microseconds{duration_us(random)};
    must(b.enqueue(s,
                   [&done, busy_for](const gpu::launch_context&) {
                     std::this_thread::sleep_for(busy_for);
                     done = now_ns();
                     return gpu::status{};
                   }),
         "enqueue");
    const auto point = must(b.signal(s), "signal");
    if (poller) {
      must(poller->watch(s, point, std::nullopt,
                         [&](const gpu::watch_result&) {
                           const auto when = now_ns();
                           std::lock_guard<std::mutex> lock{mutex};
                           seen = when;
                           have_answer = true;
                           answered.notify_one();
                         }),
           "watch");
      std::unique_lock<std::mutex> lock{mutex};
      answered.wait(lock, [&] { return have_answer; });
      have_answer = false;
    } else {
      while (!line->query(point).done()) {
      }
      seen = now_ns();
    }
    delays.push_back(static_cast<double>(seen - done) / 1e3);
  }
  const double wall = static_cast<double>(now_ns() - wall0);
  const double cpu1 = poller ? cpu_ns(*poller) : static_cast<double>(thread_cpu_ns());
  latency_run out;
  out.delay = summarize_us(std::move(delays));
  // The spinning baseline's figure is the driver thread's, which spins: about one core.
  out.cpu_pct = 100.0 * (cpu1 - cpu0) / wall;
  return out;
}

// --- idle ------------------------------------------------------------------------------------

double idle_cpu_pct(gpu::host_backend& b, delivery_mode mode, std::chrono::milliseconds span) {
  auto poller = make_poller(b, mode);
  auto s = must(b.create_stream({"idle"}), "create stream");
  std::atomic<int> answered{0};
  must(poller->watch(s, must(b.signal(s), "signal"), std::nullopt,
                     [&](const gpu::watch_result&) { answered.fetch_add(1); }),
       "watch");
  wait_until(answered, 1);
  std::this_thread::sleep_for(20ms);
  const double cpu0 = cpu_ns(*poller);
  const auto wall0 = now_ns();
  std::this_thread::sleep_for(span);
  return 100.0 * (cpu_ns(*poller) - cpu0) / static_cast<double>(now_ns() - wall0);
}

// --- scale -----------------------------------------------------------------------------------

struct scale_run {
  double busy_ns_per_watch = 0;  // time in passes that answered something, per watch answered
  double cpu_ns_per_watch = 0;   // all CPU of the detecting thread, empty passes included
  double queries_per_watch = 0;
};

// Drives completions from this thread through the streams' host timelines, so that the cost
// measured is the detector's, not the host backend's. Keeps `in_flight` watches outstanding;
// of those, at most `unanswered` are complete at any time: the rest are still "running",
// which is what a detector that queries everything pays for.
class timeline_driver {
 public:
  static constexpr std::uint64_t unanswered = 16;

  timeline_driver(gpu::host_backend& b, int streams) {
    for (int i = 0; i < streams; ++i) {
      streams_.push_back(must(b.create_stream({"scale-" + std::to_string(i)}), "stream"));
      auto line = must(b.timeline_of(streams_.back()), "timeline");
      lines_.push_back(std::dynamic_pointer_cast<gpu::host_timeline>(line));
    }
  }

  // watch(stream, its timeline, point) registers one watch with the detector under test.
  template <class Watch>
  void run(std::size_t in_flight, std::uint64_t completions,
           const std::atomic<std::uint64_t>& answered, Watch&& watch) {
    const std::uint64_t stop_at = answered.load() + completions;
    const std::size_t n = streams_.size();
    while (answered.load(std::memory_order_acquire) < stop_at) {
      if (completed_ - answered.load(std::memory_order_acquire) < unanswered) {
        auto& line = *lines_[complete_next_];
        complete_next_ = (complete_next_ + 1) % n;
        if (line.completed() < line.signalled()) {
          line.set(line.completed() + 1);
          ++completed_;
        }
      }
      while (watched_ - answered.load(std::memory_order_acquire) < in_flight) {
        watch(streams_[watch_next_].ref(), lines_[watch_next_], lines_[watch_next_]->reserve());
        watch_next_ = (watch_next_ + 1) % n;
        ++watched_;
      }
    }
  }

  // Completes everything outstanding so that the watches end.
  void finish() {
    for (auto& line : lines_) line->set(line->signalled());
  }

 private:
  std::vector<gpu::stream> streams_;
  std::vector<std::shared_ptr<gpu::host_timeline>> lines_;
  // Kept across runs: watches from the warm-up are still out when the measurement starts.
  std::uint64_t watched_ = 0, completed_ = 0;
  std::size_t complete_next_ = 0, watch_next_ = 0;
};

std::uint64_t warm_up(std::uint64_t completions) {
  return std::min<std::uint64_t>(completions / 10 + 1, 5'000);
}

scale_run scale_poller(gpu::host_backend& b, int streams, std::size_t in_flight,
                       std::uint64_t completions) {
  timeline_driver driver{b, streams};
  gpu::completion_poller poller{b};  // default options
  std::atomic<std::uint64_t> answered{0};
  auto count = [&answered](const gpu::watch_result&) {
    answered.fetch_add(1, std::memory_order_release);
  };
  auto watch = [&](gpu::stream_ref s, const std::shared_ptr<gpu::host_timeline>&,
                   gpu::timeline_point p) {
    must(poller.watch(s, p, std::nullopt, count), "watch");
  };
  driver.run(in_flight, warm_up(completions), answered, watch);
  const auto before = poller.stats();
  const auto done0 = answered.load();
  driver.run(in_flight, completions, answered, watch);
  const auto after = poller.stats();
  const double done = static_cast<double>(answered.load() - done0);
  driver.finish();
  return {static_cast<double>((after.busy_time - before.busy_time).count()) / done,
          static_cast<double>((after.cpu_time - before.cpu_time).count()) / done,
          static_cast<double>(after.queries - before.queries) / done};
}

// The VM's speed drifts by tens of percent between runs a second apart: each figure is the
// median of three runs (by busy time), so that one slow run does not make a ratio.
template <class Run>
scale_run median_of_3(Run&& run) {
  scale_run runs[3] = {run(), run(), run()};
  std::sort(std::begin(runs), std::end(runs), [](const scale_run& x, const scale_run& y) {
    return x.busy_ns_per_watch < y.busy_ns_per_watch;
  });
  return runs[1];
}

// HPX's way: one list of every pending watch; each pass queries all of them.
scale_run scale_query_all(gpu::host_backend& b, int streams, std::size_t in_flight,
                          std::uint64_t completions) {
  struct pending {
    std::shared_ptr<gpu::host_timeline> line;
    gpu::timeline_point point;
  };
  timeline_driver driver{b, streams};
  std::mutex mutex;
  std::vector<pending> incoming;
  std::atomic<std::uint64_t> answered{0};
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> cpu{0}, busy{0};
  std::atomic<std::uint64_t> queries{0};
  std::thread detector{[&] {
    std::vector<pending> all, fresh;
    while (!stop.load(std::memory_order_relaxed)) {
      const auto start = now_ns();
      {
        std::lock_guard<std::mutex> lock{mutex};
        fresh.swap(incoming);
      }
      all.insert(all.end(), fresh.begin(), fresh.end());
      fresh.clear();
      std::uint64_t finished = 0;
      const std::uint64_t asked = all.size();
      all.erase(std::remove_if(all.begin(), all.end(),
                               [&](const pending& p) {
                                 if (!p.line->query(p.point).done()) return false;
                                 ++finished;
                                 return true;
                               }),
                all.end());
      answered.fetch_add(finished, std::memory_order_release);
      queries.store(queries.load(std::memory_order_relaxed) + asked, std::memory_order_relaxed);
      if (finished > 0) busy.store(busy.load(std::memory_order_relaxed) + now_ns() - start);
      cpu.store(thread_cpu_ns(), std::memory_order_relaxed);
    }
  }};
  auto watch = [&](gpu::stream_ref, const std::shared_ptr<gpu::host_timeline>& line,
                   gpu::timeline_point p) {
    std::lock_guard<std::mutex> lock{mutex};
    incoming.push_back({line, p});
  };
  driver.run(in_flight, warm_up(completions), answered, watch);
  const auto cpu0 = cpu.load(), busy0 = busy.load();
  const auto queries0 = queries.load();
  const auto done0 = answered.load();
  driver.run(in_flight, completions, answered, watch);
  const double done = static_cast<double>(answered.load() - done0);
  const scale_run out{static_cast<double>(busy.load() - busy0) / done,
                      static_cast<double>(cpu.load() - cpu0) / done,
                      static_cast<double>(queries.load() - queries0) / done};
  driver.finish();
  stop = true;
  detector.join();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const auto mode = run_mode::parse(argc, argv);
  const int busy_rounds_n = mode.quick ? 21 : 51;
  const int busy_ops = 2'000;
  const int sparse_ops = mode.quick ? 600 : 2'500;
  const auto idle_span = mode.quick ? 500ms : 2000ms;
  const auto stalls = probe_stalls(mode.quick ? 500ms : 2000ms);
  const std::uint64_t scale_completions = mode.quick ? 20'000 : 100'000;

  // Up to 100k points in flight per stream: a study of the poller, far past the bound a
  // stream actor keeps (and CUDA's), so the bound is lifted here.
  gpu::host_backend_options options{2, std::size_t{1} << 30, "bench"};
  options.max_in_flight = std::size_t{1} << 20;
  gpu::host_backend b{options};
  std::printf("poller_bench: host backend, %u workers, %s run, default mode on host: %s\n",
              b.workers(), mode.quick ? "quick" : "full",
              std::string{to_string(gpu::completion_poller::default_mode(b.kind()))}.c_str());

  const auto busy_spin_rounds = busy_rounds(b, std::nullopt, busy_rounds_n, busy_ops);
  const auto busy_polling_rounds = busy_rounds(b, delivery_mode::polling, busy_rounds_n, busy_ops);
  const auto busy_callback_rounds =
      busy_rounds(b, delivery_mode::callback, busy_rounds_n, busy_ops);
  const auto& busy_spin = busy_spin_rounds.median;
  const auto& busy_polling = busy_polling_rounds.median;
  const auto& busy_callback = busy_callback_rounds.median;
  const auto sparse_spin = sparse(b, std::nullopt, sparse_ops / 4);
  const auto sparse_polling = sparse(b, delivery_mode::polling, sparse_ops);
  const auto sparse_callback = sparse(b, delivery_mode::callback, sparse_ops);
  const double idle_polling = idle_cpu_pct(b, delivery_mode::polling, idle_span);
  const double idle_callback = idle_cpu_pct(b, delivery_mode::callback, idle_span);

  table latency{{"scenario", "detector", "n", "p50 us", "p99 us", "worst p99", "p99 all", "max us",
                 "cpu % core"}};
  auto row = [&](const char* scenario, const char* who, const latency_run& r,
                 const busy_result* rounds = nullptr) {
    latency.add({scenario, who, std::to_string(r.delay.n), fixed(r.delay.p50), fixed(r.delay.p99),
                 rounds ? fixed(rounds->worst_p99) : "-", rounds ? fixed(rounds->all.p99) : "-",
                 fixed(r.delay.max), fixed(r.cpu_pct)});
  };
  row("busy", "spin (baseline)", busy_spin, &busy_spin_rounds);
  row("busy", "poller polling", busy_polling, &busy_polling_rounds);
  row("busy", "poller callback", busy_callback, &busy_callback_rounds);
  row("sparse", "spin (baseline)", sparse_spin);
  row("sparse", "poller polling", sparse_polling);
  row("sparse", "poller callback", sparse_callback);
  latency.add({"idle", "poller polling", "-", "-", "-", "-", "-", "-", fixed(idle_polling, 3)});
  latency.add({"idle", "poller callback", "-", "-", "-", "-", "-", "-", fixed(idle_callback, 3)});
  std::printf(
      "\nmachine noise: a spinning thread beside another loses its core for > 100 us "
      "%.1f times a second, for up to %.0f us\n",
      stalls.stalls_per_s, stalls.max_stall_us);
  latency.print(
      "detection delay: work done (stamped inside the work) -> told. busy: p50/p99 are the "
      "median round's, beside the worst round's p99 and the p99 of all samples");

  const int stream_counts[] = {1, 8, 64};
  const std::size_t depths[] = {1, 100, 10'000, 100'000};
  std::map<std::pair<int, std::size_t>, scale_run> ours, theirs;
  table scaling{{"streams", "in flight", "poller busy ns/watch", "cpu ns/watch", "queries/watch",
                 "query-all busy ns/watch", "queries/watch"}};
  for (int streams : stream_counts) {
    for (std::size_t depth : depths) {
      const auto a =
          median_of_3([&] { return scale_poller(b, streams, depth, scale_completions); });
      // Querying everything costs O(in flight) per completion: fewer keep it short.
      const auto q = scale_query_all(b, streams, depth, depth >= 10'000 ? 2'000 : 20'000);
      ours[{streams, depth}] = a;
      theirs[{streams, depth}] = q;
      scaling.add({std::to_string(streams), std::to_string(depth), fixed(a.busy_ns_per_watch),
                   fixed(a.cpu_ns_per_watch), fixed(a.queries_per_watch, 2),
                   fixed(q.busy_ns_per_watch), fixed(q.queries_per_watch, 1)});
    }
  }
  scaling.print(
      "scale: cost per completed watch (busy = time in passes that answered something; cpu = "
      "all the detecting thread's CPU, empty passes included)");

  const auto preferred = gpu::completion_poller::default_mode(b.kind());
  const auto& sparse_default =
      preferred == delivery_mode::polling ? sparse_polling : sparse_callback;
  const double idle_default = preferred == delivery_mode::polling ? idle_polling : idle_callback;
  const double ratio = ours[{64, 100'000}].busy_ns_per_watch / ours[{64, 1}].busy_ns_per_watch;
  const double ratio_all =
      theirs[{64, 100'000}].busy_ns_per_watch / theirs[{64, 1}].busy_ns_per_watch;
  std::printf(
      "\ncost per completed watch, 100k vs 1 in flight over 64 streams: poller %.2fx, "
      "query-all %.1fx\n",
      ratio, ratio_all);
  std::printf("busy p50 gap to the spinning thread: polling %+.1f us, callback %+.1f us\n",
              busy_polling.delay.p50 - busy_spin.delay.p50,
              busy_callback.delay.p50 - busy_spin.delay.p50);

  json_line json;
  json.add("bench", std::string{"poller_bench"});
  json.add("quick", mode.quick);
  json.add("default_mode_host", std::string{to_string(preferred)});
  json.add("detect_p50_us_polling", busy_polling.delay.p50);
  json.add("detect_p99_us_polling", busy_polling.delay.p99);
  json.add("detect_max_us_polling", busy_polling.delay.max);
  json.add("detect_worst_round_p99_us_polling", busy_polling_rounds.worst_p99);
  json.add("detect_worst_round_p99_us_callback", busy_callback_rounds.worst_p99);
  json.add("detect_worst_round_p99_us_spin", busy_spin_rounds.worst_p99);
  json.add("detect_all_p99_us_polling", busy_polling_rounds.all.p99);
  json.add("detect_all_p99_us_callback", busy_callback_rounds.all.p99);
  json.add("detect_all_p99_us_spin", busy_spin_rounds.all.p99);
  json.add("busy_cpu_pct_polling", busy_polling.cpu_pct);
  json.add("detect_p50_us_callback", busy_callback.delay.p50);
  json.add("detect_p99_us_callback", busy_callback.delay.p99);
  json.add("busy_cpu_pct_callback", busy_callback.cpu_pct);
  json.add("detect_p50_us_spin", busy_spin.delay.p50);
  json.add("detect_p99_us_spin", busy_spin.delay.p99);
  json.add("detect_p50_us_sparse", sparse_default.delay.p50);
  json.add("detect_p99_us_sparse", sparse_default.delay.p99);
  json.add("sparse_cpu_pct", sparse_default.cpu_pct);
  json.add("sparse_p50_us_polling", sparse_polling.delay.p50);
  json.add("sparse_p99_us_polling", sparse_polling.delay.p99);
  json.add("sparse_cpu_pct_polling", sparse_polling.cpu_pct);
  json.add("sparse_p50_us_callback", sparse_callback.delay.p50);
  json.add("sparse_p99_us_callback", sparse_callback.delay.p99);
  json.add("sparse_cpu_pct_callback", sparse_callback.cpu_pct);
  json.add("sparse_p50_us_spin", sparse_spin.delay.p50);
  json.add("idle_cpu_pct", idle_default);
  json.add("idle_cpu_pct_polling", idle_polling);
  json.add("idle_cpu_pct_callback", idle_callback);
  json.add("machine_stalls_per_s", stalls.stalls_per_s);
  json.add("machine_max_stall_us", stalls.max_stall_us);
  json.add("tick_cost_ratio_100k_vs_1", ratio);
  json.add("query_all_cost_ratio_100k_vs_1", ratio_all);
  for (int streams : stream_counts) {
    for (std::size_t depth : depths) {
      json.add("busy_ns_per_watch_s" + std::to_string(streams) + "_n" + std::to_string(depth),
               ours[{streams, depth}].busy_ns_per_watch);
    }
  }
  json.print();
  return 0;
}
