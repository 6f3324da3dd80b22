// The process metrics read from /proc.
#define BOOST_TEST_MODULE process_metrics
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <ctime>
#include <thread>
#include <vector>

#include "cudactor/metrics/process_metrics.hpp"

using namespace cudactor::metrics;

BOOST_AUTO_TEST_CASE(the_sample_describes_this_process) {
  // Burn some CPU so that the clock-tick resolution cannot hide it.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds{50};
  volatile std::uint64_t sink = 0;
  while (std::chrono::steady_clock::now() < until) sink = sink + 1;
  std::vector<char> touched(64 << 20, 1);  // 64 MiB made resident
  // ThreadSanitizer starts a thread of its own with the first one the program makes: one
  // made and joined first, so that `before` counts it already.
  std::thread{[] {}}.join();
  // A thread just joined may still be counted while the kernel ends it (join returns once its
  // id is cleared, a step before it leaves the thread group): `before` is taken once two
  // samples 10 ms apart agree. Taken at once, it counted that thread in 1 run of about 10
  // under the whole suite on a 2-core VM (2 threads before, 2 during).
  auto before = sample_process();
  for (int i = 0; i < 100 && before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
    const auto again = sample_process();
    if (!again || again->threads == before->threads) break;
    before = again;
  }
  BOOST_REQUIRE(before.has_value());
  BOOST_TEST(before->cpu_seconds > 0.0);
  BOOST_TEST(before->resident_bytes >= touched.size());
  BOOST_TEST(before->virtual_bytes >= before->resident_bytes);
  BOOST_TEST(before->open_fds >= 3u);  // stdin, stdout, stderr at least
  BOOST_TEST(before->max_fds >= before->open_fds);
  const double now = static_cast<double>(std::time(nullptr));
  BOOST_TEST(before->start_time_seconds <= now + 1);
  BOOST_TEST(before->start_time_seconds > now - 3600);

  std::thread extra{[] { std::this_thread::sleep_for(std::chrono::milliseconds{100}); }};
  const auto during = sample_process();
  extra.join();
  BOOST_REQUIRE(during.has_value());
  BOOST_TEST(during->threads == before->threads + 1);
}

BOOST_AUTO_TEST_CASE(the_families_follow_prometheus_naming) {
  const auto families = process_families();
  BOOST_REQUIRE(!families.empty());
  bool cpu = false, rss = false;
  for (const auto& f : families) {
    BOOST_TEST(f.metric.size() == 1u);
    if (f.name == "process_cpu_seconds_total") {
      cpu = true;
      BOOST_TEST((f.type == prometheus::MetricType::Counter));
    }
    if (f.name == "process_resident_memory_bytes") {
      rss = true;
      BOOST_TEST(f.metric.front().gauge.value > 0.0);
    }
  }
  BOOST_TEST(cpu);
  BOOST_TEST(rss);
}
