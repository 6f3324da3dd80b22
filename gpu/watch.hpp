// gpu/watch.hpp
//
// The vocabulary of the completion poller: what a watch is (a stream plus a timeline point or
// an event), how it is answered (exactly once: completed with the time it was detected,
// failed with the device layer's error, timed out, or cancelled), the once-per-tick progress
// report a stream's owner can subscribe to, and the watchdog's report of a watch that has
// waited too long. Plain data and callback types; the machinery is in completion_poller.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/gpu/event.hpp"
#include "cudactor/gpu/status.hpp"
#include "cudactor/gpu/stream.hpp"
#include "cudactor/gpu/types.hpp"

namespace cudactor::gpu {

using watch_clock = std::chrono::steady_clock;

// When a watch gives up: nullopt waits without limit.
using watch_deadline = std::optional<watch_clock::time_point>;

// Names one watch of one poller. Ordered by when the watch was made; the stream is part of
// it so that cancel() finds the watch without a global table.
struct watch_id {
  std::uint64_t sequence = 0;  // 0 names no watch
  handle_id stream;

  [[nodiscard]] bool empty() const noexcept { return sequence == 0; }
  friend bool operator==(const watch_id& a, const watch_id& b) noexcept {
    return a.sequence == b.sequence && a.stream == b.stream;
  }
  friend bool operator!=(const watch_id& a, const watch_id& b) noexcept { return !(a == b); }
};

enum class watch_outcome : std::uint8_t { completed, failed, timed_out, cancelled };

[[nodiscard]] std::string_view to_string(watch_outcome value) noexcept;

// The one answer every watch gets.
struct watch_result {
  watch_id id;
  watch_outcome outcome = watch_outcome::completed;
  // ok when completed; otherwise why not: the point's failure (op_failed, dependency_failed,
  // device_lost, invalid_handle...), status_code::timeout, or status_code::cancelled.
  status error;
  timeline_point point = 0;  // the watched timeline value; 0 for an event watch
  // When the poller found the answer; for `completed`, the detection time.
  watch_clock::time_point detected{};

  [[nodiscard]] bool completed() const noexcept { return outcome == watch_outcome::completed; }
};

// Runs on the poller's thread: keep it short and never block in it (hand the result on, e.g.
// as an actor message). It may call watch(), cancel() and subscribe().
using watch_callback = std::function<void(const watch_result&)>;

// "Stream S has reached point N": at most one per stream per tick, covering every timeline
// watch on that stream the tick answered. A failed point still moves the stream past it, so
// it counts in `reached` and is also listed in `failures`.
struct stream_progress {
  stream_ref stream;
  timeline_point reached = 0;
  std::vector<std::pair<timeline_point, status>> failures;  // ascending by point
  watch_clock::time_point detected{};
};

using progress_callback = std::function<void(const stream_progress&)>;

// The watchdog's report: the oldest watch of a stream has waited longer than the threshold.
// Reported once per watch; the watches behind it wait on it.
struct stuck_watch {
  watch_id id;
  stream_ref stream;
  std::string stream_name;
  timeline_point point = 0;  // 0 for an event watch
  std::chrono::nanoseconds age{0};
  std::size_t waiting_behind = 0;
};

using stuck_callback = std::function<void(const stuck_watch&)>;

}  // namespace cudactor::gpu
