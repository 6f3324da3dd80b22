#include "cudactor/metrics/cells.hpp"

#include <algorithm>
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

std::chrono::nanoseconds duration_histogram::quantile_bound(double q) const {
  const snapshot now = read();
  const std::vector<std::int64_t>& bounds = *bounds_;
  const std::vector<std::uint64_t>& counts = now.counts;
  const std::uint64_t count = now.count;
  if (count == 0 || bounds.empty()) return std::chrono::nanoseconds{0};
  const double clamped = std::isnan(q) ? 1.0 : std::min(1.0, std::max(0.0, q));
  // The rank of the quantile, counted from 1: the first bucket whose running total reaches it.
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(clamped * static_cast<double>(count))));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bounds.size() && i < counts.size(); ++i) {
    seen += counts[i];
    if (seen >= rank) return std::chrono::nanoseconds{bounds[i]};
  }
  return std::chrono::nanoseconds{bounds.back()};
}

}  // namespace cudactor::metrics
