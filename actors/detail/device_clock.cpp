#include "cudactor/actors/detail/device_clock.hpp"

#include <thread>

#include "cudactor/actors/detail/clock.hpp"

namespace cudactor::detail {

namespace {

// A base is taken once the moment the device reached it is known to within this window.
constexpr std::int64_t good_window_ns = 50'000;
// The time bound is what limits the retries: on a loaded machine (3 busy processes on 2
// cores) an attempt takes ~6 ms and its window is often milliseconds, and 16 attempts (93 ms)
// left the base 2 ms off; within the runtime's 2 s a narrow window is found.
constexpr int attempts = 4096;

}  // namespace

// The base's host time is when the device reached it, not when it was asked to: the device
// gets there a little later (a host worker's wake-up, a GPU's front end), and stamps read
// against the earlier time would come out before their work was even submitted. The reach
// happened between the last look that found the base not reached and the look that found it
// reached; the base's time is the middle of that window. A window made long by this thread
// being descheduled between two looks (a loaded machine) would shift every later stamp, so a
// long one is retried with a fresh base, up to `attempts` times within the overall bound, and
// the narrowest is kept.
bool device_clock::start(gpu::backend& device, gpu::stream_ref s, std::chrono::nanoseconds within) {
  base_ns_ = 0;
  const std::int64_t base_wait_ns = within.count();
  const std::int64_t began = now_ns();
  gpu::event best;
  std::int64_t best_ns = 0;
  std::int64_t best_window = 0;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    auto base = device.create_event(gpu::event_kind::timing);
    if (!base) return false;
    std::int64_t previous = now_ns();  // the base cannot be reached before it is recorded
    if (!device.record(base.value().ref(), s).ok()) return false;
    std::int64_t reached_at = 0;
    std::int64_t window = 0;
    for (;;) {
      const gpu::query_result reached = device.query(base.value().ref());
      const std::int64_t now = now_ns();
      if (reached.ready()) {
        window = now - previous;
        reached_at = previous + window / 2;
        break;
      }
      if (reached.failed() || now - began > base_wait_ns) break;
      previous = now;
      std::this_thread::yield();
    }
    if (reached_at != 0 && (!best || window < best_window)) {
      best = std::move(base.value());
      best_ns = reached_at;
      best_window = window;
    }
    if ((best && best_window <= good_window_ns) || now_ns() - began > base_wait_ns) break;
  }
  if (!best) return false;
  base_ = std::move(best);
  base_ns_ = best_ns;
  device_ = &device;
  return true;
}

bool device_clock::start(gpu::backend& device, std::chrono::nanoseconds within) {
  auto idle = device.create_stream(gpu::stream_options{"clock", gpu::stream_priority::normal});
  if (!idle) return false;
  return start(device, idle.value().ref(), within);
}

std::int64_t device_clock::host_ns(gpu::event_ref e) const {
  if (base_ns_ == 0) return 0;
  auto elapsed = device_->elapsed(base_.ref(), e);
  return elapsed ? base_ns_ + elapsed->count() : 0;
}

shared_clock start_shared_clock(gpu::backend& device, std::chrono::nanoseconds within) {
  auto clock = std::make_shared<device_clock>();
  if (!clock->start(device, within)) return {};
  return clock;
}

shared_clock start_shared_clock(gpu::backend& device, gpu::stream_ref s,
                                std::chrono::nanoseconds within) {
  auto clock = std::make_shared<device_clock>();
  if (!clock->start(device, s, within)) return {};
  return clock;
}

}  // namespace cudactor::detail
