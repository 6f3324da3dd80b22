// The coordinator's profile (report_atom) and its Chrome trace: per-stream and per-name
// figures against what was submitted, run times with timing on and none without, the name
// limit, and a trace file that parses, has every operation once, and orders each stream's
// operations as they ran.
#define BOOST_TEST_MODULE coordinator_report
#include <boost/test/unit_test.hpp>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "actors/coordinator_fixture.hpp"
#include "cudactor/actors/client.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

op_spec typed(op_spec s, op_type type) {
  s.type = type;
  return s;
}

// Three copies, four 2 ms kernels after them, one kernel that fails: 8 operations.
graph_spec mixed_graph(std::shared_ptr<work_log> log) {
  graph_spec g;
  std::vector<std::uint32_t> copies;
  for (std::size_t i = 0; i < 3; ++i) {
    copies.push_back(
        g.add(typed(spec_of(log->record(i), {}, op_priority::normal, op_workload::memory, "copy"),
                    op_type::memory_transfer)));
  }
  for (std::size_t i = 3; i < 7; ++i) {
    g.add(
        typed(spec_of(log->record(i, 2ms), {}, op_priority::normal, op_workload::compute, "matmul"),
              op_type::kernel),
        {copies[i % 3]});
  }
  g.add(typed(
      spec_of(log->record(7, 0us, true), {}, op_priority::normal, op_workload::compute, "bad"),
      op_type::kernel));
  return g;
}

const op_name_report* named(const coordinator_report& r, const std::string& name) {
  for (const auto& n : r.operations) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::vector<op_notice> run(runtime& rt, graph_spec g) {
  client c{rt};
  auto f = c.submit(std::move(g));
  BOOST_REQUIRE(f.wait_for(20s) == std::future_status::ready);
  return f.get();
}

}  // namespace

BOOST_AUTO_TEST_CASE(report_counts_streams_and_names_with_run_times) {
  coordinator_fixture fx{{"--cudactor.streams=3", "--cudactor.coordinator.timing"}};
  const auto ends = run(fx.rt(), mixed_graph(std::make_shared<work_log>(8)));
  BOOST_REQUIRE(ends.size() == 8u);
  auto r = fx.ask<coordinator_report>(fx.rt().coordinator(), report_atom::value);
  BOOST_REQUIRE(r);
  BOOST_TEST(r->timed);
  BOOST_TEST(r->now_ns >= r->since_ns);
  BOOST_REQUIRE(r->streams.size() == 3u);
  std::uint64_t ops = 0, kernels = 0, transfers = 0, failed = 0;
  std::int64_t run_ns = 0;
  for (std::size_t i = 0; i < r->streams.size(); ++i) {
    const auto& s = r->streams[i];
    BOOST_TEST(s.stream.value == i);
    ops += s.ops;
    kernels += s.kernels;
    transfers += s.transfers;
    failed += s.failed;
    run_ns += s.run_ns;
    BOOST_TEST(s.busy_ns <= r->now_ns - r->since_ns);
    BOOST_TEST(s.busy_ns >= s.run_ns);  // busy: from dispatch to the end seen
    if (s.ops != 0) BOOST_TEST(s.busy_ns > 0);
  }
  BOOST_TEST(ops == 8u);
  BOOST_TEST(kernels == 5u);
  BOOST_TEST(transfers == 3u);
  BOOST_TEST(failed == 1u);
  BOOST_TEST(run_ns >= std::int64_t{8'000'000});  // four kernels of 2 ms

  const auto* matmul = named(*r, "matmul");
  const auto* copy = named(*r, "copy");
  const auto* bad = named(*r, "bad");
  BOOST_REQUIRE(matmul != nullptr);
  BOOST_REQUIRE(copy != nullptr);
  BOOST_REQUIRE(bad != nullptr);
  BOOST_TEST(matmul->count == 4u);
  BOOST_TEST(matmul->failed == 0u);
  BOOST_TEST(matmul->run_ns >= std::int64_t{8'000'000});
  BOOST_TEST(matmul->max_run_ns >= std::int64_t{2'000'000});
  BOOST_TEST(matmul->max_run_ns <= matmul->run_ns);
  BOOST_TEST(matmul->on_stream_ns >= matmul->run_ns);
  BOOST_TEST(copy->count == 3u);
  BOOST_TEST(bad->count == 1u);
  BOOST_TEST(bad->failed == 1u);
  BOOST_TEST(r->operations.front().name == "matmul");  // the most time first

  // A second graph adds to the figures.
  run(fx.rt(), mixed_graph(std::make_shared<work_log>(8)));
  auto again = fx.ask<coordinator_report>(fx.rt().coordinator(), report_atom::value);
  BOOST_REQUIRE(again);
  BOOST_TEST(named(*again, "matmul")->count == 8u);
}

BOOST_AUTO_TEST_CASE(work_sent_straight_to_a_stream_is_in_the_report_too) {
  coordinator_fixture fx{{"--cudactor.streams=2"}};
  const auto& one = fx.rt().stream(1);
  BOOST_REQUIRE(fx.ask<ticket>(one, submit_atom::value, noop()));
  BOOST_REQUIRE(fx.ask<std::vector<ticket>>(one, submit_atom::value,
                                            std::vector<work>{noop(), noop(), noop()}));
  const auto& zero = fx.rt().stream(0);
  auto a = fx.ask<buffer_ref>(zero, alloc_atom::value, std::uint64_t{256});
  auto b = fx.ask<buffer_ref>(zero, alloc_atom::value, std::uint64_t{256});
  BOOST_REQUIRE((a && b));
  BOOST_REQUIRE(fx.ask<ticket>(zero, fill_atom::value, a->address, std::uint8_t{7},
                               std::uint64_t{256}));
  BOOST_REQUIRE(fx.ask<ticket>(zero, copy_atom::value, b->address, a->address,
                               std::uint64_t{256}, gpu::copy_kind::device_to_device));
  run(fx.rt(), mixed_graph(std::make_shared<work_log>(8)));  // the coordinator's own
  auto r = fx.ask<coordinator_report>(fx.rt().coordinator(), report_atom::value);
  BOOST_REQUIRE(r);
  BOOST_REQUIRE(r->streams.size() == 2u);
  BOOST_TEST(r->streams[1].direct_kernels == 4u);
  BOOST_TEST(r->streams[1].direct_transfers == 0u);
  BOOST_TEST(r->streams[0].direct_kernels == 0u);
  BOOST_TEST(r->streams[0].direct_transfers == 2u);
  BOOST_TEST(r->streams[0].ops + r->streams[1].ops == 8u);  // the coordinator's, apart
}

BOOST_AUTO_TEST_CASE(without_timing_there_are_no_run_times) {
  coordinator_fixture fx{{"--cudactor.streams=2"}};
  run(fx.rt(), mixed_graph(std::make_shared<work_log>(8)));
  auto r = fx.ask<coordinator_report>(fx.rt().coordinator(), report_atom::value);
  BOOST_REQUIRE(r);
  BOOST_TEST(!r->timed);
  for (const auto& s : r->streams) BOOST_TEST(s.run_ns == 0);
  const auto* matmul = named(*r, "matmul");
  BOOST_REQUIRE(matmul != nullptr);
  BOOST_TEST(matmul->run_ns == 0);
  BOOST_TEST(matmul->on_stream_ns >= std::int64_t{8'000'000});
}

BOOST_AUTO_TEST_CASE(names_past_the_limit_are_summed_together) {
  coordinator_fixture fx{{"--cudactor.coordinator.report-names=2"}};
  // A chain, so that they end, and are first seen, in this order.
  graph_spec g;
  std::vector<std::uint32_t> after;
  for (const char* name : {"a", "b", "c", "d", "a"}) {
    after = {g.add(spec_of(noop(), {}, {}, {}, name), after)};
  }
  g.add(spec_of(noop()), after);  // no description: counted under its type
  run(fx.rt(), std::move(g));
  auto r = fx.ask<coordinator_report>(fx.rt().coordinator(), report_atom::value);
  BOOST_REQUIRE(r);
  BOOST_REQUIRE(r->operations.size() == 3u);
  BOOST_TEST(named(*r, "a")->count == 2u);
  BOOST_TEST(named(*r, "b")->count == 1u);
  BOOST_REQUIRE(named(*r, "(other names)") != nullptr);
  BOOST_TEST(named(*r, "(other names)")->count == 3u);
}

BOOST_AUTO_TEST_CASE(the_trace_has_every_operation_in_the_order_it_ran) {
  const std::string path = "coordinator_report_test." + std::to_string(getpid()) + ".json";
  constexpr std::size_t chains = 6, length = 5;
  {
    coordinator_fixture fx{
        {"--cudactor.streams=3", "--cudactor.coordinator.trace=" + path}};
    auto log = std::make_shared<work_log>(chains * length);
    graph_spec g;
    for (std::size_t c = 0; c < chains; ++c) {
      for (std::size_t k = 0; k < length; ++k) {
        const std::size_t i = c * length + k;
        std::vector<std::uint32_t> after;
        if (k != 0) after.push_back(static_cast<std::uint32_t>(i - 1));
        g.add(spec_of(log->record(i, 200us), {}, {}, {}, "chain " + std::to_string(c)), after);
      }
    }
    const auto ends = run(fx.rt(), std::move(g));
    BOOST_TEST(all_completed(ends));
    fx.stop();  // the trace is complete once the runtime is down
  }
  boost::property_tree::ptree trace;
  BOOST_REQUIRE_NO_THROW(boost::property_tree::read_json(path, trace));
  std::remove(path.c_str());

  struct span {
    double from, to;
    std::string name;
  };
  std::map<int, std::vector<span>> on_stream;
  std::size_t begins = 0, ends = 0, thread_names = 0;
  for (const auto& [unused, e] : trace.get_child("traceEvents")) {
    const std::string ph = e.get<std::string>("ph");
    if (ph == "X") {
      BOOST_TEST(e.get<bool>("args.timed"));
      BOOST_TEST(e.get<std::string>("args.state") == "completed");
      const double ts = e.get<double>("ts");
      on_stream[e.get<int>("tid")].push_back(
          {ts, ts + e.get<double>("dur"), e.get<std::string>("name")});
    } else if (ph == "b") {
      ++begins;
    } else if (ph == "e") {
      ++ends;
    } else if (ph == "M" && e.get<std::string>("name") == "thread_name") {
      ++thread_names;
    }
  }
  BOOST_TEST(thread_names == 3u);
  BOOST_TEST(begins == chains * length);
  BOOST_TEST(ends == chains * length);
  std::size_t spans = 0;
  std::map<std::string, std::vector<span>> by_chain;
  for (auto& [tid, list] : on_stream) {
    BOOST_TEST(tid >= 1);
    BOOST_TEST(tid <= 3);
    std::sort(list.begin(), list.end(),
              [](const span& a, const span& b) { return a.from < b.from; });
    for (std::size_t i = 0; i < list.size(); ++i) {
      BOOST_TEST(list[i].to - list[i].from >= 190.0);  // a 200 us kernel (printed to 1 ns)
      if (i != 0) BOOST_TEST(list[i].from >= list[i - 1].to - 0.002);  // one stream: one at a time
      by_chain[list[i].name].push_back(list[i]);
    }
    spans += list.size();
  }
  BOOST_TEST(spans == chains * length);
  // A chain's operations ran one after the other, whichever streams they were on.
  for (auto& [name, list] : by_chain) {
    BOOST_TEST(list.size() == length);
    std::sort(list.begin(), list.end(),
              [](const span& a, const span& b) { return a.from < b.from; });
    for (std::size_t i = 1; i < list.size(); ++i)
      BOOST_TEST(list[i].from >= list[i - 1].to - 0.002);
  }
}

// A replay is one operation with its step's operations inside its span, each on the stream it
// ran on, where the backend tells when each ran (the host; not CUDA, where work is a launch).
BOOST_AUTO_TEST_CASE(a_replay_has_its_operations_inside_its_span_in_the_trace) {
  const std::string path = "coordinator_report_test.step." + std::to_string(getpid()) + ".json";
  constexpr std::size_t ops = 6, replays = 2;
  {
    coordinator_fixture fx{{"--cudactor.streams=3", "--cudactor.coordinator.trace=" + path}};
    auto log = std::make_shared<work_log>(ops * replays);
    graph_spec g;
    // Two chains of three on streams 0 and 1, the last after both: waits across streams.
    for (std::size_t i = 0; i < ops; ++i) {
      op_spec s = spec_of(log->record(i, 200us), {}, {}, {}, "traced " + std::to_string(i));
      s.placement.pinned = true;
      s.placement.stream = stream_id{static_cast<std::uint32_t>(i < 3 ? 0 : 1)};
      std::vector<std::uint32_t> after;
      if (i % 3 != 0) after.push_back(static_cast<std::uint32_t>(i - 1));
      if (i == ops - 1) after.push_back(2);
      g.add(std::move(s), after);
    }
    auto h = fx.ask<step_handle>(fx.rt().coordinator(), record_atom::value,
                                 step_spec{"traced step", std::move(g)});
    BOOST_REQUIRE_MESSAGE(h, fx.why(h));
    for (std::size_t k = 0; k < replays; ++k) {
      auto out = fx.ask<step_outcome>(fx.rt().coordinator(), replay_atom::value,
                                      replay_request{*h, {}, {}});
      BOOST_REQUIRE_MESSAGE(out, fx.why(out));
      BOOST_TEST((out->state == op_state::completed), fx.render(out->cause));
    }
    fx.stop();
  }
  boost::property_tree::ptree trace;
  BOOST_REQUIRE_NO_THROW(boost::property_tree::read_json(path, trace));
  std::remove(path.c_str());
  struct span {
    double from, to;
    int tid;
    long index;
  };
  std::map<std::uint64_t, span> replay_spans;
  std::map<std::uint64_t, std::vector<span>> inside;
  for (const auto& [unused, e] : trace.get_child("traceEvents")) {
    if (e.get<std::string>("ph") != "X") continue;
    const double ts = e.get<double>("ts");
    const span x{ts, ts + e.get<double>("dur"), e.get<int>("tid"), e.get<long>("args.step_op", -1)};
    const auto op = e.get<std::uint64_t>("args.op");
    if (x.index >= 0) {
      BOOST_TEST(e.get<std::string>("cat") == "step op");
      BOOST_TEST(e.get<std::string>("name") == "traced " + std::to_string(x.index));
      inside[op].push_back(x);
    } else if (e.get<std::string>("cat") == "step") {
      replay_spans[op] = x;
    }
  }
  BOOST_TEST(replay_spans.size() == replays);
  if (on_cuda()) {
    BOOST_TEST(inside.empty());  // CUDA does not tell when each operation ran
    return;
  }
  BOOST_TEST(inside.size() == replays);
  for (auto& [op, list] : inside) {
    BOOST_REQUIRE(replay_spans.count(op) == 1u);
    const span& whole = replay_spans[op];
    BOOST_TEST(list.size() == ops);
    std::map<long, span> by_index;
    for (const span& x : list) {
      BOOST_TEST(x.from >= whole.from - 0.002);
      BOOST_TEST(x.to <= whole.to + 0.002);
      BOOST_TEST(x.to - x.from >= 190.0);  // a 200 us work (printed to 1 ns)
      by_index[x.index] = x;
    }
    // The plan keeps each chain on its stream; the last runs after both chains.
    for (long i : {1L, 2L, 4L}) BOOST_TEST(by_index[i].from >= by_index[i - 1].to - 0.002);
    BOOST_TEST(by_index[5].from >= by_index[2].to - 0.002);
  }
}

BOOST_AUTO_TEST_CASE(a_trace_file_that_cannot_be_made_stops_the_start) {
  runtime_config config;
  BOOST_REQUIRE(!config.parse(
      std::vector<std::string>{"--cudactor.backend=host", "--cudactor.metrics.no-exposer",
                               "--cudactor.coordinator.trace=/nonexistent-directory/trace.json"}));
  auto started = runtime::start(config);
  BOOST_REQUIRE(!started.ok());
  BOOST_TEST(started.error().to_string().find("/nonexistent-directory/trace.json") !=
             std::string::npos);
}
