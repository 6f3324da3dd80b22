// The event pool facade: leases by kind, returned all or none, a stale or double release
// named; its utilization; shutting_down once the runtime has gone.
#define BOOST_TEST_MODULE facade_event_pool
#include <boost/test/unit_test.hpp>

#include "cudactor/facade/event_pool.hpp"
#include "facade/facade_fixture.hpp"

using namespace cudactor;
using namespace cudactor::test;

BOOST_FIXTURE_TEST_SUITE(facade_event_pool, facade_fixture)

BOOST_AUTO_TEST_CASE(events_are_leased_by_kind_and_given_back) {
  cudactor::event_pool pool{rt()};
  auto fu = pool.utilization();
  const pool_utilization before = get_within(fu);
  auto fa = pool.acquire(gpu::event_kind::timing, 3);
  const std::vector<event_lease> leased = get_within(fa);
  BOOST_TEST(leased.size() == 3u);
  for (const auto& e : leased) BOOST_TEST((e.kind == gpu::event_kind::timing));
  auto fm = pool.utilization();
  BOOST_TEST(get_within(fm).in_use == before.in_use + 3);
  auto fr = pool.release(leased);
  get_within(fr);
  auto fv = pool.utilization();
  BOOST_TEST(get_within(fv).in_use == before.in_use);
  // Released twice: refused, naming the event.
  auto twice = pool.release(leased);
  const failure f = failure_of(twice);
  BOOST_TEST_MESSAGE(f.what());
  BOOST_TEST((f == errc::stale_event));
}

BOOST_AUTO_TEST_CASE(impossible_requests_are_named) {
  cudactor::event_pool pool{rt()};
  auto none = pool.acquire(gpu::event_kind::regular, 0);
  const failure z = failure_of(none);
  BOOST_TEST_MESSAGE(z.what());
  BOOST_TEST((z == errc::invalid_argument));
  auto too_many = pool.acquire(gpu::event_kind::regular, 4000000000u);
  const failure m = failure_of(too_many);
  BOOST_TEST_MESSAGE(m.what());
  BOOST_TEST((m == errc::pool_exhausted || m == errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(a_pool_object_that_outlives_its_runtime_answers_shutting_down) {
  cudactor::event_pool pool{rt()};
  stop();
  auto f = pool.utilization();
  BOOST_TEST((failure_of(f) == errc::shutting_down));
}

BOOST_AUTO_TEST_SUITE_END()
