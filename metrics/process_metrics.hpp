// metrics/process_metrics.hpp
//
// The standard process metrics (process_cpu_seconds_total, process_resident_memory_bytes and
// friends, as the Go and Java clients export them), which prometheus-cpp does not provide.
// Read from /proc at scrape time, so they cost nothing between scrapes. Linux only; elsewhere
// sample_process() answers nothing and the families are left out.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace cudactor::metrics {

struct process_sample {
  double cpu_seconds = 0;  // user + system
  std::uint64_t resident_bytes = 0;
  std::uint64_t virtual_bytes = 0;
  double start_time_seconds = 0;  // since the Unix epoch
  std::uint64_t threads = 0;
  std::uint64_t open_fds = 0;
  std::uint64_t max_fds = 0;
};

[[nodiscard]] std::optional<process_sample> sample_process();

// One family per field of process_sample; empty when the process cannot be read.
[[nodiscard]] std::vector<prometheus::MetricFamily> process_families();

}  // namespace cudactor::metrics
