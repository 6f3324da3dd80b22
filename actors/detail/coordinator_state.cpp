#include "cudactor/actors/detail/coordinator_state.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/actors/detail/progress.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

void coordinator_state::init(self_pointer self, const coordinator_context& context,
                             coordinator_options options, std::vector<gpu::stream> streams) {
  self_ = self;
  context_ = context;
  options_ = std::move(options);
  registry_ = registry_or_own(context_.metrics);
  gpu_ = gpu_label(*context_.device);
  op_metrics_.emplace(*registry_, gpu_);
  graph_ = op_graph{options_.failures_kept};
  pool_ = stream_pool{options_.strategy, options_.max_in_flight};
  for (std::size_t i = 0; i < streams.size(); ++i) {
    auto line = context_.device->timeline_of(streams[i].ref());
    pool_.add(std::move(streams[i]), options_.priority_of(i));
    if (line) {
      auto& slot = pool_.at(static_cast<std::uint32_t>(i));
      slot.issued = slot.completed = slot.watched = (*line)->submitted();
    }
  }
  report_levels();  // makes the streams' metrics before anything is dispatched
  timing_ = options_.timing || context_.trace != nullptr;
  // Without a device clock (a backend without timing events) operations carry no device times.
  if (timing_) clock_ = context_.clock ? context_.clock : start_shared_clock(*context_.device);
  if (!clock_) timing_ = false;
  profile_.emplace(now_ns(), options_.report_names);
  profile_->streams(pool_.size());
  if (context_.trace) {
    for (std::uint32_t i = 0; i < pool_.size(); ++i) {
      context_.trace->name_stream(i, "coordinator-" + std::to_string(i) + " (" +
                                         std::string{gpu::to_string(options_.priority_of(i))} +
                                         ")");
    }
  }
  subscribe_streams();
}

coordinator_state::~coordinator_state() {
  if (self_ != nullptr && !closing_) shut_down();
}

void coordinator_state::subscribe_streams() {
  auto weak = caf::actor_cast<caf::actor_addr>(self_);
  for (std::uint32_t i = 0; i < pool_.size(); ++i) {
    const std::uint64_t epoch = epoch_;
    auto subscribed = context_.poller->subscribe(
        pool_.at(i).stream.ref(), [weak, i, epoch](const gpu::stream_progress& progress) {
          if (auto strong = caf::actor_cast<coordinator_actor>(weak)) {
            caf::anon_send(strong, progress_atom::value, epoch, to_batch(stream_id{i}, progress));
          }
        });
    if (!subscribed.ok() && !lost_) lost_ = to_error(subscribed);
  }
}

// --- registering -----------------------------------------------------------------------------

caf::error coordinator_state::refusal() const {
  if (closing_) return make_error(errc::shutting_down, "the coordinator is shutting down");
  if (lost_) {
    // What to do about it depends on the backend: a lost CUDA device is lost for the process.
    const bool recoverable = context_.device->kind() != gpu::backend_kind::cuda;
    return make_error(errc::device_lost,
                      "the coordinator refuses new work: " + to_string(lost_) +
                          (recoverable ? " (reset the backend, then send reset_atom)"
                                       : " (a lost CUDA device needs the process restarted)"));
  }
  return {};
}

caf::error coordinator_state::resolve(const work& w, gpu::work_fn& out) const {
  if (w.is_local()) {  // the hot path builds no name
    out = w.closure();
    return {};
  }
  return resolve_work(w, context_.operations.get(), "the coordinator's node", out);
}

coordinator_state::op_record& coordinator_state::add_record(op_id id, op_spec& spec,
                                                            gpu::work_fn fn, bool manual,
                                                            std::int64_t now) {
  op_record& r = records_[id];
  r.type = spec.type;
  r.priority = spec.priority;
  r.workload = spec.workload;
  r.manual = manual;
  r.description = std::move(spec.description);
  r.deps = std::move(spec.deps);
  r.fn = std::move(fn);
  r.registered_ns = now;
  ++total_;
  op_metrics_->registered(r.type, r.priority);
  return r;
}

void coordinator_state::add_listener(op_record& r, const op_listener& listener) {
  if (!listener) return;
  if (std::find(r.listeners.begin(), r.listeners.end(), listener) == r.listeners.end()) {
    r.listeners.push_back(listener);
  }
}

caf::result<op_state> coordinator_state::depend(op_id op, op_id dep) {
  if (auto why = refusal()) return why;
  if (auto bad = graph_.add_dependency(op, dep)) return bad;
  auto found = records_.find(op);
  if (found != records_.end() && std::find(found->second.deps.begin(), found->second.deps.end(),
                                           dep) == found->second.deps.end()) {
    found->second.deps.push_back(dep);
  }
  return graph_.find(op)->state;
}

// --- dispatching -----------------------------------------------------------------------------

void coordinator_state::pump() {
  // One clock read per few dispatches: a burst of them takes microseconds, not more.
  constexpr unsigned stamp_reuse = 16;
  std::int64_t now = 0;
  for (unsigned n = 0; !lost_ && !closing_ && pool_.any_available(); ++n) {
    const std::optional<op_id> next = graph_.next_ready();
    if (!next) break;
    const op_id id = *next;
    op_record& r = records_.at(id);
    const auto slot = pool_.choose(r.priority, r.workload);
    if (n % stamp_reuse == 0) now = now_ns();
    dispatch(id, *slot, now);
  }
  serve_begin_waiters();
  watch_all();
  finish();
}

gpu::status coordinator_state::place_waits(op_id id, std::uint32_t slot) {
  gpu::status out;
  const gpu::stream_ref waiter = pool_.at(slot).stream.ref();
  graph_.for_each_unfinished_dep(id, [&](op_id, const op_position& at) {
    if (!out.ok() || !pool_.needs_wait(slot, at.stream, at.point)) return;
    out = context_.device->wait_point(waiter, pool_.at(at.stream).stream.ref(), at.point);
    ++device_waits_;
    op_metrics_->device_waits(1);
  });
  return out;
}

void coordinator_state::dispatch(op_id id, std::uint32_t slot, std::int64_t now) {
  op_record& r = records_.at(id);
  const gpu::stream_ref s = pool_.at(slot).stream.ref();
  gpu::status launched = place_waits(id, slot);
  if (launched.ok() && timing_) {
    // Timing events around the work, in the stream's order: when the stream got to it (its
    // waits done) and when it was done. No host callback: nothing stalls the stream.
    r.timing = take_timing();
    if (r.timing) launched = context_.device->record(r.timing->start.ref(), s);
  }
  if (launched.ok()) launched = context_.device->enqueue(s, std::move(r.fn));
  if (launched.ok() && r.timing) launched = context_.device->record(r.timing->end.ref(), s);
  if (!launched.ok()) {
    launch_failed(id, slot, launched);
    return;
  }
  auto point = context_.device->signal(s);
  if (!point) {
    launch_failed(id, slot, point.error());
    return;
  }
  r.dispatched_ns = now;
  submitted(id, r, slot, *point, now);
}

std::optional<coordinator_state::op_timing> coordinator_state::take_timing() {
  if (!spare_timing_.empty()) {
    op_timing out = std::move(spare_timing_.back());
    spare_timing_.pop_back();
    return out;
  }
  auto start = context_.device->create_event(gpu::event_kind::timing);
  auto end = context_.device->create_event(gpu::event_kind::timing);
  if (!start || !end) return std::nullopt;  // this operation goes untimed
  return op_timing{std::move(start.value()), std::move(end.value())};
}

void coordinator_state::submitted(op_id id, op_record& r, std::uint32_t slot, timeline_point point,
                                  std::int64_t now) {
  auto& s = pool_.at(slot);
  pool_.note_dispatch(slot, now);
  s.in_flight.emplace_back(point, id);
  s.issued = point;
  r.stream = slot;
  r.point = point;
  if (slot < slot_metrics_.size()) slot_metrics_[slot].accepted();
  if (!r.manual) {
    op_metrics_->dispatched(r.type, r.priority);
    ++dispatched_;
    coordination_ns_ += r.dispatched_ns - r.registered_ns;
  }
  graph_.submitted(id, op_position{slot, point});
}

void coordinator_state::launch_failed(op_id id, std::uint32_t slot, const gpu::status& why) {
  caf::error sealed = why.code() == gpu::errc::device_lost ? to_error(why) : close_off(slot);
  if (sealed) {
    lose(std::move(sealed));
    return;
  }
  graph_.fail(id,
              make_error(errc::op_failed,
                         to_string(id) + " could not be launched: " + to_string(to_error(why))),
              ended_);
}

caf::error coordinator_state::close_off(std::uint32_t slot) {
  auto& s = pool_.at(slot);
  auto point = context_.device->signal(s.stream.ref());
  if (!point) {
    // Any other failure leaves nothing to seal: the stream's next launch reports it.
    return point.error().code() == gpu::errc::device_lost ? to_error(point.error()) : caf::error{};
  }
  s.in_flight.emplace_back(*point, op_id{});
  s.issued = *point;
  return watch(slot);
}

void coordinator_state::serve_begin_waiters() {
  for (auto it = begin_waiters_.begin(); it != begin_waiters_.end() && !lost_;) {
    const op_graph::node* n = graph_.find(it->id);
    if (n == nullptr || n->state != op_state::ready) {
      ++it;  // not ready yet; ended ones are answered by finish()
      continue;
    }
    op_record& r = records_.at(it->id);
    const auto slot = pool_.choose(r.priority, r.workload);
    if (!slot) return;  // no stream free: later waiters wait as well, in order
    auto promise = std::move(it->promise);
    const op_id id = it->id;
    it = begin_waiters_.erase(it);
    op_lease lease = start_manual(id, r, *slot);
    if (lease.op.empty()) {
      promise.deliver(make_error(errc::op_failed, to_string(id) + " could not begin"));
    } else {
      promise.deliver(lease);
    }
  }
}

op_lease coordinator_state::start_manual(op_id id, op_record& r, std::uint32_t slot) {
  if (graph_.begin(id)) return {};
  if (auto placed = place_waits(id, slot); !placed.ok()) {
    launch_failed(id, slot, placed);
    return {};
  }
  auto& s = pool_.at(slot);
  s.reserved_by = id;
  r.stream = slot;
  r.dispatched_ns = now_ns();
  op_metrics_->dispatched(r.type, r.priority);
  ++dispatched_;
  coordination_ns_ += r.dispatched_ns - r.registered_ns;
  const gpu::handle_id handle = s.stream.ref().id();
  return op_lease{id, stream_id{slot}, handle.instance, handle.slot, handle.generation};
}

void coordinator_state::watch_all() {
  for (std::uint32_t i = 0; i < pool_.size() && !lost_; ++i) {
    if (auto why = watch(i)) lose(std::move(why));
  }
}

caf::error coordinator_state::watch(std::uint32_t slot) {
  auto& s = pool_.at(slot);
  if (s.issued <= s.watched) return {};
  const timeline_point first = s.watched + 1;
  s.watched = s.issued;
  auto watched = context_.poller->watch_points(s.stream.ref(), first, s.issued);
  return watched.ok() ? caf::error{} : to_error(watched);
}

void coordinator_state::lose(caf::error why) {
  if (!lost_) lost_ = why;
  graph_.fail_all(why, ended_);
  deferred_.clear();
  for (std::uint32_t i = 0; i < pool_.size(); ++i) {
    pool_.at(i).in_flight.clear();
    pool_.at(i).reserved_by = op_id{};
  }
  for (auto& [token, promise] : ready_waiters_) promise.deliver(why);
  ready_waiters_.clear();
  finish();
}

// --- caller-launched operations ----------------------------------------------------------

caf::result<op_lease> coordinator_state::begin(op_id id) {
  if (auto why = refusal()) return why;
  auto found = records_.find(id);
  if (found == records_.end()) {
    if (const op_info* ended = find_ended(id)) {
      return make_error(errc::invalid_state, to_string(id) + " has ended (" +
                                                 std::string{to_string(ended->state)} + ")");
    }
    return make_error(errc::unknown_op, to_string(id) + " is unknown or long gone");
  }
  op_record& r = found->second;
  if (!r.manual) {
    return make_error(errc::invalid_state,
                      to_string(id) + " carries its own work: the coordinator launches it");
  }
  for (const auto& waiter : begin_waiters_) {
    if (waiter.id == id)
      return make_error(errc::invalid_state, to_string(id) + " is already begun");
  }
  const op_state state = graph_.find(id)->state;
  if (state != op_state::pending && state != op_state::ready) {
    return make_error(errc::invalid_state,
                      to_string(id) + " is " + std::string{to_string(state)} + ": already begun");
  }
  // Answered once the dependencies are submitted and a stream is free: now, if they are.
  auto promise = self_->make_response_promise<op_lease>();
  begin_waiters_.push_back({id, promise});
  pump();
  flush();
  return promise;
}

caf::result<ticket> coordinator_state::complete(op_id id) {
  ticket out;
  if (auto bad = submit_manual(id, out)) return bad;
  return out;
}

caf::error coordinator_state::submit_manual(op_id id, ticket& out) {
  if (closing_) return refusal();
  auto found = records_.find(id);
  const op_graph::node* n = graph_.find(id);
  if (found == records_.end() || n == nullptr || !found->second.manual ||
      n->state != op_state::running) {
    return make_error(errc::invalid_state,
                      to_string(id) +
                          (found == records_.end() ? " has ended or is unknown"
                                                   : " is not a begun caller-launched op") +
                          ": nothing to complete");
  }
  op_record& r = found->second;
  auto& s = pool_.at(r.stream);
  s.reserved_by = op_id{};
  auto point = context_.device->signal(s.stream.ref());
  if (!point) {
    launch_failed(id, r.stream, point.error());
    pump();
    flush();
    return to_error(point.error());
  }
  submitted(id, r, r.stream, *point, now_ns());
  out = ticket{stream_id{r.stream}, *point};
  pump();
  flush();
  return {};
}

caf::result<op_state> coordinator_state::complete_failed(op_id id, const caf::error& why) {
  if (!why) {
    ticket ignored;
    if (auto bad = submit_manual(id, ignored)) return bad;
    return op_state::submitted;
  }
  auto found = records_.find(id);
  const op_graph::node* n = graph_.find(id);
  if (found == records_.end() || n == nullptr || !found->second.manual ||
      n->state != op_state::running) {
    return make_error(errc::invalid_state, to_string(id) + " is not a begun caller-launched op");
  }
  pool_.at(found->second.stream).reserved_by = op_id{};
  // The caller's work on the stream may have failed too: that is this operation's, not the
  // next one's.
  if (auto sealed = close_off(found->second.stream)) {
    lose(std::move(sealed));
  } else {
    graph_.fail(id, why, ended_);
  }
  pump();
  flush();
  return op_state::failed;
}

// --- telling ----------------------------------------------------------------------------------

void coordinator_state::finish() {
  if (ended_.empty()) return;
  const std::int64_t now = now_ns();
  std::vector<std::uint32_t> to_seal;
  for (const ended_op& e : ended_) {
    switch (e.state) {
      case op_state::completed: ++completed_; break;
      case op_state::failed: ++failed_; break;
      default: ++cancelled_; break;
    }
    if (!deferred_.empty()) deferred_.erase(e.id);  // cancelled while its report was held
    auto found = records_.find(e.id);
    if (found == records_.end()) continue;
    op_record& r = found->second;
    op_metrics_->ended(r.type, r.priority, e.state, now - r.registered_ns);
    profile(e.id, r, e.state, now);
    op_notice notice;
    notice.id = e.id;
    notice.state = e.state;
    notice.cause = e.cause;
    if (r.stream != no_stream) notice.stream = stream_id{r.stream};
    notice.point = r.point;
    notice.registered_ns = r.registered_ns;
    notice.dispatched_ns = r.dispatched_ns;
    notice.ended_ns = now;
    for (const auto& listener : r.listeners) {
      if (std::find(all_listeners_.begin(), all_listeners_.end(), listener) ==
          all_listeners_.end()) {
        notify(listener, notice);
      }
    }
    for (const auto& listener : all_listeners_) notify(listener, notice);
    if (r.run != 0) ran(r, notice);
    if (r.manual) {
      for (auto it = begin_waiters_.begin(); it != begin_waiters_.end(); ++it) {
        if (it->id == e.id) {
          it->promise.deliver(
              e.cause ? e.cause : make_error(errc::invalid_state, to_string(e.id) + " ended"));
          begin_waiters_.erase(it);
          break;
        }
      }
      if (r.stream != no_stream && pool_.size() > r.stream &&
          pool_.at(r.stream).reserved_by == e.id) {
        // Begun, then cancelled (or failed by a dependency) before complete: its waits stay.
        pool_.at(r.stream).reserved_by = op_id{};
        to_seal.push_back(r.stream);
      }
    }
    if (options_.ended_kept > 0) {
      // The record goes now: its text and dependencies move to the ended ring.
      std::string description = std::move(r.description);
      std::vector<op_id> deps = std::move(r.deps);
      op_info info = info_of(e.id, r);
      info.description = std::move(description);
      info.deps = std::move(deps);
      info.state = e.state;
      info.cause = e.cause;
      info.ended_ns = now;
      ended_kept_.push_back(std::move(info));
      if (ended_kept_.size() > options_.ended_kept) ended_kept_.pop_front();
    }
    if (r.timing) {
      spare_timing_.push_back(std::move(*r.timing));
      r.timing.reset();
    }
    records_.erase(found);
  }
  ended_.clear();
  (void)graph_.take_forgotten();  // records went with the end; the graph's own go here
  for (std::uint32_t slot : to_seal) {
    if (lost_) break;
    if (auto sealed = close_off(slot)) {
      lose(std::move(sealed));  // ends the rest; its own finish() runs with ended_ empty now
    }
  }
}

void coordinator_state::notify(const op_listener& listener, const op_notice& notice) {
  auto [at, added] = outbox_index_.emplace(listener.address(), outbox_.size());
  if (added) outbox_.emplace_back(listener, std::vector<op_notice>{});
  outbox_[at->second].second.push_back(notice);
}

void coordinator_state::report_levels() {
  while (slot_metrics_.size() < pool_.size()) {
    slot_metrics_.emplace_back(*registry_, gpu_,
                               "coordinator-" + std::to_string(slot_metrics_.size()));
  }
  std::size_t on_streams = 0;
  for (std::uint32_t i = 0; i < pool_.size(); ++i) {
    const std::size_t n = pool_.at(i).in_flight.size();
    on_streams += n;
    slot_metrics_[i].publish(n, 0);  // and what the slot accepted and completed since
  }
  op_metrics_->live(graph_.live(), on_streams);
}

void coordinator_state::flush() {
  report_levels();
  for (auto& [listener, notices] : outbox_) self_->send(listener, std::move(notices));
  outbox_.clear();
  outbox_index_.clear();
}

// --- the pool ------------------------------------------------------------------------------

caf::result<stream_id> coordinator_state::wait_for_any_ready(caf::timespan timeout) {
  if (auto why = refusal()) return why;
  if (auto idle = pool_.any_idle()) return stream_id{*idle};
  const std::uint64_t token = next_token_++;
  auto promise = self_->make_response_promise<stream_id>();
  ready_waiters_.emplace(token, promise);
  self_->delayed_send(self_, timeout, expire_atom::value, token);
  return promise;
}

void coordinator_state::expire(std::uint64_t token) {
  auto found = ready_waiters_.find(token);
  if (found == ready_waiters_.end()) return;
  std::string busy;
  for (std::uint32_t i = 0; i < pool_.size(); ++i) {
    const auto& s = pool_.at(i);
    busy += (i == 0 ? "" : ", ") + std::string{"stream "} + std::to_string(i) + ": " +
            std::to_string(s.in_flight.size()) + " in flight" +
            (s.reserved_by.empty() ? "" : ", held by " + to_string(s.reserved_by));
  }
  found->second.deliver(make_error(errc::timeout, "no stream became idle in time (" + busy + ")"));
  ready_waiters_.erase(found);
}

void coordinator_state::serve_ready_waiters() {
  if (ready_waiters_.empty()) return;
  const auto idle = pool_.any_idle();
  if (!idle) return;
  for (auto& [token, promise] : ready_waiters_) promise.deliver(stream_id{*idle});
  ready_waiters_.clear();
}

caf::result<bool> coordinator_state::reset() {
  if (closing_) return refusal();
  if (!lost_) return false;  // nothing to recover from
  if (auto health = context_.device->health(); !health.ok()) {
    return make_error(errc::device_lost,
                      "the backend is still lost (" + health.message() +
                          "): reset it first, from outside any actor (backend::reset())");
  }
  std::vector<gpu::stream> streams;
  std::vector<gpu::stream_priority> priorities;
  for (std::uint32_t i = 0; i < pool_.size(); ++i) {
    auto& old = pool_.at(i);
    auto made = context_.device->create_stream({"coordinator-" + std::to_string(i), old.priority});
    if (!made) return to_error(made.error());
    streams.push_back(std::move(made.value()));
    priorities.push_back(old.priority);
  }
  for (std::uint32_t i = 0; i < pool_.size(); ++i) {
    context_.poller->subscribe(pool_.at(i).stream.ref(), {}).ignore();
  }
  pool_ = stream_pool{options_.strategy, options_.max_in_flight};
  for (std::size_t i = 0; i < streams.size(); ++i) pool_.add(std::move(streams[i]), priorities[i]);
  ++epoch_;
  lost_ = caf::error{};
  subscribe_streams();
  return !lost_;
}

void coordinator_state::shut_down() {
  if (closing_) return;
  closing_ = true;
  const caf::error why =
      make_error(errc::shutting_down, "the coordinator shut down before the operation ended");
  graph_.fail_all(why, ended_);
  finish();
  for (auto& waiter : begin_waiters_) waiter.promise.deliver(why);
  begin_waiters_.clear();
  for (auto& [token, promise] : ready_waiters_) promise.deliver(why);
  ready_waiters_.clear();
  for (std::uint32_t i = 0; i < pool_.size(); ++i) {
    context_.poller->subscribe(pool_.at(i).stream.ref(), {}).ignore();
  }
  flush();
}

}  // namespace cudactor::detail
