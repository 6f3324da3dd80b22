// A step's plan (actors/coordinator/step_plan.hpp): operations spread over the streams with
// chains kept together while that stays balanced, pinned ones where they are pinned, one wait
// per other stream and none an earlier one covers, the newest data wait kept beside a newer
// order-only one, every wait pointing back in the step's order, and the join after every part.
#define BOOST_TEST_MODULE step_plan
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <random>

#include "cudactor/actors/coordinator/step_plan.hpp"

using cudactor::detail::step_plan;

namespace {

struct builder {
  step_plan::input in;
  std::vector<std::vector<step_plan::edge>> after;
  explicit builder(std::size_t streams) { in.streams = streams; }
  std::uint32_t add(std::vector<step_plan::edge> deps = {},
                    std::uint32_t pinned = step_plan::none) {
    after.push_back(std::move(deps));
    in.pinned.push_back(pinned);
    return static_cast<std::uint32_t>(after.size() - 1);
  }
  step_plan make() {
    in.order.clear();
    in.after.clear();
    in.after_first.clear();
    for (std::uint32_t i = 0; i < after.size(); ++i) {
      in.order.push_back(i);
      in.after_first.push_back(static_cast<std::uint32_t>(in.after.size()));
      in.after.insert(in.after.end(), after[i].begin(), after[i].end());
    }
    in.after_first.push_back(static_cast<std::uint32_t>(in.after.size()));
    return step_plan{in};
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(independent_operations_go_in_runs_that_keep_the_streams_level) {
  builder b{4};
  for (int i = 0; i < 400; ++i) b.add();
  const step_plan plan = b.make();
  BOOST_TEST(plan.parts().size() == 4u);
  const std::size_t slack = std::max<std::size_t>(step_plan::follow_slack, 400 / 16);
  std::size_t least = 400, most = 0;
  for (const auto& part : plan.parts()) {
    least = std::min(least, part.entries.size());
    most = std::max(most, part.entries.size());
  }
  BOOST_TEST(most - least <= slack + 1);
  BOOST_TEST(plan.crossings() == 0u);
  BOOST_TEST(plan.join_waits().size() == 3u);
  BOOST_TEST(plan.cells() == 3u);  // each other part's last entry
  // Nothing waits: each stream's operations are one piece of work.
  BOOST_TEST(plan.segments() == 4u);
}

BOOST_AUTO_TEST_CASE(a_chain_stays_on_one_stream_and_pinned_ones_go_where_pinned) {
  builder b{4};
  std::uint32_t last = b.add();
  for (int i = 0; i < 10; ++i) last = b.add({{last, false}});
  const std::uint32_t pinned = b.add({{last, false}}, 3);
  const step_plan plan = b.make();
  BOOST_TEST(plan.parts().size() == 2u);
  BOOST_TEST(plan.parts()[plan.part_of(0)].entries.size() == 11u);
  BOOST_TEST(plan.parts()[plan.part_of(pinned)].stream == 3u);
  BOOST_TEST(plan.crossings() == 1u);  // the pinned one waits for the chain's end
  BOOST_TEST(plan.home() == plan.part_of(pinned));
}

BOOST_AUTO_TEST_CASE(waits_are_one_per_stream_and_keep_the_newest_data_one) {
  builder b{2};
  const std::uint32_t a0 = b.add({}, 0);
  const std::uint32_t a1 = b.add({}, 0);
  // On stream 1: data on a0, order only on a1 (newer): both kept.
  const std::uint32_t c = b.add({{a0, false}, {a1, true}}, 1);
  // Covered by c's waits already: none.
  const std::uint32_t d = b.add({{a0, false}}, 1);
  const step_plan plan = b.make();
  const auto& e = plan.parts()[plan.part_of(c)].entries[plan.entry_of(c)];
  BOOST_REQUIRE(e.waits == 2u);
  const auto* w = plan.waits_begin(e);
  BOOST_TEST(w[0].entry == plan.entry_of(a0));
  BOOST_TEST(!w[0].order_only);
  BOOST_TEST(w[1].entry == plan.entry_of(a1));
  BOOST_TEST(w[1].order_only);
  BOOST_TEST(plan.parts()[plan.part_of(d)].entries[plan.entry_of(d)].waits == 0u);
}

BOOST_AUTO_TEST_CASE(random_steps_wait_only_backwards_and_every_target_has_a_cell) {
  std::mt19937 rng{7};
  for (int round = 0; round < 200; ++round) {
    builder b{1 + rng() % 4};
    const int n = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      std::vector<step_plan::edge> deps;
      for (int k = 0; k < i; ++k) {
        if (rng() % 5 == 0) deps.push_back({static_cast<std::uint32_t>(k), rng() % 2 == 0});
      }
      b.add(std::move(deps),
            rng() % 8 == 0 ? static_cast<std::uint32_t>(rng() % b.in.streams) : step_plan::none);
    }
    const step_plan plan = b.make();
    std::size_t entries = 0;
    for (std::uint32_t p = 0; p < plan.parts().size(); ++p) {
      const auto& part = plan.parts()[p];
      entries += part.entries.size();
      for (std::size_t e = 0; e < part.entries.size(); ++e) {
        const auto& entry = part.entries[e];
        BOOST_TEST(plan.part_of(entry.op) == p);
        for (const auto* w = plan.waits_begin(entry); w != plan.waits_end(entry); ++w) {
          BOOST_TEST(w->part != p);
          const auto& target = plan.parts()[w->part].entries[w->entry];
          BOOST_TEST(target.op < entry.op);  // backwards in the step's order
          BOOST_TEST(target.cell != step_plan::none);
        }
        // Every dependency is before it on its stream, or waited for (or covered).
        for (const auto& d : b.after[entry.op]) {
          if (plan.part_of(d.dep) == p) BOOST_TEST(plan.entry_of(d.dep) < e);
        }
      }
    }
    BOOST_TEST(entries == static_cast<std::size_t>(n));
    // Every dependency is ordered before its operation, through stream order and waits: a
    // clock per entry of how far into each part it comes after, merged along its waits.
    const std::size_t parts = plan.parts().size();
    std::vector<std::vector<std::vector<std::uint32_t>>> clock(parts);
    for (std::size_t p = 0; p < parts; ++p) clock[p].resize(plan.parts()[p].entries.size());
    for (std::uint32_t op = 0; op < static_cast<std::uint32_t>(n); ++op) {
      const std::uint32_t p = plan.part_of(op), e = plan.entry_of(op);
      auto& mine = clock[p][e];
      mine = e == 0 ? std::vector<std::uint32_t>(parts, 0) : clock[p][e - 1];
      mine[p] = e + 1;
      const auto& entry = plan.parts()[p].entries[e];
      for (const auto* w = plan.waits_begin(entry); w != plan.waits_end(entry); ++w) {
        const auto& theirs = clock[w->part][w->entry];
        for (std::size_t q = 0; q < parts; ++q) mine[q] = std::max(mine[q], theirs[q]);
      }
      for (const auto& d : b.after[op]) {
        BOOST_TEST(mine[plan.part_of(d.dep)] >= plan.entry_of(d.dep) + 1,
                   "op " << op << " is not ordered after op " << d.dep);
      }
    }
    // The join comes after every part's last entry.
    if (n > 0) {
      std::vector<std::uint32_t> join = clock[plan.home()].back();
      for (const auto& w : plan.join_waits()) {
        for (std::size_t q = 0; q < parts; ++q)
          join[q] = std::max(join[q], clock[w.part][w.entry][q]);
      }
      for (std::size_t q = 0; q < parts; ++q) {
        BOOST_TEST(join[q] == plan.parts()[q].entries.size());
      }
    }
    // Segments cover each part in order; only a segment's first entry waits, only its last is
    // waited for.
    for (const auto& part : plan.parts()) {
      std::uint32_t next = 0;
      for (const auto& seg : part.segments) {
        BOOST_TEST(seg.first == next);
        BOOST_TEST(seg.last >= seg.first);
        for (std::uint32_t e = seg.first; e <= seg.last; ++e) {
          if (e != seg.first) BOOST_TEST(part.entries[e].waits == 0u);
          if (e != seg.last) BOOST_TEST(part.entries[e].cell == step_plan::none);
        }
        next = seg.last + 1;
      }
      BOOST_TEST(next == part.entries.size());
    }
    for (const auto& w : plan.join_waits()) {
      BOOST_TEST(w.part != plan.home());
      BOOST_TEST(w.entry + 1 == plan.parts()[w.part].entries.size());
    }
  }
}
