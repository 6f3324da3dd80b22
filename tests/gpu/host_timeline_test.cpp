#define BOOST_TEST_MODULE host_timeline
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "common/printing.hpp"
#include "cudactor/gpu/host_timeline.hpp"

using namespace cudactor::gpu;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(host_timeline_suite)

BOOST_AUTO_TEST_CASE(it_starts_at_its_initial_value) {
  host_timeline line{"t", 5};
  BOOST_TEST(line.signalled() == 5u);
  BOOST_TEST(line.completed() == 5u);
  BOOST_TEST(line.is_reached(5));
  BOOST_TEST(!line.is_reached(6));
  BOOST_TEST(line.query(6).state == event_state::not_ready);
}

BOOST_AUTO_TEST_CASE(reserve_hands_out_consecutive_values) {
  host_timeline line{"t"};
  BOOST_TEST(line.reserve() == 1u);
  BOOST_TEST(line.reserve() == 2u);
  BOOST_TEST(line.signalled() == 2u);
  BOOST_TEST(line.completed() == 0u);
}

BOOST_AUTO_TEST_CASE(a_lower_value_never_moves_it_back) {
  host_timeline line{"t"};
  line.set(10);
  line.set(3);
  BOOST_TEST(line.completed() == 10u);
  BOOST_TEST(line.signalled() == 10u);  // set() keeps submitted >= completed
}

BOOST_AUTO_TEST_CASE(a_bounded_wait_times_out_and_names_the_timeline) {
  host_timeline line{"copy-stream"};
  line.set(1);
  const auto start = std::chrono::steady_clock::now();
  const status answer = line.wait(2, 30ms);
  const auto waited = std::chrono::steady_clock::now() - start;
  BOOST_TEST(answer.code() == status_code::timeout);
  BOOST_TEST(answer.message().find("copy-stream") != std::string::npos);
  BOOST_TEST(waited >= 30ms);
  BOOST_TEST(line.wait(1, 30ms).ok());  // reached: at once
}

BOOST_AUTO_TEST_CASE(an_unbounded_wait_returns_when_another_thread_gets_there) {
  host_timeline line{"t"};
  std::thread setter{[&] {
    for (timeline_point v = 1; v <= 100; ++v) {
      line.set(v);
      std::this_thread::sleep_for(50us);
    }
  }};
  const status answer = line.wait(100, 0ms);
  setter.join();
  BOOST_TEST(answer.ok());
  BOOST_TEST(line.completed() == 100u);
}

BOOST_AUTO_TEST_CASE(it_is_monotonic_under_concurrent_setters) {
  host_timeline line{"t"};
  constexpr int setters = 6;
  constexpr int per_setter = 20000;
  std::atomic<bool> stop{false};
  std::atomic<int> went_back{0};
  std::thread observer{[&] {
    timeline_point last = 0;
    while (!stop.load()) {
      const timeline_point now = line.completed();
      if (now < last) ++went_back;
      last = now;
    }
  }};
  std::vector<std::thread> threads;
  std::atomic<timeline_point> highest{0};
  for (int t = 0; t < setters; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random{static_cast<std::uint64_t>(t) + 1};
      timeline_point mine = 0;
      for (int i = 0; i < per_setter; ++i) {
        // Each setter climbs on its own, with jumps, so setters constantly overtake each other.
        mine += 1 + random() % 5;
        line.set(mine);
        timeline_point seen = highest.load();
        while (seen < mine && !highest.compare_exchange_weak(seen, mine)) {
        }
      }
    });
  }
  // A waiter for the final maximum must be woken whatever the interleaving.
  std::thread waiter{[&] {
    for (auto& thread : threads) thread.join();
  }};
  waiter.join();
  stop = true;
  observer.join();
  BOOST_TEST(went_back.load() == 0);
  BOOST_TEST(line.completed() == highest.load());
  BOOST_TEST(line.wait(highest.load(), 10ms).ok());
}

BOOST_AUTO_TEST_CASE(many_waiters_are_all_woken) {
  host_timeline line{"t"};
  std::atomic<int> woken{0};
  std::vector<std::thread> waiters;
  for (int i = 1; i <= 8; ++i) {
    waiters.emplace_back([&, i] {
      if (line.wait(static_cast<timeline_point>(i), 5000ms).ok()) ++woken;
    });
  }
  std::this_thread::sleep_for(10ms);
  line.set(8);
  for (auto& w : waiters) w.join();
  BOOST_TEST(woken.load() == 8);
}

BOOST_AUTO_TEST_CASE(a_failed_point_reports_its_failure_and_only_it) {
  host_timeline line{"t"};
  line.set(1);
  line.fail(2, status{status_code::op_failed, "bad kernel"});
  line.set(3);
  BOOST_TEST(line.query(1).ready());
  BOOST_TEST(line.query(2).failed());
  BOOST_TEST(line.query(2).error.message() == "bad kernel");
  BOOST_TEST(line.query(3).ready());
  BOOST_TEST(line.wait(2, 10ms).code() == status_code::op_failed);
  BOOST_TEST(line.completed() == 3u);
}

BOOST_AUTO_TEST_CASE(its_failure_memory_is_bounded) {
  host_timeline line{"t"};
  const timeline_point total = host_timeline::failure_history + 50;
  for (timeline_point v = 1; v <= total; ++v) line.fail(v, status{status_code::op_failed, "x"});
  BOOST_TEST(line.query(total).failed());
  BOOST_TEST(line.query(1).ready());  // forgotten, not kept forever
}

BOOST_AUTO_TEST_CASE(poison_fails_what_is_not_yet_reached_and_wakes_waiters) {
  host_timeline line{"t"};
  line.set(2);
  std::atomic<int> code{-1};
  std::thread waiter{[&] { code = static_cast<int>(line.wait(10, 0ms).code()); }};
  std::this_thread::sleep_for(10ms);
  line.poison(status{status_code::device_lost, "gone"});
  waiter.join();
  BOOST_TEST(code.load() == static_cast<int>(status_code::device_lost));
  BOOST_TEST(line.query(2).ready());  // reached before the loss
  BOOST_TEST(line.query(3).failed());
  line.clear_poison();
  BOOST_TEST(line.query(3).state == event_state::not_ready);
}

BOOST_AUTO_TEST_SUITE_END()
