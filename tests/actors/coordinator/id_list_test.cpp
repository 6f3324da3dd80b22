// A graph node's short lists of ids: held in place while short, on the heap past that, with
// the same contents as a vector through pushes, inserts, copies, moves and assignments.
#define BOOST_TEST_MODULE id_list
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "common/test_seed.hpp"
#include "cudactor/actors/coordinator/id_list.hpp"

using cudactor::op_id;
using cudactor::detail::id_list;

namespace {

std::vector<std::uint64_t> values(const id_list& l) {
  std::vector<std::uint64_t> out;
  for (op_id id : l) out.push_back(id.value);
  return out;
}

bool inside(const id_list& l) {
  const auto* self = reinterpret_cast<const char*>(&l);
  const auto* at = reinterpret_cast<const char*>(l.data());
  return at >= self && at < self + sizeof(l);
}

}  // namespace

BOOST_AUTO_TEST_CASE(short_lists_stay_in_place_and_long_ones_move_out) {
  id_list l;
  BOOST_TEST(l.empty());
  for (std::uint64_t i = 1; i <= id_list::inline_ids; ++i) l.push_back(op_id{i});
  BOOST_TEST(inside(l));
  l.push_back(op_id{5});
  BOOST_TEST(!inside(l));
  BOOST_TEST(values(l) == (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
  l.insert(0, op_id{0});
  l.insert(3, op_id{9});
  l.insert(l.size(), op_id{6});
  BOOST_TEST(values(l) == (std::vector<std::uint64_t>{0, 1, 2, 9, 3, 4, 5, 6}));
  const op_id three[] = {op_id{7}, op_id{8}, op_id{9}};
  l.assign(three, three + 3);
  BOOST_TEST(values(l) == (std::vector<std::uint64_t>{7, 8, 9}));
}

BOOST_AUTO_TEST_CASE(copies_and_moves_keep_contents_and_leave_the_source_empty) {
  for (std::size_t n :
       {std::size_t{0}, std::size_t{3}, std::size_t{4}, std::size_t{5}, std::size_t{40}}) {
    id_list a;
    for (std::uint64_t i = 0; i < n; ++i) a.push_back(op_id{i + 1});
    const auto expect = values(a);
    id_list copy = a;
    BOOST_TEST(values(copy) == expect);
    BOOST_TEST(values(a) == expect);
    id_list moved = std::move(a);
    BOOST_TEST(values(moved) == expect);
    BOOST_TEST(a.empty());   // NOLINT(bugprone-use-after-move): moved-from is empty, by contract
    a.push_back(op_id{99});  // and usable
    BOOST_TEST(values(a) == std::vector<std::uint64_t>{99});
    id_list assigned;
    assigned.push_back(op_id{1});
    assigned = copy;
    BOOST_TEST(values(assigned) == expect);
    id_list big;
    for (std::uint64_t i = 0; i < 20; ++i) big.push_back(op_id{i});
    big = std::move(moved);
    BOOST_TEST(values(big) == expect);
    big = big;  // NOLINT: self-assignment keeps the list
    BOOST_TEST(values(big) == expect);
  }
}

BOOST_AUTO_TEST_CASE(random_edits_match_a_vector) {
  const std::uint64_t seed = cudactor::test::test_seed("id_list");
  std::mt19937_64 rng{seed};
  for (int round = 0; round < 2000; ++round) {
    id_list l;
    std::vector<std::uint64_t> ref;
    const int steps = static_cast<int>(rng() % 40);
    for (int k = 0; k < steps; ++k) {
      const std::uint64_t v = rng() % 1000 + 1;
      switch (rng() % 4) {
        case 0: {
          const std::size_t at = rng() % (ref.size() + 1);
          l.insert(at, op_id{v});
          ref.insert(ref.begin() + static_cast<std::ptrdiff_t>(at), v);
          break;
        }
        case 1: {
          id_list other = l;  // a copy, then moved back
          l = std::move(other);
          break;
        }
        default: l.push_back(op_id{v}); ref.push_back(v);
      }
      BOOST_REQUIRE(values(l) == ref);
      BOOST_REQUIRE_EQUAL(l.size(), ref.size());
      if (!ref.empty()) BOOST_REQUIRE_EQUAL(l[ref.size() - 1].value, ref.back());
    }
  }
}
