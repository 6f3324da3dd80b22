// The per-operation queues' ring: first in first out against a std::deque through random
// pushes and pops that wrap and grow the ring, every value destroyed exactly once, room kept
// when emptied, and a moved queue taking the values along.
#define BOOST_TEST_MODULE ring_queue
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "common/test_seed.hpp"
#include "cudactor/actors/detail/ring_queue.hpp"

using cudactor::detail::ring_queue;

namespace {

int alive = 0;

// Owns memory, so that a value lost, copied wrongly or destroyed twice shows (under ASan too).
struct value {
  explicit value(std::uint64_t v) : v(std::make_unique<std::uint64_t>(v)) { ++alive; }
  value(value&& other) noexcept : v(std::move(other.v)) { ++alive; }
  value& operator=(value&&) = delete;
  ~value() { --alive; }
  std::unique_ptr<std::uint64_t> v;
};

}  // namespace

BOOST_AUTO_TEST_CASE(random_pushes_and_pops_match_a_deque) {
  const std::uint64_t seed = cudactor::test::test_seed("ring_queue");
  std::mt19937_64 rng{seed};
  {
    ring_queue<value> q;
    std::deque<std::uint64_t> ref;
    std::uint64_t next = 1;
    for (int k = 0; k < 200'000; ++k) {
      // Phases of growth and of draining, so that the ring wraps at every size.
      const bool grow = (k / 5000) % 2 == 0;
      if (ref.empty() || rng() % 100 < (grow ? 60u : 40u)) {
        q.emplace_back(next);
        ref.push_back(next++);
      } else {
        BOOST_REQUIRE_EQUAL(*q.front().v, ref.front());
        q.pop_front();
        ref.pop_front();
      }
      BOOST_REQUIRE_EQUAL(q.size(), ref.size());
      BOOST_REQUIRE_EQUAL(alive, static_cast<int>(ref.size()));
      if (!ref.empty()) {
        BOOST_REQUIRE_EQUAL(*q.back().v, ref.back());
        const std::size_t i = rng() % ref.size();
        BOOST_REQUIRE_EQUAL(*q[i].v, ref[i]);
      }
    }
    std::size_t i = 0;
    for (const value& x : q) BOOST_REQUIRE_EQUAL(*x.v, ref[i++]);
    BOOST_TEST(i == ref.size());
  }
  BOOST_TEST(alive == 0);
}

BOOST_AUTO_TEST_CASE(cleared_keeps_working_and_moves_take_the_values) {
  ring_queue<value> q;
  for (std::uint64_t i = 0; i < 100; ++i) q.emplace_back(i);
  q.clear();
  BOOST_TEST(q.empty());
  BOOST_TEST(alive == 0);
  for (std::uint64_t i = 0; i < 40; ++i) q.emplace_back(i);
  for (int i = 0; i < 30; ++i) q.pop_front();
  for (std::uint64_t i = 40; i < 70; ++i) q.emplace_back(i);  // wraps
  ring_queue<value> moved = std::move(q);
  BOOST_TEST(q.empty());  // NOLINT(bugprone-use-after-move): empty by contract
  BOOST_TEST(moved.size() == 40u);
  std::uint64_t expect = 30;
  for (const value& x : moved) BOOST_REQUIRE_EQUAL(*x.v, expect++);
  ring_queue<value> other;
  other.emplace_back(std::uint64_t{999});
  other = std::move(moved);
  BOOST_TEST(other.size() == 40u);
  BOOST_TEST(*other.front().v == 30u);
  BOOST_TEST(alive == 40);
  other.clear();
  BOOST_TEST(alive == 0);
}
