// The coordinator's table of per-operation values by id: lookups against a reference map over
// random adds and erases, values that never move, an old id held while many after it come and
// go (the window thins, memory follows what is held), a jump far past the window, and reused
// values that come back empty.
#define BOOST_TEST_MODULE id_table
#include <boost/test/unit_test.hpp>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/test_seed.hpp"
#include "cudactor/actors/coordinator/id_table.hpp"

using cudactor::detail::id_table;

namespace {

struct value {
  std::uint64_t id = 0;
  std::vector<int> payload;
};

// Every id the reference holds is found with its value, every other id in [0, end) is not,
// and for_each visits exactly the reference's ids.
void check_against(const id_table<value>& t, const std::map<std::uint64_t, value*>& ref,
                   std::uint64_t end) {
  BOOST_REQUIRE_EQUAL(t.size(), ref.size());
  for (std::uint64_t id = 0; id < end; ++id) {
    const value* found = t.find(id);
    auto r = ref.find(id);
    if (r == ref.end()) {
      BOOST_REQUIRE_MESSAGE(found == nullptr, "id " << id << " found but never held or erased");
    } else {
      BOOST_REQUIRE_MESSAGE(found == r->second, "id " << id << " moved or is missing");
      BOOST_REQUIRE_EQUAL(found->id, id);
    }
  }
  std::map<std::uint64_t, const value*> seen;
  t.for_each([&](std::uint64_t id, const value& v) { seen.emplace(id, &v); });
  BOOST_REQUIRE_EQUAL(seen.size(), ref.size());
  for (const auto& [id, v] : ref) BOOST_REQUIRE(seen.at(id) == v);
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_adds_and_erases_match_a_map) {
  const std::uint64_t seed = cudactor::test::test_seed("id_table");
  std::mt19937_64 rng{seed};
  id_table<value> t;
  std::map<std::uint64_t, value*> ref;
  std::uint64_t next = 1;
  for (int round = 0; round < 40; ++round) {
    // Adds, sometimes skipping ids; erases mostly of the oldest, some anywhere, some of
    // ids not held; a few are kept for a long time.
    for (int k = 0; k < 500; ++k) {
      const unsigned pick = static_cast<unsigned>(rng() % 100);
      if (pick < 55 || ref.empty()) {
        next += rng() % 20 == 0 ? 1 + rng() % 50 : 1;
        value& v = t.add(next);
        BOOST_REQUIRE(v.payload.empty());  // a reused value comes back empty
        v.id = next;
        v.payload.assign(1 + rng() % 4, static_cast<int>(next));
        ref.emplace(next, &v);
      } else if (pick < 85) {
        auto victim = ref.begin();
        if (ref.size() > 8 && rng() % 4 == 0)
          std::advance(victim, 1 + rng() % 7);  // keep the oldest
        BOOST_REQUIRE(t.erase(victim->first));
        ref.erase(victim);
      } else if (pick < 97) {
        auto victim = ref.begin();
        std::advance(victim, static_cast<long>(rng() % ref.size()));
        BOOST_REQUIRE(t.erase(victim->first));
        ref.erase(victim);
      } else {
        const std::uint64_t absent = rng() % (next + 10);
        BOOST_REQUIRE_EQUAL(t.erase(absent), ref.count(absent) != 0);
        ref.erase(absent);
      }
    }
    check_against(t, ref, next + 100);
  }
}

BOOST_AUTO_TEST_CASE(an_old_id_held_long_thins_the_window_and_stays_found) {
  id_table<value> t;
  value& old = t.add(1);
  old.id = 1;
  // A million ids come and go after it, at most 8 held at a time.
  std::vector<std::uint64_t> live;
  for (std::uint64_t id = 2; id < 1'000'002; ++id) {
    t.add(id).id = id;
    live.push_back(id);
    if (live.size() > 8) {
      BOOST_REQUIRE(t.erase(live.front()));
      live.erase(live.begin());
    }
  }
  BOOST_TEST(t.size() == 9u);
  BOOST_TEST(t.stragglers() == 1u);  // the old one, moved out of the window
  BOOST_TEST(t.find(1) == &old);     // and not moved in memory
  BOOST_TEST(t.find(1)->id == 1u);
  for (std::uint64_t id : live) BOOST_TEST(t.find(id)->id == id);
  BOOST_TEST(t.find(500'000) == nullptr);
  BOOST_TEST(t.erase(1));
  BOOST_TEST(t.find(1) == nullptr);
  BOOST_TEST(t.stragglers() == 0u);
  BOOST_TEST(t.size() == 8u);
}

BOOST_AUTO_TEST_CASE(a_jump_far_past_the_window_does_not_span_the_gap) {
  id_table<value> t;
  for (std::uint64_t id = 1; id <= 10; ++id) t.add(id).id = id;
  t.add(std::uint64_t{1} << 40).id = std::uint64_t{1} << 40;  // would be 8 TiB of slots
  BOOST_TEST(t.size() == 11u);
  BOOST_TEST(t.stragglers() == 10u);
  for (std::uint64_t id = 1; id <= 10; ++id) BOOST_TEST(t.find(id)->id == id);
  BOOST_TEST(t.find(std::uint64_t{1} << 40) != nullptr);
  t.add((std::uint64_t{1} << 40) + 1);
  BOOST_TEST(t.size() == 12u);
}

BOOST_AUTO_TEST_CASE(emptied_and_refilled) {
  id_table<value> t;
  for (std::uint64_t id = 1; id <= 100; ++id) t.add(id).payload.assign(3, 7);
  for (std::uint64_t id = 100; id >= 1; --id) BOOST_REQUIRE(t.erase(id));
  BOOST_TEST(t.empty());
  BOOST_TEST(t.find(50) == nullptr);
  value& again = t.add(101);
  BOOST_TEST(again.payload.empty());
  BOOST_TEST(t.find(101) == &again);
  BOOST_TEST(t.find(100) == nullptr);
  t.clear();
  BOOST_TEST(t.empty());
  BOOST_TEST(t.find(101) == nullptr);
  t.add(102);
  BOOST_TEST(t.size() == 1u);
}
