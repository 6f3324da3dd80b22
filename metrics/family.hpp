// metrics/family.hpp
//
// A metric family: one name, one help text, a fixed list of label names, and one cell per set
// of label values. Objects that are measured ask the registry for the family once, add their
// own label values once, and keep the cell's reference; a scrape walks the families under
// their mutex. The label values added are the only series there will be, which is what keeps
// cardinality bounded: nothing here is created per operation.
//
// callback_family is for values that already exist elsewhere (a poller's counters, a pool's
// size): each series is a function read at scrape time, removed when its handle goes.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cudactor/metrics/cells.hpp"

namespace cudactor::metrics {

enum class metric_kind : std::uint8_t { counter, gauge, histogram };

[[nodiscard]] std::string_view to_string(metric_kind kind) noexcept;

using label_values = std::vector<std::string>;

class family_base {
 public:
  family_base(std::string name, std::string help, std::vector<std::string> label_names,
              metric_kind kind);
  family_base(const family_base&) = delete;
  family_base& operator=(const family_base&) = delete;
  virtual ~family_base() = default;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::string& help() const noexcept { return help_; }
  [[nodiscard]] const std::vector<std::string>& label_names() const noexcept {
    return label_names_;
  }
  [[nodiscard]] metric_kind kind() const noexcept { return kind_; }
  // How many label sets the family holds.
  [[nodiscard]] virtual std::size_t size() const = 0;
  [[nodiscard]] virtual prometheus::MetricFamily collect() const = 0;

 protected:
  // invalid_argument naming the family when `values` does not match the label names.
  void check(const label_values& values) const;
  [[nodiscard]] prometheus::MetricFamily empty_family() const;
  [[nodiscard]] std::vector<prometheus::ClientMetric::Label> labels_of(
      const label_values& values) const;

 private:
  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
  metric_kind kind_;
};

namespace detail {
void fill(prometheus::ClientMetric& out, const counter& cell);
void fill(prometheus::ClientMetric& out, const gauge& cell);
void fill(prometheus::ClientMetric& out, const duration_histogram& cell);
template <class Cell>
constexpr metric_kind kind_of() noexcept {
  if constexpr (std::is_same_v<Cell, counter>) return metric_kind::counter;
  if constexpr (std::is_same_v<Cell, gauge>) return metric_kind::gauge;
  return metric_kind::histogram;
}
}  // namespace detail

// Cell is counter, gauge or duration_histogram.
template <class Cell>
class family final : public family_base {
 public:
  family(std::string name, std::string help, std::vector<std::string> label_names,
         bucket_bounds bounds = nullptr)
      : family_base(std::move(name), std::move(help), std::move(label_names),
                    detail::kind_of<Cell>()),
        bounds_(std::move(bounds)) {}

  // The cell for these label values, made on first use. The reference stays valid as long
  // as the family (the registry) does. Takes a lock: call it once, not per operation.
  [[nodiscard]] Cell& add(const label_values& values) {
    check(values);
    std::lock_guard<std::mutex> lock{mutex_};
    auto& cell = series_[values];
    if (!cell) {
      if constexpr (std::is_same_v<Cell, duration_histogram>) {
        cell = std::make_unique<Cell>(bounds_);
      } else {
        cell = std::make_unique<Cell>();
      }
    }
    return *cell;
  }

  [[nodiscard]] std::size_t size() const override {
    std::lock_guard<std::mutex> lock{mutex_};
    return series_.size();
  }

  [[nodiscard]] prometheus::MetricFamily collect() const override {
    prometheus::MetricFamily out = empty_family();
    std::lock_guard<std::mutex> lock{mutex_};
    out.metric.reserve(series_.size());
    for (const auto& [values, cell] : series_) {
      prometheus::ClientMetric metric;
      metric.label = labels_of(values);
      detail::fill(metric, *cell);
      out.metric.push_back(std::move(metric));
    }
    return out;
  }

 private:
  bucket_bounds bounds_;
  mutable std::mutex mutex_;
  std::map<label_values, std::unique_ptr<Cell>> series_;
};

class callback_family;

// Keeps one callback series alive; destroying (or resetting) it removes the series, after
// which its function is not called again.
class callback_series {
 public:
  callback_series() = default;
  callback_series(callback_series&& other) noexcept;
  callback_series& operator=(callback_series&& other) noexcept;
  callback_series(const callback_series&) = delete;
  callback_series& operator=(const callback_series&) = delete;
  ~callback_series();
  void reset() noexcept;

 private:
  friend class callback_family;
  callback_series(callback_family* owner, std::uint64_t id) : owner_(owner), id_(id) {}
  callback_family* owner_ = nullptr;
  std::uint64_t id_ = 0;
};

// Counters or gauges read through a function when scraped. The function runs on the scraping
// thread under the family's lock: it must be quick and must not touch the registry.
class callback_family final : public family_base {
 public:
  using read_fn = std::function<double()>;

  callback_family(std::string name, std::string help, std::vector<std::string> label_names,
                  metric_kind kind);

  // invalid_argument if a live series already has these label values.
  [[nodiscard]] callback_series add(const label_values& values, read_fn read);
  [[nodiscard]] std::size_t size() const override;
  [[nodiscard]] prometheus::MetricFamily collect() const override;

 private:
  friend class callback_series;
  void remove(std::uint64_t id) noexcept;

  struct entry {
    label_values values;
    read_fn read;
  };
  mutable std::mutex mutex_;
  std::map<std::uint64_t, entry> series_;
  std::uint64_t next_id_ = 1;
};

}  // namespace cudactor::metrics
