// gpu/timeline.hpp
//
// A timeline signal: a monotonically increasing 64-bit counter per stream, as in Vulkan
// timeline semaphores. `signalled()` is the newest value signalled on the stream,
// `completed()` the newest value the stream has passed. Waiting for a value is how code that
// is not an actor blocks on stream progress; actors never wait here, they ask the completion
// poller, which uses query().
//
// Implementations: host_timeline (atomics + a condition variable) and, in the CUDA backend,
// a ring of events keyed by timeline value.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "cudactor/gpu/status.hpp"
#include "cudactor/gpu/types.hpp"

namespace cudactor::gpu {

class timeline {
 public:
  virtual ~timeline() = default;

  // The newest value signalled (0 before the first signal).
  [[nodiscard]] virtual timeline_point signalled() const noexcept = 0;

  // The newest value reached. May ask the device (CUDA), hence not const.
  [[nodiscard]] virtual timeline_point completed() = 0;

  [[nodiscard]] virtual bool is_reached(timeline_point value) { return completed() >= value; }

  // ready once the value is reached; failed when the work before it failed (the error says
  // how) or the device was lost; not_ready otherwise.
  [[nodiscard]] virtual query_result query(timeline_point value) = 0;

  // Blocks until the value is reached. A zero timeout waits without limit. Answers ok,
  // timeout, the failure of the point, or device_lost. A value beyond anything signalled can
  // still be reached by later signals, so it is waited for like any other.
  [[nodiscard]] virtual status wait(timeline_point value, std::chrono::milliseconds timeout) = 0;

  // Calls `listener` each time the timeline moves (a value reached, a failure, a lost device)
  // on the thread that moved it: it must be short, must not block and must not call back into
  // the timeline. Answers an id for remove_listener(), or 0 when this timeline cannot notify
  // (the CUDA timeline moves only when queried; use a host callback on its stream instead).
  [[nodiscard]] virtual std::uint64_t add_listener(std::function<void()> listener) {
    (void)listener;
    return 0;
  }
  // After this returns the listener is not called again (a call already running may finish).
  virtual void remove_listener(std::uint64_t id) { (void)id; }
};

}  // namespace cudactor::gpu
