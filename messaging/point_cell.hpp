// messaging/point_cell.hpp
//
// Where an operation the coordinator sent will sit on its stream's timeline, published by the
// stream actor that issues it. A dependent on another stream is sent in the same pass as its
// dependency, with a wait on the dependency's cell instead of a point: its stream actor places
// the device wait once the point is there, and until then holds the dependent (and what comes
// after it on its stream) without asking the coordinator. Raw CUDA places a cross-stream wait
// as soon as the event it waits for is recorded; this is the same rule ("issued first"), which
// also keeps clear of the hardware-queue deadlock that waiting for a value not yet written
// invites.
//
// One writer (the issuing stream actor) sets the point once, or abandons it when the operation
// will never be issued (its stream broke or shut down, its pass was refused). Readers are the
// stream actors holding dependents: a reader that finds no point yet leaves its address and is
// told (issued_atom, a message, never a blocked thread) once there is one. Local only: a cell
// travels inside stream_dispatch, which never leaves its process.
#pragma once

#include <caf/actor_addr.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "cudactor/gpu/types.hpp"

namespace cudactor {

class point_cell {
 public:
  // The point of an operation that will never be issued.
  static constexpr gpu::timeline_point never = ~gpu::timeline_point{0};

  point_cell() = default;
  point_cell(const point_cell&) = delete;
  point_cell& operator=(const point_cell&) = delete;

  // 0 while not issued, `never` once abandoned, else the point.
  [[nodiscard]] gpu::timeline_point point() const noexcept {
    return point_.load(std::memory_order_acquire);
  }
  // The point, or 0 after leaving `waiter` to be told (issued_atom) once the cell is set.
  // Weak: a waiter that is gone is not told, and a cell keeps nobody alive.
  [[nodiscard]] gpu::timeline_point point_or_tell(const caf::actor_addr& waiter);
  // The writer's side, once: the operation is on its stream at `point`, or never will be.
  void publish(gpu::timeline_point point);
  void abandon() { publish(never); }

 private:
  std::atomic<gpu::timeline_point> point_{0};
  std::atomic<bool> watched_{false};
  std::mutex mutex_;  // guards waiters_, taken only when someone waits
  std::vector<caf::actor_addr> waiters_;
};

}  // namespace cudactor
