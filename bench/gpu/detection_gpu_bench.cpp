// bench/gpu/detection_gpu_bench.cpp
//
// How late cudactor learns that a kernel ended, on a CUDA device: the completion poller in
// polling and in callback mode, against a host thread spinning on cudaEventQuery (the floor a
// whole core buys), measured in the same run. Each kernel writes the device's %globaltimer
// into pinned host memory as its last act; the delay is the host's steady clock when the
// answer arrives minus that stamp put on the host's clock. The offset between the clocks is
// learned before each run as the smallest (host time the stamp is first seen - stamp) over
// many spins on that memory: delays count from the earliest moment any host thread could
// have known.
//
// Scenarios:
//   busy    kernels of 20 us back to back, up to 256 in flight: how late, how costly
//   sparse  one kernel of 0.2-2 ms at a time with 0-1 ms of idleness between: the poller's
//           sleeps and wake-ups; the poller thread's CPU per wall second
//   idle    nothing to watch: the poller thread's CPU per wall second
// This is the measurement completion_poller::default_mode(cuda) is to be decided from.
//
//   detection_gpu_bench --backend=cuda [--quick]
// Prints a table, then one JSON object on the last line.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu_mode.hpp"
#include "common/report.hpp"
#include "cudactor/gpu/completion_poller.hpp"
#include "cudactor/gpu/open_backend.hpp"
#include "gpu/bench_kernels.hpp"

using namespace cudactor;
using namespace cudactor::bench;
using namespace std::chrono_literals;
using gpu::delivery_mode;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "detection_gpu_bench: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T must(gpu::result<T> r, const char* what) {
  if (!r.ok()) fail(std::string{what} + ": " + r.error().to_string());
  return std::move(r).value();
}

void must(const gpu::status& s, const char* what) {
  if (!s.ok()) fail(std::string{what} + ": " + s.to_string());
}

constexpr std::size_t max_in_flight = 256;

enum class scenario { busy, sparse };

struct device {
  std::unique_ptr<gpu::backend> backend;
  gpu::stream stream;
  gpu::buffer stamps;  // pinned: one word per kernel of a run

  volatile std::uint64_t* slot(std::size_t i) {
    return static_cast<volatile std::uint64_t*>(stamps.data()) + i;
  }
  void clear(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) *slot(i) = 0;
  }
  // The stamped kernel, enqueued: it writes its end into slot i.
  void launch(std::size_t i, std::chrono::nanoseconds length) {
    auto* target =
        const_cast<unsigned long long*>(reinterpret_cast<volatile unsigned long long*>(slot(i)));
    const long long ns = length.count();
    must(backend->enqueue(
             stream,
             [target, ns](const gpu::launch_context& ctx) -> gpu::status {
               const int e = kernels::stamped(ctx.native_stream(), ns, target);
               if (e == 0) return {};
               return {gpu::status_code::op_failed, "stamped kernel: " + kernels::error_name(e)};
             }),
         "enqueue");
  }
  // Waits (bounded) until slot i holds the kernel's stamp.
  std::uint64_t await_stamp(std::size_t i) {
    const auto give_up = now_ns() + 10'000'000'000;
    std::uint64_t v = 0;
    while ((v = *slot(i)) == 0) {
      if (now_ns() > give_up) fail("a kernel's stamp never arrived in 10 s");
    }
    return v;
  }
};

// Host steady clock minus device %globaltimer, at its smallest: see the header.
std::int64_t learn_offset(device& d, int samples) {
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < samples; ++i) {
    d.clear(1);
    d.launch(0, 0ns);
    const auto stamp = static_cast<std::int64_t>(d.await_stamp(0));
    best = std::min(best, now_ns() - stamp);
  }
  must(d.backend->synchronize(d.stream), "synchronize");
  return best;
}

struct outcome {
  std::vector<double> delays_us;
  double cpu_share = 0;  // CPU time of the detecting thread per wall second
  std::uint64_t host_notifications = 0;
};

std::vector<double> delays(device& d, const std::vector<std::int64_t>& seen, std::int64_t offset) {
  std::vector<double> out;
  out.reserve(seen.size());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    const auto stamp = static_cast<std::int64_t>(*d.slot(i));
    out.push_back(static_cast<double>(seen[i] - (stamp + offset)) / 1e3);
  }
  return out;
}

std::chrono::nanoseconds sparse_length(std::mt19937_64& rng) {
  return std::chrono::microseconds{200 + static_cast<long>(rng() % 1800)};
}

std::chrono::nanoseconds sparse_gap(std::mt19937_64& rng) {
  return std::chrono::microseconds{static_cast<long>(rng() % 1000)};
}

outcome poller_run(device& d, delivery_mode mode, scenario sc, std::size_t n, std::int64_t offset,
                   std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  gpu::poller_options options;
  options.mode = mode;
  gpu::completion_poller poller{*d.backend, options};
  std::vector<std::int64_t> seen(n, 0);
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t answered = 0;
  std::size_t not_completed = 0;
  d.clear(n);
  const auto cpu_before = poller.stats().cpu_time;
  const auto wall_before = now_ns();
  auto watch = [&](std::size_t i) {
    const auto point = must(d.backend->signal(d.stream), "signal");
    auto id = poller.watch(d.stream, point, std::nullopt, [&, i](const gpu::watch_result& r) {
      seen[i] = now_ns();
      std::lock_guard<std::mutex> lock{mutex};
      ++answered;
      if (!r.completed()) ++not_completed;
      changed.notify_all();
    });
    must(id.ok() ? gpu::status{} : id.error(), "watch");
  };
  for (std::size_t i = 0; i < n; ++i) {
    {
      // busy: at most max_in_flight unanswered; sparse: none.
      const std::size_t allowed = sc == scenario::busy ? max_in_flight : 1;
      std::unique_lock<std::mutex> lock{mutex};
      if (!changed.wait_for(lock, 30s, [&] { return i - answered < allowed; })) {
        fail("a watch was not answered within 30 s");
      }
    }
    if (sc == scenario::sparse && i > 0) std::this_thread::sleep_for(sparse_gap(rng));
    d.launch(i, sc == scenario::busy ? std::chrono::nanoseconds{20us} : sparse_length(rng));
    watch(i);
  }
  {
    std::unique_lock<std::mutex> lock{mutex};
    if (!changed.wait_for(lock, 60s, [&] { return answered == n; })) {
      fail("watches were not answered within 60 s");
    }
  }
  outcome out;
  const auto stats = poller.stats();
  out.cpu_share = static_cast<double>((stats.cpu_time - cpu_before).count()) /
                  static_cast<double>(now_ns() - wall_before);
  out.host_notifications = stats.host_notifications;
  poller.stop();
  if (not_completed != 0) fail(std::to_string(not_completed) + " watches did not complete");
  out.delays_us = delays(d, seen, offset);
  return out;
}

// A thread that spins on cudaEventQuery (the backend's query) for each kernel's event in turn,
// while the caller's thread submits.
outcome spin_run(device& d, scenario sc, std::size_t n, std::int64_t offset, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::vector<gpu::event> events;
  for (std::size_t i = 0; i < max_in_flight; ++i) {
    events.push_back(must(d.backend->create_event(gpu::event_kind::regular), "create_event"));
  }
  std::vector<std::int64_t> seen(n, 0);
  std::atomic<std::size_t> observed{0};
  std::atomic<std::size_t> recorded{0};
  std::atomic<bool> failed{false};
  std::int64_t spinner_cpu = 0;
  d.clear(n);
  const auto wall_before = now_ns();
  std::thread spinner{[&] {
    const auto cpu_before = thread_cpu_ns();
    for (std::size_t i = 0; i < n; ++i) {
      while (recorded.load(std::memory_order_acquire) <= i) {
      }
      for (;;) {
        const auto q = d.backend->query(events[i % max_in_flight]);
        if (q.ready()) break;
        if (q.failed()) {
          failed = true;
          break;
        }
      }
      seen[i] = now_ns();
      observed.store(i + 1, std::memory_order_release);
    }
    spinner_cpu = thread_cpu_ns() - cpu_before;
  }};
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t allowed = sc == scenario::busy ? max_in_flight : 1;
    while (i - observed.load(std::memory_order_acquire) >= allowed) std::this_thread::yield();
    if (sc == scenario::sparse && i > 0) std::this_thread::sleep_for(sparse_gap(rng));
    d.launch(i, sc == scenario::busy ? std::chrono::nanoseconds{20us} : sparse_length(rng));
    must(d.backend->record(events[i % max_in_flight], d.stream), "record");
    recorded.store(i + 1, std::memory_order_release);
  }
  spinner.join();
  if (failed) fail("an event query failed");
  outcome out;
  out.cpu_share = static_cast<double>(spinner_cpu) / static_cast<double>(now_ns() - wall_before);
  out.delays_us = delays(d, seen, offset);
  return out;
}

double idle_cpu_share(device& d, delivery_mode mode, std::chrono::milliseconds span) {
  gpu::poller_options options;
  options.mode = mode;
  gpu::completion_poller poller{*d.backend, options};
  std::this_thread::sleep_for(50ms);  // past its start
  const auto cpu_before = poller.stats().cpu_time;
  const auto wall_before = now_ns();
  std::this_thread::sleep_for(span);
  return static_cast<double>((poller.stats().cpu_time - cpu_before).count()) /
         static_cast<double>(now_ns() - wall_before);
}

}  // namespace

int main(int argc, char** argv) {
  const auto mode = parse_gpu_mode(argc, argv);
  const std::size_t busy_n = mode.quick ? 2'000 : 20'000;
  const std::size_t sparse_n = mode.quick ? 100 : 1'000;
  const auto idle_span = mode.quick ? 300ms : 2000ms;

  gpu::backend_options backend_options;
  auto opened = gpu::open_backend("cuda", backend_options);
  if (!opened.ok()) fail("no CUDA backend: " + opened.error().to_string());
  device d;
  d.backend = std::move(opened.value().chosen);
  d.stream =
      must(d.backend->create_stream(gpu::stream_options{"bench", gpu::stream_priority::normal}),
           "create_stream");
  const std::size_t capacity = std::max(busy_n, sparse_n);
  d.stamps = must(d.backend->allocate_pinned(capacity * sizeof(std::uint64_t)), "allocate_pinned");
  const std::string device_name = d.backend->device().name;

  // Learned again before each run: the host's clock and %globaltimer drift apart by
  // microseconds over the seconds the runs take (a single offset learned first put the last
  // run's spin p50 below zero on the first GPU run, 2026-11-26).
  const int offset_samples = mode.quick ? 200 : 2'000;
  auto offset = [&] { return learn_offset(d, offset_samples); };

  struct row {
    std::string scenario, detector;
    outcome result;
  };
  std::vector<row> rows;
  for (scenario sc : {scenario::busy, scenario::sparse}) {
    const std::size_t n = sc == scenario::busy ? busy_n : sparse_n;
    const std::string name = sc == scenario::busy ? "busy" : "sparse";
    // Alternated, so that a drift of the machine falls on every detector alike.
    rows.push_back({name, "polling", poller_run(d, delivery_mode::polling, sc, n, offset(), 1)});
    rows.push_back({name, "callback", poller_run(d, delivery_mode::callback, sc, n, offset(), 1)});
    rows.push_back({name, "spin", spin_run(d, sc, n, offset(), 1)});
  }
  const double idle_polling = idle_cpu_share(d, delivery_mode::polling, idle_span);
  const double idle_callback = idle_cpu_share(d, delivery_mode::callback, idle_span);

  table t({"scenario", "detector", "kernels", "p50 us", "p99 us", "max us", "CPU % of a core",
           "host callbacks"});
  json_line json;
  json.add("benchmark", std::string{"detection_gpu_bench"});
  json.add("device", device_name);
  json.add("quick", mode.quick);
  std::map<std::string, percentiles> by_key;
  for (const auto& r : rows) {
    const auto p = summarize_us(r.result.delays_us);
    by_key[r.scenario + "_" + r.detector] = p;
    t.add({r.scenario, r.detector, std::to_string(p.n), fixed(p.p50), fixed(p.p99), fixed(p.max),
           fixed(100.0 * r.result.cpu_share),
           r.detector == "callback" ? std::to_string(r.result.host_notifications) : "-"});
    const std::string key = r.scenario + "_" + r.detector;
    json.add(key + "_p50_us", p.p50);
    json.add(key + "_p99_us", p.p99);
    json.add(key + "_max_us", p.max);
    json.add(key + "_cpu_pct", 100.0 * r.result.cpu_share);
  }
  t.add({"idle", "polling", "0", "-", "-", "-", fixed(100.0 * idle_polling), "-"});
  t.add({"idle", "callback", "0", "-", "-", "-", fixed(100.0 * idle_callback), "-"});
  json.add("idle_polling_cpu_pct", 100.0 * idle_polling);
  json.add("idle_callback_cpu_pct", 100.0 * idle_callback);
  for (const char* s : {"busy", "sparse"}) {
    const std::string k = s;
    json.add(k + "_callback_over_polling_p50",
             by_key[k + "_callback"].p50 / by_key[k + "_polling"].p50);
    json.add(k + "_polling_over_spin_p50", by_key[k + "_polling"].p50 / by_key[k + "_spin"].p50);
  }
  std::printf(
      "detection_gpu_bench on %s: kernel end (%%globaltimer, stamped by the kernel) -> "
      "answer on the host\n",
      device_name.c_str());
  t.print("detection delay (us) and the detecting thread's CPU");
  json.print();
  return 0;
}
