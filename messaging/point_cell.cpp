#include "cudactor/messaging/point_cell.hpp"

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <utility>

#include "cudactor/messaging/atoms.hpp"

namespace cudactor {

gpu::timeline_point point_cell::point_or_tell(const caf::actor_addr& waiter) {
  if (const auto p = point(); p != 0) return p;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    // Once each: a stream actor looks again at every wake-up, and must not be told twice.
    if (std::find(waiters_.begin(), waiters_.end(), waiter) == waiters_.end()) {
      waiters_.push_back(waiter);
    }
    watched_.store(true, std::memory_order_seq_cst);
  }
  // Published between the first look and the registration: the writer may not have seen the
  // waiter (seq_cst on both sides: one of the two sees the other's store). A late message
  // then finds nothing to do.
  return point_.load(std::memory_order_seq_cst);
}

void point_cell::publish(gpu::timeline_point point) {
  if (point_.load(std::memory_order_relaxed) != 0) return;  // once
  point_.store(point, std::memory_order_seq_cst);
  if (!watched_.load(std::memory_order_seq_cst)) return;
  std::vector<caf::actor_addr> told;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    told.swap(waiters_);
  }
  for (const auto& waiter : told) {
    if (auto alive = caf::actor_cast<caf::actor>(waiter)) caf::anon_send(alive, issued_atom::value);
  }
}

}  // namespace cudactor
