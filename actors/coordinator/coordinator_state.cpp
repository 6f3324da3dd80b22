#include "cudactor/actors/coordinator/coordinator_state.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <random>
#include <string>
#include <utility>

#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/actors/detail/progress.hpp"
#include "cudactor/actors/detail/top_waits.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

namespace cudactor::detail {

void coordinator_state::init(self_pointer self, const coordinator_context& context,
                             coordinator_options options) {
  self_ = self;
  context_ = context;
  options_ = std::move(options);
  registry_ = registry_or_own(context_.metrics);
  gpu_ = gpu_label(*context_.device);
  op_metrics_.emplace(*registry_, gpu_);
  step_metrics_.emplace(*registry_, gpu_);
  graph_ = op_graph{options_.failures_kept};
  ended_kept_ = ended_ring{options_.ended_kept};
  pool_ = stream_pool{options_.strategy};
  steps_ = step_table{options_.max_steps};
  for (const auto& s : context_.streams) {
    pool_.add(s.id, s.priority, s.ledger);
    actors_.push_back(s.actor);
  }
  staged_.resize(actors_.size());
  frees_.resize(actors_.size());
  // A tag of this coordinator's own in every buffer id, so that another's handle is refused.
  buffers_.emplace(static_cast<std::uint32_t>(std::random_device{}() | 1u), options_.max_buffers);
  buffer_metrics_.reserve(actors_.size());
  for (const auto& s : context_.streams) buffer_metrics_.emplace_back(*registry_, gpu_, s.name);
  report_levels();
  // The stream actors time what they are asked to: they share the runtime's device clock.
  timing_ = options_.timing || context_.trace != nullptr;
  profile_.emplace(now_ns(), options_.report_names);
  profile_->streams(pool_.size());
  if (context_.trace) {
    for (const auto& s : context_.streams) {
      context_.trace->name_stream(s.id.value,
                                  s.name + " (" + std::string{gpu::to_string(s.priority)} + ")");
    }
  }
  subscribe_streams();
}

coordinator_state::~coordinator_state() {
  if (self_ != nullptr && !closing_) shut_down();
}

void coordinator_state::subscribe_streams() {
  // Each stream actor's completion batches, one per stream per poller tick: the only way the
  // coordinator hears of completions.
  const auto me = caf::actor_cast<completion_listener>(self_);
  for (const auto& actor : actors_) self_->send(actor, subscribe_atom::value, me);
}

std::optional<std::uint32_t> coordinator_state::index_of(stream_id id) const {
  // Indexes are in the runtime's order, usually index i is stream i; a look-up otherwise.
  if (id.value < pool_.size() && pool_.at(id.value).id == id) return id.value;
  for (std::uint32_t i = 0; i < pool_.size(); ++i) {
    if (pool_.at(i).id == id) return i;
  }
  return std::nullopt;
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

caf::error coordinator_state::resolve(const work& w, const std::vector<buffer_use>& uses,
                                      const byte_range* ranges, gpu::work_fn& out) {
  if (w.is_local()) {  // the hot path builds no name
    out = w.closure();
    return {};
  }
  buffer_spans spans(uses.size());
  for (std::size_t i = 0; i < uses.size() && ranges != nullptr; ++i) {
    caf::error unused;  // checked by check_uses already
    if (const buffer_table::entry* e = buffers_->find(uses[i].buffer, unused)) {
      spans[i].data =
          reinterpret_cast<void*>(static_cast<std::uintptr_t>(e->handle.address + ranges[i].begin));
      spans[i].bytes = ranges[i].end - ranges[i].begin;
      spans[i].access = uses[i].access;
    }
  }
  return resolve_work(w, context_.operations.get(), "the coordinator's node", std::move(spans),
                      out);
}

op_record& coordinator_state::add_record(op_id id, op_spec& spec, const std::vector<op_id>& deps,
                                         gpu::work_fn fn, bool manual, std::int64_t now) {
  op_record& r = records_.add(id.value);
  r.type = spec.type;
  r.priority = spec.priority;
  r.workload = spec.workload;
  r.manual = manual;
  r.pinned = spec.placement.pinned ? *pool_.index_of(spec.placement.stream) : no_stream;
  r.strict = spec.placement.strict;
  r.strategy = spec.placement.own_strategy ? spec.placement.strategy : options_.strategy;
  r.description = std::move(spec.description);
  r.deps.assign(deps.data(), deps.data() + deps.size());
  r.fn = std::move(fn);
  r.registered_ns = now;
  ++total_;
  op_metrics_->registered(r.type, r.priority);
  return r;
}

void coordinator_state::add_listener(op_record& r, const op_listener& listener) {
  if (listener) r.listeners.add(listener);
}

caf::result<op_state> coordinator_state::depend(op_id op, op_id dep) {
  if (auto why = refusal()) return why;
  if (auto bad = graph_.add_dependency(op, dep)) return bad;
  auto found = records_.find(op.value);
  if (found != nullptr &&
      std::find(found->deps.begin(), found->deps.end(), dep) == found->deps.end()) {
    found->deps.push_back(dep);
  }
  return graph_.find(op)->state;
}

// --- dispatching -----------------------------------------------------------------------------

void coordinator_state::pump() {
  // One clock read per few operations: a burst of them takes microseconds, not more.
  constexpr unsigned stamp_reuse = 16;
  std::int64_t now = 0;
  unsigned n = 0;
  // First those that waited for a dependency's ticket or for room, oldest first.
  if (!unplaced_.empty()) {
    std::vector<op_id> waiting;
    waiting.swap(unplaced_);
    for (op_id id : waiting) {
      auto found = records_.find(id.value);
      const op_graph::node* node = graph_.find(id);
      if (found == nullptr || node == nullptr || node->state != op_state::running) continue;
      if (found->type == op_type::barrier) {
        if (lost_ || closing_ || !start_barrier(id, *found)) unplaced_.push_back(id);
        continue;
      }
      const auto index = lost_ || closing_ ? std::nullopt : place(id, *found);
      if (!index) {
        unplaced_.push_back(id);
        continue;
      }
      if (n++ % stamp_reuse == 0) now = now_ns();
      stage(id, *index, now);
    }
  }
  for (; !lost_ && !closing_ && pool_.any_available(); ++n) {
    const std::optional<op_id> next = graph_.next_ready();
    if (!next) break;
    // The next one's node and record, asked for while this one is placed: a random DAG's
    // ready operations come out of id order, each record out of cache since registration.
    // Consecutive ids the hardware streams in by itself.
    if (const op_id after = graph_.peek_ready(); after.value != next->value + 1) {
      graph_.prefetch(after);
      __builtin_prefetch(records_.find(after.value));
    }
    graph_.prefetch_links(*next);
    op_record& r = records_.at(next->value);
    if (r.type == op_type::barrier) {
      if (!start_barrier(*next, r)) unplaced_.push_back(*next);
      continue;
    }
    const auto index = place(*next, r);
    if (!index) {
      unplaced_.push_back(*next);
      continue;
    }
    if (n % stamp_reuse == 0) now = now_ns();
    stage(*next, *index, now);
  }
  send_staged();
  serve_begin_waiters();
  finish();
}

std::optional<std::uint32_t> coordinator_state::place(op_id id, const op_record& r) {
  // Dependencies on their way to a stream (no ticket back yet). One with a cell is waited for
  // from any stream, on the point its stream actor publishes; one without (sent before
  // anything depended on it) only by following it onto its stream, or once its ticket is back.
  std::optional<std::uint32_t> near;   // the stream of every dependency on its way, if one
  std::optional<std::uint32_t> bound;  // the stream of every one without a cell, if one
  bool scattered = false, stuck = false;
  const auto on_way = [&](std::uint32_t stream, bool has_cell) {
    if (!near) {
      near = stream;
    } else if (*near != stream) {
      scattered = true;
    }
    if (has_cell) return;
    if (!bound) {
      bound = stream;
    } else if (*bound != stream) {
      stuck = true;
    }
  };
  graph_.for_each_unfinished_dep(id, [&](op_id dep, const op_position& at) {
    if (at.point == 0) on_way(at.stream, cell_of(dep) != nullptr);
  });
  for_each_after(id, [&](after_state st, const op_position& at) {  // on the device only
    if (st == after_state::not_yet) {
      stuck = true;
    } else if (at.point == 0) {
      on_way(at.stream, false);
    }
  });
  if (stuck) return std::nullopt;
  // A replay's parts begin on several streams, each waiting there for the replay's
  // dependencies: one without a cell must have its ticket back first.
  if (r.type == op_type::step && (bound || !replay_streams_free(id))) return std::nullopt;
  if (r.pinned != no_stream) {
    // Its own stream or nothing: it waits for room there (and for the ticket of a dependency
    // without a cell on its way to another).
    if ((bound && *bound != r.pinned) || !pool_.available(r.pinned)) return std::nullopt;
    return r.pinned;
  }
  const auto chosen = pool_.choose(r.priority, r.workload, r.strategy, r.strict);
  const std::optional<std::uint32_t> follow = bound ? bound : (scattered ? std::nullopt : near);
  if (!follow || (chosen && *chosen == *follow)) return bound && !chosen ? std::nullopt : chosen;
  // The strategy wants another stream, or none has room. The balancing ones keep a dependent
  // with what it depends on while that stream is not much busier: stream order instead of a
  // device wait, and a chain on one stream rather than across all of them. A strict one
  // follows only onto a stream it may use.
  const bool balancing =
      r.strategy == pool_strategy::load_balanced || r.strategy == pool_strategy::round_robin;
  if (balancing && (!r.strict || pool_.matches(*follow, r.priority, r.workload)) &&
      pool_.available(*follow) &&
      (!chosen || pool_.load_of(*follow) <= pool_.load_of(*chosen) + follow_slack)) {
    return follow;
  }
  // Otherwise the strategy's choice, waiting on the device; one without a cell waits for its
  // ticket.
  return bound ? std::nullopt : chosen;
}

void coordinator_state::pump_later() {
  if (pump_pending_ || in_pass_ || closing_) return;
  pump_pending_ = true;
  self_->send(self_, pump_atom::value);
}

void coordinator_state::pass() {
  in_pass_ = true;  // what the pass itself ends goes out with it
  pump();
  serve_ready_waiters();
  flush();
  in_pass_ = false;
}

void coordinator_state::on_pump() {
  pump_pending_ = false;
  pass();
}

void coordinator_state::pass_or_later() {
  if (pump_pending_ || closing_) return;  // a pass is coming
  // Nothing else waiting in the mailbox: no burst to join, so the pass runs now (one hop less
  // for a lone operation); otherwise once the burst has been handled.
  if (self_->mailbox().empty()) {
    pass();
  } else {
    pump_later();
  }
}

std::vector<point_wait> coordinator_state::waits_for(op_id id, std::uint32_t index) {
  waits_work_.clear();
  std::vector<point_wait> out;
  graph_.for_each_unfinished_dep(id, [&](op_id dep, const op_position& at, bool order_only) {
    if (at.stream == index) return;  // stream order suffices
    if (at.point != 0) {
      waits_work_.emplace_back(at, order_only);
      return;
    }
    // On its way to another stream: its stream actor publishes the point (place() keeps
    // dependencies without a cell to the same stream).
    const std::shared_ptr<point_cell>& cell = records_.at(dep.value).cell;
    assert(cell != nullptr);
    if (const timeline_point known = cell->point(); known != 0 && known != point_cell::never) {
      waits_work_.emplace_back(op_position{at.stream, known}, order_only);
    } else if (known == 0) {
      out.push_back(point_wait{pool_.at(at.stream).id, 0, order_only, cell});
      ++device_waits_;
      op_metrics_->device_waits(1);
    }  // never: it will not run, and its end cancels or releases this one
  });
  after_waits(id, index);
  const auto wait = [&](const op_position& at, bool order_only) {
    if (!pool_.needs_wait(index, at.stream, at.point, order_only)) return;
    out.push_back(point_wait{pool_.at(at.stream).id, at.point, order_only, nullptr});
    ++device_waits_;
    op_metrics_->device_waits(1);
  };
  // Dependencies come in id order, not in their streams' order: one wait per stream
  // (top_waits.hpp), then only those an earlier wait of this stream does not cover.
  using known = std::pair<op_position, bool>;
  keep_top_waits(
      waits_work_, [](const known& w) { return w.first.stream; },
      [](const known& w) { return w.first.point; }, [](const known& w) { return w.second; });
  for (const auto& [at, order_only] : waits_work_) wait(at, order_only);
  return out;
}

void coordinator_state::stage(op_id id, std::uint32_t index, std::int64_t now) {
  op_record& r = records_.at(id.value);
  dispatched_op op;
  op.fn = std::move(r.fn);
  // A replay's parts go out first; the join (its own point) waits for them.
  op.waits = r.type == op_type::step ? stage_replay(id) : waits_for(id, index);
  op.timed = timing_;
  // Dependents on other streams go out with it, in this pass or a later one before its ticket
  // is back, and wait for the point its stream actor publishes. A buffer user may get
  // dependents later (inferred from their uses): it gets a cell too. Without a cell (the
  // option off) a dependent on another stream waits for its ticket.
  if (const op_graph::node* n = graph_.find(id);
      options_.dependents_in_pass && (r.bufs || (n != nullptr && !n->dependents.empty()))) {
    r.cell = std::make_shared<point_cell>();
    op.cell = r.cell;
  }
  r.stream = index;
  r.dispatched_ns = now;
  pool_.note_dispatch(index, now);
  send_to(index, id, std::move(op));
  if (r.type == op_type::release) {
    caf::error why;
    const buffer_table::entry* e = buffers_->find(r.bufs->releases, why);
    if (e != nullptr && !e->handle.adopted) free_released(index, e->memory);
  }
  op_metrics_->dispatched(r.type, r.priority);
  ++dispatched_;
  coordination_ns_ += r.dispatched_ns - r.registered_ns;
  // On its way: dependents may follow it onto this stream before its ticket is back.
  graph_.submitted(id, op_position{index, 0});
}

void coordinator_state::send_to(std::uint32_t index, op_id id, dispatched_op op) {
  pool_.reserve(index);  // one of the stream's cap, given back by the stream actor
  op.op = id;           // the stream names it when it is reached
  staged_.add(index, id, std::move(op));
}

void coordinator_state::send_staged() {
  for (std::uint32_t index = 0; index < staged_.size(); ++index) {
    if (staged_.empty(index)) continue;
    ++passes_;
    pool_.publish(index);  // before the message: the stream actor gives each back when reached
    staged_passes::pass pass = staged_.take(index);
    // At most max_pass operations a message (what a stream actor takes in one): a pass with
    // replays' parts can hold more. The messages reach the stream actor in the order sent.
    const std::size_t total = pass.ops.size();
    const std::size_t per = std::max<std::size_t>(1, options_.max_pass);
    for (std::size_t from = 0; from < total; from += per) {
      const std::size_t to = std::min(total, from + per);
      std::shared_ptr<std::vector<op_id>> ids;
      std::vector<dispatched_op> ops;
      if (from == 0 && to == total) {
        ids = std::make_shared<std::vector<op_id>>(std::move(pass.ids));
        ops = std::move(pass.ops);
      } else {
        ids = std::make_shared<std::vector<op_id>>(pass.ids.begin() + from, pass.ids.begin() + to);
        ops.assign(std::make_move_iterator(pass.ops.begin() + from),
                   std::make_move_iterator(pass.ops.begin() + to));
        if (from != 0) ++passes_;
      }
      const std::uint64_t epoch = epoch_;
      self_
          ->request(actors_[index], caf::infinite, dispatch_atom::value,
                    stream_dispatch{std::move(ops)})
          .then(
              [this, epoch, index, ids](const std::vector<ticket>& tickets) {
                dispatched(epoch, index, *ids, tickets);
              },
              [this, epoch, index, ids](caf::error& why) { dispatch_refused(epoch, index, why); });
    }
    // Released buffers' memory, freed right after their release's point (it waits for every
    // stream's last use): reusable once the stream has passed the free.
    for (auto& memory : frees_[index]) {
      self_->request(actors_[index], caf::infinite, free_atom::value, memory)
          .then([](const ticket&) {}, [this](caf::error&) { ++failed_frees_; });
    }
    frees_[index].clear();
  }
}

void coordinator_state::dispatched(std::uint64_t epoch, std::uint32_t index,
                                   const std::vector<op_id>& ids,
                                   const std::vector<ticket>& tickets) {
  if (epoch != epoch_) return;  // sent before a loss, which ended them all
  const auto& s = pool_.at(index);
  if (tickets.size() != ids.size()) {
    lose(make_error(errc::backend_error, "stream " + std::to_string(s.id.value) + " answered " +
                                             std::to_string(tickets.size()) + " tickets for " +
                                             std::to_string(ids.size()) + " operations"));
    return;
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto found = records_.find(ids[i].value);
    if (found == nullptr) {
      // Ended while on its way (cancelled, reached before its ticket came back): what comes
      // after it by its buffer uses waits for its point.
      if (auto tail = tails_.find(ids[i]); tail != tails_.end())
        tail->second.point = tickets[i].point;
      // A barrier ended (timed out, withdrawn) before its tickets came back: its points are
      // still its streams' newest barrier points.
      if (barriers_.late_ticket(ids[i])) note_barrier_point(index, tickets[i].point);
      continue;
    }
    if (found->type == op_type::barrier) {
      barrier_ticket(ids[i], *found, index, tickets[i].point);
      continue;
    }
    on_stream(*found, index, tickets[i].point);
    graph_.placed(ids[i], tickets[i].point);
  }
  finish();
  pass_or_later();
}

void coordinator_state::dispatch_refused(std::uint64_t epoch, std::uint32_t index,
                                         const caf::error& why) {
  if (epoch != epoch_) return;
  const auto& s = pool_.at(index);
  if (closing_) return;
  // A stream that refuses a pass is broken (its device lost) or going away: either way nothing
  // more can run on it, and the operations of the pass may be partly on it.
  lose(why.code() == static_cast<std::uint8_t>(errc::device_lost)
           ? why
           : make_error(errc::device_lost,
                        "stream " + std::to_string(s.id.value) +
                            " refused the coordinator's operations: " + cudactor::describe(why)));
}

void coordinator_state::launch_failed(op_id id, const caf::error& why) {
  if (why.code() == static_cast<std::uint8_t>(errc::device_lost)) {
    lose(why);
    return;
  }
  graph_.fail(id,
              make_error(errc::op_failed,
                         to_string(id) + " could not be launched: " + cudactor::describe(why)),
              ended_);
}

void coordinator_state::lose(caf::error why) {
  if (!lost_) lost_ = why;
  ++epoch_;  // answers to what was sent before are stale now
  graph_.fail_all(why, ended_);
  for (op_id id : deferred_) {  // ended by the loss: the held reports go
    if (op_record* r = records_.find(id.value); r != nullptr && r->deferred) (void)undefer(*r);
  }
  deferred_.clear();
  tails_.clear();  // the device is gone: nothing of theirs runs any more
  after_ops_.clear();
  ghosts_.clear();
  ++let_go_;
  for (auto& frees : frees_) frees.clear();
  pool_.clear_work();
  unplaced_.clear();
  staged_.clear();
  pool_.drop_staged();
  for (auto& [token, promise] : ready_waiters_) promise.deliver(why);
  ready_waiters_.clear();
  finish();
  barriers_.lost();  // after the ends: no ticket of an ended barrier comes back now
}

caf::result<bool> coordinator_state::reset() {
  if (closing_) return refusal();
  if (!lost_) return false;  // nothing to recover from
  if (auto health = context_.device->health(); !health.ok()) {
    return make_error(errc::device_lost,
                      "the backend is still lost (" + health.message() +
                          "): reset it first, from outside any actor (backend::reset())");
  }
  // Every stream actor makes its stream anew; the coordinator goes on once all have.
  struct gather {
    caf::typed_response_promise<bool> promise;
    std::size_t left = 0;
    caf::error failed;
  };
  auto state = std::make_shared<gather>();
  state->promise = self_->make_response_promise<bool>();
  state->left = actors_.size();
  const std::uint64_t epoch = epoch_;
  auto done = [this, state, epoch] {
    if (--state->left != 0) return;
    if (state->failed) {
      state->promise.deliver(state->failed);
      return;
    }
    if (epoch == epoch_ && lost_) {
      pool_.clear_work();
      drop_kept_buffers();
      lost_ = caf::error{};
    }
    state->promise.deliver(!lost_);
  };
  for (std::uint32_t index = 0; index < actors_.size(); ++index) {
    self_->request(actors_[index], caf::infinite, reset_atom::value)
        .then([done](bool) { done(); },
              [state, done](caf::error& why) {
                if (!state->failed) state->failed = std::move(why);
                done();
              });
  }
  return state->promise;
}

void coordinator_state::shut_down() {
  if (closing_) return;
  closing_ = true;
  const caf::error why =
      make_error(errc::shutting_down, "the coordinator shut down before the operation ended");
  graph_.fail_all(why, ended_);
  steps_.for_each([this](step_table::entry& e) { forget_scratch(&e); });
  finish();
  for (auto& waiter : begin_waiters_) waiter.promise.deliver(why);
  begin_waiters_.clear();
  for (auto& [token, promise] : ready_waiters_) promise.deliver(why);
  ready_waiters_.clear();
  for (auto& [id, waiter] : end_waiters_) waiter.promise.deliver(why);  // none: all ended
  end_waiters_.clear();
  end_waits_.clear();
  const auto me = caf::actor_cast<completion_listener>(self_);
  for (const auto& actor : actors_) self_->send(actor, unsubscribe_atom::value, me);
  flush();
}

}  // namespace cudactor::detail
