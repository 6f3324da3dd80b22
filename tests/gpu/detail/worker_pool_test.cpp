#define BOOST_TEST_MODULE worker_pool
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "common/printing.hpp"
#include "cudactor/gpu/detail/worker_pool.hpp"

using namespace cudactor::gpu::detail;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(every_posted_task_runs_before_stop_returns) {
  std::atomic<int> ran{0};
  worker_pool pool{2, 50us};
  for (int i = 0; i < 1000; ++i) pool.post(i % 3, [&] { ++ran; });
  pool.stop();
  BOOST_TEST(ran.load() == 1000);
  pool.stop();  // idempotent
}

// Tasks posted from outside in bursts with gaps, so that workers go idle between them: with
// and without the idle spin, a posted task always finds a worker (no lost wake-up).
BOOST_AUTO_TEST_CASE(bursts_from_outside_all_run_with_and_without_the_idle_spin) {
  for (auto spin : {0us, 50us}) {
    std::atomic<int> ran{0};
    worker_pool pool{2, spin};
    int posted = 0;
    for (int burst = 0; burst < 200; ++burst) {
      for (int i = 0; i < 1 + burst % 7; ++i, ++posted) pool.post(burst % 3, [&] { ++ran; });
      const auto until = worker_pool::clock::now() + std::chrono::microseconds{burst % 120};
      while (worker_pool::clock::now() < until) {
      }
    }
    // Every task runs without stop() draining them: wait for it, bounded.
    const auto give_up = worker_pool::clock::now() + 10s;
    while (ran.load() < posted && worker_pool::clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);
    }
    BOOST_TEST(ran.load() == posted, "idle spin " << spin.count() << "us");
    pool.stop();
  }
}

BOOST_AUTO_TEST_CASE(tasks_posted_by_running_tasks_also_run_during_stop) {
  std::atomic<int> ran{0};
  worker_pool pool{1, 0us};
  std::function<void(int)> chain = [&](int left) {
    ++ran;
    if (left > 0) pool.post(1, [&, left] { chain(left - 1); });
  };
  pool.post(1, [&] { chain(99); });
  pool.stop();
  BOOST_TEST(ran.load() == 100);
}

BOOST_AUTO_TEST_CASE(a_higher_lane_is_served_first) {
  worker_pool pool{1, 0us};
  std::atomic<bool> go{false};
  std::mutex mutex;
  std::vector<int> order;
  pool.post(0, [&] {
    while (!go.load()) std::this_thread::yield();
  });
  for (int lane : {2, 1, 0, 2, 0}) {
    pool.post(lane, [&, lane] {
      std::lock_guard<std::mutex> lock{mutex};
      order.push_back(lane);
    });
  }
  go = true;
  pool.stop();
  BOOST_TEST(order == (std::vector<int>{0, 0, 1, 2, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_timer_runs_no_earlier_than_its_deadline) {
  worker_pool pool{2, 0us};
  const auto start = worker_pool::clock::now();
  std::atomic<long long> fired_after_us{-1};
  pool.post_at(start + 30ms, [&] {
    fired_after_us =
        std::chrono::duration_cast<std::chrono::microseconds>(worker_pool::clock::now() - start)
            .count();
  });
  // Wait for it rather than for a fixed time: a loaded machine may run it late, never early.
  const auto give_up = worker_pool::clock::now() + 10s;
  while (fired_after_us.load() < 0 && worker_pool::clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  BOOST_TEST(fired_after_us.load() >= 30000);
  pool.stop();
}

BOOST_AUTO_TEST_CASE(stop_fires_pending_timers_early_instead_of_dropping_them) {
  worker_pool pool{1, 50us};
  std::atomic<bool> fired{false};
  pool.post_at(worker_pool::clock::now() + 1h, [&] { fired = true; });
  const auto start = worker_pool::clock::now();
  pool.stop();
  BOOST_TEST(fired.load());
  BOOST_TEST((worker_pool::clock::now() - start < 5s));
}
