// A real Prometheus server scrapes a real cudactor runtime: Debian's prometheus, started on
// loopback with a temporary config and storage, pointed at the runtime's ephemeral exposer.
// The test waits for a scrape and asks Prometheus' HTTP API for series whose values this test
// produced. Everything it starts it stops by pid (child_process), failed or not.
#define BOOST_TEST_MODULE prometheus_scrape
#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <caf/all.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "build_tree.hpp"
#include "common/child_process.hpp"
#include "common/http_get.hpp"
#include "common/test_backend.hpp"
#include "cudactor/actors/runtime.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// CTest names the source tree (the GPU bundle runs elsewhere); the build's own otherwise.
fs::path source_dir() {
  if (const char* given = std::getenv("CUDACTOR_SOURCE_DIR")) return given;
  return cudactor::build_tree::source_dir();
}

std::string prometheus_binary() {
  if (const char* given = std::getenv("CUDACTOR_PROMETHEUS")) return given;
  return "/usr/bin/prometheus";
}

// A directory removed with everything in it when the test ends.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "cudactor-scrape-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error{"mkdtemp failed"};
    path = pattern;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in{p};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

std::string encode(const std::string& promql) {
  std::string encoded;
  for (unsigned char c : promql) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-') {
      encoded += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      encoded += hex;
    }
  }
  return encoded;
}

// Every "expr" of the Grafana dashboard, JSON-unescaped, with Grafana's variables filled in.
std::vector<std::string> dashboard_queries() {
  const std::string json = read_file(source_dir() / "docs/grafana/cudactor-dashboard.json");
  static const std::regex expr{R"re("expr": "((?:[^"\\]|\\.)*)")re"};
  std::vector<std::string> out;
  for (std::sregex_iterator i{json.begin(), json.end(), expr}, end; i != end; ++i) {
    std::string q;
    const std::string raw = (*i)[1];
    for (std::size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] == '\\' && k + 1 < raw.size()) ++k;
      q += raw[k];
    }
    q = std::regex_replace(q, std::regex{R"(\$__rate_interval)"}, "15s");
    q = std::regex_replace(q, std::regex{R"(\$gpu)"}, ".*");
    out.push_back(q);
  }
  return out;
}

// The value of the single sample an instant query answers, or "" while there is none.
std::string query_value(std::uint16_t port, const std::string& promql) {
  const std::string body = http_get(port, "/api/v1/query?query=" + encode(promql));
  static const std::regex value{R"re("value":\[[0-9.e+]+,"([^"]*)"\])re"};
  std::smatch m;
  if (!std::regex_search(body, m, value)) return {};
  return m[1];
}

}  // namespace

BOOST_AUTO_TEST_CASE(prometheus_scrapes_the_values_the_runtime_produced) {
  const std::string binary = prometheus_binary();
  BOOST_REQUIRE_MESSAGE(access(binary.c_str(), X_OK) == 0,
                        binary << " is missing: scripts/install-deps installs Debian's "
                                  "prometheus (or set CUDACTOR_PROMETHEUS)");
  runtime_config config;
  BOOST_REQUIRE(!config.parse(
      {cudactor::test::backend_option(), "--cudactor.streams=2", "--cudactor.metrics.port=0"}));
  auto started = runtime::start(config);
  BOOST_REQUIRE_MESSAGE(started.ok(), started.error().to_string());
  auto rt = std::move(started.value());
  const std::uint16_t exposer = *rt->metrics().port();

  // 137 operations on stream 0, then wait until all have been seen.
  constexpr int ops = 137;
  {
    caf::scoped_actor self{rt->system()};
    std::vector<work> works(ops,
                            work::local([](const gpu::launch_context&) { return gpu::status{}; }));
    bool submitted = false, synced = false;
    self->request(rt->stream(0), 10s, submit_atom::value, std::move(works))
        .receive([&](std::vector<ticket>& t) { submitted = t.size() == ops; }, [](caf::error&) {});
    self->request(rt->stream(0), 10s, synchronize_atom::value)
        .receive([&](completion&) { synced = true; }, [](caf::error&) {});
    BOOST_REQUIRE(submitted && synced);
    // A round trip after the answer, so that the handler that gave it has finished counting.
    self->request(rt->stream(0), 10s, status_atom::value)
        .receive([](stream_status&) {}, [](caf::error&) {});
  }
  runtime::release_calling_thread();

  temp_dir dir;
  const std::uint16_t web = free_loopback_port();
  {
    std::ofstream yml{dir.path / "prometheus.yml"};
    yml << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: cudactor\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << exposer << "']\n";
  }
  child_process server{
      {binary, "--config.file=" + (dir.path / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (dir.path / "data").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(web), "--log.level=warn"},
      (dir.path / "prometheus.log").string()};

  // The gpu label is "host" on the host backend and the device's ordinal on CUDA (device 0).
  const std::string gpu = cudactor::test::on_cuda() ? "0" : "host";
  const std::string completed =
      R"(cudactor_stream_operations_completed_total{job="cudactor",gpu=")" + gpu +
      R"(",stream="stream-0"})";
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    BOOST_REQUIRE_MESSAGE(server.running(),
                          "prometheus exited: " << read_file(dir.path / "prometheus.log"));
    seen = query_value(web, completed);
    if (!seen.empty()) break;
    std::this_thread::sleep_for(250ms);
  }
  BOOST_REQUIRE_MESSAGE(!seen.empty(), "no scrape within 60 s; prometheus said: "
                                           << read_file(dir.path / "prometheus.log"));
  BOOST_TEST(seen == std::to_string(ops));
  BOOST_TEST(query_value(web, R"(up{job="cudactor"})") == "1");
  BOOST_TEST(
      query_value(web, R"(cudactor_stream_operation_latency_seconds_count{stream="stream-0"})") ==
      std::to_string(ops));
  BOOST_TEST(query_value(web, R"(cudactor_stream_operations_total{stream="stream-1"})") == "0");
  BOOST_TEST(!query_value(web, R"(process_resident_memory_bytes{job="cudactor"})").empty());
  // A latency quantile over the histogram's buckets, as the dashboard asks it.
  const std::string p50 = query_value(
      web,
      R"(histogram_quantile(0.5, cudactor_stream_operation_latency_seconds_bucket{stream="stream-0"}))");
  BOOST_REQUIRE(!p50.empty());
  BOOST_TEST(std::stod(p50) > 0.0);

  // Every query of the Grafana dashboard is valid PromQL that Prometheus evaluates.
  const auto queries = dashboard_queries();
  BOOST_TEST(queries.size() >= 10u);
  for (const auto& q : queries) {
    const std::string body = http_get(web, "/api/v1/query?query=" + encode(q));
    BOOST_TEST(body.find("\"status\":\"success\"") != std::string::npos, q << " -> " << body);
  }

  server.stop();
  BOOST_TEST(!server.running());
  rt->shutdown();
}
