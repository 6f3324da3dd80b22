// The coordinator's answers about operations rather than their running: subscriptions,
// describe, cancel, deadlock detection, the counters, and the stream pool's (choose, wait
// for a ready stream).
#include <caf/all.hpp>

#include <algorithm>
#include <string>
#include <unordered_map>

#include "cudactor/actors/coordinator/coordinator_state.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

namespace cudactor::detail {

namespace {

// What a listener would have been told of an operation that has ended.
op_notice notice_of(const op_info& ended) {
  op_notice notice;
  notice.id = ended.id;
  notice.state = ended.state;
  notice.cause = ended.cause;
  notice.stream = ended.stream;
  notice.point = ended.point;
  notice.registered_ns = ended.registered_ns;
  notice.dispatched_ns = ended.dispatched_ns;
  notice.ended_ns = ended.ended_ns;
  return notice;
}

}  // namespace

const op_info* coordinator_state::find_ended(op_id id) const { return ended_kept_.find(id); }

op_info coordinator_state::info_of(op_id id, const op_record& r) const {
  op_info out;
  fill_info(id, r, out);
  out.description = r.description;
  if (const op_graph::node* n = graph_.find(id)) {
    out.state = n->state;
    out.cause = n->cause;
  }
  return out;
}

void coordinator_state::fill_info(op_id id, const op_record& r, op_info& out) const {
  // Assigned field by field: an entry of the ended ring keeps the room its lists had.
  out.id = id;
  out.type = r.type;
  out.priority = r.priority;
  out.workload = r.workload;
  out.manual = r.manual;
  out.deps.assign(r.deps.begin(), r.deps.end());
  out.on_stream = r.stream != no_stream;
  out.stream = out.on_stream ? pool_.at(r.stream).id : stream_id{};
  out.point = r.point;
  out.registered_ns = r.registered_ns;
  out.ready_ns = 0;
  out.dispatched_ns = r.dispatched_ns;
  out.ended_ns = 0;
  if (r.bufs) {
    out.uses.assign(r.bufs->uses.begin(), r.bufs->uses.end());
    out.inferred.assign(r.bufs->inferred.begin(), r.bufs->inferred.end());
  } else {
    out.uses.clear();
    out.inferred.clear();
  }
}

caf::result<op_info> coordinator_state::describe(op_id id) const {
  if (auto found = records_.find(id.value); found != nullptr) return info_of(id, *found);
  if (const op_info* ended = find_ended(id)) return *ended;
  return gone(id);
}

caf::error coordinator_state::gone(op_id id) const {
  if (!id.empty() && id.value <= graph_.newest().value) {
    return make_error(errc::unknown_op, to_string(id) + " ended and is no longer described (the " +
                                            std::to_string(options_.ended_kept) +
                                            " newest ended operations are)");
  }
  return make_error(errc::unknown_op, to_string(id) + " was never registered");
}

void coordinator_state::subscribe_all(const op_listener& listener) {
  if (!listener) return;
  if (std::find(all_listeners_.begin(), all_listeners_.end(), listener) != all_listeners_.end()) {
    return;
  }
  all_listeners_.push_back(listener);
  self_->monitor(listener);
}

caf::result<op_state> coordinator_state::subscribe(op_id id, const op_listener& listener) {
  if (!listener) return make_error(errc::invalid_argument, "subscribe: no listener");
  if (auto found = records_.find(id.value); found != nullptr) {
    add_listener(*found, listener);
    return graph_.find(id)->state;
  }
  // Ended already: told now, so that a late subscriber still hears exactly once.
  if (const op_info* ended = find_ended(id)) {
    notify(listener, notice_of(*ended));
    return ended->state;
  }
  return gone(id);  // unknown, or ended too long ago: says which
}

caf::result<op_notice> coordinator_state::await_end(op_id id, const wait_limit& limit) {
  if (auto bad = check_limit(limit, "await " + to_string(id))) return bad;
  if (records_.contains(id.value)) {
    if (closing_) return refusal();
    std::uint64_t tag = 0;
    if (wait_keys::bounded(limit)) {  // before the promise takes the sender over
      const auto& sender = self_->current_sender();
      tag = end_waits_.add(sender ? sender->address() : caf::actor_addr{}, limit.key, id.value);
      if (limit.limit.count() > 0) {
        self_->delayed_send(self_, held_limit(limit.limit), expire_atom::value, tag);
      }
    }
    auto promise = self_->make_response_promise<op_notice>();
    end_waiters_.emplace(id, end_waiter{promise, tag});
    return promise;
  }
  if (const op_info* ended = find_ended(id)) return notice_of(*ended);
  return gone(id);
}

bool coordinator_state::withdraw(std::uint64_t key) {
  if (key == 0) return false;
  const auto sender = self_->current_sender();
  const auto w = end_waits_.take(sender ? sender->address() : caf::actor_addr{}, key);
  if (w.id == 0) return false;
  const op_id id{w.where};
  if (abandon_barrier(id, w.id, false)) return true;
  auto range = end_waiters_.equal_range(id);
  for (auto i = range.first; i != range.second; ++i) {
    if (i->second.id != w.id) continue;
    i->second.promise.deliver(
        make_error(errc::cancelled,
                   "the wait for the end of " + to_string(id) + " was withdrawn by its caller"));
    end_waiters_.erase(i);
    return true;
  }
  return false;
}

void coordinator_state::tell_end_waiters(const op_notice& notice) {
  auto range = end_waiters_.equal_range(notice.id);
  for (auto i = range.first; i != range.second; ++i) {
    if (i->second.id != 0) end_waits_.forget(i->second.id);
    i->second.promise.deliver(notice);
  }
  end_waiters_.erase(range.first, range.second);
}

void coordinator_state::unsubscribe(const caf::actor_addr& listener) {
  auto gone = std::remove_if(all_listeners_.begin(), all_listeners_.end(),
                             [&](const op_listener& l) { return l.address() == listener; });
  if (gone != all_listeners_.end()) {
    all_listeners_.erase(gone, all_listeners_.end());
    self_->demonitor(listener);
  }
}

caf::result<op_state> coordinator_state::cancel(op_id id) {
  if (closing_) return refusal();
  auto found = records_.find(id.value);
  if (found == nullptr) {
    if (const op_info* ended = find_ended(id)) return ended->state;  // nothing left to cancel
    return gone(id);
  }
  if (found->type == op_type::release) {
    return make_error(errc::invalid_state,
                      to_string(id) + " releases " + to_string(found->bufs->releases) +
                          ": a release cannot be withdrawn (the buffer takes no use any more)");
  }
  const op_state state = graph_.find(id)->state;
  if (state != op_state::pending && state != op_state::ready) {
    const auto& r = *found;
    return make_error(
        errc::invalid_state,
        to_string(id) + " is " + std::string{to_string(state)} +
            (r.stream != no_stream ? " on stream " + std::to_string(pool_.at(r.stream).id.value)
                                   : "") +
            ": work handed to a stream cannot be withdrawn");
  }
  graph_.cancel(id, make_error(errc::cancelled, to_string(id) + " was cancelled by request"),
                ended_);
  finish();
  pump();  // a begin waiter ahead in line may have gone
  return op_state::cancelled;
}

void coordinator_state::cancel_all(const std::vector<op_id>& ids) {
  if (closing_) return;
  bool any = false;
  for (op_id id : ids) {
    const auto* found = records_.find(id.value);
    if (found == nullptr || found->type == op_type::release) continue;
    // An earlier id's cancellation may have ended this one with it (a dependent), and the
    // graph forgets such a node before finish() drops its record.
    const auto* node = graph_.find(id);
    if (node == nullptr) continue;
    if (node->state != op_state::pending && node->state != op_state::ready) continue;
    graph_.cancel(id, make_error(errc::cancelled, to_string(id) + " was cancelled by request"),
                  ended_);
    any = true;
  }
  if (!any) return;
  finish();
  pump();
}

void coordinator_state::find_cycles(deadlock_report& report) const {
  // Cycles: refused when they would form (add_dependency, graph submission), so this search
  // finds one only if that guard were broken. Iterative DFS over the open operations' deps.
  std::unordered_map<std::uint64_t, int> color;  // 1: on the path, 2: done
  graph_.for_each_node([&](const op_graph::node& start) {
    if (is_terminal(start.state) || color[start.id.value] != 0) return;
    std::vector<std::pair<op_id, std::size_t>> path{{start.id, 0}};
    color[start.id.value] = 1;
    while (!path.empty()) {
      auto& [at, next] = path.back();
      const op_graph::node* n = graph_.find(at);
      if (n == nullptr || next >= n->deps().size()) {
        color[at.value] = 2;
        path.pop_back();
        continue;
      }
      const op_id dep = n->deps()[next++];
      const op_graph::node* d = graph_.find(dep);
      if (d == nullptr || is_terminal(d->state)) continue;
      int& c = color[dep.value];
      if (c == 1) {
        std::vector<op_id> cycle;
        auto from = std::find_if(path.begin(), path.end(), [&](auto& e) { return e.first == dep; });
        for (auto it = from; it != path.end(); ++it) cycle.push_back(it->first);
        cycle.push_back(dep);
        report.cycles.push_back(std::move(cycle));
      } else if (c == 0) {
        c = 1;
        path.emplace_back(dep, 0);
      }
    }
  });
}

std::string coordinator_state::why_held(const op_graph::node& root) const {
  const auto r = records_.find(root.id.value);
  const bool manual = r != nullptr && r->manual;
  switch (root.state) {
    case op_state::ready:
      return manual ? "is ready and its caller has not begun it"
                    : "is ready and no stream has room (every stream is at its in-flight cap "
                      "or held by a begun operation)";
    case op_state::running:
      return manual ? "was begun and complete() has not come" : "is being dispatched";
    case op_state::submitted: {
      if (r == nullptr) return "is on a stream";
      const auto& rr = *r;
      if (rr.point == 0) {
        return "is on its way to stream " + std::to_string(pool_.at(rr.stream).id.value) +
               " (its stream actor has not given its ticket yet)";
      }
      return "is on stream " + std::to_string(pool_.at(rr.stream).id.value) + " at point " +
             std::to_string(rr.point) + " and the stream has reached only " +
             std::to_string(pool_.at(rr.stream).ledger->completed());
    }
    default: return "is " + std::string{to_string(root.state)};
  }
}

void coordinator_state::find_stalls(deadlock_report& report, caf::timespan stall_after,
                                    std::int64_t now) const {
  const std::int64_t threshold = stall_after.count();
  // Each open operation's first unfinished dependency (the oldest): what it waits on. An
  // operation on a stream waits on the device for it just as a pending one waits to be
  // dispatched, so every state is followed.
  auto blocker = [&](const op_graph::node& n) -> const op_graph::node* {
    const op_graph::node* out = nullptr;
    for (op_id d : n.deps()) {
      const op_graph::node* dep = graph_.find(d);
      if (dep != nullptr && !is_terminal(dep->state) && (out == nullptr || dep->id < out->id)) {
        out = dep;
      }
    }
    return out;
  };
  // The root of each operation, found once per operation however many wait through it.
  std::unordered_map<std::uint64_t, const op_graph::node*> root_of;
  auto root = [&](const op_graph::node& start) {
    std::vector<const op_graph::node*> path;
    const op_graph::node* at = &start;
    while (true) {
      auto known = root_of.find(at->id.value);
      if (known != root_of.end()) {
        at = known->second;
        break;
      }
      const op_graph::node* next = blocker(*at);
      // Cycles are refused when they would form; a path back onto itself stops here anyway.
      if (next == nullptr || path.size() > graph_.size()) break;
      path.push_back(at);
      at = next;
    }
    for (const op_graph::node* p : path) root_of[p->id.value] = at;
    return at;
  };
  graph_.for_each_node([&](const op_graph::node& n) {
    if (is_terminal(n.state)) return;
    auto r = records_.find(n.id.value);
    if (r == nullptr) return;
    const std::int64_t age = now - r->registered_ns;
    if (age < threshold) return;
    op_stall stall;
    stall.id = n.id;
    stall.state = n.state;
    stall.age_ns = age;
    const std::string held = std::to_string(age / 1000000) + " ms";
    const op_graph::node* top = root(n);
    if (top == &n) {
      stall.waiting_on = n.id;  // its own root: nothing it depends on is open
      stall.reason = "open for " + held + ": it " + why_held(n);
      report.stalls.push_back(std::move(stall));
      return;
    }
    for (const op_graph::node* at = blocker(n);
         at != nullptr && at != top && stall.chain.size() + 1 < max_stall_chain;
         at = blocker(*at)) {
      stall.chain.push_back(at->id);
    }
    stall.chain.push_back(top->id);
    stall.waiting_on = top->id;
    stall.reason = "waiting " + held + " on " + to_string(stall.chain.front());
    if (stall.chain.size() > 1) stall.reason += ", which waits through to " + to_string(top->id);
    stall.reason += ", which " + why_held(*top);
    report.stalls.push_back(std::move(stall));
  });
}

deadlock_report coordinator_state::detect_deadlocks(caf::timespan stall_after) {
  deadlock_report report;
  find_cycles(report);
  find_stalls(report, stall_after, now_ns());
  std::sort(report.stalls.begin(), report.stalls.end(),
            [](const op_stall& a, const op_stall& b) { return a.id < b.id; });
  if (!report.empty()) {
    ++deadlock_detections_;
    op_metrics_->deadlock_detected();
  }
  op_metrics_->stalled(report.stalls.size());
  return report;
}

coordinator_metrics coordinator_state::metrics() const {
  coordinator_metrics out;
  out.total = total_;
  out.completed = completed_;
  out.failed = failed_;
  out.cancelled = cancelled_;
  out.live = graph_.live();
  out.dispatched = dispatched_;
  out.passes = passes_;
  out.mean_coordination_ns =
      dispatched_ == 0 ? 0 : coordination_ns_ / static_cast<std::int64_t>(dispatched_);
  out.device_waits = device_waits_;
  out.redundant_waits_skipped = pool_.waits_skipped();
  out.deadlock_detections = deadlock_detections_;
  out.tracked = graph_.size() + records_.size();
  out.state_chunks = graph_.chunks() + records_.chunks();
  if (buffers_) {
    buffers_->for_each([&](const buffer_table::entry& e) {
      if (e.uses) out.buffer_users += e.uses->entries();
    });
  }
  out.awaiting = end_waiters_.size() + ready_waiters_.size();
  return out;
}

}  // namespace cudactor::detail

namespace cudactor::detail {

caf::result<coordinator_report> coordinator_state::report() {
  auto out = std::make_shared<coordinator_report>(profile_->report(now_ns(), timing_));
  if (actors_.empty() || closing_) return *out;
  auto promise = self_->make_response_promise<coordinator_report>();
  auto left = std::make_shared<std::size_t>(actors_.size());
  for (const auto& actor : actors_) {
    // A stream actor that cannot say (gone, shutting down) adds nothing: the report still comes.
    auto heard = [out, left, promise](const stream_status* s) mutable {
      if (s != nullptr) {
        for (auto& r : out->streams) {
          if (r.stream != s->id) continue;
          r.direct_kernels = s->direct_kernels;
          r.direct_transfers = s->direct_transfers;
        }
      }
      if (--*left == 0) promise.deliver(std::move(*out));
    };
    self_->request(actor, caf::infinite, status_atom::value)
        .then([heard](const stream_status& s) mutable { heard(&s); },
              [heard](caf::error&) mutable { heard(nullptr); });
  }
  return promise;
}

void coordinator_state::profile(op_id id, const op_record& r, op_state state, std::int64_t now) {
  profiled_op p;
  p.name = &r.description;
  p.type = r.type;
  p.state = state;
  p.on_stream = r.stream != no_stream && r.point != 0;
  p.stream = p.on_stream ? pool_.at(r.stream).id.value : 0;
  p.registered_ns = r.registered_ns;
  p.dispatched_ns = r.dispatched_ns;
  p.started_ns = r.started_ns;
  p.finished_ns = r.finished_ns;
  p.ended_ns = now;
  profile_->add(p);
  if (context_.trace) {
    traced_op t;
    t.id = id.value;
    t.name = r.description.empty() ? to_string(r.type) : std::string_view{r.description};
    t.type = to_string(r.type);
    t.state = to_string(state);
    t.on_stream = p.on_stream;
    t.stream = p.stream;
    t.registered_ns = p.registered_ns;
    t.dispatched_ns = p.dispatched_ns;
    t.started_ns = p.started_ns;
    t.finished_ns = p.finished_ns;
    t.ended_ns = now;
    if (r.type == op_type::step) {
      trace_replay(id, t);
    } else {
      context_.trace->add(t);
    }
  }
}

// --- the pool ------------------------------------------------------------------------------

caf::result<stream_id> coordinator_state::choose_now(op_priority priority, op_workload workload) {
  if (auto why = refusal()) return why;
  if (auto bad = check_input(priority)) return bad;
  if (auto bad = check_input(workload)) return bad;
  if (auto chosen = pool_.choose(priority, workload)) return pool_.at(*chosen).id;
  // Every stream is at its cap or held: the least loaded one of the operation's class if
  // there is one, else of all (work given to it now waits there the least).
  std::optional<std::uint32_t> best;
  for (int pass = 0; pass < 2 && !best; ++pass) {
    for (std::uint32_t i = 0; i < pool_.size(); ++i) {
      if (pass == 0 && pool_.at(i).priority != stream_pool::class_of(priority)) continue;
      if (!best || pool_.load_of(i) < pool_.load_of(*best)) best = i;
    }
  }
  return pool_.at(*best).id;
}

caf::result<stream_id> coordinator_state::wait_for_any_ready(caf::timespan timeout) {
  if (auto why = refusal()) return why;
  if (timeout.count() < 0) {
    return make_error(errc::invalid_argument, "wait_ready: a negative time limit (" +
                                                  std::to_string(timeout.count()) + " ns)");
  }
  if (auto idle = pool_.any_idle()) return pool_.at(*idle).id;
  const std::uint64_t token = end_waits_.reserve();
  auto promise = self_->make_response_promise<stream_id>();
  ready_waiters_.emplace(token, promise);
  self_->delayed_send(self_, held_limit(timeout), expire_atom::value, token);
  return promise;
}

void coordinator_state::expire(std::uint64_t token) {
  if (barriers_.deadlines().fired(token)) {
    barrier_timer_fired();
    return;
  }
  if (const std::uint64_t* where = end_waits_.find(token)) {
    const op_id id{*where};
    end_waits_.forget(token);
    auto range = end_waiters_.equal_range(id);
    for (auto i = range.first; i != range.second; ++i) {
      if (i->second.id != token) continue;
      const op_graph::node* n = graph_.find(id);
      std::string text = to_string(id) + " did not end in time (it is " +
                         std::string{n != nullptr ? to_string(n->state) : "gone"} + ")";
      // A barrier says which of its streams it still waits for.
      if (const barrier_run* b = barriers_.find(id)) {
        if (std::string late = not_arrived(*b, ""); !late.empty()) text += ": " + late;
      }
      i->second.promise.deliver(make_error(errc::timeout, std::move(text)));
      end_waiters_.erase(i);
      break;
    }
    return;
  }
  auto found = ready_waiters_.find(token);
  if (found == ready_waiters_.end()) return;
  std::string busy;
  for (std::uint32_t i = 0; i < pool_.size(); ++i) {
    const auto& s = pool_.at(i);
    busy += (i == 0 ? "" : ", ") + std::string{"stream "} + std::to_string(s.id.value) + ": " +
            std::to_string(pool_.load_of(i)) + " in flight" +
            (s.reserved_by.empty() ? "" : ", held by " + to_string(s.reserved_by));
  }
  found->second.deliver(make_error(errc::timeout, "no stream became idle in time (" + busy + ")"));
  ready_waiters_.erase(found);
}

void coordinator_state::serve_ready_waiters() {
  if (ready_waiters_.empty()) return;
  const auto idle = pool_.any_idle();
  if (!idle) return;
  for (auto& [token, promise] : ready_waiters_) promise.deliver(pool_.at(*idle).id);
  ready_waiters_.clear();
}

}  // namespace cudactor::detail
