// Random DAGs through the coordinator against a reference model. 10k graphs of 1 to 500 ops
// over 4 streams (CUDACTOR_DAGS to change), with ops that fail alone (>= 5%), graphs that lose
// the device (>= 5%), hangs (a caller-launched op nobody begins until the test releases or
// cancels it, seen by detect_deadlocks first), cancels, barrier operations (2%: device or host
// mode, over all streams or some) and work submitted straight to a stream actor. Checked for
// every graph: each op is told exactly once; no op starts before its dependencies end (times
// recorded by the kernels; through barriers too); on a crossed barrier's streams, nothing
// after its marks starts before everything before them ended; every dependent of an op that
// did not complete is cancelled (or failed with the device); everything else completes. The
// seed is printed; CUDACTOR_TEST_SEED=<seed> replays a run. On either backend; on CUDA no graph
// loses the device (only the host backend injects faults).
#define BOOST_TEST_MODULE coordinator_random
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "common/test_seed.hpp"
#include "coordinator_fixture.hpp"
#include "cudactor/gpu/host_backend.hpp"

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

namespace {

struct dag {
  std::size_t n = 0;
  std::vector<std::vector<std::uint32_t>> deps;
  std::vector<bool> bad;  // fails alone
  // Barrier operations (never bad, never the hang): mode, and the streams named (empty: all).
  std::vector<std::optional<op_barrier>> barrier;
  int hang = -1;          // a manual op
  bool release_hang = true;
  int cancel = -1;  // cancelled after submission
  bool lose_device = false;
};

dag make_dag(std::mt19937_64& rng, std::uint32_t streams) {
  dag d;
  d.n = 1 + rng() % 500;
  d.deps.resize(d.n);
  d.bad.resize(d.n);
  d.barrier.resize(d.n);
  for (std::uint32_t i = 0; i < d.n; ++i) {
    const std::uint32_t k = i == 0 ? 0 : rng() % 4;
    for (std::uint32_t j = 0; j < k; ++j) {
      const std::uint32_t dep = i - 1 - static_cast<std::uint32_t>(rng() % std::min(i, 32u));
      if (std::find(d.deps[i].begin(), d.deps[i].end(), dep) == d.deps[i].end()) {
        d.deps[i].push_back(dep);
      }
    }
    d.bad[i] = rng() % 100 < 6;
    if (rng() % 100 < 2) {
      op_barrier b;
      b.mode = rng() % 2 == 0 ? barrier_mode::device : barrier_mode::host;
      if (rng() % 2 == 0) {  // a subset of the streams, in a random order
        for (std::uint32_t k = 0; k < streams; ++k) {
          if (rng() % 2 == 0) b.streams.push_back(stream_id{k});
        }
        std::shuffle(b.streams.begin(), b.streams.end(), rng);
      }
      d.barrier[i] = std::move(b);
      d.bad[i] = false;
    }
  }
  const auto roll = rng() % 100;
  if (roll < 8) {
    d.lose_device = true;
  } else if (roll < 16) {
    d.hang = static_cast<int>(rng() % d.n);
    d.release_hang = rng() % 2 == 0;
    d.barrier[d.hang].reset();
  } else if (roll < 24) {
    d.cancel = static_cast<int>(rng() % d.n);
  }
  if (d.lose_device) {
    // Begun, then the device goes. An op with no dependency: one under a failing dependency
    // is cancelled before its begin is answered more often than not (its dependencies are
    // submitted only once their stream actors gave their tickets), and the run must still
    // lose the device in enough graphs.
    d.hang = static_cast<int>(rng() % d.n);
    while (d.hang > 0 && !d.deps[d.hang].empty()) --d.hang;
    d.barrier[d.hang].reset();
  }
  return d;
}

struct totals {
  std::size_t ops = 0, edges = 0, completed_edges = 0, cross_edges = 0, bad = 0, lost_dags = 0,
              hangs = 0, cancels = 0, completed = 0, failed = 0, cancelled = 0, direct = 0,
              direct_ordered = 0, barriers = 0, barriers_crossed = 0, barrier_ordered = 0;
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(random_dags_match_the_reference_model, coordinator_fixture) {
  const std::uint64_t seed = cudactor::test::test_seed("coordinator_random");
  // Every other seed sends dependents in the pass of their dependencies (the stream actors then
  // wait for each other's points): both placements face the same faults across runs.
  const bool in_pass = seed % 2 == 1;
  std::printf("coordinator_random: dependents %s\n",
              in_pass ? "in the pass of their dependencies" : "after their dependencies' tickets");
  if (in_pass) {
    stop();
    start(with_defaults({"--cudactor.coordinator.dependents-in-pass"}));
  }
  const char* dags_text = std::getenv("CUDACTOR_DAGS");
  const std::size_t dags = dags_text ? std::strtoull(dags_text, nullptr, 10) : 10000;
  std::printf("coordinator_random: %zu graphs\n", dags);
  std::fflush(stdout);
  std::mt19937_64 rng{seed};
  auto* host = dynamic_cast<gpu::host_backend*>(&rt().device());
  BOOST_REQUIRE(host != nullptr || on_cuda());
  totals sum;

  for (std::size_t g = 0; g < dags; ++g) {
    dag d = make_dag(rng, static_cast<std::uint32_t>(rt().streams().size()));
    if (host == nullptr) d.lose_device = false;  // drawn all the same: a seed replays alike
    // Entry d.n: work submitted straight to a stream actor while the graph runs.
    auto log = std::make_shared<work_log>(d.n + 1);
    graph_spec spec;
    for (std::uint32_t i = 0; i < d.n; ++i) {
      const bool no_work = static_cast<int>(i) == d.hang || d.barrier[i];
      work w = no_work ? work{} : log->record(i, 0us, d.bad[i]);
      op_spec op = spec_of(std::move(w), {}, static_cast<op_priority>(rng() % 5),
                           static_cast<op_workload>(rng() % 4));
      if (d.barrier[i]) {
        op.type = op_type::barrier;
        op.barrier = *d.barrier[i];
      }
      spec.add(std::move(op), d.deps[i]);
    }
    // What each op must start after: its dependencies' work, through barriers (which run
    // none of their own).
    std::vector<std::vector<std::uint32_t>> after_work(d.n);
    for (std::uint32_t i = 0; i < d.n; ++i) {
      for (auto dep : d.deps[i]) {
        if (d.barrier[dep]) {
          after_work[i].insert(after_work[i].end(), after_work[dep].begin(),
                               after_work[dep].end());
        } else {
          after_work[i].push_back(dep);
        }
      }
      std::sort(after_work[i].begin(), after_work[i].end());
      after_work[i].erase(std::unique(after_work[i].begin(), after_work[i].end()),
                          after_work[i].end());
    }
    auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(spec), me());
    BOOST_REQUIRE_MESSAGE(ids, "graph " << g << " (seed " << seed << "): " << why(ids));
    // One timeline per stream: work submitted to a stream actor directly, between the
    // coordinator's operations on it, runs after those ticketed before it and before those
    // ticketed after it.
    const auto direct_stream = static_cast<std::size_t>(rng() % rt().streams().size());
    std::optional<ticket> direct;
    if (!d.lose_device) {
      auto t = ask<ticket>(rt().stream(direct_stream), submit_atom::value, log->record(d.n));
      BOOST_REQUIRE_MESSAGE(t, "graph " << g << ": direct submit: " << why(t));
      direct = *t;
    }
    bool cancel_took = false;
    if (d.cancel >= 0) {
      auto answer = ask<op_state>(co(), cancel_atom::value, (*ids)[d.cancel]);
      cancel_took = answer && *answer == op_state::cancelled;
      if (!answer) {
        BOOST_REQUIRE_MESSAGE(
            answer.error().code() == static_cast<std::uint8_t>(errc::invalid_state),
            "graph " << g << ": cancel: " << why(answer));
      }
      ++sum.cancels;
    }
    if (d.hang >= 0 && !d.lose_device) {
      ++sum.hangs;
      const op_id hung = (*ids)[d.hang];
      auto report = ask<deadlock_report>(co(), deadlocks_atom::value, caf::timespan{0});
      BOOST_REQUIRE(report);
      auto state = ask<op_info>(co(), describe_atom::value, hung);
      BOOST_REQUIRE(state);
      if (!is_terminal(state->state)) {  // not cancelled by a failed dependency meanwhile
        bool named = false;
        for (const auto& stall : report->stalls) {
          named |= stall.id == hung || stall.waiting_on == hung;
        }
        BOOST_CHECK_MESSAGE(named, "graph " << g << ": the hang is not reported");
      }
      if (d.release_hang) {
        auto lease = ask<op_lease>(co(), begin_atom::value, hung);
        if (lease) {
          // A dependency of the begun op may fail meanwhile, which cancels it: complete then
          // says it has ended.
          auto done = ask<ticket>(co(), enqueued_atom::value, hung);
          BOOST_REQUIRE_MESSAGE(
              done || done.error().code() == static_cast<std::uint8_t>(errc::invalid_state),
              "graph " << g << ": complete: " << why(done));
        }
      } else {
        BOOST_REQUIRE(ask<op_state>(co(), cancel_atom::value, hung));
      }
    }
    bool injected = false;
    if (d.lose_device) {
      auto lease = ask<op_lease>(co(), begin_atom::value, (*ids)[d.hang]);
      if (lease) {
        BOOST_REQUIRE(
            host->inject_device_fault(rt().backend_stream(lease->stream), "injected loss").ok());
        injected = true;
        ++sum.lost_dags;
        (void)ask<ticket>(co(), enqueued_atom::value, (*ids)[d.hang]);
        // The coordinator learns of the loss when it next touches the device; if the begun
        // op was cancelled meanwhile, nothing of it may be in flight: a probe touches it.
        for (int i = 0; i < 5000 && rt().device().health().ok(); ++i)
          std::this_thread::sleep_for(1ms);
        BOOST_REQUIRE(!rt().device().health().ok());
        auto probe = ask<op_id>(co(), register_atom::value, spec_of(noop()), me());
        if (probe) ids->push_back(*probe);
      }
    }
    auto told = collect(*ids, 30s);
    if (ids->size() > d.n) {
      BOOST_CHECK((told.at(ids->back().value).state == op_state::failed));
      ids->pop_back();
    }

    // The reference model.
    std::vector<op_state> expected(d.n, op_state::completed);
    for (std::uint32_t i = 0; i < d.n; ++i) {
      const auto& n = told.at((*ids)[i].value);
      bool dep_ended_badly = false;
      for (auto dep : d.deps[i]) {
        dep_ended_badly |= told.at((*ids)[dep].value).state != op_state::completed;
        ++sum.edges;
        if (n.state == op_state::completed &&
            told.at((*ids)[dep].value).state == op_state::completed) {
          ++sum.completed_edges;
          if (n.stream != told.at((*ids)[dep].value).stream) ++sum.cross_edges;
        }
      }
      // No op starts before its dependencies end (those behind a barrier included).
      for (auto dep : after_work[i]) {
        if (d.barrier[i] || log->started(i) == 0 || log->ended(dep) == 0) continue;
        BOOST_CHECK_MESSAGE(log->started(i) >= log->ended(dep), "graph " << g << ": op " << i
                                                                         << " started before dep "
                                                                         << dep << " ended");
      }
      if (dep_ended_badly) {
        // Cancelled, or failed with the device when the device was lost.
        const bool ok =
            n.state == op_state::cancelled || (d.lose_device && n.state == op_state::failed);
        BOOST_CHECK_MESSAGE(ok, "graph " << g << ": op " << i << " is " << n.state
                                         << " though a dependency did not complete");
        continue;
      }
      if (d.lose_device) {
        BOOST_CHECK_MESSAGE(n.state == op_state::completed ||
                                (n.state == op_state::failed &&
                                 n.cause.code() == static_cast<std::uint8_t>(errc::device_lost)) ||
                                (n.state == op_state::failed && d.bad[i]),
                            "graph " << g << ": op " << i << " is " << n.state << " ("
                                     << render(n.cause) << ") after a lost device");
        continue;
      }
      if (static_cast<int>(i) == d.cancel && cancel_took) {
        expected[i] = op_state::cancelled;
      } else if (static_cast<int>(i) == d.hang && !d.release_hang) {
        expected[i] = op_state::cancelled;
      } else if (d.bad[i] && static_cast<int>(i) != d.hang) {
        expected[i] = op_state::failed;
      }
      BOOST_CHECK_MESSAGE(n.state == expected[i], "graph " << g << ": op " << i << " is " << n.state
                                                           << ", expected " << expected[i] << " ("
                                                           << render(n.cause) << ")");
    }
    if (direct) {
      auto reached = ask<completion>(rt().stream(direct_stream), await_atom::value, direct->point);
      BOOST_REQUIRE_MESSAGE(reached, "graph " << g << ": direct work: " << why(reached));
      ++sum.direct;
      for (std::uint32_t i = 0; i < d.n; ++i) {
        const auto& n = told.at((*ids)[i].value);
        if (n.stream != direct->stream || n.point == 0 || log->started(i) == 0) continue;
        if (n.point < direct->point) {
          BOOST_CHECK_MESSAGE(log->ended(i) <= log->started(d.n),
                              "graph " << g << ": op " << i << " (point " << n.point
                                       << ") still ran when direct work at point "
                                       << direct->point << " started");
          ++sum.direct_ordered;
        } else {
          BOOST_CHECK_MESSAGE(log->started(i) >= log->ended(d.n),
                              "graph " << g << ": op " << i << " (point " << n.point
                                       << ") started before direct work at point "
                                       << direct->point << " ended");
          ++sum.direct_ordered;
        }
      }
    }
    // A barrier that crossed: whatever ran on its streams after its marks started after
    // whatever ran there before them had ended, whether it depended on the barrier or not.
    for (std::uint32_t b = 0; b < d.n; ++b) {
      if (!d.barrier[b]) continue;
      ++sum.barriers;
      const auto& crossed = told.at((*ids)[b].value);
      if (crossed.state != op_state::completed || d.lose_device) continue;
      ++sum.barriers_crossed;
      BOOST_CHECK_MESSAGE(crossed.arrivals.size() == (d.barrier[b]->streams.empty()
                                                          ? rt().streams().size()
                                                          : d.barrier[b]->streams.size()),
                          "graph " << g << ": barrier " << b << " reports "
                                   << crossed.arrivals.size() << " arrivals");
      std::map<std::uint32_t, timeline_point> mark;
      for (const auto& a : crossed.arrivals) mark[a.stream.value] = a.point;
      std::int64_t last_before = 0, first_after = std::numeric_limits<std::int64_t>::max();
      std::size_t after = 0;
      for (std::uint32_t i = 0; i < d.n; ++i) {
        const auto& n = told.at((*ids)[i].value);
        const auto at = mark.find(n.stream.value);
        if (d.barrier[i] || n.point == 0 || at == mark.end() || log->started(i) == 0) continue;
        if (n.point < at->second) {
          last_before = std::max(last_before, log->ended(i));
        } else {
          first_after = std::min(first_after, log->started(i));
          ++after;
        }
      }
      if (after == 0 || last_before == 0) continue;
      ++sum.barrier_ordered;
      BOOST_CHECK_MESSAGE(last_before <= first_after,
                          "graph " << g << ": barrier " << b << " ("
                                   << to_string(d.barrier[b]->mode)
                                   << "): work after it on its streams started "
                                   << (last_before - first_after) << " ns before work before it ended");
    }
    for (const auto& [id, n] : told) {
      ++sum.ops;
      sum.completed += n.state == op_state::completed;
      sum.failed += n.state == op_state::failed;
      sum.cancelled += n.state == op_state::cancelled;
    }
    for (bool b : d.bad) sum.bad += b;
    if (injected) {
      BOOST_REQUIRE(rt().device().reset().ok());
      auto reset = ask<bool>(co(), reset_atom::value);
      BOOST_REQUIRE_MESSAGE(reset, "graph " << g << ": " << why(reset));
      BOOST_REQUIRE_MESSAGE(*reset, "graph " << g << ": the coordinator did not see the loss");
    }
  }
  const auto m = metrics();
  BOOST_TEST(m.live == 0u);
  BOOST_TEST(m.tracked == 0u);  // every ended op forgotten
  std::printf(
      "coordinator_random: %zu ops (%zu bad, %.1f%%), %zu edges, %.1f%% of completed edges "
      "across streams; %zu graphs lost the device, %zu hung, %zu cancelled an op; ended "
      "%zu completed / %zu failed / %zu cancelled; %zu direct submissions ordered against %zu "
      "operations on their stream; %zu barriers, %zu crossed, %zu with work on both sides\n",
      sum.ops, sum.bad, 100.0 * sum.bad / std::max<std::size_t>(sum.ops, 1), sum.edges,
      100.0 * sum.cross_edges / std::max<std::size_t>(sum.completed_edges, 1), sum.lost_dags,
      sum.hangs, sum.cancels, sum.completed, sum.failed, sum.cancelled, sum.direct,
      sum.direct_ordered, sum.barriers, sum.barriers_crossed, sum.barrier_ordered);
  // Coverage: the run exercised what it was built to (6% of operations fail, 8% of graphs
  // lose the device, many edges cross streams). Below 2000 graphs chance decides it: at 2000,
  // fewer than 5% losing the device is 4.9 standard deviations from the 8% expected, so the
  // check holds for any seed from there on; below, it is not made, and the run says so.
  constexpr std::size_t coverage_needs = 2000;
  if (dags < coverage_needs) {
    std::printf("coordinator_random: coverage not checked: it needs CUDACTOR_DAGS >= %zu\n",
                coverage_needs);
    return;
  }
  BOOST_TEST(100.0 * sum.bad / std::max<std::size_t>(sum.ops, 1) >= 5.0);
  if (host != nullptr) {
    BOOST_TEST(sum.lost_dags * 100 >= dags * 5);
  } else {
    std::printf("coordinator_random: no graph lost the device: CUDA has no fault injection\n");
  }
  // Many edges cross streams (about a third: a dependent may follow a dependency still on its
  // way onto that stream, which needs no device wait).
  BOOST_TEST(sum.cross_edges * 100 >= sum.completed_edges * 15);
  BOOST_TEST(sum.direct_ordered * 10 >= sum.direct);  // most direct work shared a stream
  // About 2% of operations are barriers; most cross with work on both sides of them.
  BOOST_TEST(sum.barriers * 100 >= sum.ops);
  BOOST_TEST(sum.barrier_ordered * 2 >= sum.barriers_crossed);
}
