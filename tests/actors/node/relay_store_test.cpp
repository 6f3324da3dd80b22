// A node's rendezvous stores (actors/node/node_rendezvous.hpp): each bounded by keys, and the
// bytes of their values together by the node's budget, which a store gives back as it goes.
#define BOOST_TEST_MODULE relay_store
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cudactor/actors/node/node_rendezvous.hpp"

using cudactor::detail::relay_store;
using cudactor::detail::rendezvous_budget;

namespace {

std::shared_ptr<relay_store> store(std::shared_ptr<rendezvous_budget> budget,
                                   std::size_t max_keys = 8) {
  return std::make_shared<relay_store>([](const std::string&, const std::string&) {}, max_keys,
                                       std::move(budget));
}

}  // namespace

BOOST_AUTO_TEST_CASE(values_over_every_store_stay_within_the_nodes_budget) {
  auto budget = std::make_shared<rendezvous_budget>(100);
  auto a = store(budget);
  auto b = store(budget);
  BOOST_TEST(a->put("x/1/0", std::string(60, 'a')));
  BOOST_TEST(!b->put("x/1/1", std::string(50, 'b')));  // 110 > 100: dropped
  BOOST_TEST(b->put("x/1/1", std::string(40, 'b')));
  BOOST_TEST(budget->used() == 100u);
  // A rank's own write past the bound fails, in words.
  const auto own = b->set("x/1/2", std::vector<char>(1, 'c'));
  BOOST_TEST(!own.ok());
  BOOST_TEST(own.to_string().find("64 MiB") != std::string::npos, own.to_string());
  a.reset();  // a making ended: its bytes are the node's again
  BOOST_TEST(budget->used() == 40u);
  BOOST_TEST(b->put("x/1/3", std::string(50, 'd')));
  b.reset();
  BOOST_TEST(budget->used() == 0u);
}

BOOST_AUTO_TEST_CASE(a_store_holds_at_most_its_keys) {
  auto s = store(std::make_shared<rendezvous_budget>(1000), 2);
  BOOST_TEST(s->put("k0", "v"));
  BOOST_TEST(s->put("k1", "v"));
  BOOST_TEST(!s->put("k2", "v"));
  BOOST_TEST(s->put("k1", "v"));   // the same value again: taken, nothing more held
  BOOST_TEST(!s->put("k1", "w"));  // another value for a key held: refused
}
