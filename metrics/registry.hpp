// metrics/registry.hpp
//
// Where cudactor's metrics live: one prometheus::Registry that the objects being measured
// add their families to, and an optional HTTP exposer serving it at /metrics. The exposer
// binds 127.0.0.1 by default (Debian's prometheus-cpp has no IPv6), port 9464; port 0 picks a
// free port and port() says which. A port that cannot be bound either stops start-up with a
// clear error or, when configured so, leaves the program running without metrics and says
// why. Knows nothing of CAF or of the device layer.
//
// Families are made once by name (counters(), gauges(), histograms(), callbacks()) and live as
// long as the registry; asking again for the same name answers the same family, so every
// stream actor adds its own series to one cudactor_stream_... family. A scrape serves the
// cudactor families, whatever was added to prometheus() directly, and the process metrics.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cudactor/metrics/family.hpp"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace cudactor::metrics {

enum class on_bind_failure : std::uint8_t {
  refuse,       // the constructor throws bind_error
  run_without,  // no exposer; exposer_error() says why
};

struct exposer_options {
  bool enabled = true;
  std::string address = "127.0.0.1";
  std::uint16_t port = 9464;  // 0: any free port
  on_bind_failure failure = on_bind_failure::refuse;
  bool process_metrics = true;  // process_cpu_seconds_total and friends
};

class bind_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class registry {
 public:
  explicit registry(exposer_options options = {});
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;
  ~registry();  // stops the exposer (about 10 ms)

  [[nodiscard]] prometheus::Registry& prometheus() noexcept { return *registry_; }
  [[nodiscard]] std::shared_ptr<prometheus::Registry> shared() const noexcept { return registry_; }

  // The port being served, when there is an exposer.
  [[nodiscard]] std::optional<std::uint16_t> port() const noexcept { return port_; }
  // "http://127.0.0.1:<port>/metrics", or "" without an exposer.
  [[nodiscard]] std::string endpoint() const;
  // Why there is no exposer although one was asked for; "" otherwise.
  [[nodiscard]] const std::string& exposer_error() const noexcept { return exposer_error_; }

  // The family called `name`, made on first use. Asking again with another kind or other
  // label names is a programming error: std::logic_error naming both. Thread-safe; takes a
  // lock, so call these when an object is made, never per operation.
  [[nodiscard]] family<counter>& counters(const std::string& name, const std::string& help,
                                          std::vector<std::string> label_names = {});
  [[nodiscard]] family<gauge>& gauges(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names = {});
  [[nodiscard]] family<duration_histogram>& histograms(const std::string& name,
                                                       const std::string& help,
                                                       std::vector<std::string> label_names = {},
                                                       bucket_bounds bounds = latency_buckets());
  [[nodiscard]] callback_family& callbacks(const std::string& name, const std::string& help,
                                           std::vector<std::string> label_names, metric_kind kind);

  // Every family's current values in Prometheus' text format.
  [[nodiscard]] std::string serialize() const;
  // The same, as prometheus-cpp's structures.
  [[nodiscard]] std::vector<prometheus::MetricFamily> collect() const;

 private:
  class collector;
  template <class F>
  F& find_or_make(const std::string& name, metric_kind kind,
                  const std::vector<std::string>& label_names,
                  const std::function<std::unique_ptr<F>()>& make);

  exposer_options options_;
  std::shared_ptr<prometheus::Registry> registry_;
  mutable std::mutex families_mutex_;
  std::map<std::string, std::unique_ptr<family_base>> families_;
  std::shared_ptr<collector> collector_;  // what the exposer serves
  // Last: destroyed first, so that no scrape runs while the families go.
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::optional<std::uint16_t> port_;
  std::string exposer_error_;
};

}  // namespace cudactor::metrics
