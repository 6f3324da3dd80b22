// The ring of ended operations: it fills to its capacity, then each end overwrites the
// oldest; find answers the newest entry of an id; after_next names the entry the end after
// the next overwrites; a capacity of 0 keeps nothing.
#define BOOST_TEST_MODULE ended_ring
#include <boost/test/unit_test.hpp>

#include "cudactor/actors/coordinator/ended_ring.hpp"

using namespace cudactor;
using cudactor::detail::ended_ring;

BOOST_AUTO_TEST_CASE(the_newest_ends_are_kept_and_the_oldest_overwritten) {
  ended_ring ring{3};
  for (std::uint64_t id = 1; id <= 3; ++id) {
    BOOST_TEST(ring.after_next() == nullptr);  // not full yet
    op_info* e = ring.next();
    BOOST_REQUIRE(e != nullptr);
    e->id = op_id{id};
  }
  BOOST_TEST(ring.size() == 3u);
  BOOST_REQUIRE(ring.find(op_id{2}) != nullptr);
  // Full: the next end overwrites id 1, the one after it id 2.
  BOOST_REQUIRE(ring.after_next() != nullptr);
  BOOST_TEST(ring.after_next()->id.value == 2u);
  op_info* fourth = ring.next();
  BOOST_TEST(fourth->id.value == 1u);  // the oldest, overwritten in place
  fourth->id = op_id{4};
  BOOST_TEST(ring.find(op_id{1}) == nullptr);
  BOOST_REQUIRE(ring.find(op_id{4}) != nullptr);
  BOOST_TEST(ring.size() == 3u);
  // The newest entry of an id wins (an id ended twice: a describe after a reset).
  op_info* again = ring.next();
  BOOST_TEST(again->id.value == 2u);
  again->id = op_id{4};
  again->description = "newer";
  BOOST_TEST(ring.find(op_id{4}) == again);
  BOOST_TEST(ring.find(op_id{2}) == nullptr);
}

BOOST_AUTO_TEST_CASE(a_capacity_of_zero_keeps_nothing) {
  ended_ring ring{0};
  BOOST_TEST(ring.next() == nullptr);
  BOOST_TEST(ring.after_next() == nullptr);
  BOOST_TEST(ring.find(op_id{1}) == nullptr);
}
