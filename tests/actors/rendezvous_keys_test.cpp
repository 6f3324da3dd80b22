// The keys of a communicator's rendezvous each rank may write (actors/rendezvous_keys.hpp):
// its own Gloo keys, and NCCL's id for rank 0 only; another rank's key, another communicator's
// or generation's, and anything else are not its own.
#define BOOST_TEST_MODULE rendezvous_keys
#include <boost/test/unit_test.hpp>

#include "cudactor/actors/rendezvous_keys.hpp"

using namespace cudactor;

namespace {

rendezvous_entry entry(std::string key) {
  return rendezvous_entry{"grads", 3, std::move(key), "v"};
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_rank_writes_only_its_own_keys) {
  BOOST_TEST(is_own_rendezvous_key(entry("grads/3/0"), 0));
  BOOST_TEST(is_own_rendezvous_key(entry("grads/3/2"), 2));
  BOOST_TEST(is_own_rendezvous_key(entry("grads/3/rank_2"), 2));
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/3/rank_2"), 1));
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/3/rank_"), 0));
  BOOST_TEST(is_own_rendezvous_key(entry("grads/3/nccl-id"), 0));
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/3/nccl-id"), 1));  // the id is rank 0's
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/3/0"), 1));        // another rank's addresses
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/3/1"), 0));
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/3/12"), 1));
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/3/01"), 1));
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/2/1"), 1));  // another generation
  BOOST_TEST(!is_own_rendezvous_key(entry("other/3/1"), 1));  // another communicator
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/3/"), 0));
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/3"), 0));
  BOOST_TEST(!is_own_rendezvous_key(entry(""), 0));
  BOOST_TEST(!is_own_rendezvous_key(entry("grads/3/1/x"), 1));
}
