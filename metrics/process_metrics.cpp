#include "cudactor/metrics/process_metrics.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace cudactor::metrics {

namespace {

std::optional<double> boot_time_seconds() {
  std::ifstream in{"/proc/stat"};
  std::string key;
  while (in >> key) {
    if (key == "btime") {
      double value = 0;
      if (in >> value) return value;
      return std::nullopt;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

std::uint64_t count_open_fds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  std::uint64_t n = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n > 0 ? n - 1 : 0;  // opendir's own descriptor
}

prometheus::MetricFamily one(const char* name, const char* help, prometheus::MetricType type,
                             double value) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(metric);
  return family;
}

}  // namespace

std::optional<process_sample> sample_process() {
  std::ifstream in{"/proc/self/stat"};
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields{line.substr(close + 2)};
  // Fields 3.. of proc(5); we need 14 utime, 15 stime, 20 num_threads, 22 starttime,
  // 23 vsize, 24 rss.
  std::string field;
  unsigned long long utime = 0, stime = 0, threads = 0, start = 0, vsize = 0, rss = 0;
  for (int i = 3; i <= 24 && fields >> field; ++i) {
    const auto value = [&] { return std::stoull(field); };
    switch (i) {
      case 14: utime = value(); break;
      case 15: stime = value(); break;
      case 20: threads = value(); break;
      case 22: start = value(); break;
      case 23: vsize = value(); break;
      case 24: rss = value(); break;
      default: break;
    }
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  const long page = sysconf(_SC_PAGESIZE);
  if (ticks <= 0 || page <= 0) return std::nullopt;
  process_sample out;
  out.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(ticks);
  out.resident_bytes = rss * static_cast<unsigned long long>(page);
  out.virtual_bytes = vsize;
  out.threads = threads;
  if (auto boot = boot_time_seconds()) {
    out.start_time_seconds = *boot + static_cast<double>(start) / static_cast<double>(ticks);
  }
  out.open_fds = count_open_fds();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) out.max_fds = limit.rlim_cur;
  return out;
}

std::vector<prometheus::MetricFamily> process_families() {
  std::vector<prometheus::MetricFamily> out;
  const auto sample = sample_process();
  if (!sample) return out;
  using prometheus::MetricType;
  out.push_back(one("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                    MetricType::Counter, sample->cpu_seconds));
  out.push_back(one("process_resident_memory_bytes", "Resident memory size in bytes.",
                    MetricType::Gauge, static_cast<double>(sample->resident_bytes)));
  out.push_back(one("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                    MetricType::Gauge, static_cast<double>(sample->virtual_bytes)));
  out.push_back(one("process_start_time_seconds",
                    "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
                    sample->start_time_seconds));
  out.push_back(one("process_threads", "Number of OS threads in the process.", MetricType::Gauge,
                    static_cast<double>(sample->threads)));
  out.push_back(one("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
                    static_cast<double>(sample->open_fds)));
  out.push_back(one("process_max_fds", "Maximum number of open file descriptors.",
                    MetricType::Gauge, static_cast<double>(sample->max_fds)));
  return out;
}

}  // namespace cudactor::metrics
