// The metrics registry and its exposer, scraped over real HTTP on loopback.
#define BOOST_TEST_MODULE registry
#include <boost/test/unit_test.hpp>

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <boost/asio.hpp>

#include <string>

#include "common/http_get.hpp"
#include "cudactor/metrics/process_metrics.hpp"
#include "cudactor/metrics/registry.hpp"

using namespace cudactor::metrics;
using cudactor::test::http_get;
namespace asio = boost::asio;

namespace {

exposer_options ephemeral() {
  exposer_options options;
  options.port = 0;
  return options;
}

}  // namespace

BOOST_AUTO_TEST_CASE(port_zero_serves_the_registry_on_a_free_loopback_port) {
  registry metrics{ephemeral()};
  BOOST_REQUIRE(metrics.port().has_value());
  BOOST_TEST(*metrics.port() > 0);
  BOOST_TEST(metrics.exposer_error().empty());
  BOOST_TEST(metrics.endpoint() ==
             "http://127.0.0.1:" + std::to_string(*metrics.port()) + "/metrics");
  auto& family = prometheus::BuildCounter()
                     .Name("cudactor_test_events_total")
                     .Help("events seen by the test")
                     .Register(metrics.prometheus());
  family.Add({{"gpu", "0"}}).Increment(3);
  const std::string body = http_get(*metrics.port(), "/metrics");
  BOOST_TEST(body.find("200 OK") != std::string::npos);
  BOOST_TEST(body.find("cudactor_test_events_total{gpu=\"0\"} 3") != std::string::npos);
  BOOST_TEST(metrics.serialize().find("cudactor_test_events_total{gpu=\"0\"} 3") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_taken_port_is_refused_with_a_clear_error) {
  registry first{ephemeral()};
  BOOST_REQUIRE(first.port().has_value());
  exposer_options same;
  same.port = *first.port();
  try {
    registry second{same};
    BOOST_FAIL("binding a taken port must fail");
  } catch (const bind_error& e) {
    BOOST_TEST(std::string{e.what()}.find("127.0.0.1:" + std::to_string(same.port)) !=
               std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(a_taken_port_can_be_run_without_when_configured) {
  registry first{ephemeral()};
  exposer_options same;
  same.port = *first.port();
  same.failure = on_bind_failure::run_without;
  registry second{same};
  BOOST_TEST(!second.port().has_value());
  BOOST_TEST(second.endpoint().empty());
  BOOST_TEST(second.exposer_error().find("cannot serve metrics") != std::string::npos);
  // Metrics are still collected, only not served.
  prometheus::BuildCounter()
      .Name("cudactor_kept_total")
      .Help("x")
      .Register(second.prometheus())
      .Add({})
      .Increment();
  BOOST_TEST(second.serialize().find("cudactor_kept_total 1") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(disabled_means_no_exposer_and_no_error) {
  exposer_options off;
  off.enabled = false;
  registry metrics{off};
  BOOST_TEST(!metrics.port().has_value());
  BOOST_TEST(metrics.exposer_error().empty());
}

BOOST_AUTO_TEST_CASE(a_family_is_made_once_and_found_again_by_name) {
  exposer_options off;
  off.enabled = false;
  registry metrics{off};
  auto& a = metrics.counters("cudactor_a_total", "a", {"gpu"});
  auto& b = metrics.counters("cudactor_a_total", "a", {"gpu"});
  BOOST_TEST(&a == &b);
  BOOST_CHECK_THROW((void)metrics.gauges("cudactor_a_total", "a", {"gpu"}), std::logic_error);
  BOOST_CHECK_THROW((void)metrics.counters("cudactor_a_total", "a", {"stream"}), std::logic_error);
  try {
    (void)metrics.histograms("cudactor_a_total", "a", {"gpu"});
  } catch (const std::logic_error& e) {
    BOOST_TEST(std::string{e.what()}.find("cudactor_a_total exists as a counter {gpu}") !=
               std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(a_scrape_serves_cudactor_families_prometheus_cpp_ones_and_the_process) {
  registry metrics{ephemeral()};
  BOOST_REQUIRE(metrics.port().has_value());
  metrics.counters("cudactor_ops_total", "ops", {"gpu"}).add({"0"}).add(42);
  metrics.histograms("cudactor_latency_seconds", "latency", {"gpu"})
      .add({"0"})
      .observe(std::chrono::microseconds{3});
  prometheus::BuildCounter()
      .Name("theirs_total")
      .Help("added through prometheus-cpp")
      .Register(metrics.prometheus())
      .Add({})
      .Increment(2);
  auto series =
      metrics.callbacks("cudactor_read_at_scrape", "r", {}, metric_kind::gauge).add({}, [] {
        return 5.0;
      });
  const std::string body = http_get(*metrics.port(), "/metrics");
  BOOST_TEST(body.find("cudactor_ops_total{gpu=\"0\"} 42") != std::string::npos, body);
  BOOST_TEST(
      body.find("cudactor_latency_seconds_bucket{gpu=\"0\",le=\"5e-06\"} 1") != std::string::npos,
      body);
  BOOST_TEST(body.find("theirs_total 2") != std::string::npos);
  BOOST_TEST(body.find("cudactor_read_at_scrape 5") != std::string::npos);
  BOOST_TEST(body.find("process_cpu_seconds_total") != std::string::npos);
  BOOST_TEST(body.find("process_resident_memory_bytes") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_exposer_leaves_no_thread_behind) {
  const auto before = sample_process();
  BOOST_REQUIRE(before.has_value());
  std::uint16_t port = 0;
  {
    registry metrics{ephemeral()};
    port = *metrics.port();
    BOOST_TEST(http_get(port, "/metrics").find("200 OK") != std::string::npos);
    BOOST_TEST(sample_process()->threads > before->threads);
  }
  BOOST_TEST(sample_process()->threads == before->threads);
  // And the port is free again: nothing listens there.
  asio::io_context io;
  asio::ip::tcp::socket socket{io};
  boost::system::error_code ec;
  socket.connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  BOOST_TEST(ec.failed());
}
