// What the actors report to Prometheus, checked against the counts the tests make themselves,
// read back the way a scrape reads them.
#define BOOST_TEST_MODULE actor_metrics
#include <boost/test/unit_test.hpp>

#include "actors/coordinator_fixture.hpp"
#include "common/gate.hpp"
#include "common/http_get.hpp"
#include "common/metric_reader.hpp"
#include "cudactor/actors/detail/actor_metrics.hpp"
#include "cudactor/metrics/process_metrics.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

const label_map stream0{{"gpu", gpu_label()}, {"stream", "stream-0"}};

work failing() {
  return work::local([](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "on purpose"};
  });
}

bool port_answers(std::uint16_t port) { return !http_get(port, "/metrics").empty(); }

}  // namespace

BOOST_FIXTURE_TEST_CASE(a_stream_counts_what_it_was_given, coordinator_fixture) {
  constexpr int n = 200;
  int failures = 0;
  for (int i = 0; i < n; ++i) {
    const bool fail = i % 10 == 3;
    failures += fail ? 1 : 0;
    auto t = ask<ticket>(rt().stream(0), submit_atom::value, fail ? failing() : noop());
    BOOST_REQUIRE_MESSAGE(t, why(t));
  }
  // Answered once the stream's progress reports for every point have been handled: it fails
  // (failed work in the range), which is expected. The status round trip after it lets the
  // handler that answered finish.
  (void)ask<completion>(rt().stream(0), synchronize_atom::value);
  BOOST_REQUIRE(ask<stream_status>(rt().stream(0), status_atom::value));
  const metric_reader r{rt().metrics()};
  BOOST_TEST(r.counter("cudactor_stream_operations_total", stream0) == n);
  BOOST_TEST(r.counter("cudactor_stream_operations_completed_total", stream0) == n);
  BOOST_TEST(r.counter("cudactor_stream_operations_failed_total", stream0) == failures);
  BOOST_TEST(r.observations("cudactor_stream_operation_latency_seconds", stream0) == n);
  BOOST_TEST(r.gauge("cudactor_stream_in_flight", stream0) == 0);
  BOOST_TEST(r.gauge("cudactor_stream_queued", stream0) == 0);
  BOOST_TEST(r.counter("cudactor_stream_operations_total", {{"stream", "stream-1"}}) == 0);
  // No timing events asked for: no device times.
  BOOST_TEST(r.observations("cudactor_stream_gpu_seconds", stream0) == 0u);
}

BOOST_FIXTURE_TEST_CASE(batched_submissions_are_counted_per_op, coordinator_fixture) {
  // Bursts are accumulated in the actor and published once: every op must still be there.
  constexpr int batches = 50;
  constexpr int per_batch = 100;
  for (int b = 0; b < batches; ++b) {
    std::vector<work> many(per_batch, noop());
    auto t = ask<std::vector<ticket>>(rt().stream(1), submit_atom::value, many);
    BOOST_REQUIRE_MESSAGE(t, why(t));
    BOOST_REQUIRE_EQUAL(t->size(), std::size_t{per_batch});
  }
  BOOST_REQUIRE(ask<completion>(rt().stream(1), synchronize_atom::value));
  BOOST_REQUIRE(ask<stream_status>(rt().stream(1), status_atom::value));
  const label_map stream1{{"gpu", gpu_label()}, {"stream", "stream-1"}};
  const metric_reader r{rt().metrics()};
  BOOST_TEST(r.counter("cudactor_stream_operations_total", stream1) == batches * per_batch);
  BOOST_TEST(r.counter("cudactor_stream_operations_completed_total", stream1) ==
             batches * per_batch);
  BOOST_TEST(r.observations("cudactor_stream_operation_latency_seconds", stream1) ==
             std::uint64_t{batches * per_batch});
  BOOST_TEST(r.gauge("cudactor_stream_in_flight", stream1) == 0);
}

BOOST_AUTO_TEST_CASE(stream_metrics_hold_counts_until_published) {
  metrics::exposer_options off;
  off.enabled = false;
  metrics::registry registry{off};
  detail::stream_metrics m{registry, "host", "s"};
  const label_map s{{"gpu", "host"}, {"stream", "s"}};
  for (int i = 0; i < 5; ++i) m.accepted();
  // Runs of equal latencies, then a different one, then the first value again.
  for (int i = 0; i < 3; ++i) m.latency(2'000);
  m.latency(7'000'000);
  m.latency(2'000);
  {
    const metric_reader r{registry};
    BOOST_TEST(r.counter("cudactor_stream_operations_total", s) == 0);
    // A run is flushed when a different value comes: the three and the 7 ms one are in, the
    // last waits.
    BOOST_TEST(r.observations("cudactor_stream_operation_latency_seconds", s) == 4u);
  }
  m.publish(2, 1);
  const metric_reader r{registry};
  BOOST_TEST(r.counter("cudactor_stream_operations_total", s) == 5);
  BOOST_TEST(r.gauge("cudactor_stream_in_flight", s) == 2);
  BOOST_TEST(r.gauge("cudactor_stream_queued", s) == 1);
  const auto& h = r.sample("cudactor_stream_operation_latency_seconds", s).histogram;
  BOOST_TEST(h.sample_count == 5u);
  BOOST_TEST(h.sample_sum == 4 * 2e-6 + 7e-3, boost::test_tools::tolerance(1e-12));
  // Cumulative buckets: le=2.5e-06 holds the four short ones, le=0.01 all five.
  for (const auto& b : h.bucket) {
    if (b.upper_bound == 2.5e-6) BOOST_TEST(b.cumulative_count == 4u);
    if (b.upper_bound == 0.01) BOOST_TEST(b.cumulative_count == 5u);
  }
  // Publishing again adds nothing.
  m.publish(0, 0);
  BOOST_TEST(metric_reader{registry}.counter("cudactor_stream_operations_total", s) == 5);
}

BOOST_FIXTURE_TEST_CASE(timing_mode_observes_device_time, runtime_fixture) {
  runtime_fixture& f = *this;
  f.stop();
  f.start({"--cudactor.timing"});
  constexpr int n = 20;
  const work_log log{n};
  for (std::size_t i = 0; i < n; ++i) {
    BOOST_REQUIRE(ask<ticket>(rt().stream(0), submit_atom::value, log.record(i, 100us)));
  }
  BOOST_REQUIRE(ask<completion>(rt().stream(0), synchronize_atom::value));
  const metric_reader r{rt().metrics()};
  BOOST_TEST(r.observations("cudactor_stream_gpu_seconds", stream0) == n);
  // Each was busy 100 µs: none can have taken less.
  const auto& h = r.sample("cudactor_stream_gpu_seconds", stream0).histogram;
  BOOST_TEST(h.sample_sum >= n * 100e-6);
}

BOOST_FIXTURE_TEST_CASE(the_coordinator_counts_by_type_and_priority, coordinator_fixture) {
  std::vector<op_id> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(add(spec_of(noop())));
  for (int i = 0; i < 10; ++i) {
    auto s = spec_of(noop(), {}, op_priority::high, op_workload::memory);
    s.type = op_type::memory_transfer;
    ids.push_back(add(std::move(s)));
  }
  gate g;
  const op_id held = add(spec_of(g.hold()));
  auto bad_spec = spec_of(failing(), {held}, op_priority::low);
  const op_id bad = add(std::move(bad_spec));
  std::vector<op_id> doomed;
  for (int i = 0; i < 4; ++i) doomed.push_back(add(spec_of(noop(), {bad}, op_priority::low)));
  // A caller-launched operation never begun, and one waiting for it: both end cancelled
  // without reaching a stream.
  const op_id never_begun = add(spec_of(work{}, {}, op_priority::cleanup));
  const op_id withdrawn = add(spec_of(noop(), {never_begun}, op_priority::cleanup));
  BOOST_REQUIRE(ask<op_state>(co(), cancel_atom::value, never_begun));
  g.open();
  ids.insert(ids.end(), {held, bad, never_begun, withdrawn});
  ids.insert(ids.end(), doomed.begin(), doomed.end());
  (void)collect(ids);
  // The last notice can leave before the handler's gauges are set: ask something, so that
  // the handler has finished.
  const auto m = metrics();

  const metric_reader r{rt().metrics()};
  const label_map kernel_normal{{"gpu", gpu_label()}, {"type", "kernel"}, {"priority", "normal"}};
  const label_map copy_high{
      {"gpu", gpu_label()}, {"type", "memory_transfer"}, {"priority", "high"}};
  const label_map kernel_low{{"gpu", gpu_label()}, {"type", "kernel"}, {"priority", "low"}};
  const label_map kernel_cleanup{{"gpu", gpu_label()}, {"type", "kernel"}, {"priority", "cleanup"}};
  BOOST_TEST(r.counter("cudactor_operations_registered_total", kernel_normal) == 31);
  BOOST_TEST(r.counter("cudactor_operations_completed_total", kernel_normal) == 31);
  BOOST_TEST(r.counter("cudactor_operations_registered_total", copy_high) == 10);
  BOOST_TEST(r.counter("cudactor_operations_completed_total", copy_high) == 10);
  BOOST_TEST(r.counter("cudactor_operations_dispatched_total", copy_high) == 10);
  BOOST_TEST(r.counter("cudactor_operations_registered_total", kernel_low) == 5);
  BOOST_TEST(r.counter("cudactor_operations_failed_total", kernel_low) == 1);
  BOOST_TEST(r.counter("cudactor_operations_cancelled_total", kernel_low) == 4);
  BOOST_TEST(r.counter("cudactor_operations_cancelled_total", kernel_cleanup) == 2);
  BOOST_TEST(r.counter("cudactor_operations_dispatched_total", kernel_cleanup) == 0);
  // Every end is one latency observation.
  BOOST_TEST(r.observations("cudactor_operation_latency_seconds", kernel_normal) == 31u);
  BOOST_TEST(r.observations("cudactor_operation_latency_seconds", kernel_low) == 5u);
  // The same totals as the coordinator's own metrics.
  BOOST_TEST(r.sum("cudactor_operations_registered_total") == m.total);
  BOOST_TEST(r.sum("cudactor_operations_completed_total") == m.completed);
  BOOST_TEST(r.sum("cudactor_operations_failed_total") == m.failed);
  BOOST_TEST(r.sum("cudactor_operations_cancelled_total") == m.cancelled);
  BOOST_TEST(r.sum("cudactor_operations_dispatched_total") == m.dispatched);
  BOOST_TEST(r.gauge("cudactor_coordinator_live_operations", {}) == 0);
  BOOST_TEST(r.gauge("cudactor_coordinator_queued_operations", {}) == 0);
  // A cancelled operation's point can still be on its stream after its notice: wait until the
  // streams have reported every point.
  double in_flight = 1;
  for (int i = 0; i < 500 && in_flight != 0; ++i) {
    (void)metrics();
    in_flight =
        metric_reader{rt().metrics()}.sum("cudactor_stream_in_flight", {{"gpu", gpu_label()}});
    if (in_flight != 0) std::this_thread::sleep_for(10ms);
  }
  BOOST_TEST(in_flight == 0);
  // One set of streams: what the coordinator dispatched is what its streams took (a begun
  // operation's hold is one point of its stream), and nothing else went on them.
  BOOST_TEST(r.sum("cudactor_stream_operations_total") == m.dispatched);
}

BOOST_FIXTURE_TEST_CASE(deadlock_detections_are_counted, coordinator_fixture) {
  gate g;
  const op_id held = add(spec_of(g.hold()));
  (void)add(spec_of(noop(), {held}));
  std::this_thread::sleep_for(20ms);
  auto report = ask<deadlock_report>(co(), deadlocks_atom::value, caf::timespan{5ms});
  BOOST_REQUIRE_MESSAGE(report, why(report));
  g.open();
  const metric_reader r{rt().metrics()};
  BOOST_TEST(r.counter("cudactor_coordinator_deadlock_detections_total", {}) == 1);
  BOOST_TEST(r.gauge("cudactor_coordinator_stalled_operations", {}) == report->stalls.size());
  BOOST_TEST(report->stalls.size() >= 1u);
}

BOOST_FIXTURE_TEST_CASE(the_pool_gauges_follow_the_leases, runtime_fixture) {
  // Actors make their series when they start, which spawn does not wait for: one answer from
  // the pool says it has.
  BOOST_REQUIRE(ask<pool_utilization>(rt().event_pool(), utilization_atom::value));
  const auto before = metric_reader{rt().metrics()};
  const label_map regular{{"gpu", gpu_label()}, {"kind", "regular"}};
  const double leased_before = before.gauge("cudactor_event_pool_in_use", regular);
  auto refs = ask<std::vector<event_lease>>(rt().event_pool(), acquire_atom::value,
                                            gpu::event_kind::regular, std::uint32_t{5});
  BOOST_REQUIRE_MESSAGE(refs, why(refs));
  auto util = ask<pool_utilization>(rt().event_pool(), utilization_atom::value);
  BOOST_REQUIRE(util);
  const metric_reader r{rt().metrics()};
  BOOST_TEST(r.gauge("cudactor_event_pool_in_use", regular) == leased_before + 5);
  BOOST_TEST(r.gauge("cudactor_event_pool_available", regular) == util->available);
  BOOST_TEST(r.sum("cudactor_event_pool_in_use") == util->in_use);
  BOOST_TEST(r.gauge("cudactor_event_pool_capacity", {}) == util->capacity);
  BOOST_REQUIRE(!tell(rt().event_pool(), release_atom::value, *refs));
  const metric_reader after{rt().metrics()};
  BOOST_TEST(after.gauge("cudactor_event_pool_in_use", regular) == leased_before);
}

BOOST_FIXTURE_TEST_CASE(a_barrier_counts_crossings_timeouts_and_waits, runtime_fixture) {
  barrier_options options;
  options.name = "step";
  auto b = rt().spawn_barrier({0, 1}, options);
  BOOST_REQUIRE(b.ok());
  for (int i = 0; i < 2; ++i) {
    auto crossed = ask<barrier_crossing>(*b, synchronize_atom::value);
    BOOST_REQUIRE_MESSAGE(crossed, why(crossed));
  }
  gate g;
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), submit_atom::value, g.hold()));
  auto late =
      ask<barrier_crossing>(*b, synchronize_atom::value, barrier_mode::host, caf::timespan{30ms});
  g.open();
  BOOST_REQUIRE(!late);
  // The coordinator answers the caller and tells the barrier actor, which counts, at once: a
  // status asked now is answered after it has counted.
  BOOST_REQUIRE(ask<barrier_status>(*b, status_atom::value));
  const metric_reader r{rt().metrics()};
  const label_map step{{"gpu", gpu_label()}, {"barrier", "step"}};
  BOOST_TEST(r.counter("cudactor_barrier_crossings_total", step) == 2);
  BOOST_TEST(r.counter("cudactor_barrier_timeouts_total", step) == 1);
  BOOST_TEST(r.counter("cudactor_barrier_failures_total", step) == 0);
  BOOST_TEST(r.observations("cudactor_barrier_wait_seconds", step) == 2u);
}

BOOST_FIXTURE_TEST_CASE(the_poller_reports_its_counters_and_detection_delay, runtime_fixture) {
  for (int i = 0; i < 50; ++i) {
    BOOST_REQUIRE(ask<ticket>(rt().stream(i % 2), submit_atom::value, noop()));
  }
  BOOST_REQUIRE(ask<completion>(rt().stream(0), synchronize_atom::value));
  BOOST_REQUIRE(ask<completion>(rt().stream(1), synchronize_atom::value));
  const metric_reader r{rt().metrics()};
  const auto stats = rt().poller().stats();  // read after: at least what was scraped
  const double completed = r.counter("cudactor_poller_watches_total", {{"outcome", "completed"}});
  BOOST_TEST(completed >= 50);
  BOOST_TEST(completed <= stats.completed);
  BOOST_TEST(r.counter("cudactor_poller_ticks_total", {}) > 0);
  BOOST_TEST(r.counter("cudactor_poller_ticks_total", {}) <= stats.ticks);
  const auto detections = r.observations("cudactor_poller_detection_delay_seconds", {});
  BOOST_TEST(detections > 0u);
  BOOST_TEST(detections <= stats.ticks * 3);  // at most once per stream per tick (3 streams+)
  BOOST_TEST(r.gauge("cudactor_poller_stuck_watches", {}) == 0);
  // Whether each completion was followed by a spin: both counted, neither past the loop's own.
  BOOST_TEST(r.has("cudactor_poller_spins_total", {}));
  BOOST_TEST(r.counter("cudactor_poller_spins_total", {}) <= stats.spins);
  BOOST_TEST(r.counter("cudactor_poller_spins_skipped_total", {}) <= stats.spins_skipped);
  BOOST_TEST(stats.spins + stats.spins_skipped <= stats.ticks);
  BOOST_TEST(r.has("process_cpu_seconds_total", {}));
}

BOOST_FIXTURE_TEST_CASE(label_sets_stay_bounded_under_100k_operations, coordinator_fixture) {
  auto batch = [&](std::size_t n) {
    std::vector<work> works(n, noop());
    auto tickets = ask<std::vector<ticket>>(rt().stream(0), submit_atom::value, std::move(works));
    BOOST_REQUIRE_MESSAGE(tickets, why(tickets));
  };
  auto graph = [&](std::size_t n) {
    graph_spec g;
    for (std::size_t i = 0; i < n; ++i) {
      auto s = spec_of(noop(), {}, static_cast<op_priority>(i % 5));
      s.type = static_cast<op_type>(i % 7);
      if (s.is_barrier()) s.body = work{};  // a barrier carries no work
      g.add(std::move(s), i > 0 && i % 3 == 0
                              ? std::vector<std::uint32_t>{static_cast<std::uint32_t>(i - 1)}
                              : std::vector<std::uint32_t>{});
    }
    auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g));
    BOOST_REQUIRE_MESSAGE(ids, why(ids));
  };
  // Every type and priority once, then 100k operations of each kind more.
  batch(1000);
  graph(1000);
  (void)ask<completion>(rt().stream(0), synchronize_atom::value);
  const std::size_t first = metric_reader{rt().metrics()}.series();
  for (int round = 0; round < 100; ++round) {
    batch(1000);
    graph(1000);
  }
  (void)ask<completion>(rt().stream(0), synchronize_atom::value);
  const std::size_t later = metric_reader{rt().metrics()}.series();
  BOOST_TEST(later == first);
  // Stream 0 took the direct batches and its share of the graphs: every operation once on
  // the streams, counted when the coordinator's last pass has reached them; a barrier (every
  // seventh operation of a graph, device mode, over every stream) is a mark and a crossing on
  // each stream.
  const double barriers = 101.0 * 142;  // i % 7 == 6 for 142 of 1000
  const double expected =
      202'000 + barriers * (2.0 * static_cast<double>(rt().streams().size()) - 1);
  // Up to 20 s (scaled: a sanitized build is slower by its factor) for the last to be reached.
  double on_streams = 0;
  const auto until = std::chrono::steady_clock::now() + scaled(std::chrono::seconds{20});
  while (true) {
    on_streams = metric_reader{rt().metrics()}.sum("cudactor_stream_operations_total");
    if (on_streams == expected || std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(10ms);
  }
  BOOST_TEST(on_streams == expected);
  BOOST_TEST(metric_reader{rt().metrics()}.counter("cudactor_stream_operations_total", stream0) >=
             101'000);
}

BOOST_AUTO_TEST_CASE(a_taken_port_refuses_to_start_and_says_which) {
  metrics::exposer_options taker;
  taker.port = 0;
  metrics::registry holder{taker};
  const std::string port = std::to_string(*holder.port());
  {
    runtime_config config;
    BOOST_REQUIRE(!config.parse({"--cudactor.backend=host", "--cudactor.metrics.port=" + port}));
    auto rt = runtime::start(config);
    BOOST_REQUIRE(!rt.ok());
    BOOST_TEST(rt.error().message().find("127.0.0.1:" + port) != std::string::npos,
               rt.error().message());
    BOOST_TEST(rt.error().message().find("on-bind-failure") != std::string::npos);
  }
  {
    runtime_config config;
    BOOST_REQUIRE(!config.parse({"--cudactor.backend=host", "--cudactor.metrics.port=" + port,
                                 "--cudactor.metrics.on-bind-failure=run-without"}));
    auto rt = runtime::start(config);
    BOOST_REQUIRE_MESSAGE(rt.ok(), rt.error().to_string());
    BOOST_TEST(!(*rt)->metrics().port().has_value());
    BOOST_TEST((*rt)->metrics().exposer_error().find(port) != std::string::npos);
    BOOST_TEST((*rt)->metrics().serialize().find("cudactor_poller_ticks_total") !=
               std::string::npos);
  }
  runtime_config config;
  BOOST_REQUIRE(
      !config.parse({"--cudactor.backend=host", "--cudactor.metrics.on-bind-failure=maybe"}));
  auto rt = runtime::start(config);
  BOOST_REQUIRE(!rt.ok());
  BOOST_TEST(rt.error().message().find("on-bind-failure") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_exposer_stops_with_the_runtime_and_leaves_no_thread) {
  const auto before = metrics::sample_process();
  BOOST_REQUIRE(before.has_value());
  std::uint16_t port = 0;
  {
    runtime_config config;
    BOOST_REQUIRE(!config.parse({"--cudactor.backend=host", "--cudactor.metrics.port=0"}));
    auto rt = runtime::start(config);
    BOOST_REQUIRE_MESSAGE(rt.ok(), rt.error().to_string());
    BOOST_REQUIRE((*rt)->metrics().port().has_value());
    port = *(*rt)->metrics().port();
    BOOST_TEST(port_answers(port));
    (*rt)->shutdown();
    BOOST_TEST(!port_answers(port));
  }
  BOOST_TEST(metrics::sample_process()->threads == before->threads);
  BOOST_TEST(!port_answers(port));
}

BOOST_AUTO_TEST_CASE(no_exposer_means_no_port_but_the_same_metrics) {
  runtime_config config;
  BOOST_REQUIRE(!config.parse({"--cudactor.backend=host", "--cudactor.metrics.no-exposer"}));
  auto rt = runtime::start(config);
  BOOST_REQUIRE_MESSAGE(rt.ok(), rt.error().to_string());
  BOOST_TEST(!(*rt)->metrics().port().has_value());
  BOOST_TEST((*rt)->metrics().exposer_error().empty());
  BOOST_TEST((*rt)->metrics().serialize().find("cudactor_poller_ticks_total") != std::string::npos);
}
