// bench/metrics_bench.cpp
//
// What watching costs. The metric updates a stream actor and the coordinator make per
// operation, timed with cudactor's cells (metrics/cells.hpp) against the same updates through
// prometheus-cpp's Counter, Gauge and Histogram (whose Observe takes a mutex), measured in the
// same run; then the same histogram hammered from two threads at once; then the cost of one
// scrape of a runtime-sized registry; then how long stopping the metrics endpoint takes (every
// runtime's shutdown waits for it) against prometheus-cpp's Exposer stopped the same way, once
// its listener is idle. Prints a table, then one JSON object on the last line.
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "common/report.hpp"
#include "cudactor/actors/detail/actor_metrics.hpp"

using namespace cudactor;
using namespace cudactor::bench;

namespace {

volatile std::int64_t sink = 0;

// ns per iteration of `body`, best of `rounds`.
template <class F>
double per_op_ns(std::size_t n, int rounds, F&& body) {
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const std::int64_t start = now_ns();
    for (std::size_t i = 0; i < n; ++i) body(i);
    best = std::min(best, static_cast<double>(now_ns() - start) / static_cast<double>(n));
  }
  return best;
}

// Median ms to destroy what `make` builds, 100 ms after it was built (the listener polling).
template <class Make>
double stop_ms(int rounds, Make&& make) {
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    auto server = make();
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
    const std::int64_t start = now_ns();
    server.reset();
    ms.push_back(static_cast<double>(now_ns() - start) / 1e6);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::vector<double> seconds_bounds() {
  std::vector<double> out;
  for (std::int64_t ns : *metrics::latency_buckets()) out.push_back(static_cast<double>(ns) / 1e9);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const run_mode mode = run_mode::parse(argc, argv);
  const std::size_t n = mode.quick ? 2'000'000 : 20'000'000;
  const int rounds = mode.quick ? 3 : 5;

  metrics::exposer_options off;
  off.enabled = false;
  metrics::registry ours{off};
  detail::stream_metrics stream{ours, "0", "stream-0"};
  detail::op_metrics ops{ours, "0"};

  prometheus::Registry theirs;
  const prometheus::Histogram::BucketBoundaries bounds = seconds_bounds();
  auto& c_accepted = prometheus::BuildCounter().Name("a_total").Help("a").Register(theirs).Add({});
  auto& c_completed = prometheus::BuildCounter().Name("c_total").Help("c").Register(theirs).Add({});
  auto& g_in_flight = prometheus::BuildGauge().Name("f").Help("f").Register(theirs).Add({});
  auto& g_queued = prometheus::BuildGauge().Name("q").Help("q").Register(theirs).Add({});
  auto& h_latency =
      prometheus::BuildHistogram().Name("l_seconds").Help("l").Register(theirs).Add({}, bounds);

  // A stream actor's updates for one operation when every message carries one op: accepted
  // and published, then its latency, its completion and a publish when its batch completes.
  const double empty =
      per_op_ns(n, rounds, [](std::size_t i) { sink = sink + static_cast<std::int64_t>(i); });
  const double stream_ours = per_op_ns(n, rounds, [&](std::size_t i) {
    stream.accepted();
    stream.publish(i & 63, 0);
    stream.latency(static_cast<std::int64_t>(20'000 + (i & 1023) * 100));
    stream.completed(1);
    stream.publish(i & 31, 0);
  });
  // The same when a message carries a burst of 64 ops (the batched benchmark's shape): each op
  // is accepted, the burst is published once; completions arrive in batches of 16, whose ops
  // share a detection time and, being of one burst, a submission time.
  const double burst_ours = per_op_ns(n, rounds, [&](std::size_t i) {
    stream.accepted();
    if ((i & 63) == 63) stream.publish(64, 0);
    stream.latency(static_cast<std::int64_t>(20'000 + ((i >> 4) & 1023) * 100));
    if ((i & 15) == 15) {
      stream.completed(16);
      stream.publish(48, 0);
    }
  });
  const double stream_theirs = per_op_ns(n, rounds, [&](std::size_t i) {
    c_accepted.Increment();
    g_in_flight.Set(static_cast<double>(i & 63));
    g_queued.Set(0);
    h_latency.Observe(static_cast<double>(20'000 + (i & 1023) * 100) / 1e9);
    c_completed.Increment();
    g_in_flight.Set(static_cast<double>(i & 31));
    g_queued.Set(0);
  });
  // The coordinator's per operation: registered, dispatched, ended (a counter and the latency
  // histogram), and its stream's accepted, completed and latency.
  const double op_ours = per_op_ns(n, rounds, [&](std::size_t i) {
    ops.registered(op_type::kernel, op_priority::normal);
    ops.dispatched(op_type::kernel, op_priority::normal);
    stream.accepted();
    stream.completed(1);
    stream.latency(static_cast<std::int64_t>(20'000 + (i & 1023) * 100));
    stream.publish(i & 63, 0);
    ops.ended(op_type::kernel, op_priority::normal, op_state::completed,
              static_cast<std::int64_t>(40'000 + (i & 1023) * 100));
  });

  // Two threads on one histogram.
  auto contended = [&](auto&& observe) {
    const std::size_t each = n / 4;
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&] {
        while (!go.load()) {
        }
        for (std::size_t i = 0; i < each; ++i) observe(i);
      });
    }
    const std::int64_t start = now_ns();
    go = true;
    for (auto& t : threads) t.join();
    return static_cast<double>(now_ns() - start) / static_cast<double>(2 * each);
  };
  auto& shared_ours = ours.histograms("cudactor_shared_seconds", "x").add({});
  const double contended_ours = contended(
      [&](std::size_t i) { shared_ours.observe(std::chrono::nanoseconds{20'000 + (i & 1023)}); });
  const double contended_theirs = contended(
      [&](std::size_t i) { h_latency.Observe(static_cast<double>(20'000 + (i & 1023)) / 1e9); });

  // A runtime-sized registry: 16 streams, every type x priority of operations, pool, poller.
  metrics::registry big{off};
  std::vector<detail::stream_metrics> streams;
  for (int s = 0; s < 16; ++s) streams.emplace_back(big, "0", "stream-" + std::to_string(s));
  detail::op_metrics every{big, "0"};
  for (int t = 0; t <= static_cast<int>(op_type::barrier); ++t) {
    for (int p = 0; p <= static_cast<int>(op_priority::cleanup); ++p) {
      every.registered(static_cast<op_type>(t), static_cast<op_priority>(p));
    }
  }
  detail::event_pool_metrics pool{big, "0", 8192};
  std::size_t bytes = 0;
  const int scrapes = mode.quick ? 20 : 100;
  const std::int64_t scrape_start = now_ns();
  for (int i = 0; i < scrapes; ++i) bytes = big.serialize().size();
  const double scrape_ms = static_cast<double>(now_ns() - scrape_start) / scrapes / 1e6;

  const int stops = mode.quick ? 3 : 7;
  const double stop_ours = stop_ms(stops, [] {
    metrics::exposer_options on;
    on.port = 0;
    return std::make_unique<metrics::registry>(on);
  });
  const double stop_theirs =
      stop_ms(stops, [] { return std::make_unique<prometheus::Exposer>("127.0.0.1:0"); });

  table t{{"per operation", "cudactor cells ns", "prometheus-cpp ns", "ratio"}};
  t.add({"stream actor's updates, 1 op/msg", fixed(stream_ours - empty),
         fixed(stream_theirs - empty), fixed((stream_theirs - empty) / (stream_ours - empty), 2)});
  t.add({"stream actor's updates, 64-op bursts", fixed(burst_ours - empty),
         fixed(stream_theirs - empty), fixed((stream_theirs - empty) / (burst_ours - empty), 2)});
  t.add({"coordinator's updates", fixed(op_ours - empty), "", ""});
  t.add({"one histogram, 2 threads", fixed(contended_ours), fixed(contended_theirs),
         fixed(contended_theirs / contended_ours, 2)});
  t.print("metric updates (loop overhead " + fixed(empty, 2) + " ns subtracted)");
  std::printf("\none scrape of a runtime-sized registry: %.2f ms, %zu bytes, %zu families\n",
              scrape_ms, bytes, big.collect().size());
  std::printf("stopping the metrics endpoint: %.1f ms (prometheus-cpp's Exposer: %.1f ms)\n",
              stop_ours, stop_theirs);

  json_line j;
  j.add("bench", std::string{"metrics"});
  j.add("quick", mode.quick);
  j.add("stream_update_ns", stream_ours - empty);
  j.add("stream_update_burst_ns", burst_ours - empty);
  j.add("stream_update_prometheus_cpp_ns", stream_theirs - empty);
  j.add("coordinator_update_ns", op_ours - empty);
  j.add("contended_histogram_ns", contended_ours);
  j.add("contended_histogram_prometheus_cpp_ns", contended_theirs);
  j.add("scrape_ms", scrape_ms);
  j.add("scrape_bytes", static_cast<double>(bytes));
  j.add("exposer_stop_ms", stop_ours);
  j.add("exposer_stop_prometheus_cpp_ms", stop_theirs);
  j.print();
  return 0;
}
