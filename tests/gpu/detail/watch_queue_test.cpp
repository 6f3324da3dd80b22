// The poller's per-stream FIFO (order, tombstones, lookup by sequence) and its duration
// learner.
#define BOOST_TEST_MODULE watch_queue
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <vector>

#include "cudactor/gpu/detail/watch_queue.hpp"

using namespace cudactor::gpu;
using namespace cudactor::gpu::detail;
using namespace std::chrono_literals;

namespace {

watch_entry entry(std::uint64_t sequence) {
  watch_entry e;
  e.sequence = sequence;
  e.point = sequence * 10;
  return e;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_front_is_the_oldest_live_watch) {
  watch_queue q;
  BOOST_TEST(q.front() == nullptr);
  for (std::uint64_t s = 1; s <= 5; ++s) q.push(entry(s));
  BOOST_TEST(q.live() == 5u);
  BOOST_TEST(q.front()->sequence == 1u);
  BOOST_TEST(q.pop_front().point == 10u);
  BOOST_TEST(q.front()->sequence == 2u);
  BOOST_TEST(q.live() == 4u);
}

BOOST_AUTO_TEST_CASE(taken_watches_become_tombstones_skipped_at_the_front) {
  watch_queue q;
  for (std::uint64_t s = 1; s <= 6; ++s) q.push(entry(s));
  bool called = false;
  q.find(1)->callback = [&](const watch_result&) { called = true; };
  auto first = q.take(*q.find(1));
  BOOST_TEST(first.sequence == 1u);
  BOOST_REQUIRE(first.callback);  // handed over with the watch
  first.callback(watch_result{});
  BOOST_TEST(called);
  (void)q.take(*q.find(2));
  (void)q.take(*q.find(4));
  BOOST_TEST(q.find(2) == nullptr);  // a tombstone is not found
  BOOST_TEST(q.find(7) == nullptr);  // never here
  BOOST_TEST(q.live() == 3u);
  BOOST_TEST(q.front()->sequence == 3u);
  BOOST_TEST(q.pop_front().sequence == 3u);
  BOOST_TEST(q.front()->sequence == 5u);  // 4 was skipped
  BOOST_TEST(q.held() == 2u);
}

BOOST_AUTO_TEST_CASE(sequences_with_gaps_are_found_by_binary_search) {
  watch_queue q;
  std::vector<std::uint64_t> sequences;
  for (std::uint64_t s = 3; s < 3000; s += 7) {
    q.push(entry(s));
    sequences.push_back(s);
  }
  for (auto s : sequences) {
    BOOST_REQUIRE(q.find(s) != nullptr);
    BOOST_TEST(q.find(s)->point == s * 10);
    BOOST_TEST(q.find(s + 1) == nullptr);
  }
}

BOOST_AUTO_TEST_CASE(emptying_the_queue_drops_its_tombstones) {
  watch_queue q;
  for (std::uint64_t s = 1; s <= 3; ++s) q.push(entry(s));
  (void)q.take(*q.find(2));
  (void)q.take(*q.find(3));
  BOOST_TEST(q.held() == 3u);
  (void)q.pop_front();
  BOOST_TEST(q.empty());
  BOOST_TEST(q.held() == 0u);
}

BOOST_AUTO_TEST_CASE(drain_hands_over_live_watches_in_order) {
  watch_queue q;
  for (std::uint64_t s = 1; s <= 5; ++s) q.push(entry(s));
  (void)q.take(*q.find(3));
  std::vector<std::uint64_t> drained;
  q.drain([&](watch_entry&& e) { drained.push_back(e.sequence); });
  BOOST_TEST(drained == (std::vector<std::uint64_t>{1, 2, 4, 5}), boost::test_tools::per_element());
  BOOST_TEST(q.empty());
  BOOST_TEST(q.front() == nullptr);
}

BOOST_AUTO_TEST_CASE(the_learner_predicts_the_shortest_recent_duration) {
  duration_learner learner;
  for (std::size_t i = 1; i < duration_learner::min_samples; ++i) {
    learner.observe(std::chrono::milliseconds{i});
    BOOST_TEST(!learner.shortest());  // too few samples to say anything
  }
  learner.observe(5ms);
  BOOST_REQUIRE(learner.shortest());
  BOOST_TEST(learner.shortest()->count() == std::chrono::nanoseconds{1ms}.count());
  // Old samples leave the window: after `window` slower ones the old minimum is forgotten.
  for (std::size_t i = 0; i < duration_learner::window; ++i) learner.observe(9ms);
  BOOST_TEST(learner.shortest()->count() == std::chrono::nanoseconds{9ms}.count());
  learner.observe(2ms);
  BOOST_TEST(learner.shortest()->count() == std::chrono::nanoseconds{2ms}.count());
}
