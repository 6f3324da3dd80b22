// The guests a node's owner admitted: a token claims for a process, the quotas (operations
// open at once, stream time in all) are checked and named, a request outliving its admission
// counts nowhere, admitting again starts the time anew, a revocation and the owner's end
// name the guests whose work must be cancelled.
#define BOOST_TEST_MODULE node_guests
#include <boost/test/unit_test.hpp>

#include <caf/node_id.hpp>

#include <algorithm>
#include <chrono>
#include <string>

#include "cudactor/actors/node/node_guests.hpp"

using cudactor::detail::node_guests;
using namespace std::chrono_literals;

namespace {

caf::node_id process(std::uint32_t pid) {
  return *caf::make_node_id(pid, "0102030405060708090a0b0c0d0e0f1011121314");
}

const std::string token_a(20, 'a');
const std::string token_b(20, 'b');

}  // namespace

BOOST_AUTO_TEST_CASE(a_token_admits_its_claimers_and_nobody_else) {
  node_guests g;
  BOOST_TEST(!g.claim(token_a, process(1)));  // not admitted yet
  BOOST_TEST(g.admit(token_a, {4, 1s}).empty());
  BOOST_TEST(g.claim(token_a, process(1)));
  BOOST_TEST(g.claim(token_a, process(2)));
  BOOST_TEST(g.claim(token_a, process(1)));  // again: the same admission
  BOOST_TEST(!g.claim(token_b, process(3)));
  BOOST_TEST(g.admission_of(process(1)) != 0u);
  BOOST_TEST(g.admission_of(process(1)) == g.admission_of(process(2)));
  BOOST_TEST(g.admission_of(process(3)) == 0u);
  g.admit(token_b, {1, 1s});
  BOOST_TEST(!g.claim(token_b, process(1)));  // a process holds one admission
}

BOOST_AUTO_TEST_CASE(quotas_are_shared_by_an_admissions_guests_and_named) {
  node_guests g;
  g.admit(token_a, {4, 100ms});
  BOOST_REQUIRE(g.claim(token_a, process(1)));
  BOOST_REQUIRE(g.claim(token_a, process(2)));
  const auto id = g.admission_of(process(1));
  BOOST_TEST(g.refusal(id, 4).empty());
  BOOST_TEST(g.refusal(id, 5).find("exceed the 4 its owner admitted") != std::string::npos);
  g.opened(id, 3);
  BOOST_TEST(g.refusal(id, 1).empty());
  BOOST_TEST(g.refusal(id, 2).find("3 operations open and 2 more") != std::string::npos);
  g.closed(id, 3);
  BOOST_TEST(g.open_ops(token_a) == 0u);
  g.charge(id, 60ms);
  BOOST_TEST(g.refusal(id, 1).empty());
  g.charge(id, 40ms);
  BOOST_TEST(g.refusal(id, 1).find("used 100 ms of stream time, of the 100 ms") !=
             std::string::npos);
  // Admitted again: the time starts anew, and the quotas are the new ones.
  g.admit(token_a, {2, 1s});
  BOOST_TEST(g.used(token_a).count() == 0);
  BOOST_TEST(g.refusal(id, 2).empty());
  BOOST_TEST(!g.refusal(id, 3).empty());
}

BOOST_AUTO_TEST_CASE(a_revocation_names_its_guests_and_later_counts_go_nowhere) {
  node_guests g;
  g.admit(token_a, {8, 1s});
  BOOST_REQUIRE(g.claim(token_a, process(1)));
  BOOST_REQUIRE(g.claim(token_a, process(2)));
  const auto old = g.admission_of(process(1));
  g.opened(old, 5);
  auto gone = g.admit(token_a, {0, 0s});
  std::sort(gone.begin(), gone.end());
  BOOST_TEST(gone.size() == 2u);
  BOOST_TEST(g.admission_of(process(1)) == 0u);
  BOOST_TEST(g.refusal(old, 1) == "its admission was revoked");
  // Admitted anew under the same token: the old requests' ends do not count against it.
  g.admit(token_a, {8, 1s});
  BOOST_REQUIRE(g.claim(token_a, process(1)));
  const auto fresh = g.admission_of(process(1));
  BOOST_TEST(fresh != old);
  g.opened(fresh, 2);
  g.closed(old, 5);
  g.charge(old, 10s);
  BOOST_TEST(g.open_ops(token_a) == 2u);
  BOOST_TEST(g.used(token_a).count() == 0);
}

BOOST_AUTO_TEST_CASE(a_guest_that_goes_and_the_owners_end) {
  node_guests g;
  g.admit(token_a, {8, 1s});
  g.admit(token_b, {8, 1s});
  BOOST_REQUIRE(g.claim(token_a, process(1)));
  BOOST_REQUIRE(g.claim(token_b, process(2)));
  g.forget(process(1));
  BOOST_TEST(g.admission_of(process(1)) == 0u);
  BOOST_TEST(g.claim(token_a, process(1)));  // the admission stays for the next claimer
  const auto all = g.clear();
  BOOST_TEST(all.size() == 2u);
  BOOST_TEST(!g.claim(token_a, process(3)));
}
