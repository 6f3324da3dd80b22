#include "cudactor/metrics/family.hpp"

#include <limits>
#include <stdexcept>

namespace cudactor::metrics {

std::string_view to_string(metric_kind kind) noexcept {
  switch (kind) {
    case metric_kind::counter: return "counter";
    case metric_kind::gauge: return "gauge";
    case metric_kind::histogram: return "histogram";
  }
  return "unknown";
}

family_base::family_base(std::string name, std::string help, std::vector<std::string> label_names,
                         metric_kind kind)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      kind_(kind) {}

void family_base::check(const label_values& values) const {
  if (values.size() == label_names_.size()) return;
  throw std::invalid_argument{"metric family " + name_ + " has " +
                              std::to_string(label_names_.size()) + " labels, " +
                              std::to_string(values.size()) + " values were given"};
}

prometheus::MetricFamily family_base::empty_family() const {
  prometheus::MetricFamily out;
  out.name = name_;
  out.help = help_;
  switch (kind_) {
    case metric_kind::counter: out.type = prometheus::MetricType::Counter; break;
    case metric_kind::gauge: out.type = prometheus::MetricType::Gauge; break;
    case metric_kind::histogram: out.type = prometheus::MetricType::Histogram; break;
  }
  return out;
}

std::vector<prometheus::ClientMetric::Label> family_base::labels_of(
    const label_values& values) const {
  std::vector<prometheus::ClientMetric::Label> out;
  out.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out.push_back({label_names_[i], values[i]});
  return out;
}

namespace detail {

void fill(prometheus::ClientMetric& out, const counter& cell) {
  out.counter.value = static_cast<double>(cell.value());
}

void fill(prometheus::ClientMetric& out, const gauge& cell) {
  out.gauge.value = static_cast<double>(cell.value());
}

void fill(prometheus::ClientMetric& out, const duration_histogram& cell) {
  const auto snap = cell.read();
  const auto& bounds = *cell.bounds();
  out.histogram.sample_count = snap.count;
  out.histogram.sample_sum = snap.sum_seconds;
  out.histogram.bucket.reserve(snap.counts.size());
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < snap.counts.size(); ++i) {
    cumulative += snap.counts[i];
    prometheus::ClientMetric::Bucket bucket;
    bucket.cumulative_count = cumulative;
    bucket.upper_bound = i < bounds.size() ? static_cast<double>(bounds[i]) / 1e9
                                           : std::numeric_limits<double>::infinity();
    out.histogram.bucket.push_back(bucket);
  }
}

}  // namespace detail

callback_series::callback_series(callback_series&& other) noexcept
    : owner_(other.owner_), id_(other.id_) {
  other.owner_ = nullptr;
}

callback_series& callback_series::operator=(callback_series&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = other.owner_;
    id_ = other.id_;
    other.owner_ = nullptr;
  }
  return *this;
}

callback_series::~callback_series() { reset(); }

void callback_series::reset() noexcept {
  if (owner_ != nullptr) owner_->remove(id_);
  owner_ = nullptr;
}

callback_family::callback_family(std::string name, std::string help,
                                 std::vector<std::string> label_names, metric_kind kind)
    : family_base(std::move(name), std::move(help), std::move(label_names), kind) {
  if (kind == metric_kind::histogram) {
    throw std::invalid_argument{"metric family " + this->name() +
                                ": a callback family holds counters or gauges"};
  }
}

callback_series callback_family::add(const label_values& values, read_fn read) {
  check(values);
  std::lock_guard<std::mutex> lock{mutex_};
  for (const auto& [id, e] : series_) {
    if (e.values == values) {
      throw std::invalid_argument{"metric family " + name() +
                                  ": a series with these label values is already there"};
    }
  }
  const std::uint64_t id = next_id_++;
  series_.emplace(id, entry{values, std::move(read)});
  return callback_series{this, id};
}

std::size_t callback_family::size() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return series_.size();
}

void callback_family::remove(std::uint64_t id) noexcept {
  std::lock_guard<std::mutex> lock{mutex_};
  series_.erase(id);
}

prometheus::MetricFamily callback_family::collect() const {
  prometheus::MetricFamily out = empty_family();
  std::lock_guard<std::mutex> lock{mutex_};
  for (const auto& [id, e] : series_) {
    prometheus::ClientMetric metric;
    metric.label = labels_of(e.values);
    const double v = e.read();
    if (kind() == metric_kind::counter) {
      metric.counter.value = v;
    } else {
      metric.gauge.value = v;
    }
    out.metric.push_back(std::move(metric));
  }
  return out;
}

}  // namespace cudactor::metrics
