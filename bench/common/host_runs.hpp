// bench/common/host_runs.hpp
//
// What the actor benchmarks share: a runtime on the host backend with the options passed on,
// results across fresh runtimes, and the direct path every actor path is compared with.
//
// Direct path: one thread does what a stream actor does (enqueue, signal, one watch per
// burst) for `streams` streams, keeping up to `depth` operations in flight per stream;
// completions arrive through the poller's progress callback, which updates an atomic the
// thread reads. With nothing to submit the thread blocks on a condition variable the callback
// signals, as a CAF worker blocks between messages: no fixed sleeps, and no spinning that
// takes the poller's core.
#pragma once

#include <caf/all.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/report.hpp"
#include "common/start_runtime.hpp"
#include "cudactor/actors/runtime.hpp"

namespace cudactor::bench {

constexpr std::uint64_t depth = 1024;

inline double direct_run(gpu::backend& device, gpu::completion_poller& poller, std::size_t streams,
                         std::uint64_t total, std::size_t batch) {
  struct line {
    gpu::stream s;
    std::atomic<timeline_point> reached{0};
    timeline_point base = 0;
    std::uint64_t sent = 0;
  };
  // How the submitting thread waits for completions when it has nothing to submit: on a
  // condition variable the progress callback signals (as a CAF worker waits for its next
  // message), not by spinning, which on 2 cores takes the poller's core away.
  struct waker {
    std::mutex mutex;
    std::condition_variable cv;
    std::atomic<std::uint64_t> reports{0};
    std::atomic<bool> waiting{false};
  };
  auto wake = std::make_shared<waker>();
  std::vector<std::unique_ptr<line>> lines;
  for (std::size_t i = 0; i < streams; ++i) {
    auto l = std::make_unique<line>();
    auto made = device.create_stream({"direct-" + std::to_string(i), gpu::stream_priority::normal});
    if (!made) {
      std::fprintf(stderr, "create_stream: %s\n", made.error().to_string().c_str());
      std::exit(1);
    }
    l->s = std::move(made.value());
    line* raw = l.get();
    if (!poller
             .subscribe(l->s,
                        [raw, wake](const gpu::stream_progress& p) {
                          raw->reached.store(p.reached, std::memory_order_release);
                          wake->reports.fetch_add(1);
                          if (wake->waiting.load()) {
                            std::lock_guard<std::mutex> lock{wake->mutex};
                            wake->cv.notify_one();
                          }
                        })
             .ok()) {
      std::exit(1);
    }
    lines.push_back(std::move(l));
  }
  const gpu::work_fn fn = [](const gpu::launch_context&) { return gpu::status{}; };
  // As the stream actors do: never more in flight than the backend's timeline takes.
  const std::uint64_t in_flight = std::min<std::uint64_t>(depth, device.max_in_flight());
  const auto start = now_ns();
  bool all_done = false;
  while (!all_done) {
    all_done = true;
    bool submitted = false;
    const std::uint64_t seen = wake->reports.load();
    for (auto& l : lines) {
      const std::uint64_t completed = l->reached.load(std::memory_order_acquire) - l->base;
      if (completed < total) all_done = false;
      while (l->sent < total && l->sent - completed + batch <= in_flight) {
        // As the stream actor does: enqueue each operation with its point's signal, then watch
        // the batch's points in one call.
        gpu::timeline_point first = 0, last = 0;
        for (std::size_t k = 0; k < batch; ++k) {
          auto issued = device.enqueue_signalled(l->s, fn);
          if (!issued.launched.ok()) std::exit(1);
          auto& point = issued.point;
          if (!point) std::exit(1);
          if (k == 0) first = *point;
          last = *point;
        }
        if (!poller.watch_points(l->s, first, last).ok()) std::exit(1);
        l->sent += batch;
        submitted = true;
      }
    }
    if (submitted || all_done) continue;
    wake->waiting.store(true);
    {
      std::unique_lock<std::mutex> lock{wake->mutex};
      wake->cv.wait(lock, [&] { return wake->reports.load() != seen; });
    }
    wake->waiting.store(false);
  }
  const double seconds = (now_ns() - start) * 1e-9;
  for (auto& l : lines) poller.subscribe(l->s, {}).ignore();
  return static_cast<double>(total * streams) / seconds;
}

// A runtime on the host backend with `args`, then the options the user passed on.
inline std::unique_ptr<runtime> start_runtime(runtime_config& config, std::vector<std::string> args,
                                              const std::vector<std::string>& passed_on) {
  return start_runtime_on("host", config, std::move(args), passed_on);
}

}  // namespace cudactor::bench
