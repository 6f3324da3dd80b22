// Each allocation strategy's choice of stream, the in-flight cap and reservations, and the
// redundant-wait table, on a pool driven directly (no actor, no device: the tests play the
// stream actors' part on their ledgers).
#define BOOST_TEST_MODULE stream_pool
#include <boost/test/unit_test.hpp>

#include "common/protocol_printing.hpp"
#include "cudactor/actors/coordinator/stream_pool.hpp"

using namespace cudactor;
using cudactor::detail::pool_strategy;
using cudactor::detail::stream_pool;
using prio = gpu::stream_priority;

namespace {

stream_pool make(pool_strategy s, std::vector<prio> priorities, std::uint64_t cap = 4) {
  stream_pool pool{s};
  std::uint32_t id = 0;
  for (auto p : priorities) {
    pool.add(stream_id{id++}, p, std::make_shared<detail::stream_ledger>(cap));
  }
  return pool;
}

// `n` points on the stream at `index`, as its stream actor would count them.
void occupy(stream_pool& pool, std::uint32_t index, std::size_t n) {
  pool.at(index).ledger->reserve(n);
}
void reach(stream_pool& pool, std::uint32_t index, std::size_t n) {
  pool.at(index).ledger->release(n);
}

std::uint32_t pick(stream_pool& pool, op_priority p = op_priority::normal,
                   op_workload w = op_workload::compute) {
  auto chosen = pool.choose(p, w);
  BOOST_REQUIRE(chosen.has_value());
  return *chosen;
}

}  // namespace

BOOST_AUTO_TEST_CASE(round_robin_takes_turns_and_skips_full_or_held_streams) {
  auto pool = make(pool_strategy::round_robin, {prio::normal, prio::normal, prio::normal}, 2);
  BOOST_TEST(pick(pool) == 0u);
  BOOST_TEST(pick(pool) == 1u);
  BOOST_TEST(pick(pool) == 2u);
  BOOST_TEST(pick(pool) == 0u);
  occupy(pool, 1, 2);  // at the cap
  pool.at(2).reserved_by = op_id{9};
  BOOST_TEST(pick(pool) == 0u);
  occupy(pool, 0, 2);
  BOOST_TEST(!pool.choose(op_priority::normal, op_workload::compute).has_value());
  BOOST_TEST(!pool.any_available());
  BOOST_TEST(!pool.any_idle().has_value());
}

// What the coordinator reserves for a pass counts at once, before the stream actor has taken
// it: the pass being staged is load and takes room under the cap. It reaches the stream's one
// count (its ledger) in one add when the pass is published, before the pass is sent, so that
// the stream actor gives back only what was published.
BOOST_AUTO_TEST_CASE(reserved_operations_count_as_load_and_against_the_cap) {
  auto pool = make(pool_strategy::load_balanced, {prio::normal, prio::normal}, 2);
  pool.reserve(0);
  BOOST_TEST(pick(pool) == 1u);
  BOOST_TEST(!pool.idle(0));
  pool.reserve(0);
  BOOST_TEST(!pool.available(0));
  BOOST_TEST(pool.load_of(0) == 2u);
  BOOST_TEST(pool.at(0).ledger->load() == 0u);  // staged, not yet published
  pool.publish(0);
  BOOST_TEST(pool.at(0).ledger->load() == 2u);
  BOOST_TEST(pool.load_of(0) == 2u);  // counted once
  BOOST_TEST(!pool.available(0));
  reach(pool, 0, 2);
  BOOST_TEST(pool.idle(0));
  BOOST_TEST(pool.load_of(0) == 0u);
  reach(pool, 0, 5);  // never below zero
  BOOST_TEST(pool.load_of(0) == 0u);
  pool.at(0).reserved_by = op_id{3};
  BOOST_TEST(!pool.idle(0));
  pool.clear_work();
  BOOST_TEST(pool.idle(0));
}

BOOST_AUTO_TEST_CASE(load_balanced_takes_the_fewest_in_flight) {
  auto pool = make(pool_strategy::load_balanced, {prio::normal, prio::normal, prio::normal});
  occupy(pool, 0, 3);
  occupy(pool, 1, 1);
  occupy(pool, 2, 2);
  BOOST_TEST(pick(pool) == 1u);
  occupy(pool, 1, 2);
  BOOST_TEST(pick(pool) == 2u);
  BOOST_TEST(pool.idle(0) == false);
}

BOOST_AUTO_TEST_CASE(priority_puts_urgent_work_on_high_streams_and_background_on_low) {
  auto pool = make(pool_strategy::priority, {prio::high, prio::normal, prio::normal, prio::low});
  BOOST_TEST(pick(pool, op_priority::critical) == 0u);
  BOOST_TEST(pick(pool, op_priority::high) == 0u);
  BOOST_TEST(pick(pool, op_priority::cleanup) == 3u);
  BOOST_TEST(pick(pool, op_priority::low) == 3u);
  const auto normal = pick(pool, op_priority::normal);
  BOOST_TEST((normal == 1u || normal == 2u));
  occupy(pool, 0, 4);  // the high stream is full: urgent work falls back to a normal one
  const auto fallback = pick(pool, op_priority::critical);
  BOOST_TEST((fallback == 1u || fallback == 2u));
  occupy(pool, 1, 4);
  occupy(pool, 2, 4);
  BOOST_TEST(pick(pool, op_priority::critical) == 3u);  // and then to any
}

BOOST_AUTO_TEST_CASE(workload_keeps_each_kind_on_its_streams) {
  // 8 streams: compute 0-3, memory 4-6, coordination 7.
  auto pool = make(pool_strategy::workload, std::vector<prio>(8, prio::normal));
  BOOST_TEST((pool.at(0).role == op_workload::compute));
  BOOST_TEST((pool.at(3).role == op_workload::compute));
  BOOST_TEST((pool.at(4).role == op_workload::memory));
  BOOST_TEST((pool.at(6).role == op_workload::memory));
  BOOST_TEST((pool.at(7).role == op_workload::coordination));
  BOOST_TEST(pick(pool, op_priority::normal, op_workload::coordination) == 7u);
  const auto memory = pick(pool, op_priority::normal, op_workload::memory);
  BOOST_TEST((memory >= 4u && memory <= 6u));
  const auto compute = pick(pool, op_priority::normal, op_workload::compute);
  BOOST_TEST(compute <= 3u);
  for (std::uint32_t i = 0; i < 7; ++i) occupy(pool, i, 1);
  BOOST_TEST(pick(pool, op_priority::normal, op_workload::mixed) == 7u);  // least loaded
  occupy(pool, 7, 4);  // coordination full: any other
  BOOST_TEST(pick(pool, op_priority::normal, op_workload::coordination) != 7u);
  // Fewer streams: two split compute / memory, one does everything.
  auto two = make(pool_strategy::workload, {prio::normal, prio::normal});
  BOOST_TEST(pick(two, op_priority::normal, op_workload::memory) == 1u);
  BOOST_TEST(pick(two, op_priority::normal, op_workload::compute) == 0u);
}

BOOST_AUTO_TEST_CASE(adaptive_tries_each_stream_then_prefers_the_faster_one) {
  auto pool = make(pool_strategy::adaptive, {prio::normal, prio::normal}, 64);
  std::array<std::uint32_t, stream_pool::workloads> one_compute{};
  one_compute[static_cast<std::size_t>(op_workload::compute)] = 1;
  // Unmeasured streams are tried first.
  BOOST_TEST(pick(pool) == 0u);
  pool.note_dispatch(0, 0);
  occupy(pool, 0, 1);
  reach(pool, 0, 1);
  pool.record_completions(0, one_compute, 1'000'000);  // 1 ms per op on stream 0
  BOOST_TEST(pick(pool) == 1u);                        // stream 1 not measured yet
  pool.note_dispatch(1, 2'000'000);
  pool.record_completions(1, one_compute, 2'100'000);  // 0.1 ms per op on stream 1
  BOOST_TEST(pool.at(0).mean_interval_ns[0] == 1'000'000.0);
  BOOST_TEST(pool.at(1).mean_interval_ns[0] == 100'000.0);
  BOOST_TEST(pick(pool) == 1u);
  occupy(pool, 1, 12);  // 13 x 0.1 ms > 1 x 1 ms: the slow idle stream wins now
  BOOST_TEST(pick(pool) == 0u);
  // Memory work has no measurement anywhere: the least loaded unmeasured stream.
  BOOST_TEST(pick(pool, op_priority::normal, op_workload::memory) == 0u);
}

BOOST_AUTO_TEST_CASE(a_wait_covered_by_a_newer_one_on_the_same_pair_is_skipped) {
  auto pool = make(pool_strategy::load_balanced, {prio::normal, prio::normal, prio::normal});
  pool.at(1).ledger->publish_completed(3);
  BOOST_TEST(!pool.needs_wait(0, 0, 10));  // same stream: stream order suffices
  BOOST_TEST(!pool.needs_wait(0, 1, 3));   // already reached
  BOOST_TEST(pool.needs_wait(0, 1, 7));
  BOOST_TEST(!pool.needs_wait(0, 1, 5));  // covered by the wait for 7
  BOOST_TEST(!pool.needs_wait(0, 1, 7));
  BOOST_TEST(pool.needs_wait(0, 1, 8));
  BOOST_TEST(pool.needs_wait(2, 1, 5));  // another pair has its own record
  BOOST_TEST(pool.waits_skipped() == 2u);
}

BOOST_AUTO_TEST_CASE(strict_choices_stay_on_matching_streams_for_every_strategy) {
  // Four streams: high, normal, normal, low; roles compute, compute, memory, coordination.
  for (auto strategy : {pool_strategy::round_robin, pool_strategy::load_balanced,
                        pool_strategy::priority, pool_strategy::workload,
                        pool_strategy::adaptive}) {
    auto pool = make(pool_strategy::load_balanced, {prio::high, prio::normal, prio::normal, prio::low}, 2);
    BOOST_TEST(pool.matches(0, op_priority::critical, op_workload::compute));
    BOOST_TEST(!pool.matches(0, op_priority::critical, op_workload::memory));
    BOOST_TEST(pool.matches(3, op_priority::cleanup, op_workload::mixed));
    for (int i = 0; i < 2; ++i) {
      auto chosen = pool.choose(op_priority::high, op_workload::compute, strategy, true);
      BOOST_REQUIRE_MESSAGE(chosen.has_value(), to_string(strategy));
      BOOST_TEST(*chosen == 0u, to_string(strategy));
      occupy(pool, 0, 1);
    }
    // Stream 0 at its cap: a strict choice has none, a loose one goes elsewhere.
    BOOST_TEST(!pool.choose(op_priority::high, op_workload::compute, strategy, true).has_value());
    BOOST_TEST(pool.choose(op_priority::high, op_workload::compute, strategy, false).has_value());
  }
  BOOST_TEST((stream_pool::class_of(op_priority::cleanup) == prio::low));
  BOOST_TEST((stream_pool::class_of(op_priority::normal) == prio::normal));
  auto pool = make(pool_strategy::round_robin, {prio::normal, prio::normal});
  BOOST_TEST(pool.index_of(stream_id{1}).value_or(9) == 1u);
  BOOST_TEST(!pool.index_of(stream_id{2}).has_value());
}

BOOST_AUTO_TEST_CASE(strategies_have_names) {
  for (auto s : {pool_strategy::round_robin, pool_strategy::load_balanced, pool_strategy::priority,
                 pool_strategy::workload, pool_strategy::adaptive}) {
    BOOST_TEST((detail::parse_pool_strategy(detail::to_string(s)) == s));
  }
  BOOST_TEST(!detail::parse_pool_strategy("fastest").has_value());
}
