// Barrier operations: a graph operation that every one of its streams reaches before anything
// after it on any of them runs. Through the stream actors, in one pass:
//  - device mode: on every member a mark, after everything its actor accepted before and
//    after device waits for the barrier's dependencies, and right behind it a crossing that
//    waits on the device for every other member's mark, by the point that member's stream
//    actor publishes as it issues the mark (point_cell): no round trip between the two. The
//    members are free again at once; whatever comes after a crossing on its stream runs after
//    all arrived. The operation ends when every point is reached.
//  - host mode: the marks only; the members are the barrier's until every mark is reached
//    (the arrival times are its report), so nothing of the coordinator's goes after a mark
//    before then.
// A mark's ticket is where the barrier sits on that stream. Dependents wait for the first
// member's crossing (device) or for the end (host): either way after every member arrived.
//
// A synchronize (what a barrier actor asks for each generation) is such an operation with an
// answer owed: its crossing once the crossings are placed (device) or every member arrived
// (host); timeout naming the members that did not arrive, after which the operation ends and
// gives its members back; and, unlike a graph's barrier (whose failures are its
// dependencies'), dependency_failed naming a member whose newest work before the barrier
// failed. One implementation of both; the barrier actor only numbers, counts and words them.
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "cudactor/actors/coordinator/coordinator_state.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/actors/detail/wait_keys.hpp"
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
    const auto index = index_of(id);
    if (!index) {
      return make_error(errc::invalid_argument,
                        "a barrier names stream " + std::to_string(id.value) +
                            ", which the coordinator does not schedule onto (it has " +
                            std::to_string(pool_.size()) + " streams)");
    }
    if (seen[*index]) {
      return make_error(errc::invalid_argument,
                        "a barrier names stream " + std::to_string(id.value) + " twice");
    }
    seen[*index] = true;
    out.push_back(*index);
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
  barriers_.add(id, std::move(b));
}

bool coordinator_state::start_barrier(op_id id, op_record& r) {
  barrier_run& b = *barriers_.find(id);  // added with its record
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
  const bool device = b.mode == barrier_mode::device;
  const std::size_t n = b.members.size();
  // Device mode: each member's crossing goes in the same pass as its mark and waits for the
  // other members' marks by the points their stream actors publish as they issue them: no
  // round trip between the two (a mark's point is not known here before its ticket).
  std::vector<std::shared_ptr<point_cell>> marks(device ? n : 0);
  for (auto& cell : marks) cell = std::make_shared<point_cell>();
  const op_graph::node* node = graph_.find(id);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t m = b.members[i];
    dispatched_op mark;
    mark.fn = no_work;
    mark.waits = waits_for(id, m);
    if (device) mark.cell = marks[i];
    pool_.note_dispatch(m, now);
    send_to(m, id, std::move(mark));
    if (!device) {
      pool_.at(m).reserved_by = id;  // held until every member arrived
      continue;
    }
    dispatched_op crossing;
    crossing.fn = no_work;
    for (std::uint32_t k = 0; k < n; ++k) {
      if (k == i) continue;
      crossing.waits.push_back(point_wait{pool_.at(b.members[k]).id, 0, false, marks[k]});
      ++b.device_waits;
    }
    // Dependents on other streams wait for the first crossing, in this pass or a later one.
    if (i == 0 && options_.dependents_in_pass && node != nullptr && !node->dependents.empty()) {
      r.cell = std::make_shared<point_cell>();
      crossing.cell = r.cell;
    }
    send_to(m, id, std::move(crossing));
  }
  device_waits_ += b.device_waits;
  op_metrics_->device_waits(b.device_waits);
  b.tickets_left = device ? 2 * n : n;
  b.tickets_of.assign(n, 0);
  // Device mode: on its way; dependents may follow the first crossing onto its stream.
  if (device) (void)graph_.submitted(id, op_position{b.members.front(), 0});
  return true;
}

void coordinator_state::note_barrier_point(std::uint32_t index, timeline_point point) {
  auto& s = pool_.at(index);
  if (s.barrier_point == 0 || point - 1 != s.barrier_point) s.before_barrier = point - 1;
  s.barrier_point = point;
}

void coordinator_state::barrier_ticket(op_id id, op_record& r, std::uint32_t index,
                                       timeline_point point) {
  barrier_run& b = *barriers_.find(id);  // a barrier's record: its run is there
  ++b.points_left;
  note_barrier_point(index, point);
  const auto member = static_cast<std::size_t>(
      std::find(b.members.begin(), b.members.end(), index) - b.members.begin());
  if (b.tickets_of.at(member)++ == 0) {  // its mark (a member's crossing comes after it)
    b.arrivals[member].point = point;
    if (b.answer) b.answer->work[member] = pool_.at(index).before_barrier;
    if (member == 0 && b.mode == barrier_mode::host) r.point = point;
  } else if (member == 0) {  // the first member's crossing: where dependents wait
    r.point = point;
    graph_.placed(id, point);
  }
  if (--b.tickets_left > 0) return;
  // Device mode: every wait is placed. A member whose work before the barrier had failed by
  // now is named in the answer.
  if (b.answer && b.mode == barrier_mode::device) {
    caf::error failed;
    for (std::size_t i = 0; i < b.members.size() && !failed; ++i) failed = failed_before(b, i);
    answer_barrier(b, std::move(failed));
  }
  // Every point ticketed; all of them may have been reached before their tickets came back.
  barrier_settle(id, b, caf::error{});
}

void coordinator_state::barrier_reached(op_id id, std::uint32_t index, timeline_point point,
                                        caf::error why, std::int64_t when) {
  barrier_run* found = barriers_.find(id);
  const op_graph::node* n = graph_.find(id);
  if (found == nullptr || n == nullptr || is_terminal(n->state) || is_deferred(id)) {
    return;  // ended already (a failure of one of its points, a failed dependency)
  }
  barrier_run& b = *found;
  --b.points_left;  // below zero while points are reached before their tickets are back
  for (std::uint32_t i = 0; i < b.members.size(); ++i) {
    // A stream reaches its mark before its crossing, and a mark may be reached before its
    // ticket is back: the member's first point reached is its mark.
    if (b.members[i] != index || b.arrivals[i].arrived_ns != 0) continue;
    if (b.arrivals[i].point == point || b.arrivals[i].point == 0) {
      b.arrivals[i].point = point;
      b.arrivals[i].arrived_ns = when;
    }
  }
  barrier_settle(id, b, std::move(why));
}

void coordinator_state::barrier_settle(op_id id, barrier_run& b, caf::error why) {
  const op_graph::node* n = graph_.find(id);
  if (n == nullptr || is_terminal(n->state) || is_deferred(id)) return;
  const bool all_there = b.points_left == 0 && b.tickets_left == 0;
  if (!why && !all_there) return;
  if (!why && b.answer && b.mode == barrier_mode::host) {
    for (std::size_t i = 0; i < b.members.size() && !why; ++i) why = failed_before(b, i);
  }
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
  barrier_run* found = barriers_.find(id);
  if (found == nullptr) return;
  if (found->answer) answer_barrier(*found, notice.cause);
  for (std::uint32_t m : found->members) {
    if (m < pool_.size() && pool_.at(m).reserved_by == id) pool_.at(m).reserved_by = op_id{};
  }
  for (auto& a : found->arrivals) {
    if (a.point != 0) notice.arrivals.push_back(std::move(a));
  }
  barriers_.ended(id);  // its tickets still on their way are expected (dispatched)
}

caf::result<barrier_crossing> coordinator_state::synchronize(op_spec& spec, const wait_limit& limit,
                                                             const barrier_generation* generation) {
  auto a = std::make_unique<barrier_answer>();
  a->began_ns = now_ns();
  a->limit = held_limit(limit.limit);
  if (generation != nullptr) {
    a->label = "barrier '" + generation->barrier + "' generation " +
               std::to_string(generation->generation);
    a->generation = generation->generation;
    a->front = generation->front;
  }
  auto refuse = [&](caf::error why) {
    why = worded(*a, std::move(why));
    tell_front(*a, why, 0, 0);
    return why;
  };
  if (!spec.is_barrier()) {
    return refuse(make_error(errc::invalid_argument, "synchronize: the operation is a " +
                                                         std::string{to_string(spec.type)} +
                                                         ", not a barrier"));
  }
  if (auto bad = check_limit(limit, "synchronize")) return refuse(std::move(bad));
  op_id id;
  if (auto bad = add_op(spec, nullptr, 0, id)) return refuse(std::move(bad));
  barrier_run* found = barriers_.find(id);
  if (found == nullptr) {  // ended at once: a dependency had failed
    const op_info* ended = find_ended(id);
    if (ended != nullptr && ended->cause) return refuse(ended->cause);
    return refuse(make_error(errc::invalid_state, to_string(id) + " ended before it was crossed"));
  }
  barrier_run& b = *found;
  a->work.assign(b.members.size(), 0);
  a->deadline = barriers_.deadlines().none();
  if (wait_keys::bounded(limit)) {  // before the promise takes the sender over
    const auto& sender = self_->current_sender();
    a->wait = end_waits_.add(sender ? sender->address() : caf::actor_addr{}, limit.key, id.value);
    if (limit.limit.count() > 0) {
      a->deadline = barriers_.deadlines().add(a->began_ns + a->limit.count(), {id, a->wait});
      arm_barrier_timer();
    }
  }
  if (a->front) {
    const auto front = caf::actor_cast<caf::actor_addr>(a->front);
    a->front_wait = end_waits_.add(front, 2 * a->generation, id.value);
    a->front_stop = end_waits_.add(front, 2 * a->generation + 1, id.value);
  }
  a->promise = self_->make_response_promise<barrier_crossing>();
  b.answer = std::move(a);
  return b.answer->promise;
}

caf::error coordinator_state::worded(const barrier_answer& a, caf::error why) const {
  if (a.label.empty() || !why || why.category() != error_category) return why;
  return make_error(static_cast<errc>(why.code()), a.label + ": " + cudactor::describe(why));
}

void coordinator_state::tell_front(const barrier_answer& a, const caf::error& why,
                                   std::uint64_t device_waits, std::int64_t wait_ns) {
  if (a.front) {
    self_->send(a.front, barrier_outcome{a.generation, why, a.withdrawn, device_waits, wait_ns});
  }
}

void coordinator_state::arm_barrier_timer() {
  const auto first = barriers_.deadlines().to_arm();
  if (!first) return;
  const std::uint64_t token = end_waits_.reserve();
  barriers_.deadlines().armed(*first, token);
  self_->delayed_send(self_, std::chrono::nanoseconds{std::max<std::int64_t>(*first - now_ns(), 0)},
                      expire_atom::value, token);
}

void coordinator_state::barrier_timer_fired() {
  const std::int64_t now = now_ns();
  while (const auto due = barriers_.deadlines().take_due(now)) {
    // Taken out of the queue already: the answer's handle to it goes before it is answered.
    barrier_run* b = barriers_.find(due->first);
    if (b != nullptr && b->answer && b->answer->wait == due->second) {
      b->answer->deadline = barriers_.deadlines().none();
    }
    (void)abandon_barrier(due->first, due->second, true);
  }
  arm_barrier_timer();
}

caf::error coordinator_state::failed_before(const barrier_run& b, std::size_t i) const {
  const timeline_point work = b.answer ? b.answer->work[i] : 0;
  if (work == 0) return {};
  auto line = context_.device->timeline_of(context_.directory->view(pool_.at(b.members[i]).id));
  if (!line) return {};
  const gpu::query_result q = (*line)->query(work);
  if (!q.failed() || q.error.code() == gpu::status_code::device_lost) return {};
  return make_error(errc::dependency_failed, "stream '" + b.arrivals[i].name +
                                                 "' reached the barrier with failed work: " +
                                                 cudactor::describe(to_error(q.error)));
}

std::string coordinator_state::not_arrived(const barrier_run& b, const std::string& within) const {
  std::string late;
  std::size_t n = 0;
  for (std::size_t i = 0; i < b.members.size(); ++i) {
    const barrier_arrival& a = b.arrivals[i];
    if (a.arrived_ns != 0) continue;
    late += (n++ == 0 ? "'" : ", '") + a.name + "' (passed point " +
            std::to_string(pool_.at(b.members[i]).ledger->completed()) + ", " +
            (a.point != 0 ? "the barrier is at " + std::to_string(a.point)
                          : std::string{"its mark not placed yet"}) +
            ")";
  }
  if (n == 0) return {};
  return std::to_string(n) + " of " + std::to_string(b.members.size()) + " streams did not arrive" +
         within + ": " + late;
}

void coordinator_state::answer_barrier(barrier_run& b, caf::error why) {
  barrier_answer& a = *b.answer;
  if (a.given) return;
  a.given = true;
  if (a.wait != 0) end_waits_.forget(a.wait);
  if (a.front_wait != 0) end_waits_.forget(a.front_wait);
  if (a.front_stop != 0) end_waits_.forget(a.front_stop);
  barriers_.deadlines().remove(a.deadline);
  const std::int64_t now = now_ns();
  if (why) {
    why = worded(a, std::move(why));
    tell_front(a, why, 0, 0);
    a.promise.deliver(std::move(why));
    return;
  }
  barrier_crossing out;
  out.generation = a.generation;
  out.mode = b.mode;
  out.began_ns = a.began_ns;
  out.members = b.arrivals;
  out.device_waits = b.device_waits;
  // host: until the last member was seen there; device: until the waits were placed.
  std::int64_t last = b.mode == barrier_mode::device ? now : a.began_ns;
  for (const auto& m : b.arrivals) last = std::max(last, m.arrived_ns);
  out.duration = caf::timespan{last - a.began_ns};
  tell_front(a, {}, out.device_waits, now - a.began_ns);
  a.promise.deliver(std::move(out));
}

bool coordinator_state::abandon_barrier(op_id id, std::uint64_t wait, bool timer) {
  barrier_run* found = barriers_.find(id);
  if (found == nullptr || !found->answer) return false;
  barrier_run& b = *found;
  barrier_answer& a = *b.answer;
  if (a.given || wait == 0 || (wait != a.wait && wait != a.front_wait && wait != a.front_stop)) {
    return false;
  }
  // A barrier actor's generation is named by its words (worded); a plain one by its id.
  const std::string who = a.label.empty() ? to_string(id) + ": " : std::string{};
  caf::error why;
  if (!timer && wait == a.front_stop) {
    why = make_error(errc::shutting_down, who + "the barrier shut down first");
  } else if (!timer) {
    why = make_error(errc::cancelled, who + "withdrawn by its caller");
    a.withdrawn = true;
  } else {
    const std::string within = " within " + readable(a.limit);
    std::string late = not_arrived(b, within);
    if (late.empty()) late = "every stream arrived, but it did not end" + within;
    why = make_error(errc::timeout, who + late);
  }
  const bool withdrawn = !timer;
  answer_barrier(b, why);
  why = worded(a, std::move(why));  // the operation's end says the same
  // Nobody waits for the crossing any more: the operation ends and its members go back (its
  // marks stay on the streams, where they stand for nothing).
  const op_graph::node* n = graph_.find(id);
  if (n != nullptr && !is_terminal(n->state)) {
    if (withdrawn) {
      (void)graph_.cancel(id, std::move(why), ended_);
    } else {
      (void)graph_.fail(id, std::move(why), ended_);
    }
    finish();
    pass_or_later();
  }
  return true;
}

}  // namespace cudactor::detail
