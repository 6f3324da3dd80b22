#include "cudactor/actors/detail/device_clock.hpp"

#include <thread>

#include "cudactor/actors/detail/clock.hpp"

namespace cudactor::detail {

namespace {

// How long start() waits for the device to reach the base: microseconds on an idle stream;
// the bound is for a device (or a sanitized host backend) that is slow to get there.
constexpr std::int64_t base_wait_ns = 100'000'000;

}  // namespace

bool device_clock::start(gpu::backend& device, gpu::stream_ref s) {
  base_ns_ = 0;
  auto base = device.create_event(gpu::event_kind::timing);
  if (!base) return false;
  const std::int64_t asked = now_ns();
  if (!device.record(base.value().ref(), s).ok()) return false;
  // The base's host time is when the device was seen to reach it, not when it was asked to:
  // the device gets there a little later (a host worker's wake-up, a GPU's front end), and
  // stamps read against the earlier time would come out before the work was even submitted.
  // A short wait, once per clock, on an idle stream; it fails rather than wait past the
  // bound, and the owner then runs untimed.
  for (;;) {
    const gpu::query_result reached = device.query(base.value().ref());
    const std::int64_t now = now_ns();
    if (reached.ready()) {
      base_ns_ = now;
      break;
    }
    if (reached.failed() || now - asked > base_wait_ns) return false;
    std::this_thread::yield();
  }
  base_ = std::move(base.value());
  device_ = &device;
  return true;
}

bool device_clock::start(gpu::backend& device) {
  auto idle = device.create_stream(gpu::stream_options{"clock", gpu::stream_priority::normal});
  if (!idle) return false;
  return start(device, idle.value().ref());
}

std::int64_t device_clock::host_ns(gpu::event_ref e) const {
  if (base_ns_ == 0) return 0;
  auto elapsed = device_->elapsed(base_.ref(), e);
  return elapsed ? base_ns_ + elapsed->count() : 0;
}

}  // namespace cudactor::detail
