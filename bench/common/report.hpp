// bench/common/report.hpp
//
// What every cudactor benchmark shares: command-line mode (--quick), latency samples and
// their percentiles, results across rounds, thread CPU time, a plain-text table for people,
// and the one JSON object the last line of output must be, for scripts.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace cudactor::bench {

struct run_mode {
  bool quick = false;
  // Whatever follows "--": options a benchmark hands on to what it starts (a runtime's
  // cudactor.* and scheduler.* options, say).
  std::vector<std::string> passed_on;

  static run_mode parse(int argc, char** argv) {
    run_mode mode;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--quick") == 0) {
        mode.quick = true;
      } else if (std::strcmp(argv[i], "--") == 0) {
        mode.passed_on.assign(argv + i + 1, argv + argc);
        break;
      } else {
        std::fprintf(stderr, "usage: %s [--quick] [-- options...]\n", argv[0]);
        std::exit(2);
      }
    }
    return mode;
  }
};

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU time of the calling thread.
inline std::int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

struct percentiles {
  double p50 = 0, p99 = 0, max = 0;
  std::size_t n = 0;
};

// Nearest-rank percentiles of samples in microseconds.
inline percentiles summarize_us(std::vector<double> samples) {
  percentiles out;
  out.n = samples.size();
  if (samples.empty()) return out;
  std::sort(samples.begin(), samples.end());
  auto rank = [&](double q) {
    const auto index = static_cast<std::size_t>(std::ceil(q * samples.size())) - 1;
    return samples[std::min(index, samples.size() - 1)];
  };
  out.p50 = rank(0.50);
  out.p99 = rank(0.99);
  out.max = samples.back();
  return out;
}

// Rows of already formatted cells, printed with aligned columns.
class table {
 public:
  explicit table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(const std::string& title) const {
    std::vector<std::size_t> width(rows_.front().size(), 0);
    for (const auto& row : rows_) {
      for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    std::printf("\n%s\n", title.c_str());
    for (const auto& row : rows_) {
      for (std::size_t i = 0; i < row.size(); ++i) {
        std::printf(i == 0 ? "%-*s" : "  %*s", static_cast<int>(width[i]), row[i].c_str());
      }
      std::printf("\n");
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

inline std::string fixed(double value, int decimals = 1) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

// A flat JSON object; numbers are written with enough digits to compare runs.
class json_line {
 public:
  void add(const std::string& key, double value) {
    std::ostringstream out;
    out.precision(6);
    out << value;
    fields_.emplace_back(key, std::isfinite(value) ? out.str() : "null");
  }
  void add(const std::string& key, const std::string& value) {
    fields_.emplace_back(key, "\"" + value + "\"");
  }
  void add(const std::string& key, bool value) {
    fields_.emplace_back(key, value ? "true" : "false");
  }
  void print() const {
    std::string line = "{";
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      if (i > 0) line += ", ";
      line += "\"" + fields_[i].first + "\": " + fields_[i].second;
    }
    line += "}";
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// Scenario results across fresh runtimes: on 2 cores with more threads than cores, one
// process can settle into a slow schedule for all of its runs, so each round starts anew.
struct samples {
  std::vector<double> xs;
  void add(double x) { xs.push_back(x); }
  [[nodiscard]] double median() const {
    auto v = xs;
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  }
  [[nodiscard]] std::string range() const {
    if (xs.empty()) return "-";
    auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
    return fixed(*lo / 1e3, 0) + "k-" + fixed(*hi / 1e3, 0) + "k";
  }
};

}  // namespace cudactor::bench
