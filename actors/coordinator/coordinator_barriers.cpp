// Barrier operations: a graph operation that every one of its streams reaches before anything
// after it on any of them runs. Two phases, both through the stream actors:
//  1. a mark on every member, after everything its actor accepted before and after device
//     waits for the barrier's dependencies; its ticket is where the barrier sits there. The
//     members are the barrier's meanwhile, so that nothing of the coordinator's goes between a
//     mark and what follows it.
//  2. device mode: on every member a crossing that waits on the device for every other
//     member's mark; the members go back at once, and whatever comes after a crossing on its
//     stream runs after all arrived. The operation ends when every crossing is reached.
//     host mode: nothing more goes to the streams; the operation ends once the poller has seen
//     every mark reached (the arrival times are its report), and only then go the members
//     back.
// Dependents wait for the first member's crossing (device) or for the end (host): either way
// after every member arrived.
#include <caf/all.hpp>

#include <algorithm>
#include <string>
#include <utility>

#include "cudactor/actors/coordinator/coordinator_state.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

caf::error coordinator_state::members_of(const op_spec& spec,
                                         std::vector<std::uint32_t>& out) const {
  out.clear();
  if (spec.barrier.streams.empty()) {
    for (std::uint32_t i = 0; i < pool_.size(); ++i) out.push_back(i);
    return {};
  }
  std::vector<bool> seen(pool_.size(), false);
  for (stream_id id : spec.barrier.streams) {
    const auto slot = slot_of(id);
    if (!slot) {
      return make_error(errc::invalid_argument,
                        "a barrier names stream " + std::to_string(id.value) +
                            ", which the coordinator does not schedule onto (it has " +
                            std::to_string(pool_.size()) + " streams)");
    }
    if (seen[*slot]) {
      return make_error(errc::invalid_argument,
                        "a barrier names stream " + std::to_string(id.value) + " twice");
    }
    seen[*slot] = true;
    out.push_back(*slot);
  }
  return {};
}

void coordinator_state::add_barrier(op_id id, const op_spec& spec) {
  barrier_run b;
  (void)members_of(spec, b.members);  // checked when it was registered
  b.mode = spec.barrier.mode;
  for (std::uint32_t i = 0; i < b.members.size(); ++i) {
    barrier_arrival a;
    a.member = i;
    a.stream = pool_.at(b.members[i]).id;
    a.name = context_.streams.at(b.members[i]).name;
    b.arrivals.push_back(std::move(a));
  }
  barriers_.emplace(id, std::move(b));
}

bool coordinator_state::start_barrier(op_id id, op_record& r) {
  barrier_run& b = barriers_.at(id);
  // Each member waits on the device for every dependency still running: each needs a point.
  bool on_way = false;
  graph_.for_each_unfinished_dep(id,
                                 [&](op_id, const op_position& at) { on_way |= at.point == 0; });
  if (on_way) return false;
  for (std::uint32_t m : b.members) {
    if (!pool_.at(m).reserved_by.empty()) return false;
  }
  const std::int64_t now = now_ns();
  r.stream = b.members.front();
  r.dispatched_ns = now;
  op_metrics_->dispatched(r.type, r.priority);
  ++dispatched_;
  coordination_ns_ += now - r.registered_ns;
  for (std::uint32_t m : b.members) {
    pool_.at(m).reserved_by = id;
    dispatched_op mark;
    mark.fn = no_work;
    mark.waits = waits_for(id, m);
    pool_.note_dispatch(m, now);
    send_to(m, id, std::move(mark));
  }
  b.tickets_left = b.members.size();
  return true;
}

void coordinator_state::barrier_ticket(op_id id, op_record& r, std::uint32_t slot,
                                       timeline_point point) {
  barrier_run& b = barriers_.at(id);
  ++b.points_left;
  const auto member = static_cast<std::size_t>(std::find(b.members.begin(), b.members.end(), slot) -
                                               b.members.begin());
  if (!b.crossing) {
    b.arrivals.at(member).point = point;
    if (member == 0) r.point = point;
  } else if (member == 0) {
    r.point = point;
    graph_.placed(id, point);
  }
  if (--b.tickets_left > 0) return;
  if (b.crossing || b.mode == barrier_mode::host) {
    // Every point ticketed; all of them may have been reached before their tickets came back.
    barrier_settle(id, b, caf::error{});
    return;
  }
  // Every mark is on its stream: each member waits for all the others, then goes back.
  for (std::uint32_t i = 0; i < b.members.size(); ++i) {
    const std::uint32_t m = b.members[i];
    dispatched_op crossing;
    crossing.fn = no_work;
    for (std::uint32_t k = 0; k < b.members.size(); ++k) {
      const std::uint32_t other = b.members[k];
      if (other == m || !pool_.needs_wait(m, other, b.arrivals[k].point)) continue;
      crossing.waits.push_back(
          point_wait{pool_.at(other).view, b.arrivals[k].point, false, nullptr});
      ++device_waits_;
      op_metrics_->device_waits(1);
    }
    send_to(m, id, std::move(crossing));
    pool_.at(m).reserved_by = op_id{};  // what comes next goes after the crossing
  }
  b.crossing = true;
  b.tickets_left = b.members.size();
  // Dependents may follow the first crossing onto its stream, or wait for its ticket.
  r.point = 0;
  (void)graph_.submitted(id, op_position{b.members.front(), 0});
}

void coordinator_state::barrier_reached(op_id id, std::uint32_t slot, timeline_point point,
                                        caf::error why, std::int64_t when) {
  auto found = barriers_.find(id);
  const op_graph::node* n = graph_.find(id);
  if (found == barriers_.end() || n == nullptr || is_terminal(n->state) || is_deferred(id)) {
    return;  // ended already (a failure of one of its points, a failed dependency)
  }
  barrier_run& b = found->second;
  --b.points_left;  // below zero while points are reached before their tickets are back
  for (std::uint32_t i = 0; i < b.members.size(); ++i) {
    // A mark may be reached before its ticket is back: its point is known from the report.
    if (b.members[i] != slot) continue;
    if (b.arrivals[i].point == point || (!b.crossing && b.arrivals[i].point == 0)) {
      b.arrivals[i].point = point;
      b.arrivals[i].arrived_ns = when;
    }
  }
  barrier_settle(id, b, std::move(why));
}

void coordinator_state::barrier_settle(op_id id, barrier_run& b, caf::error why) {
  const op_graph::node* n = graph_.find(id);
  if (n == nullptr || is_terminal(n->state) || is_deferred(id)) return;
  const bool all_there =
      b.points_left == 0 && b.tickets_left == 0 && (b.crossing || b.mode == barrier_mode::host);
  if (!why && !all_there) return;
  if (b.mode == barrier_mode::host && all_there) {
    for (std::uint32_t m : b.members) {
      if (pool_.at(m).reserved_by == id) pool_.at(m).reserved_by = op_id{};
    }
  }
  // Every dependency ran before the marks, on the device; their own reports may come later.
  op_record* r = records_.find(id.value);
  if (r == nullptr || graph_.deps_ended(id)) {
    settle_and_wake(id, std::move(why));
  } else {
    defer(id, *r, std::move(why));
  }
}

void coordinator_state::end_barrier(op_id id, op_notice& notice) {
  auto found = barriers_.find(id);
  if (found == barriers_.end()) return;
  for (std::uint32_t m : found->second.members) {
    if (m < pool_.size() && pool_.at(m).reserved_by == id) pool_.at(m).reserved_by = op_id{};
  }
  for (auto& a : found->second.arrivals) {
    if (a.point != 0) notice.arrivals.push_back(std::move(a));
  }
  barriers_.erase(found);
}

}  // namespace cudactor::detail
