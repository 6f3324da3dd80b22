// facade/owned_event.hpp
//
// An event recorded through the facade, owned by whoever holds it: copies share the one pool
// lease, and the last copy to go gives it back to the runtime's event pool (a long-running
// service that records an event per step never fills the pool). It says where it was last
// recorded (stream, point) and can be waited for on another stream, recorded anew, or timed
// against another timing event (event_pool::elapsed).
//
//   cudactor::owned_event start = s.record(gpu::event_kind::timing).get();
//   s.submit(kernel);
//   cudactor::owned_event end = s.record(gpu::event_kind::timing).get();
//   other.wait(end);                               // other's later work comes after the kernel
//   s.synchronize().get();
//   auto took = pool.elapsed(start, end).get();    // as cudaEventElapsedTime
//
// A facade call that takes one keeps a copy until it is done with the event (a wait: until
// the waiting stream has passed it), so dropping an event right after asking is safe. Events
// leased with event_pool::acquire stay the caller's to release; they can be recorded and
// waited for as leases.
#pragma once

#include <memory>
#include <utility>

#include "cudactor/messaging/types.hpp"

namespace cudactor {

class front_door;

class owned_event {
 public:
  owned_event() = default;  // names no event
  // Takes ownership of `lease`: given back to `door`'s pool when the last copy goes.
  owned_event(std::shared_ptr<front_door> door, const event_lease& lease);

  [[nodiscard]] bool empty() const noexcept { return lease_.empty(); }
  // As last recorded through this copy (the stream and the point it follows: reaching that
  // point does not mean the event is recorded; a synchronize of its stream, or any later
  // point of it, does).
  [[nodiscard]] const event_lease& lease() const noexcept { return lease_; }
  [[nodiscard]] gpu::event_kind kind() const noexcept { return lease_.kind; }
  [[nodiscard]] stream_id stream() const noexcept { return lease_.stream; }
  [[nodiscard]] timeline_point point() const noexcept { return lease_.point; }
  // The same ownership, recorded anew (what stream::record(event) answers).
  [[nodiscard]] owned_event recorded_as(const event_lease& lease) const {
    owned_event out = *this;
    out.lease_ = lease;
    return out;
  }

 private:
  struct owner;  // gives the lease back when the last copy goes
  std::shared_ptr<const owner> owner_;
  event_lease lease_;
};

}  // namespace cudactor
