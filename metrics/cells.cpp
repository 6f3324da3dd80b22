#include "cudactor/metrics/cells.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace cudactor::metrics {

bucket_bounds latency_buckets() {
  static const bucket_bounds bounds = [] {
    std::vector<std::int64_t> ns;
    for (std::int64_t decade = 1'000; decade <= 1'000'000'000; decade *= 10) {
      ns.push_back(decade);
      ns.push_back(decade * 5 / 2);
      ns.push_back(decade * 5);
    }
    ns.push_back(10'000'000'000);
    return std::make_shared<const std::vector<std::int64_t>>(std::move(ns));
  }();
  return bounds;
}

bucket_bounds buckets_in_seconds(const std::vector<double>& seconds) {
  std::vector<std::int64_t> ns;
  ns.reserve(seconds.size());
  for (double s : seconds) {
    if (!(s > 0) || !std::isfinite(s)) {
      throw std::invalid_argument{"histogram bucket " + std::to_string(s) +
                                  " s: bounds must be positive and finite"};
    }
    const auto v = static_cast<std::int64_t>(std::llround(s * 1e9));
    if (!ns.empty() && v <= ns.back()) {
      throw std::invalid_argument{"histogram bucket " + std::to_string(s) +
                                  " s: bounds must increase strictly"};
    }
    ns.push_back(v);
  }
  return std::make_shared<const std::vector<std::int64_t>>(std::move(ns));
}

duration_histogram::duration_histogram(bucket_bounds bounds)
    : bounds_(bounds ? std::move(bounds) : latency_buckets()),
      counts_(new std::atomic<std::uint64_t>[bounds_->size() + 1]) {
  for (std::size_t i = 0; i <= bounds_->size(); ++i) counts_[i].store(0);
}

duration_histogram::snapshot duration_histogram::read() const {
  snapshot out;
  out.counts.resize(bounds_->size() + 1);
  for (std::size_t i = 0; i < out.counts.size(); ++i) {
    out.counts[i] = counts_[i].load(std::memory_order_relaxed);
    out.count += out.counts[i];
  }
  out.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return out;
}

}  // namespace cudactor::metrics
