// tests/common/metric_reader.hpp
//
// Reads a registry's current values the way a scrape would (collect()), by family name and
// label values, so that tests compare them with the counts they made themselves.
#pragma once

#include <boost/test/unit_test.hpp>

#include <map>
#include <string>

#include "cudactor/metrics/registry.hpp"

namespace cudactor::test {

using label_map = std::map<std::string, std::string>;

class metric_reader {
 public:
  explicit metric_reader(const metrics::registry& registry) : families_(registry.collect()) {}

  // The sample of `family` whose labels include `labels`; fails the test when there is none.
  const prometheus::ClientMetric& sample(const std::string& family, const label_map& labels) const {
    for (const auto& f : families_) {
      if (f.name != family) continue;
      for (const auto& m : f.metric) {
        if (matches(m, labels)) return m;
      }
    }
    BOOST_FAIL("no sample of " << family << " with the labels asked for");
    throw std::logic_error{"unreachable"};
  }
  [[nodiscard]] bool has(const std::string& family, const label_map& labels) const {
    for (const auto& f : families_) {
      if (f.name != family) continue;
      for (const auto& m : f.metric) {
        if (matches(m, labels)) return true;
      }
    }
    return false;
  }
  double counter(const std::string& family, const label_map& labels) const {
    return sample(family, labels).counter.value;
  }
  double gauge(const std::string& family, const label_map& labels) const {
    return sample(family, labels).gauge.value;
  }
  std::uint64_t observations(const std::string& family, const label_map& labels) const {
    return sample(family, labels).histogram.sample_count;
  }
  // Every sample of every family: what bounds a scrape's size.
  [[nodiscard]] std::size_t series() const {
    std::size_t n = 0;
    for (const auto& f : families_) n += f.metric.size();
    return n;
  }
  // Sum of a family's samples (counters or gauges) whose labels include `labels`.
  double sum(const std::string& family, const label_map& labels = {}) const {
    double out = 0;
    for (const auto& f : families_) {
      if (f.name != family) continue;
      for (const auto& m : f.metric) {
        if (matches(m, labels)) out += m.counter.value + m.gauge.value;
      }
    }
    return out;
  }

 private:
  static bool matches(const prometheus::ClientMetric& m, const label_map& labels) {
    for (const auto& [name, value] : labels) {
      bool found = false;
      for (const auto& l : m.label) found |= l.name == name && l.value == value;
      if (!found) return false;
    }
    return true;
  }

  std::vector<prometheus::MetricFamily> families_;
};

}  // namespace cudactor::test
