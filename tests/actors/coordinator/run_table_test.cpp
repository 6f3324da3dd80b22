// The run requests: answered once, when the last of their operations has ended, with the
// notices in the operations' order whatever order they ended in; a dropped request and an
// unknown key are never answered.
#define BOOST_TEST_MODULE run_table
#include <boost/test/unit_test.hpp>

#include <vector>

#include "cudactor/actors/coordinator/run_table.hpp"

using namespace cudactor;
using cudactor::detail::run_table;

namespace {

op_notice ended(std::uint64_t id) {
  op_notice n;
  n.id = op_id{id};
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_request_is_answered_once_its_last_operation_ended_in_its_order) {
  run_table runs;
  int answers = 0;
  std::vector<op_notice> got;
  const auto key = runs.open(3, [&](std::vector<op_notice> ends) {
    ++answers;
    got = std::move(ends);
  });
  BOOST_TEST(key != 0u);
  runs.ended(key, 2, ended(12));
  runs.ended(key, 0, ended(10));
  BOOST_TEST(answers == 0);
  runs.ended(key, 1, ended(11));
  BOOST_TEST(answers == 1);
  BOOST_REQUIRE(got.size() == 3u);
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(got[i].id.value == 10 + i);
  BOOST_TEST(runs.size() == 0u);
  runs.ended(key, 1, ended(11));  // answered already: nothing more
  BOOST_TEST(answers == 1);
}

BOOST_AUTO_TEST_CASE(a_dropped_request_and_unknown_keys_are_never_answered) {
  run_table runs;
  int answers = 0;
  const auto dropped = runs.open(1, [&](std::vector<op_notice>) { ++answers; });
  const auto kept = runs.open(1, [&](std::vector<op_notice>) { ++answers; });
  BOOST_TEST(dropped != kept);
  runs.drop(dropped);
  runs.ended(dropped, 0, ended(1));
  runs.ended(0, 0, ended(1));     // no request
  runs.ended(kept, 5, ended(1));  // beyond its operations
  BOOST_TEST(answers == 0);
  runs.ended(kept, 0, ended(2));
  BOOST_TEST(answers == 1);
}
