// actors/detail/device_clock.hpp
//
// Host times for device events, without a host callback on the stream. A timing event is
// recorded on an idle stream at a known host time (the base); a timing event recorded later
// on the same device is then at base + elapsed(base, event) on the host's steady clock. This
// is how a stream actor and the coordinator stamp when the device started and finished an
// operation: two timing events around it, read after it ended, and never a host callback,
// which would stall the stream while the host runs it.
#pragma once

#include <cstdint>

#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/event.hpp"

namespace cudactor::detail {

class device_clock {
 public:
  device_clock() = default;

  // Records the base on `s`, which must be idle (a new stream), and waits (a bounded spin,
  // microseconds on an idle stream) until the device is seen to reach it: its host time is
  // then known to within that look. False when the backend cannot time events or the base
  // is not reached within 100 ms; then there is no clock and every stamp is 0.
  [[nodiscard]] bool start(gpu::backend& device, gpu::stream_ref s);
  // The same on a stream of its own, made for the purpose and destroyed after: for owners
  // whose streams may already be busy.
  [[nodiscard]] bool start(gpu::backend& device);

  [[nodiscard]] bool running() const noexcept { return base_ns_ != 0; }

  // The host time (now_ns's clock) at which the device reached `e`, a recorded timing event
  // that has completed; 0 when that cannot be said (no clock, or the event never ran).
  [[nodiscard]] std::int64_t host_ns(gpu::event_ref e) const;

 private:
  gpu::backend* device_ = nullptr;
  gpu::event base_;
  std::int64_t base_ns_ = 0;
};

}  // namespace cudactor::detail
