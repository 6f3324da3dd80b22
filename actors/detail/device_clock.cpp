#include "cudactor/actors/detail/device_clock.hpp"

#include "cudactor/actors/detail/clock.hpp"

namespace cudactor::detail {

bool device_clock::start(gpu::backend& device, gpu::stream_ref s) {
  base_ns_ = 0;
  auto base = device.create_event(gpu::event_kind::timing);
  if (!base) return false;
  if (!device.record(base.value().ref(), s).ok()) return false;
  base_ns_ = now_ns();
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
