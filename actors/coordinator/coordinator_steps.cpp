// Steps: a graph recorded once (checked, inferred, placed) and replayed as one operation of the
// coordinator whose parts go to their streams in one pass (docs/replay.md).
#include <caf/all.hpp>

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/actors/coordinator/coordinator_state.hpp"
#include "cudactor/actors/coordinator/step_graph.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

namespace cudactor::detail {

namespace {

caf::error refuse_op(std::size_t i, const std::string& why) {
  return make_error(errc::invalid_argument, "record: step op " + std::to_string(i) + " " + why);
}

}  // namespace

caf::error coordinator_state::make_step(step_spec& spec_in, step_handle& out) {
  if (auto why = refusal()) return why;
  graph_spec& graph = spec_in.graph;
  if (spec_in.name.size() > options_.limits.max_name) {
    return make_error(
        errc::invalid_argument,
        "record: a step's name has at most " + std::to_string(options_.limits.max_name) + " bytes");
  }
  const std::size_t n = graph.ops.size();
  if (n == 0)
    return make_error(errc::invalid_argument, "record: a step has at least one operation");
  if (auto bad = check_input(graph, options_.limits)) return bad;
  if (steps_.size() >= steps_.max()) {
    return make_error(errc::resource_exhausted,
                      "record: " + std::to_string(steps_.size()) +
                          " steps are recorded, the most the coordinator keeps "
                          "(cudactor.coordinator.max-steps): release one first");
  }
  const std::int64_t started = now_ns();
  for (std::size_t i = 0; i < n; ++i) {
    const op_spec& spec = graph.ops[i].spec;
    if (spec.is_barrier()) {
      return refuse_op(i, "is a barrier: a step records work (its own order is its waits)");
    }
    if (spec.is_manual()) {
      return refuse_op(i, "has no work: a caller-launched operation cannot be replayed");
    }
    if (!spec.deps.empty()) {
      return refuse_op(i,
                       "names operations registered before: a step depends only on its own "
                       "operations, and is ordered against other work by its buffer uses");
    }
  }
  // Checked and inferred as a graph is (its dependencies inferred on scratch copies of the
  // histories, which are dropped: recording runs nothing), its order, its work resolved
  // against its buffers. A collective's buffers become its uses, and a write of its
  // communicator's order token: in the step its collectives keep their order, and a replay is
  // ordered against the communicator's other collectives (docs/collectives.md).
  graph_uses uses;
  std::vector<std::uint32_t> order;
  std::vector<gpu::work_fn> fns;
  if (auto bad = prepare_graph(graph, "record: step op ", uses, order, fns)) return bad;

  auto step = std::make_shared<recorded_step>();
  step->ops.resize(n);
  step_plan::input in;
  in.streams = pool_.size();
  in.order = order;
  in.after_first.resize(n + 1);
  in.pinned.assign(n, step_plan::none);
  in.allowed.resize(n);
  step->priority = op_priority::cleanup;
  for (std::uint32_t i = 0; i < n; ++i) {
    op_spec& spec = graph.ops[i].spec;
    recorded_step::op& o = step->ops[i];
    in.after_first[i] = static_cast<std::uint32_t>(in.after.size());
    for (std::uint32_t a : graph.ops[i].after) in.after.push_back(step_plan::edge{a, false});
    if (!uses.empty()) {
      for_each_inferred(uses.inferences[i].inferred, [&](op_id d, dep_kind kind) {
        if (d.value < scratch_first.value) return;  // registered before: the replay's concern
        in.after.push_back(step_plan::edge{
            static_cast<std::uint32_t>(d.value - scratch_first.value), kind == dep_kind::order});
      });
      o.ranges.assign(uses.ranges_of(i), uses.ranges_of(i) + spec.uses.size());
    }
    if (spec.placement.pinned) in.pinned[i] = *pool_.index_of(spec.placement.stream);
    if (spec.placement.strict) {
      for (std::uint32_t s = 0; s < pool_.size(); ++s) {
        if (pool_.matches(s, spec.priority, spec.workload)) in.allowed[i].push_back(s);
      }
    }
    step->priority = std::min(step->priority, spec.priority);
    o.body = std::move(spec.body);
    o.collective = std::move(spec.collective);
    o.uses = std::move(spec.uses);
    o.fn = std::move(fns[i]);
    o.description = std::move(spec.description);
  }
  in.after_first[n] = static_cast<std::uint32_t>(in.after.size());
  step->plan = step_plan{in};
  step->union_uses = union_of_uses(step->ops);
  // The union comes by buffer, each buffer's uses together: each buffer once.
  for (const buffer_use& u : step->union_uses) {
    if (step->buffers.empty() || step->buffers.back() != u.buffer)
      step->buffers.push_back(u.buffer);
  }
  step->name = spec_in.name.empty() ? std::string{"step"} : std::move(spec_in.name);
  if (auto bad = make_step_graph(*step, in)) return bad;
  step->recorded_ns = now_ns() - started;
  step_metrics_->recorded(step->name, step->recorded_ns);
  const auto handle = steps_.add(std::move(step));
  assert(handle.has_value());  // room checked above
  out = *handle;
  return {};
}

caf::error coordinator_state::make_step_graph(recorded_step& step, const step_plan::input& in) {
  const bool wanted = options_.step_graphs == step_graph_mode::always ||
                      (options_.step_graphs == step_graph_mode::automatic &&
                       context_.device->kind() == gpu::backend_kind::cuda);
  if (!wanted) return {};
  const std::int64_t started = now_ns();
  // Nodes in the step's dependency order; each node's kernels at the priority of the stream
  // the plan put its operation on (what the strategy chose for it).
  const std::size_t n = step.ops.size();
  std::vector<std::uint32_t> node_of(n);
  for (std::uint32_t k = 0; k < n; ++k) node_of[in.order[k]] = k;
  std::vector<gpu::graph_node> nodes(n);
  // Each dependency once per node, by the node that last took it: a search of the node's list
  // per dependency was quadratic in its fan-in (a step's operations may each come after
  // thousands).
  std::vector<std::uint32_t> taken_by(n, static_cast<std::uint32_t>(n));
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t op = in.order[k];
    gpu::graph_node& node = nodes[k];
    node.work = step.ops[op].fn;
    for (std::uint32_t e = in.after_first[op]; e < in.after_first[op + 1]; ++e) {
      const std::uint32_t dep = node_of[in.after[e].dep];
      if (taken_by[dep] == k) continue;
      taken_by[dep] = k;
      node.after.push_back(dep);
    }
    node.priority = pool_.at(step.plan.parts()[step.plan.part_of(op)].stream).priority;
    const std::string& what = step.ops[op].description;
    node.label =
        "step op " + std::to_string(op) + (what.empty() ? std::string{} : " ('" + what + "')");
  }
  auto built = context_.device->build_graph(std::move(nodes));
  if (!built) {
    return make_error(to_errc(built.code()),
                      "record: the step's graph: " + built.error().to_string());
  }
  step.graph = std::make_shared<step_graph>(std::move(built).value(), in.order);
  for (std::uint32_t op = 0; op < n; ++op) {
    if (step.ops[op].collective.empty()) continue;
    std::shared_ptr<gpu::communicator> comm;
    auto counted = collective_counter(step.ops[op].collective, comm);
    if (comm) step.graph->add_communicator(op, std::move(comm), std::move(counted));
  }
  step_metrics_->built(step.name, now_ns() - started);
  const auto made = step.graph->take_changes();  // its instantiation, seen from record on
  step_metrics_->graph_changes(step.name, made.instantiations, made.updates, made.scratch_bytes);
  return {};
}

caf::result<step_handle> coordinator_state::record_step(step_spec& spec) {
  step_handle out;
  if (auto bad = make_step(spec, out)) return bad;
  return out;
}

void coordinator_state::record_step(step_spec& spec, step_record_callback& done) {
  auto f = std::move(done.get());
  if (!f) return;
  step_handle out;
  caf::error bad = make_step(spec, out);
  f(out, std::move(bad));
}

bool coordinator_state::release_step(const step_handle& step) {
  forget_scratch(steps_.find(step));
  return steps_.remove(step);
}

void coordinator_state::forget_scratch(step_table::entry* e) {
  if (e == nullptr || !e->step->graph) return;
  step_metrics_->graph_changes(e->step->name, 0, 0, e->step->graph->forget_scratch());
}

caf::error coordinator_state::bind(const replay_request& request, const recorded_step& step,
                                   std::vector<buffer_use>& uses, step_replay& replay) {
  const std::string label = "replay of " + to_string(request.step);
  // Every look-up below is a binary search over sorted ids: a replay may bind as many buffers
  // as its owner holds, of a step with up to max_graph_ops operations, and a look through
  // every binding per use (or per pair of buffers) made one request quadratic.
  // The step's buffers come in buffer_id's order already (union_of_uses goes by it).
  const std::vector<buffer_id>& used = step.buffers;
  assert(std::is_sorted(used.begin(), used.end()));
  std::vector<std::pair<buffer_id, buffer_id>> map;  // recorded -> bound, sorted by recorded
  map.reserve(request.bindings.size());
  for (const buffer_binding& b : request.bindings) map.emplace_back(b.from, b.to);
  std::stable_sort(map.begin(), map.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (std::size_t i = 0; i < map.size(); ++i) {
    if (!std::binary_search(used.begin(), used.end(), map[i].first)) {
      return make_error(errc::invalid_argument, label + " binds " + to_string(map[i].first) +
                                                    ", which the step does not use");
    }
    if (i > 0 && map[i - 1].first == map[i].first) {
      return make_error(errc::invalid_argument,
                        label + " binds " + to_string(map[i].first) + " twice");
    }
  }
  for (const buffer_binding& b : request.bindings) {
    caf::error why;
    const buffer_table::entry* to = buffers_->find_live(b.to, why);
    if (to == nullptr) {
      return make_error(errc::invalid_argument, label + " binds " + to_string(b.from) + " to " +
                                                    to_string(b.to) + ": " +
                                                    cudactor::describe(why));
    }
    const buffer_table::entry* from = buffers_->find_live(b.from, why);  // live: checked before
    if (from == nullptr || from->handle.size != to->handle.size) {
      return make_error(errc::invalid_argument,
                        label + " binds " + to_string(b.from) + " (" +
                            std::to_string(from != nullptr ? from->handle.size : 0) +
                            " bytes) to " + to_string(b.to) + " (" +
                            std::to_string(to->handle.size) +
                            " bytes): a buffer is bound to one of the same size");
    }
  }
  const auto bound = [&](const buffer_id& id) {
    auto it = std::lower_bound(
        map.begin(), map.end(), id,
        [](const std::pair<buffer_id, buffer_id>& x, const buffer_id& y) { return x.first < y; });
    return it != map.end() && it->first == id ? it->second : id;
  };
  // The step's dependencies were inferred among distinct buffers: they must stay distinct.
  std::vector<std::pair<buffer_id, std::size_t>> after;  // bound id, index in step.buffers
  after.reserve(step.buffers.size());
  for (std::size_t i = 0; i < step.buffers.size(); ++i) {
    after.emplace_back(bound(step.buffers[i]), i);
  }
  std::sort(after.begin(), after.end());  // by bound id, then index
  for (std::size_t k = 1; k < after.size(); ++k) {
    if (after[k - 1].first == after[k].first) {
      return make_error(errc::invalid_argument,
                        label + " would use " + to_string(after[k].first) + " for both " +
                            to_string(step.buffers[after[k - 1].second]) + " and " +
                            to_string(step.buffers[after[k].second]) +
                            ": bound buffers stay distinct");
    }
  }
  for (buffer_use& u : uses) u.buffer = bound(u.buffer);
  std::uint64_t rebound = 0;
  for (std::uint32_t i = 0; i < step.ops.size(); ++i) {
    const recorded_step::op& op = step.ops[i];
    const bool touched = std::any_of(op.uses.begin(), op.uses.end(), [&](const buffer_use& u) {
      return bound(u.buffer) != u.buffer;
    });
    if (!touched) continue;
    if (!op.collective.empty()) {
      // A collective's buffers are named by id: the same call on the bound ones.
      op_spec call;
      call.collective = op.collective;
      call.collective.send = bound(call.collective.send);
      call.collective.recv = bound(call.collective.recv);
      gpu::work_fn fn;
      if (auto bad = resolve_collective(call, label + ": step op " + std::to_string(i), fn)) {
        return bad;
      }
      replay.rebind(i, std::move(fn), {call.collective.send, call.collective.recv});
      ++rebound;
      continue;
    }
    if (op.body.is_local()) {
      return make_error(errc::invalid_argument,
                        label + ": step op " + std::to_string(i) +
                            " is a local closure, whose addresses cannot be rebound (bind only "
                            "buffers that named work uses)");
    }
    std::vector<buffer_use> uses_bound = op.uses;
    for (buffer_use& u : uses_bound) u.buffer = bound(u.buffer);
    gpu::work_fn fn;
    if (auto bad = resolve(op.body, uses_bound, op.ranges.data(), fn)) {
      return make_error(static_cast<errc>(bad.code()),
                        label + ": step op " + std::to_string(i) + ": " + cudactor::describe(bad));
    }
    std::vector<buffer_id> resolved_on;
    for (const buffer_use& u : uses_bound) resolved_on.push_back(u.buffer);
    replay.rebind(i, std::move(fn), std::move(resolved_on));
    ++rebound;
  }
  step_metrics_->rebound(step.name, rebound);
  return {};
}

caf::error coordinator_state::start_replay(replay_request& request,
                                           std::function<void(step_outcome)> done) {
  if (auto why = refusal()) return why;
  if (auto bad = check_input(request, options_.limits)) return bad;
  step_table::entry* e = steps_.find(request.step);
  if (e == nullptr) {
    return make_error(errc::invalid_argument,
                      "replay: " + to_string(request.step) +
                          " is not a step recorded here (never recorded, or released)");
  }
  if (!e->invalid.empty()) return make_error(errc::invalid_state, "replay: " + e->invalid);
  const recorded_step& step = *e->step;
  // A buffer it was recorded with that is gone makes the step invalid for good: its work was
  // resolved against that memory.
  for (const buffer_id& b : step.buffers) {
    caf::error why;
    if (buffers_->find_live(b, why) == nullptr) {
      e->invalid = to_string(request.step) + " uses " + to_string(b) +
                   ", which was released: the step is invalid (release it, record it anew)";
      return make_error(errc::invalid_state, "replay: " + e->invalid);
    }
  }
  auto replay = std::make_shared<step_replay>(e->step, request.step, request.notices);
  if (context_.trace) replay->trace_times();
  op_spec spec;
  spec.type = op_type::step;
  spec.priority = step.priority;
  spec.workload = op_workload::mixed;
  spec.description = step.name;
  if (step.graph) {
    // One operation whose work launches the step's graph; its point is the replay's.
    if (!step.graph->observes_operations()) replay->outcome_is_whole();
    spec.body = work::local([graph = step.graph, replay](const gpu::launch_context& on) {
      return graph->launch(on, *replay);
    });
  } else {
    spec.body = work::local(no_work);  // the join: the replay's own point
  }
  spec.placement.pinned = true;
  spec.placement.stream = pool_.at(step.plan.parts()[step.plan.home()].stream).id;
  spec.uses = step.union_uses;
  if (!request.bindings.empty()) {
    if (auto bad = bind(request, step, spec.uses, *replay)) return bad;
  }
  const std::uint64_t key =
      runs_.open(1, [this, replay, done = std::move(done)](std::vector<op_notice> ends) {
        op_notice& n = ends.front();
        replays_.erase(replay->op);
        step_outcome out;
        out.step = replay->handle();
        out.op = n.id;
        out.state = n.state;
        out.cause = std::move(n.cause);
        out.registered_ns = n.registered_ns;
        out.dispatched_ns = n.dispatched_ns;
        out.ended_ns = n.ended_ns;
        out.ops = replay->ends(out.state, out.cause);
        const recorded_step& step = replay->step();
        step_metrics_->replayed(step.name, out.state,
                                std::max<std::int64_t>(0, out.ended_ns - out.registered_ns));
        if (step.graph) {
          const auto changed = step.graph->take_changes();
          step_metrics_->graph_changes(step.name, changed.instantiations, changed.updates,
                                       changed.scratch_bytes);
        }
        done(std::move(out));
      });
  // Known before it is registered: a pass inside the registration may stage it.
  replay->op = op_id{graph_.newest().value + 1};
  replays_.emplace(replay->op, replay);
  op_id id;
  if (auto bad = add_op(spec, nullptr, key, id, true)) {
    runs_.drop(key);
    replays_.erase(replay->op);
    return bad;
  }
  assert(id == replay->op);
  return {};
}

void coordinator_state::cancel_replays(const std::vector<step_handle>& steps) {
  if (closing_ || replays_.empty() || steps.empty()) return;
  std::vector<step_handle> named = steps;
  std::sort(named.begin(), named.end());
  std::vector<op_id> ids;
  for (const auto& [op, replay] : replays_) {
    if (std::binary_search(named.begin(), named.end(), replay->handle())) ids.push_back(op);
  }
  std::sort(ids.begin(), ids.end());  // oldest first
  bool any = false;
  for (op_id id : ids) {
    const op_graph::node* node = graph_.find(id);
    const op_record* r = records_.find(id.value);
    if (node == nullptr || r == nullptr) continue;
    // Not yet on a stream: waiting for a dependency or for room (pending, ready), or taken
    // from the ready queue while its home stream had none (running, no stream yet: it waits
    // in unplaced_, which drops it once it has ended).
    const bool queued = node->state == op_state::pending || node->state == op_state::ready ||
                        (node->state == op_state::running && r->stream == no_stream);
    if (!queued) continue;
    graph_.cancel(id,
                  make_error(errc::cancelled, to_string(id) + " (a replay of " +
                                                  to_string(replays_.at(id)->handle()) +
                                                  ") was cancelled by request"),
                  ended_);
    any = true;
  }
  if (!any) return;
  finish();
  pump();
}

caf::result<step_outcome> coordinator_state::replay(replay_request& request) {
  auto promise = self_->make_response_promise<step_outcome>();
  if (auto bad = start_replay(
          request, [promise](step_outcome out) mutable { promise.deliver(std::move(out)); })) {
    promise.deliver(std::move(bad));
  }
  return promise;
}

void coordinator_state::replay(replay_request& request, step_callback& done) {
  auto f = std::move(done.get());
  if (!f) return;
  const step_handle step = request.step;
  if (auto bad = start_replay(request, f)) {
    step_outcome out;
    out.step = step;
    out.state = op_state::failed;
    out.cause = std::move(bad);
    f(std::move(out));
  }
}

std::vector<point_wait> coordinator_state::stage_replay(op_id id) {
  const auto found = replays_.find(id);
  assert(found != replays_.end());
  step_replay& replay = *found->second;
  const step_plan& plan = replay.step().plan;
  // A graph is launched by the replay's own operation: its waits are the replay's.
  if (replay.step().graph) return waits_for(id, plan.parts()[plan.home()].stream);
  std::vector<std::shared_ptr<point_cell>> cells(plan.cells());
  for (auto& c : cells) c = std::make_shared<point_cell>();
  const auto wait_on = [&](const step_plan::wait& w) {
    const step_plan::part& part = plan.parts()[w.part];
    return point_wait{pool_.at(part.stream).id, 0, w.order_only, cells[part.entries[w.entry].cell]};
  };
  for (std::uint32_t p = 0; p < plan.parts().size(); ++p) {
    const step_plan::part& part = plan.parts()[p];
    // The replay's own waits (its dependencies outside the step), where each part begins.
    std::vector<point_wait> outside = waits_for(id, part.stream);
    for (std::uint32_t k = 0; k < part.segments.size(); ++k) {
      const step_plan::segment seg = part.segments[k];
      const step_plan::entry& first = part.entries[seg.first];
      dispatched_op op;
      op.fn = replay.wrap(p, k);
      if (k == 0) op.waits = std::move(outside);
      for (const auto* w = plan.waits_begin(first); w != plan.waits_end(first); ++w) {
        op.waits.push_back(wait_on(*w));
      }
      const std::uint32_t cell = part.entries[seg.last].cell;
      if (cell != step_plan::none) op.cell = cells[cell];
      // Not the coordinator's operation (no id): the stream reports none of them; the join
      // comes after them all.
      staged_.add(part.stream, op_id{}, std::move(op));
    }
  }
  std::vector<point_wait> join;
  join.reserve(plan.join_waits().size());
  for (const auto& w : plan.join_waits()) join.push_back(wait_on(w));
  return join;
}

void coordinator_state::trace_replay(op_id id, traced_op& t) const {
  const auto found = replays_.find(id);
  const step_replay::op_time* times = found != replays_.end() ? found->second->times() : nullptr;
  if (times == nullptr) {
    context_.trace->add(t);
    return;
  }
  const step_replay& replay = *found->second;
  const recorded_step& step = replay.step();
  // The replay's span runs from where its first operation began to where its last ended or
  // the join did, whichever is later: its operations lie inside it. (The join's stamps come
  // through the device clock, whose base is known within tens of microseconds; the
  // operations' are the host's own.)
  struct ran {
    std::int64_t started_ns, finished_ns;
    std::uint32_t part;
  };
  std::vector<ran> when(step.ops.size(), ran{0, 0, 0});
  for (std::uint32_t i = 0; i < step.ops.size(); ++i) {
    const std::int64_t finished = times[i].finished_ns.load(std::memory_order_acquire);
    if (finished == 0) continue;  // never ran, or still running
    when[i] = ran{times[i].started_ns.load(std::memory_order_relaxed), finished,
                  times[i].part.load(std::memory_order_relaxed)};
    if (t.started_ns == 0 || when[i].started_ns < t.started_ns) t.started_ns = when[i].started_ns;
    if (t.finished_ns != 0 && finished > t.finished_ns) t.finished_ns = finished;
  }
  context_.trace->add(t);
  for (std::uint32_t i = 0; i < step.ops.size(); ++i) {
    if (when[i].finished_ns == 0) continue;
    const std::uint8_t how = replay.outcome_of(i);
    const std::string fallback = "step op " + std::to_string(i);
    traced_op o;
    o.id = t.id;
    o.name = step.ops[i].description.empty() ? std::string_view{fallback}
                                             : std::string_view{step.ops[i].description};
    o.type = "step op";
    o.state = how == 2 ? "failed" : "completed";
    o.on_stream = true;
    o.stream = pool_.at(step.plan.parts()[when[i].part].stream).id.value;
    o.dispatched_ns = t.dispatched_ns;
    o.started_ns = when[i].started_ns;
    o.finished_ns = when[i].finished_ns;
    o.ended_ns = t.ended_ns;
    o.step_op = i;
    context_.trace->add(o);
  }
}

bool coordinator_state::replay_streams_free(op_id id) const {
  const auto found = replays_.find(id);
  if (found == replays_.end()) return true;
  const recorded_step& step = found->second->step();
  if (step.graph) return true;  // one operation on one stream: held like any other
  for (const step_plan::part& part : step.plan.parts()) {
    if (!pool_.at(part.stream).reserved_by.empty()) return false;
  }
  return true;
}

caf::error coordinator_state::replay_cause(op_id id, caf::error why) const {
  const auto found = replays_.find(id);
  if (found == replays_.end()) return why;
  const step_replay& replay = *found->second;
  const std::uint32_t failed = replay.first_failed();
  if (failed != step_replay::none) {
    const std::string& what = replay.step().ops[failed].description;
    return make_error(errc::op_failed,
                      to_string(replay.handle()) + " failed at step op " + std::to_string(failed) +
                          (what.empty() ? std::string{} : " ('" + what + "')") + ": " +
                          cudactor::describe(to_error(replay.first_failure())));
  }
  if (why) {
    // A failure none of its operations' work saw (a wait, a launch): the step's.
    return make_error(errc::op_failed,
                      to_string(replay.handle()) + " failed: " + cudactor::describe(why));
  }
  return why;
}

}  // namespace cudactor::detail
