#include "cudactor/metrics/registry.hpp"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <system_error>
#include <thread>

#include "cudactor/metrics/process_metrics.hpp"

namespace cudactor::metrics {

namespace {

// One TCP connection to the exposer, closed at once: it wakes civetweb's listener out of
// its poll, which otherwise waits up to 2 s between looks at the stop flag.
void knock(const std::string& address, std::uint16_t port) noexcept {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  if (address == "0.0.0.0" || ::inet_pton(AF_INET, address.c_str(), &to.sin_addr) != 1) {
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  (void)::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  ::close(fd);
}

}  // namespace

// What the exposer holds (weakly): everything the registry serves.
class registry::collector final : public prometheus::Collectable {
 public:
  explicit collector(const registry& owner) : owner_(owner) {}
  std::vector<prometheus::MetricFamily> Collect() const override { return owner_.collect(); }

 private:
  const registry& owner_;
};

registry::registry(exposer_options options)
    : options_(std::move(options)),
      registry_(std::make_shared<prometheus::Registry>()),
      collector_(std::make_shared<collector>(*this)) {
  if (!options_.enabled) return;
  const std::string bind = options_.address + ":" + std::to_string(options_.port);
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(bind);
    exposer_->RegisterCollectable(collector_);
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

registry::~registry() {
  if (!exposer_ || !port_) return;
  // Stopping civetweb sets a flag its listener reads between polls of up to 2 s: every
  // runtime's shutdown took about 1.9 s. Knocking on the port while it stops ends the poll
  // (10 ms). The knocks are plain connections, closed before any request; without a thread
  // to send them the stop is only slower.
  std::atomic<bool> stopped{false};
  std::thread knocker;
  try {
    knocker = std::thread{[&] {
      while (!stopped.load(std::memory_order_acquire)) {
        knock(options_.address, *port_);
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
      }
    }};
  } catch (const std::system_error&) {
  }
  exposer_.reset();
  stopped.store(true, std::memory_order_release);
  if (knocker.joinable()) knocker.join();
}

std::string registry::endpoint() const {
  if (!port_) return {};
  return "http://" + options_.address + ":" + std::to_string(*port_) + "/metrics";
}

template <class F>
F& registry::find_or_make(const std::string& name, metric_kind kind,
                          const std::vector<std::string>& label_names,
                          const std::function<std::unique_ptr<F>()>& make) {
  std::lock_guard<std::mutex> lock{families_mutex_};
  auto& known = families_[name];
  if (!known) {
    known = make();
    return static_cast<F&>(*known);
  }
  auto* same = dynamic_cast<F*>(known.get());
  if (same == nullptr || known->kind() != kind || known->label_names() != label_names) {
    std::string labels;
    for (const auto& l : label_names) labels += (labels.empty() ? "" : ",") + l;
    std::string theirs;
    for (const auto& l : known->label_names()) theirs += (theirs.empty() ? "" : ",") + l;
    throw std::logic_error{"metric family " + name + " exists as a " +
                           std::string{to_string(known->kind())} + " {" + theirs +
                           "}; asked for a " + std::string{to_string(kind)} + " {" + labels + "}"};
  }
  return *same;
}

family<counter>& registry::counters(const std::string& name, const std::string& help,
                                    std::vector<std::string> label_names) {
  return find_or_make<family<counter>>(name, metric_kind::counter, label_names, [&] {
    return std::make_unique<family<counter>>(name, help, label_names);
  });
}

family<gauge>& registry::gauges(const std::string& name, const std::string& help,
                                std::vector<std::string> label_names) {
  return find_or_make<family<gauge>>(name, metric_kind::gauge, label_names, [&] {
    return std::make_unique<family<gauge>>(name, help, label_names);
  });
}

family<duration_histogram>& registry::histograms(const std::string& name, const std::string& help,
                                                 std::vector<std::string> label_names,
                                                 bucket_bounds bounds) {
  return find_or_make<family<duration_histogram>>(name, metric_kind::histogram, label_names, [&] {
    return std::make_unique<family<duration_histogram>>(name, help, label_names, bounds);
  });
}

callback_family& registry::callbacks(const std::string& name, const std::string& help,
                                     std::vector<std::string> label_names, metric_kind kind) {
  return find_or_make<callback_family>(name, kind, label_names, [&] {
    return std::make_unique<callback_family>(name, help, label_names, kind);
  });
}

std::vector<prometheus::MetricFamily> registry::collect() const {
  std::vector<prometheus::MetricFamily> out;
  {
    std::lock_guard<std::mutex> lock{families_mutex_};
    out.reserve(families_.size());
    for (const auto& [name, f] : families_) out.push_back(f->collect());
  }
  auto theirs = registry_->Collect();
  out.insert(out.end(), std::make_move_iterator(theirs.begin()),
             std::make_move_iterator(theirs.end()));
  if (options_.process_metrics) {
    auto process = process_families();
    out.insert(out.end(), std::make_move_iterator(process.begin()),
               std::make_move_iterator(process.end()));
  }
  return out;
}

std::string registry::serialize() const {
  return prometheus::TextSerializer{}.Serialize(collect());
}

}  // namespace cudactor::metrics
