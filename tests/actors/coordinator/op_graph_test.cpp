// The coordinator's dependency graph on its own: readiness on submission, priority order,
// cycles refused with the cycle named, failure cascades, manual operations, forgetting, and a
// randomized run against a simple reference model.
#define BOOST_TEST_MODULE op_graph
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/test_seed.hpp"
#include "cudactor/actors/coordinator/op_graph.hpp"
#include "cudactor/messaging/errc.hpp"

using namespace cudactor;
using detail::op_graph;
using detail::op_position;

namespace {

op_id id(std::uint64_t v) { return op_id{v}; }

std::string text(const caf::error& err) { return error_context(err); }

// Dispatches everything ready, in order, and submits each at the next point of stream 0.
std::vector<std::uint64_t> drain(op_graph& g) {
  std::vector<std::uint64_t> order;
  while (auto next = g.next_ready()) {
    order.push_back(next->value);
    BOOST_REQUIRE(g.submitted(*next, op_position{0, order.size()}));
  }
  return order;
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_op_is_ready_once_its_deps_are_submitted_not_completed) {
  op_graph g;
  BOOST_REQUIRE(!g.add(id(1), op_priority::normal, false, {}));
  BOOST_REQUIRE(!g.add(id(2), op_priority::normal, false, {id(1)}));
  BOOST_TEST((g.find(id(2))->state == op_state::pending));
  auto first = g.next_ready();
  BOOST_REQUIRE(first);
  BOOST_TEST(first->value == 1u);
  BOOST_TEST(!g.has_ready());  // 1 is running, not submitted
  BOOST_REQUIRE(g.submitted(id(1), op_position{3, 17}));
  BOOST_TEST((g.find(id(2))->state == op_state::ready));
  auto second = g.next_ready();
  BOOST_REQUIRE(second);
  // 2 is dispatched while 1 runs: it must wait for 1 where 1 sits.
  std::vector<std::pair<std::uint64_t, op_position>> waits;
  g.for_each_unfinished_dep(id(2), [&](op_id d, op_position p) { waits.emplace_back(d.value, p); });
  BOOST_REQUIRE(waits.size() == 1u);
  BOOST_TEST(waits[0].first == 1u);
  BOOST_TEST(waits[0].second.stream == 3u);
  BOOST_TEST(waits[0].second.point == 17u);
  BOOST_TEST(g.complete(id(1)));
  waits.clear();
  g.for_each_unfinished_dep(id(2), [&](op_id d, op_position p) { waits.emplace_back(d.value, p); });
  BOOST_TEST(waits.empty());       // completed: nothing to wait for
  BOOST_TEST(!g.complete(id(1)));  // a late second notice changes nothing
}

BOOST_AUTO_TEST_CASE(an_order_only_dependency_orders_without_carrying_a_failure) {
  op_graph g;
  std::vector<detail::ended_op> ended;
  BOOST_REQUIRE(!g.add(id(1), op_priority::normal, false, {}));                  // writes x
  BOOST_REQUIRE(!g.add(id(2), op_priority::normal, false, {id(1)}));             // reads x
  BOOST_REQUIRE(!g.add(id(3), op_priority::normal, false, {}, {id(1), id(2)}));  // rewrites x
  BOOST_TEST((g.find(id(3))->state == op_state::pending));
  BOOST_TEST(g.find(id(3))->order_deps().size() == 2u);
  const auto first = g.next_ready();
  BOOST_REQUIRE((first && first->value == 1u));
  BOOST_REQUIRE(g.submitted(id(1), op_position{0, 1}));
  BOOST_TEST((g.find(id(2))->state == op_state::ready));  // not submitted
  BOOST_TEST((g.find(id(3))->state == op_state::pending));
  std::vector<bool> kinds;
  BOOST_REQUIRE(g.fail(id(1), make_error(errc::op_failed, "bad input"), ended));
  // 2 read what 1 wrote: cancelled. 3 only came after them: it goes on.
  BOOST_REQUIRE(ended.size() == 2u);
  BOOST_TEST(ended[1].id.value == 2u);
  BOOST_TEST((ended[1].state == op_state::cancelled));
  BOOST_TEST((g.find(id(3))->state == op_state::ready));  // 2 ended unsubmitted: no wait left
  BOOST_TEST(g.deps_ended(id(3)));
  auto next = g.next_ready();
  BOOST_REQUIRE(next);
  BOOST_TEST(next->value == 3u);
  g.for_each_unfinished_dep(id(3),
                            [&](op_id, const op_position&, bool order) { kinds.push_back(order); });
  BOOST_TEST(kinds.empty());  // both ended: nothing to wait for on the device
  // A later order-only dependency on the failed operation is taken (it has ended); a data
  // dependency on it is refused with its cause.
  BOOST_TEST(!g.add(id(4), op_priority::normal, false, {}, {id(1), id(3)}));
  BOOST_TEST(g.find(id(4))->deps().size() == 1u);  // only 3 is still running
  const auto refused = g.add(id(5), op_priority::normal, false, {id(1)});
  BOOST_TEST((refused.code() == static_cast<std::uint8_t>(errc::dependency_failed)));
  BOOST_TEST((g.add(id(5), op_priority::normal, false, {}, {id(9)}).code() ==
              static_cast<std::uint8_t>(errc::unknown_op)));
}

BOOST_AUTO_TEST_CASE(data_then_order_only_dependencies_each_sorted_in_one_list) {
  op_graph g;
  for (std::uint64_t i = 1; i <= 9; ++i)
    BOOST_REQUIRE(!g.add(id(i), op_priority::normal, false, {}));
  // Data 2, 5, 9 (named out of order, one twice); order-only 1, 3, 4, 8 and 5 (data wins).
  BOOST_REQUIRE(!g.add(id(10), op_priority::normal, false, {id(9), id(2), id(5), id(2)},
                       {id(8), id(4), id(1), id(5), id(3), id(4)}));
  const op_graph::node* n = g.find(id(10));
  BOOST_REQUIRE(n != nullptr);
  std::vector<std::uint64_t> deps, order;
  for (op_id d : n->deps()) deps.push_back(d.value);
  for (op_id d : n->order_deps()) order.push_back(d.value);
  BOOST_TEST((deps == std::vector<std::uint64_t>{2, 5, 9, 1, 3, 4, 8}));  // each once
  BOOST_TEST((order == std::vector<std::uint64_t>{1, 3, 4, 8}));
  for (std::uint64_t d : {1, 3, 4, 8}) BOOST_TEST(op_graph::is_order_only(*n, id(d)));
  for (std::uint64_t d : {2, 5, 9}) BOOST_TEST(!op_graph::is_order_only(*n, id(d)));
  // One added later goes among the data ones, sorted; the order-only ones stay what they were.
  BOOST_REQUIRE(!g.add_dependency(id(10), id(6)));
  deps.clear();
  for (op_id d : g.find(id(10))->deps()) deps.push_back(d.value);
  BOOST_TEST((deps == std::vector<std::uint64_t>{2, 5, 6, 9, 1, 3, 4, 8}));
  order.clear();  // the order-only ones, held after the others, untouched by it
  for (op_id d : g.find(id(10))->order_deps()) order.push_back(d.value);
  BOOST_TEST((order == std::vector<std::uint64_t>{1, 3, 4, 8}));
  BOOST_REQUIRE(drain(g).size() == 10u);  // 1 to 9, then 10
  std::vector<std::pair<std::uint64_t, bool>> kinds;
  g.for_each_unfinished_dep(id(10), [&](op_id d, const op_position&, bool order_only) {
    kinds.emplace_back(d.value, order_only);
  });
  const std::vector<std::pair<std::uint64_t, bool>> expected{
      {2, false}, {5, false}, {6, false}, {9, false}, {1, true}, {3, true}, {4, true}, {8, true}};
  BOOST_TEST((kinds == expected));
  // Only order-only ones, and a later add that has none: the room kept for them starts empty.
  BOOST_REQUIRE(!g.add(id(11), op_priority::normal, false, {}, {id(7), id(6)}));
  BOOST_TEST(g.find(id(11))->deps().size() == 2u);
  BOOST_TEST(g.find(id(11))->deps()[0].value == 6u);
  BOOST_REQUIRE(!g.add(id(12), op_priority::normal, false, {id(6)}));
  BOOST_TEST(g.find(id(12))->order_deps().empty());
  BOOST_TEST(g.find(id(12))->deps().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_dependency_named_both_ways_is_a_data_dependency) {
  op_graph g;
  std::vector<detail::ended_op> ended;
  BOOST_REQUIRE(!g.add(id(1), op_priority::normal, false, {}));
  BOOST_REQUIRE(!g.add(id(2), op_priority::normal, false, {id(1)}, {id(1)}));
  BOOST_TEST(g.find(id(2))->deps().size() == 1u);
  BOOST_TEST(g.find(id(2))->order_deps().empty());
  BOOST_REQUIRE((drain(g) == std::vector<std::uint64_t>{1, 2}));
  std::vector<bool> kinds;
  BOOST_REQUIRE(!g.add(id(3), op_priority::normal, false, {}, {id(1)}));
  BOOST_REQUIRE(drain(g) == std::vector<std::uint64_t>{3});
  g.for_each_unfinished_dep(id(3),
                            [&](op_id, const op_position&, bool order) { kinds.push_back(order); });
  BOOST_TEST((kinds == std::vector<bool>{true}));
  BOOST_TEST(!g.deps_ended(id(3)));  // 1 still runs
  BOOST_REQUIRE(g.fail(id(1), make_error(errc::op_failed, "bad"), ended));
  BOOST_TEST(ended.size() == 2u);  // 1, and 2 which read it; 3 stays
  BOOST_TEST((g.find(id(3))->state == op_state::submitted));
  BOOST_TEST(g.deps_ended(id(3)));
}

BOOST_AUTO_TEST_CASE(ready_ops_go_out_by_priority_then_in_the_order_they_became_ready) {
  op_graph g;
  BOOST_REQUIRE(!g.add(id(1), op_priority::low, false, {}));
  BOOST_REQUIRE(!g.add(id(2), op_priority::cleanup, false, {}));
  BOOST_REQUIRE(!g.add(id(3), op_priority::critical, false, {}));
  BOOST_REQUIRE(!g.add(id(4), op_priority::normal, false, {}));
  BOOST_REQUIRE(!g.add(id(5), op_priority::critical, false, {}));
  BOOST_REQUIRE(!g.add(id(6), op_priority::high, false, {}));
  BOOST_TEST(drain(g) == (std::vector<std::uint64_t>{3, 5, 6, 4, 1, 2}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_dependency_closing_a_cycle_is_refused_with_the_cycle) {
  op_graph g;
  BOOST_REQUIRE(!g.add(id(1), op_priority::normal, true, {}));  // manual: stays ready
  BOOST_REQUIRE(!g.add(id(2), op_priority::normal, false, {id(1)}));
  BOOST_REQUIRE(!g.add(id(3), op_priority::normal, false, {id(2)}));
  auto err = g.add_dependency(id(1), id(3));
  BOOST_TEST((err == errc::dependency_cycle));
  BOOST_TEST(text(err).find("op 1 -> op 3 -> op 2 -> op 1") != std::string::npos, text(err));
  BOOST_TEST((g.add_dependency(id(2), id(2)) == errc::dependency_cycle));
  // Nothing changed: 1 is still ready and 1 has no dependency.
  BOOST_TEST((g.find(id(1))->state == op_state::ready));
  BOOST_TEST(g.find(id(1))->deps().empty());
  // A dependency that closes no cycle is taken, and makes a ready op pending again.
  BOOST_REQUIRE(!g.add(id(4), op_priority::normal, true, {}));
  BOOST_REQUIRE(!g.add_dependency(id(1), id(4)));
  BOOST_TEST((g.find(id(1))->state == op_state::pending));
  BOOST_TEST((g.begin(id(1)) == errc::invalid_state));
  BOOST_REQUIRE(!g.begin(id(4)));
  BOOST_REQUIRE(g.submitted(id(4), op_position{}));
  BOOST_TEST((g.find(id(1))->state == op_state::ready));
  BOOST_REQUIRE(!g.begin(id(1)));
  BOOST_TEST((g.add_dependency(id(1), id(4)) == errc::invalid_state));  // too late
}

BOOST_AUTO_TEST_CASE(a_failure_cancels_every_dependent_with_the_cause_and_the_rest_goes_on) {
  op_graph g;
  // 1 -> 2 -> 4, 1 -> 3, and 5 independent; 6 depends on 5 and 3.
  BOOST_REQUIRE(!g.add(id(1), op_priority::normal, false, {}));
  BOOST_REQUIRE(!g.add(id(2), op_priority::normal, false, {id(1)}));
  BOOST_REQUIRE(!g.add(id(3), op_priority::normal, false, {id(1)}));
  BOOST_REQUIRE(!g.add(id(4), op_priority::normal, false, {id(2)}));
  BOOST_REQUIRE(!g.add(id(5), op_priority::normal, false, {}));
  BOOST_REQUIRE(!g.add(id(6), op_priority::normal, false, {id(5), id(3)}));
  BOOST_REQUIRE(drain(g).size() == 6u);  // every op submitted, none completed
  std::vector<detail::ended_op> ended;
  BOOST_REQUIRE(g.fail(id(1), make_error(errc::op_failed, "kernel crashed"), ended));
  std::set<std::uint64_t> ended_ids;
  for (const auto& e : ended) ended_ids.insert(e.id.value);
  BOOST_TEST(ended.front().id.value == 1u);
  BOOST_TEST((ended.front().state == op_state::failed));
  BOOST_TEST(ended_ids == (std::set<std::uint64_t>{1, 2, 3, 4, 6}));
  BOOST_TEST(ended.size() == ended_ids.size());  // each once
  auto four =
      std::find_if(ended.begin(), ended.end(), [](const auto& e) { return e.id.value == 4; });
  BOOST_REQUIRE((four != ended.end()));
  BOOST_TEST((four->state == op_state::cancelled));
  BOOST_TEST((four->cause == errc::dependency_failed));
  BOOST_TEST(text(four->cause).find("op 2 cancelled") == std::string::npos);  // the root cause
  BOOST_TEST(text(four->cause).find("op 1 failed: ") != std::string::npos, text(four->cause));
  BOOST_TEST(text(four->cause).find("kernel crashed") != std::string::npos, text(four->cause));
  BOOST_TEST(!g.find(id(4)));  // ended with nothing depending on it: forgotten
  BOOST_TEST((g.find(id(5))->state == op_state::submitted));
  BOOST_TEST(g.complete(id(5)));
  BOOST_TEST(!g.complete(id(6)));  // already cancelled: its late completion is ignored
  // New work may not depend on what failed or was cancelled.
  auto refused = g.add(id(7), op_priority::normal, false, {id(4)});
  BOOST_TEST((refused == errc::dependency_failed));
  BOOST_TEST(text(refused).find("op 4") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_and_forgotten_dependencies_resolve_from_the_id) {
  op_graph g{2};  // remember two failures after forgetting them
  BOOST_TEST((g.add(id(1), op_priority::normal, false, {id(5)}) == errc::unknown_op));
  BOOST_TEST((g.add(id(1), op_priority::normal, false, {op_id{}}) == errc::unknown_op));
  for (std::uint64_t i = 1; i <= 6; ++i)
    BOOST_REQUIRE(!g.add(id(i), op_priority::normal, false, {}));
  drain(g);
  std::vector<detail::ended_op> ended;
  BOOST_TEST(g.complete(id(1)));
  BOOST_TEST(g.fail(id(2), make_error(errc::op_failed, "two"), ended));
  BOOST_TEST(g.cancel(id(3), make_error(errc::cancelled, "three"), ended));
  BOOST_TEST(g.fail(id(4), make_error(errc::op_failed, "four"), ended));
  BOOST_TEST(g.complete(id(5)));
  BOOST_TEST(g.size() == 1u);  // everything ended and unneeded is forgotten
  auto forgotten = g.take_forgotten();
  BOOST_TEST(forgotten.size() == 5u);
  // Completed and forgotten: nothing to wait for.
  BOOST_REQUIRE(!g.add(id(7), op_priority::normal, false, {id(5)}));
  BOOST_TEST((g.find(id(7))->state == op_state::ready));
  BOOST_TEST(g.find(id(7))->deps().empty());
  // Failed and remembered: refused with its cause.
  auto err = g.add(id(8), op_priority::normal, false, {id(4)});
  BOOST_TEST((err == errc::dependency_failed));
  BOOST_TEST(text(err).find("four") != std::string::npos, text(err));
  BOOST_TEST((g.add(id(8), op_priority::normal, false, {id(3)}) == errc::dependency_failed));
  // Op 2's record was dropped for the two newer ones: op 1 and op 2 are now too old to say.
  auto old = g.add(id(8), op_priority::normal, false, {id(1)});
  BOOST_TEST((old == errc::unknown_op));
  BOOST_TEST(text(old).find("no longer kept") != std::string::npos, text(old));
  // Ids must grow.
  BOOST_TEST((g.add(id(7), op_priority::normal, false, {}) == errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(a_manual_op_waits_for_begin_and_complete_counts_as_submitted) {
  op_graph g;
  BOOST_REQUIRE(!g.add(id(1), op_priority::normal, true, {}));
  BOOST_REQUIRE(!g.add(id(2), op_priority::normal, false, {id(1)}));
  BOOST_TEST(!g.has_ready());  // a manual op is never handed out by next_ready()
  BOOST_TEST((g.begin(id(2)) == errc::invalid_state));  // not manual
  BOOST_REQUIRE(!g.begin(id(1)));
  BOOST_TEST((g.begin(id(1)) == errc::invalid_state));  // begun once
  BOOST_TEST(!g.has_ready());
  BOOST_REQUIRE(g.submitted(id(1), op_position{1, 9}));
  auto next = g.next_ready();
  BOOST_REQUIRE(next);
  BOOST_TEST(next->value == 2u);
}

BOOST_AUTO_TEST_CASE(device_loss_fails_every_open_op_once) {
  op_graph g;
  for (std::uint64_t i = 1; i <= 5; ++i) {
    BOOST_REQUIRE(!g.add(id(i), op_priority::normal, false,
                         i > 1 ? std::vector<op_id>{id(i - 1)} : std::vector<op_id>{}));
  }
  auto first = g.next_ready();
  BOOST_REQUIRE(first);
  BOOST_REQUIRE(g.submitted(*first, op_position{}));
  BOOST_REQUIRE(g.complete(*first));
  std::vector<detail::ended_op> ended;
  g.fail_all(make_error(errc::device_lost, "gone"), ended);
  BOOST_TEST(ended.size() == 4u);
  BOOST_TEST(g.live() == 0u);
  BOOST_TEST(g.size() == 0u);
  std::vector<detail::ended_op> again;
  g.fail_all(make_error(errc::device_lost, "gone"), again);
  BOOST_TEST(again.empty());
}

BOOST_AUTO_TEST_CASE(memory_stays_flat_over_a_long_chain) {
  op_graph g;
  std::size_t largest = 0;
  op_id previous;
  for (std::uint64_t i = 1; i <= 200'000; ++i) {
    std::vector<op_id> deps;
    if (!previous.empty()) deps.push_back(previous);
    BOOST_REQUIRE(!g.add(id(i), op_priority::normal, false, deps));
    while (auto next = g.next_ready())
      BOOST_REQUIRE(g.submitted(*next, op_position{0, next->value}));
    // Completions trail submissions by a few.
    if (i > 4) BOOST_REQUIRE(g.complete(id(i - 4)));
    (void)g.take_forgotten();
    largest = std::max(largest, g.size());
    previous = id(i);
  }
  BOOST_TEST(largest <= 6u);
}

// Random DAGs against a reference model: every op ends exactly once; no op is dispatched
// before each dependency is submitted; every op depending (transitively) on a failed or
// cancelled one ends cancelled unless it had ended before.
BOOST_AUTO_TEST_CASE(random_graphs_agree_with_a_reference_model) {
  const std::uint64_t seed = cudactor::test::test_seed("op_graph random");
  std::mt19937_64 rng{seed};
  std::uint64_t next_id = 1;
  for (int round = 0; round < 300; ++round) {
    op_graph g{1u << 20};
    const int n = 1 + static_cast<int>(rng() % 300);
    std::map<std::uint64_t, std::vector<std::uint64_t>> deps;
    std::map<std::uint64_t, int> ended_count;
    std::set<std::uint64_t> submitted, bad, completed;
    std::map<std::uint64_t, std::uint64_t> when;  // the step at which each op ended
    std::uint64_t step = 0;
    auto completed_before_bad = [&](std::uint64_t x, std::uint64_t d) { return when[x] < when[d]; };
    std::vector<std::uint64_t> ids;
    auto note_ended = [&](const std::vector<detail::ended_op>& ended) {
      for (const auto& e : ended) {
        ++ended_count[e.id.value];
        when[e.id.value] = ++step;
        if (e.state != op_state::completed) bad.insert(e.id.value);
      }
    };
    for (int k = 0; k < n; ++k) {
      const std::uint64_t me = next_id++;
      std::vector<op_id> d;
      for (int j = 0; j < 3 && !ids.empty(); ++j) {
        if (rng() % 2 == 0) d.push_back(id(ids[rng() % ids.size()]));
      }
      auto err = g.add(id(me), static_cast<op_priority>(rng() % 5), false, d);
      if (err) {
        // Refused only for a dependency that failed or was cancelled.
        BOOST_REQUIRE((err == errc::dependency_failed));
        continue;
      }
      ids.push_back(me);
      for (op_id x : d) deps[me].push_back(x.value);
      // Interleave: dispatch some, complete some, fail or cancel a few.
      const unsigned action = rng() % 10;
      if (auto next = (action < 6 ? g.next_ready() : std::nullopt)) {
        for (std::uint64_t x : deps[next->value]) {
          BOOST_REQUIRE_MESSAGE(
              submitted.count(x) != 0 || ended_count.count(x) != 0,
              "op " << next->value << " dispatched before dep " << x << " (seed " << seed << ")");
        }
        if (g.submitted(*next, op_position{0, next->value})) submitted.insert(next->value);
      }
      if (action == 6 && !submitted.empty()) {
        auto it = submitted.begin();
        std::advance(it, rng() % submitted.size());
        if (g.complete(id(*it))) {
          ++ended_count[*it];
          when[*it] = ++step;
          completed.insert(*it);
        }
      }
      if (action >= 7 && !ids.empty() && rng() % 4 == 0) {
        const std::uint64_t victim = ids[rng() % ids.size()];
        std::vector<detail::ended_op> ended;
        if (action == 7) {
          g.fail(id(victim), make_error(errc::op_failed, "x"), ended);
        } else {
          g.cancel(id(victim), make_error(errc::cancelled, "y"), ended);
        }
        note_ended(ended);  // empty when the victim had already ended
      }
    }
    // Finish: dispatch and complete everything left.
    for (;;) {
      auto next = g.next_ready();
      if (!next) break;
      for (std::uint64_t x : deps[next->value]) {
        BOOST_REQUIRE_MESSAGE(
            submitted.count(x) != 0 || ended_count.count(x) != 0,
            "op " << next->value << " dispatched before dep " << x << " (seed " << seed << ")");
      }
      BOOST_REQUIRE(g.submitted(*next, op_position{0, next->value}));
      submitted.insert(next->value);
    }
    for (std::uint64_t s : submitted) {
      if (g.complete(id(s))) {
        ++ended_count[s];
        when[s] = ++step;
        completed.insert(s);
      }
    }
    // An op that completed had no dependency that failed or was cancelled before it
    // completed; so every dependent of a bad op that was still open ended cancelled.
    for (std::uint64_t x : ids) {
      if (completed.count(x) == 0) continue;
      for (std::uint64_t d : deps[x]) {
        BOOST_REQUIRE_MESSAGE(
            bad.count(d) == 0 || completed_before_bad(x, d),
            "op " << x << " completed though dep " << d << " went bad (seed " << seed << ")");
      }
    }
    BOOST_REQUIRE_MESSAGE(g.live() == 0u, "ops left open (seed " << seed << ")");
    BOOST_REQUIRE_MESSAGE(g.size() == 0u, "ops not forgotten (seed " << seed << ")");
    for (std::uint64_t x : ids) {
      BOOST_REQUIRE_MESSAGE(ended_count[x] == 1, "op " << x << " ended " << ended_count[x]
                                                       << " times (seed " << seed << ")");
    }
  }
}
