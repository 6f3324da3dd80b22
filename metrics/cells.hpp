// metrics/cells.hpp
//
// The values behind cudactor's metrics: a counter, a gauge and a duration histogram, each a
// handful of relaxed atomics. The object being measured keeps a reference to its cells and
// updates them on its hot path with no lock and no lookup; the registry reads them when it is
// scraped. prometheus-cpp's own Histogram takes a mutex per observation, which is why these
// exist (docs/benchmarks.md says what they cost per operation).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace cudactor::metrics {

// Only goes up. Any number of writers.
class counter {
 public:
  void add(std::uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t value() const noexcept {
    return value_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// Goes up and down. Any number of writers.
class gauge {
 public:
  void set(std::int64_t v) noexcept { value_.store(v, std::memory_order_relaxed); }
  void add(std::int64_t n) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
  [[nodiscard]] std::int64_t value() const noexcept {
    return value_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<std::int64_t> value_{0};
};

// Upper bounds of a histogram's buckets, in nanoseconds, strictly increasing. The +Inf bucket
// is implied.
using bucket_bounds = std::shared_ptr<const std::vector<std::int64_t>>;

// 1 µs to 10 s in 1-2.5-5 steps: 22 buckets (and +Inf), wide enough for a poller's
// detection delay and a training step's barrier alike.
[[nodiscard]] bucket_bounds latency_buckets();
// Bounds given in seconds; invalid_argument unless positive and strictly increasing.
[[nodiscard]] bucket_bounds buckets_in_seconds(const std::vector<double>& seconds);

// A histogram of durations. Counts are kept per bucket (not cumulated) so that an
// observation is two atomic adds; the count reported is the sum of the buckets, so it always
// equals the +Inf bucket. Any number of writers.
class duration_histogram {
 public:
  explicit duration_histogram(bucket_bounds bounds);

  // `times` observations of the same duration: a caller that sees runs of equal values (a
  // batch completed at once, submitted in one burst) pays two atomic adds per run.
  void observe(std::chrono::nanoseconds d, std::uint64_t times = 1) noexcept {
    const std::int64_t ns = d.count() < 0 ? 0 : d.count();
    const auto& b = *bounds_;
    // Prometheus buckets are "less than or equal".
    const auto i = static_cast<std::size_t>(std::lower_bound(b.begin(), b.end(), ns) - b.begin());
    counts_[i].fetch_add(times, std::memory_order_relaxed);
    sum_ns_.fetch_add(static_cast<std::uint64_t>(ns) * times, std::memory_order_relaxed);
  }

  struct snapshot {
    std::vector<std::uint64_t> counts;  // per bucket, the last one is +Inf; not cumulative
    std::uint64_t count = 0;
    double sum_seconds = 0;
  };
  [[nodiscard]] snapshot read() const;
  // The upper bound of the bucket that holds quantile q (0 to 1) of what was observed: no
  // lower than the true quantile, and as close as the buckets are fine. 0 when nothing was
  // observed; the largest finite bound when the quantile falls in the +Inf bucket.
  [[nodiscard]] std::chrono::nanoseconds quantile_bound(double q) const;
  [[nodiscard]] const bucket_bounds& bounds() const noexcept { return bounds_; }

 private:
  bucket_bounds bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
  std::atomic<std::uint64_t> sum_ns_{0};
};

}  // namespace cudactor::metrics
