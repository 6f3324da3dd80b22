// actors/detail/device_clock.hpp
//
// Host times for device events, without a host callback on the stream. A timing event is
// recorded on an idle stream at a known host time (the base); a timing event recorded later
// on the same device is then at base + elapsed(base, event) on the host's steady clock. This
// is how a stream actor and the coordinator stamp when the device started and finished an
// operation: two timing events around it, read after it ended, and never a host callback,
// which would stall the stream while the host runs it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/event.hpp"

namespace cudactor::detail {

class device_clock {
 public:
  device_clock() = default;

  // Records the base on `s`, which must be idle (a new stream), and waits (a bounded spin,
  // microseconds on an idle stream) until the device is seen to reach it: its host time is
  // the middle of the window between the last look that found it short and the one that
  // found it reached, retried with a fresh base while that window is over 50 us (device_clock
  // .cpp says why). False when the backend cannot time events or no base is reached within
  // `within`; then there is no clock and every stamp is 0. An actor that starts one blocks
  // its thread that long at most: the runtime starts one before any actor, with a longer
  // bound, and hands it to all of them (shared_clock).
  [[nodiscard]] bool start(gpu::backend& device, gpu::stream_ref s,
                           std::chrono::nanoseconds within = default_wait);
  // The same on a stream of its own, made for the purpose and destroyed after: for owners
  // whose streams may already be busy.
  [[nodiscard]] bool start(gpu::backend& device, std::chrono::nanoseconds within = default_wait);

  static constexpr std::chrono::nanoseconds default_wait = std::chrono::milliseconds{100};

  [[nodiscard]] bool running() const noexcept { return base_ns_ != 0; }

  // The host time (now_ns's clock) at which the device reached `e`, a recorded timing event
  // that has completed; 0 when that cannot be said (no clock, or the event never ran).
  [[nodiscard]] std::int64_t host_ns(gpu::event_ref e) const;

 private:
  gpu::backend* device_ = nullptr;
  gpu::event base_;
  std::int64_t base_ns_ = 0;
};

// One clock for every owner on a device, read by many actors at once (host_ns is const and
// only asks the backend).
using shared_clock = std::shared_ptr<const device_clock>;

// A started clock to share (on `s`, or on a stream of its own), or empty when start() fails.
[[nodiscard]] shared_clock start_shared_clock(
    gpu::backend& device, std::chrono::nanoseconds within = device_clock::default_wait);
[[nodiscard]] shared_clock start_shared_clock(
    gpu::backend& device, gpu::stream_ref s,
    std::chrono::nanoseconds within = device_clock::default_wait);

}  // namespace cudactor::detail
