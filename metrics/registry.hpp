// metrics/registry.hpp
//
// Where cudactor's metrics live: one prometheus::Registry that the objects being measured
// add their families to, and an optional HTTP exposer serving it at /metrics. The exposer
// binds 127.0.0.1 by default (Debian's prometheus-cpp has no IPv6), port 9464; port 0 picks a
// free port and port() says which. A port that cannot be bound either stops start-up with a
// clear error or, when configured so, leaves the program running without metrics and says
// why. Knows nothing of CAF or of the device layer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

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
  ~registry();  // stops the exposer (which can take up to a couple of seconds)

  [[nodiscard]] prometheus::Registry& prometheus() noexcept { return *registry_; }
  [[nodiscard]] std::shared_ptr<prometheus::Registry> shared() const noexcept { return registry_; }

  // The port being served, when there is an exposer.
  [[nodiscard]] std::optional<std::uint16_t> port() const noexcept { return port_; }
  // "http://127.0.0.1:<port>/metrics", or "" without an exposer.
  [[nodiscard]] std::string endpoint() const;
  // Why there is no exposer although one was asked for; "" otherwise.
  [[nodiscard]] const std::string& exposer_error() const noexcept { return exposer_error_; }

  // Every family's current values in Prometheus' text format.
  [[nodiscard]] std::string serialize() const;

 private:
  exposer_options options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::optional<std::uint16_t> port_;
  std::string exposer_error_;
};

}  // namespace cudactor::metrics
