#include "cudactor/metrics/registry.hpp"

#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace cudactor::metrics {

registry::registry(exposer_options options)
    : options_(std::move(options)), registry_(std::make_shared<prometheus::Registry>()) {
  if (!options_.enabled) return;
  const std::string bind = options_.address + ":" + std::to_string(options_.port);
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(bind);
    exposer_->RegisterCollectable(registry_);
    const auto ports = exposer_->GetListeningPorts();
    if (ports.empty()) throw std::runtime_error("the exposer reports no listening port");
    port_ = static_cast<std::uint16_t>(ports.front());
  } catch (const std::exception& e) {
    exposer_.reset();
    port_.reset();
    exposer_error_ = "cannot serve metrics on " + bind + ": " + e.what();
    if (options_.failure == on_bind_failure::refuse) throw bind_error(exposer_error_);
  }
}

registry::~registry() = default;

std::string registry::endpoint() const {
  if (!port_) return {};
  return "http://" + options_.address + ":" + std::to_string(*port_) + "/metrics";
}

std::string registry::serialize() const {
  return prometheus::TextSerializer{}.Serialize(registry_->Collect());
}

}  // namespace cudactor::metrics
