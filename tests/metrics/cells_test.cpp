// The lock-free cells behind every cudactor metric.
#define BOOST_TEST_MODULE cells
#include <boost/test/unit_test.hpp>

#include <thread>
#include <vector>

#include "cudactor/metrics/cells.hpp"

using namespace cudactor::metrics;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(latency_buckets_start_at_one_microsecond_and_end_at_ten_seconds) {
  const auto b = latency_buckets();
  BOOST_REQUIRE_EQUAL(b->size(), 22u);
  BOOST_TEST(b->front() == 1'000);
  BOOST_TEST(b->at(1) == 2'500);
  BOOST_TEST(b->at(2) == 5'000);
  BOOST_TEST(b->back() == 10'000'000'000);
  for (std::size_t i = 1; i < b->size(); ++i) BOOST_TEST((*b)[i] > (*b)[i - 1]);
}

BOOST_AUTO_TEST_CASE(an_observation_lands_in_the_first_bucket_whose_bound_it_does_not_exceed) {
  duration_histogram h{buckets_in_seconds({1e-6, 1e-3})};
  h.observe(1us);     // exactly on the bound: le="1e-06"
  h.observe(1001ns);  // just above: le="0.001"
  h.observe(1ms);     // on the second bound
  h.observe(2s);      // +Inf
  h.observe(-5ns);    // a clock going backwards counts as zero
  const auto snap = h.read();
  BOOST_REQUIRE_EQUAL(snap.counts.size(), 3u);
  BOOST_TEST(snap.counts[0] == 2u);
  BOOST_TEST(snap.counts[1] == 2u);
  BOOST_TEST(snap.counts[2] == 1u);
  BOOST_TEST(snap.count == 5u);
  BOOST_TEST(snap.sum_seconds == 2.0 + 1e-3 + 1e-6 + 1.001e-6, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_run_of_equal_observations_counts_each_one) {
  duration_histogram h{buckets_in_seconds({1e-6, 1e-3})};
  h.observe(500us, 40);
  h.observe(2us);
  const auto snap = h.read();
  BOOST_TEST(snap.counts[0] == 0u);
  BOOST_TEST(snap.counts[1] == 41u);
  BOOST_TEST(snap.count == 41u);
  BOOST_TEST(snap.sum_seconds == 40 * 500e-6 + 2e-6, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_quantile_is_bounded_by_the_bucket_it_falls_in) {
  duration_histogram h{buckets_in_seconds({1e-6, 1e-5, 1e-4})};
  BOOST_TEST(h.quantile_bound(0.5).count() == 0);  // nothing observed
  h.observe(std::chrono::nanoseconds{500}, 90);    // <= 1 us
  h.observe(std::chrono::nanoseconds{5'000}, 9);   // <= 10 us
  h.observe(std::chrono::nanoseconds{50'000});     // <= 100 us
  BOOST_TEST(h.quantile_bound(0.0).count() == 1'000);
  BOOST_TEST(h.quantile_bound(0.5).count() == 1'000);
  BOOST_TEST(h.quantile_bound(0.9).count() == 1'000);    // rank 90 of 100
  BOOST_TEST(h.quantile_bound(0.91).count() == 10'000);  // rank 91
  BOOST_TEST(h.quantile_bound(0.99).count() == 10'000);
  BOOST_TEST(h.quantile_bound(1.0).count() == 100'000);
  h.observe(std::chrono::seconds{1}, 1000);  // past every bound: the largest finite one
  BOOST_TEST(h.quantile_bound(0.99).count() == 100'000);
}

BOOST_AUTO_TEST_CASE(bad_bounds_are_refused) {
  BOOST_CHECK_THROW(buckets_in_seconds({0.0}), std::invalid_argument);
  BOOST_CHECK_THROW(buckets_in_seconds({1.0, 1.0}), std::invalid_argument);
  BOOST_CHECK_THROW(buckets_in_seconds({2.0, 1.0}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(concurrent_writers_lose_nothing) {
  counter c;
  gauge g;
  duration_histogram h{latency_buckets()};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100'000; ++i) {
        c.add();
        g.add(1);
        h.observe(std::chrono::nanoseconds{i});
        g.add(-1);
      }
    });
  }
  for (auto& t : threads) t.join();
  BOOST_TEST(c.value() == 400'000u);
  BOOST_TEST(g.value() == 0);
  BOOST_TEST(h.read().count == 400'000u);
}
