// tests/examples/async_service_test.cpp
//
// Runs examples/async_service as its own process and talks HTTP to it: concurrent /saxpy
// requests whose sums are checked against the same float arithmetic done here, the error
// answers, /stats counting what was served, and /quit ending the process with status 0.
#define BOOST_TEST_MODULE async_service
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "build_tree.hpp"
#include "common/child_process.hpp"
#include "common/http_get.hpp"
#include "common/log_file.hpp"
#include "common/test_backend.hpp"

using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

// CTest names the program (the GPU bundle moves it); the build's own path otherwise.
std::string service_program() {
  const char* given = std::getenv("CUDACTOR_ASYNC_SERVICE");
  return given != nullptr ? given : cudactor::build_tree::async_service_program();
}

std::string body_of(const std::string& response) {
  const auto at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

int status_of(const std::string& response) {
  // "HTTP/1.0 200 OK"
  return response.size() > 12 ? std::atoi(response.c_str() + 9) : 0;
}

// A number field of a flat JSON object.
std::optional<double> field(const std::string& json, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const auto at = json.find(key);
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(json.c_str() + at + key.size(), nullptr);
}

// What the service computes: y = x, y = y + a x, summed in index order.
double expected_sum(std::size_t n, float a) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = static_cast<float>(i % 1000) / 8.0f;
    const float ax = a * x;
    const float y = x + ax;
    sum += y;
  }
  return sum;
}

struct service_process {
  service_process()
      : log("async_service_test." + std::to_string(getpid()) + ".log"),
        child({service_program(), "--port=0", "--slots=16", "--max-n=65536", backend_option(),
               "--cudactor.metrics.no-exposer"},
              log) {}
  ~service_process() { std::remove(log.c_str()); }
  std::string log;
  child_process child;
};

}  // namespace

BOOST_AUTO_TEST_CASE(serves_computed_results_over_http_and_quits_cleanly) {
  service_process service;
  const auto port = wait_for_port(service.log, service.child, "listening on http://127.0.0.1:");
  BOOST_REQUIRE_MESSAGE(port.has_value(), "no port printed: " << read_file(service.log));

  // Eight clients at once, ten requests each, every one a different size and factor.
  constexpr int clients = 8, each = 10;
  std::vector<std::string> problems(clients);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (int k = 0; k < each; ++k) {
        const std::size_t n = 1000 + static_cast<std::size_t>(c) * 4096 + k * 517;
        const float a = 0.25f * static_cast<float>(c + 1) - static_cast<float>(k);
        char path[128];
        std::snprintf(path, sizeof path, "/saxpy?n=%zu&a=%.9g", n, static_cast<double>(a));
        const std::string response = http_get(*port, path);
        const std::string body = body_of(response);
        const auto sum = field(body, "sum");
        if (status_of(response) != 200 || !sum || *sum != expected_sum(n, a) ||
            field(body, "n") != static_cast<double>(n)) {
          problems[c] += std::string{path} + " -> " + response + "\n";
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& p : problems) BOOST_TEST(p.empty(), p);

  // Refusals.
  BOOST_TEST(status_of(http_get(*port, "/saxpy?n=0&a=1")) == 400);
  BOOST_TEST(status_of(http_get(*port, "/saxpy?n=70000&a=1")) == 400);
  BOOST_TEST(status_of(http_get(*port, "/saxpy?n=10&a=x")) == 400);
  BOOST_TEST(status_of(http_get(*port, "/nothing")) == 404);

  const std::string stats = body_of(http_get(*port, "/stats"));
  BOOST_TEST((field(stats, "served") == static_cast<double>(clients * each)), stats);
  BOOST_TEST((field(stats, "failed") == 0.0), stats);
  BOOST_TEST((field(stats, "in_flight") == 0.0), stats);

  const std::string bye = http_get(*port, "/quit");
  BOOST_TEST(status_of(bye) == 200, bye);
  const auto status = service.child.wait_exit(30s);
  BOOST_TEST((status == std::optional<int>{0}), read_file(service.log));
  BOOST_TEST(read_file(service.log).find("async_service: stopped") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(sigterm_stops_it_cleanly) {
  service_process service;
  const auto port = wait_for_port(service.log, service.child, "listening on http://127.0.0.1:");
  BOOST_REQUIRE(port.has_value());
  BOOST_TEST(status_of(http_get(*port, "/saxpy?n=4096&a=2")) == 200);
  kill(service.child.pid(), SIGTERM);
  const auto status = service.child.wait_exit(30s);
  BOOST_TEST((status == std::optional<int>{0}), read_file(service.log));
}
