// Registering: one operation, or a whole DAG in one message, checked as a whole (indices,
// cycles, dependencies on operations registered before, work) before any of it is
// registered.
#include <caf/all.hpp>

#include <string>
#include <unordered_map>
#include <vector>

#include "cudactor/actors/coordinator/coordinator_state.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

namespace cudactor::detail {

caf::result<op_id> coordinator_state::register_op(op_spec& spec, const op_listener* listener) {
  op_id id;
  if (auto bad = add_op(spec, listener, 0, id)) return bad;
  return id;
}

caf::error coordinator_state::add_op(op_spec& spec, const op_listener* listener, std::uint64_t run,
                                     op_id& out, bool own) {
  if (auto why = refusal()) return why;
  if (!own) {
    if (auto bad = check_input(spec, options_.limits)) return bad;
  }
  if (auto bad = expand_collective(spec, "the operation")) return bad;
  const bool manual = spec.is_manual();
  if (spec.is_barrier()) {
    std::vector<std::uint32_t> members;
    if (auto bad = members_of(spec, members)) return bad;
  }
  if (auto bad = check_placement(spec)) return bad;
  std::vector<byte_range> ranges(spec.uses.size());
  std::vector<buffer_uses*> histories(spec.uses.size());
  if (!spec.uses.empty()) {
    if (auto bad = check_uses(spec.uses, ~std::size_t{0}, ranges.data(), histories.data())) {
      return bad;
    }
  }
  gpu::work_fn fn;
  if (!spec.body.empty()) {
    if (auto bad = resolve(spec.body, spec.uses, ranges.data(), fn)) return bad;
  }
  if (spec.is_collective()) {
    if (auto bad = resolve_collective(spec, "the operation", fn)) return bad;
  }
  const op_id id{graph_.newest().value + 1};
  use_inference inferred;
  std::vector<op_id> order, tails;
  if (!spec.uses.empty()) {
    if (auto full = history_room(spec.uses, histories.data(), op_id{}, ~std::size_t{0}))
      return full;
    start_inference();
    infer_uses(spec.uses, ranges.data(), histories.data(), id, inferred);
    if (auto bad = inference_bounds(~std::size_t{0})) return bad;
    for_each_inferred(inferred.inferred, [&](op_id dep, dep_kind kind) {
      (kind == dep_kind::data ? spec.deps : kind == dep_kind::order ? order : tails).push_back(dep);
    });
  }
  if (auto bad = graph_.add(id, spec.priority, manual, spec.deps, order)) return bad;
  spec.deps.insert(spec.deps.end(), order.begin(), order.end());
  spec.deps.insert(spec.deps.end(), tails.begin(), tails.end());
  op_record& r = add_record(id, spec, spec.deps, std::move(fn), manual, now_ns());
  if (spec.is_barrier()) add_barrier(id, spec);
  r.run = run;
  if (listener != nullptr) add_listener(r, *listener);
  if (!spec.uses.empty()) {
    record_uses(spec.uses, ranges.data(), histories.data(), id, true);
    r.bufs.reset(new op_buffers{});
    r.bufs->uses = std::move(spec.uses);
    r.bufs->inferred = std::move(inferred.inferred);
    if (!tails.empty()) after_ops_[id] = std::move(tails);  // spec.deps has them
    if (inferred.poisoned) poisoned(id, inferred.poisoned);
  }
  out = id;
  pass_or_later();
  return {};
}

void coordinator_state::poisoned(op_id id, const caf::error& cause) {
  // It reads bytes a failed writer left unwritten: cancelled with that failure, like a
  // dependent of the writer registered while it was still open.
  graph_.cancel(id,
                make_error(errc::dependency_failed,
                           to_string(id) + " cancelled: it reads bytes left unwritten (" +
                               cudactor::describe(cause) + ")"),
                ended_);
  finish();
}

caf::result<std::vector<op_id>> coordinator_state::submit_graph(graph_spec& graph,
                                                                const op_listener* listener) {
  std::vector<op_id> ids;
  if (auto bad = add_graph(graph, listener, 0, ids)) return bad;
  return ids;
}

namespace {

// What `bad` says, after a label of its own ("graph op 3: ..."), for an error that carries its
// code already: a cudactor error's words, any other described in full; never CAF's
// error(...) tuple.
std::string words_of(const caf::error& bad) {
  std::string context = error_context(bad);
  return context.empty() ? describe(bad) : context;
}

}  // namespace

// The graph's operations in an order where each comes after those it names in `after`
// (Kahn), or the cycle that makes one impossible, named. Linear in operations and edges.
// `extra`: more edges by index (inferred from buffer uses), op i's at
// [extra_first[i], extra_first[i + 1]); none when extra_first is empty.
caf::error order_of(const graph_spec& graph, const std::vector<std::uint32_t>& extra,
                    const std::vector<std::uint32_t>& extra_first,
                    std::vector<std::uint32_t>& order) {
  const std::size_t n = graph.ops.size();
  // Calls f(a) for every op that op i comes after.
  const auto for_after = [&](std::size_t i, auto&& f) {
    for (std::uint32_t a : graph.ops[i].after) f(a);
    if (!extra_first.empty()) {
      for (std::uint32_t k = extra_first[i]; k < extra_first[i + 1]; ++k) f(extra[k]);
    }
  };
  // Most graphs come in an order that already works (each op after only earlier ones): ids
  // are then issued in the graph's own order. That order is also the one whose memory is
  // near: Kahn's, below, takes every root first, which scatters a large graph's registration
  // and dispatch over all of it (a 50k-op random DAG ran at two thirds of the speed so).
  bool in_order = true;
  for (std::size_t i = 0; i < n && in_order; ++i) {
    for_after(i, [&](std::uint32_t a) { in_order = in_order && a < i; });
  }
  if (in_order) {
    order.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
    return {};
  }
  // Local edges, checked and ordered (Kahn): ids are issued in that order, so every
  // dependency is older than its dependent, as op_graph requires.
  std::vector<std::uint32_t> waiting(n, 0);
  std::vector<std::uint32_t> first(n + 1, 0);  // dependents of i: next_of[first[i] .. first[i+1])
  for (std::size_t i = 0; i < n; ++i) {
    bool itself = false;
    for_after(i, [&](std::uint32_t a) {
      itself = itself || a == i;
      ++first[a + 1];
      ++waiting[i];
    });
    if (itself) {
      return make_error(errc::dependency_cycle,
                        "graph op " + std::to_string(i) + " comes after itself");
    }
  }
  for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<std::uint32_t> next_of(first[n]);
  {
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (std::uint32_t i = 0; i < n; ++i) {
      for_after(i, [&](std::uint32_t a) { next_of[fill[a]++] = i; });
    }
  }
  order.clear();
  order.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) order.push_back(i);
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::uint32_t i = order[k];
    for (std::uint32_t j = first[i]; j < first[i + 1]; ++j) {
      if (--waiting[next_of[j]] == 0) order.push_back(next_of[j]);
    }
  }
  if (order.size() < n) {
    // Every op left waits on another op left: walk back along those until one repeats.
    std::uint32_t at = 0;
    while (waiting[at] == 0) ++at;
    std::vector<std::uint32_t> seen(n, 0);
    std::vector<std::uint32_t> path;
    while (seen[at] == 0) {
      seen[at] = static_cast<std::uint32_t>(path.size() + 1);
      path.push_back(at);
      std::uint32_t next = at;
      for_after(at, [&](std::uint32_t a) {
        if (next == at && waiting[a] != 0) next = a;
      });
      at = next;
    }
    std::string cycle;
    for (std::size_t k = seen[at] - 1; k < path.size(); ++k) {
      cycle += "graph op " + std::to_string(path[k]) + " -> ";
    }
    cycle += "graph op " + std::to_string(at);
    return make_error(errc::dependency_cycle,
                      "the graph has the cycle " + cycle +
                          " (each comes after the next, by `after` or by the buffers they use)");
  }
  return {};
}

caf::error coordinator_state::check_placement(const op_spec& spec) const {
  const op_placement& p = spec.placement;
  if (p.pinned && !pool_.index_of(p.stream)) {
    return make_error(errc::invalid_argument,
                      "the operation names stream " + std::to_string(p.stream.value) +
                          ", which the coordinator does not schedule onto (it has " +
                          std::to_string(pool_.size()) + " streams)");
  }
  if (p.strict) {
    bool any = false;
    for (std::uint32_t i = 0; i < pool_.size() && !any; ++i) {
      any = pool_.matches(i, spec.priority, spec.workload);
    }
    if (!any) {
      return make_error(errc::invalid_argument,
                        "the operation keeps to streams of class " +
                            std::string{gpu::to_string(stream_pool::class_of(spec.priority))} +
                            (spec.workload == op_workload::mixed
                                 ? std::string{}
                                 : " and role " + std::string{to_string(spec.workload)}) +
                            " (strict placement), and no stream is");
    }
  }
  return {};
}

caf::error coordinator_state::check_graph(const graph_spec& graph, const graph_uses& uses,
                                          std::vector<gpu::work_fn>& fns) {
  const std::size_t n = graph.ops.size();
  // Dependencies on operations registered before, and the work: all checked before any is
  // registered.
  fns.assign(n, gpu::work_fn{});
  std::vector<std::uint32_t> members;
  for (std::size_t i = 0; i < n; ++i) {
    if (graph.ops[i].spec.is_barrier()) {
      if (auto bad = members_of(graph.ops[i].spec, members)) {
        return make_error(static_cast<errc>(bad.code()),
                          "graph op " + std::to_string(i) + ": " + words_of(bad));
      }
    }
    if (auto bad = check_placement(graph.ops[i].spec)) {
      return make_error(static_cast<errc>(bad.code()),
                        "graph op " + std::to_string(i) + ": " + words_of(bad));
    }
    for (op_id dep : graph.ops[i].spec.deps) {
      if (auto bad = graph_.check_dep(dep)) {
        return make_error(static_cast<errc>(bad.code()),
                          "graph op " + std::to_string(i) + ": " + words_of(bad));
      }
    }
    if (!graph.ops[i].spec.body.empty()) {
      if (auto bad =
              resolve(graph.ops[i].spec.body, graph.ops[i].spec.uses, uses.ranges_of(i), fns[i])) {
        return make_error(static_cast<errc>(bad.code()),
                          "graph op " + std::to_string(i) + ": " + words_of(bad));
      }
    }
  }
  return {};
}

caf::error coordinator_state::prepare_graph(graph_spec& graph, const std::string& label,
                                            graph_uses& uses, std::vector<std::uint32_t>& order,
                                            std::vector<gpu::work_fn>& fns) {
  const std::size_t n = graph.ops.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!graph.ops[i].spec.is_collective()) continue;  // no label to build
    if (auto bad = expand_collective(graph.ops[i].spec, label + std::to_string(i))) return bad;
  }
  // Buffer uses are inferred in the graph's own order (its submission order), before the
  // order ids are issued in, which must respect them too.
  if (auto bad = infer_graph_uses(graph, scratch_first, uses)) return bad;
  if (auto bad = order_of(graph, uses.local, uses.local_first, order)) return bad;
  if (auto bad = check_graph(graph, uses, fns)) return bad;
  for (std::size_t i = 0; i < n; ++i) {
    if (!graph.ops[i].spec.is_collective()) continue;
    if (auto bad = resolve_collective(graph.ops[i].spec, label + std::to_string(i), fns[i])) {
      return bad;
    }
  }
  return {};
}

caf::error coordinator_state::add_graph(graph_spec& graph, const op_listener* listener,
                                        std::uint64_t run, std::vector<op_id>& ids) {
  if (auto why = refusal()) return why;
  if (auto bad = check_input(graph, options_.limits)) return bad;
  const std::size_t n = graph.ops.size();
  // Ids are issued in a dependency order, so every dependency is older than its dependent,
  // as op_graph requires; everything is checked before anything is registered.
  graph_uses uses;
  std::vector<std::uint32_t> order;
  std::vector<gpu::work_fn> fns;
  if (auto bad = prepare_graph(graph, "graph op ", uses, order, fns)) return bad;
  std::vector<use_inference>& inferences = uses.inferences;
  ids.assign(n, op_id{});
  // A scratch id as the real one, once issued.
  const auto real = [&](op_id x) {
    return x.value >= scratch_first.value ? ids[x.value - scratch_first.value] : x;
  };
  std::vector<op_id> deps, order_deps, tails;
  const std::int64_t arrived = now_ns();  // the whole graph came in one message
  // The buffer users' sides in one block (a graph of one user: allocated alone). This
  // function's own hold on it goes at its end, however it ends.
  std::size_t users = 0;
  for (const auto& op : graph.ops) users += op.spec.uses.empty() ? 0 : 1;
  buffers_block* block = nullptr;
  if (users > 1) {
    block = new buffers_block;
    block->items = std::make_unique<op_buffers[]>(users);
  }
  const auto let_go = [](buffers_block* b) {
    if (b != nullptr) buffers_block::release(b);
  };
  const std::unique_ptr<buffers_block, decltype(let_go)> hold{block, let_go};
  std::size_t taken = 0;
  for (std::uint32_t i : order) {
    op_spec& spec = graph.ops[i].spec;
    const op_id id{graph_.newest().value + 1};
    // Gathered in room kept from op to op; the record holds its copy (in place while short).
    deps.assign(spec.deps.begin(), spec.deps.end());
    for (std::uint32_t a : graph.ops[i].after) deps.push_back(ids[a]);
    order_deps.clear();
    tails.clear();
    if (!inferences.empty()) {
      for_each_inferred(inferences[i].inferred, [&](op_id d, dep_kind kind) {
        if (kind == dep_kind::tail) {
          tails.push_back(d);  // ended before the graph came: never a scratch id
        } else {
          (kind == dep_kind::data ? deps : order_deps).push_back(real(d));
        }
      });
    }
    const bool manual = spec.is_manual();
    if (auto bad = graph_.add(id, spec.priority, manual, deps, order_deps)) {
      // Checked above: reaching this is a bug. What was added is withdrawn, so that the
      // graph is still all or nothing; the error is the answer, a run's too.
      for (op_id added : ids) {
        if (added.empty()) continue;
        if (auto r = records_.find(added.value); r != nullptr) r->run = 0;
        graph_.cancel(added, bad, ended_);
      }
      finish();
      return make_error(errc::backend_error, "graph submission: " + cudactor::describe(bad));
    }
    deps.insert(deps.end(), order_deps.begin(), order_deps.end());
    op_record& r = add_record(id, spec, deps, std::move(fns[i]), manual, arrived);
    if (spec.is_barrier()) add_barrier(id, spec);
    r.run = run;
    r.run_index = i;
    if (listener != nullptr) add_listener(r, *listener);
    ids[i] = id;
    if (!spec.uses.empty()) {
      if (block != nullptr) {
        op_buffers* side = &block->items[taken++];
        side->block = block;
        ++block->live;
        r.bufs.reset(side);
      } else {
        r.bufs.reset(new op_buffers{});
      }
      r.bufs->uses = std::move(spec.uses);
      add_after_ops(id, r, tails);
      r.bufs->inferred = std::move(inferences[i].inferred);
      for (inferred_dep& d : r.bufs->inferred) d.dep = real(d.dep);
    }
  }
  // The scratch histories, their users renamed, become the buffers' own, compacted when due
  // as after an operation's uses: a graph records into a copy and compacts nothing, so
  // graphs alone never dropped the users that had ended (a buffer only read kept every
  // reader, and each graph copied them all again).
  for (auto& [slot, history] : uses.scratch) {
    history.rename(real);
    auto& own = buffers_->find_slot(slot)->uses;
    own = std::move(history);
    if (own->compaction_due()) compact_history(*own);
  }
  for (std::uint32_t i = 0; i < n && !inferences.empty(); ++i) {
    if (inferences[i].poisoned) poisoned(ids[i], inferences[i].poisoned);
  }
  pass_or_later();
  return {};
}

caf::error coordinator_state::infer_graph_uses(const graph_spec& graph, op_id first,
                                               graph_uses& out) {
  const std::size_t n = graph.ops.size();
  std::size_t count = 0;  // uses over all ops
  for (std::size_t i = 0; i < n; ++i) count += graph.ops[i].spec.uses.size();
  if (count == 0) return {};
  start_inference();
  out.use_first.resize(n + 1);
  out.ranges.resize(count);
  out.histories.resize(count);
  std::size_t at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& uses = graph.ops[i].spec.uses;
    out.use_first[i] = static_cast<std::uint32_t>(at);
    if (auto bad = check_uses(uses, i, out.ranges.data() + at, out.histories.data() + at))
      return bad;
    at += uses.size();
  }
  out.use_first[n] = static_cast<std::uint32_t>(at);
  // The graph infers from and records in copies, made the buffers' own once it is registered
  // (all or nothing): each use's history becomes its buffer's copy.
  // Found by slot (checked above, so below the table's size), not by a hash per use.
  std::vector<buffer_uses*> by_slot;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint32_t u = out.use_first[i]; u < out.use_first[i + 1]; ++u) {
      const std::uint32_t slot = graph.ops[i].spec.uses[u - out.use_first[i]].buffer.slot;
      if (slot >= by_slot.size()) by_slot.resize(slot + 1, nullptr);
      buffer_uses*& copy = by_slot[slot];
      if (copy == nullptr) {
        buffer_uses& own = *out.histories[u];
        // Ended users may hold most of a long history: not copied, nor gone through.
        // Not again while nothing was let go or recorded since.
        if (own.segments() > options_.max_buffer_segments / 2) compact_history(own);
        covered_segments_ += own.segments();  // the copy's work
        copy = &out.scratch.emplace(slot, own).first->second;
      }
      out.histories[u] = copy;
    }
  }
  if (auto bad = inference_bounds(~std::size_t{0} - 1)) return bad;
  out.inferences.resize(n);
  out.local_first.resize(n + 1);
  for (std::size_t i = 0; i < n; ++i) {
    out.local_first[i] = static_cast<std::uint32_t>(out.local.size());
    const auto& uses = graph.ops[i].spec.uses;
    if (uses.empty()) continue;
    const op_id user{first.value + i};
    const byte_range* ranges = out.ranges.data() + out.use_first[i];
    buffer_uses* const* histories = out.histories.data() + out.use_first[i];
    if (auto full = history_room(uses, histories, first, i)) return full;
    infer_and_record_uses(uses, ranges, histories, user, out.inferences[i]);
    if (auto bad = inference_bounds(i)) return bad;
    // The graph's own ops among what it comes after (they are never tails).
    for_each_inferred(out.inferences[i].inferred, [&](op_id d, dep_kind) {
      if (d.value >= first.value) {
        out.local.push_back(static_cast<std::uint32_t>(d.value - first.value));
      }
    });
  }
  out.local_first[n] = static_cast<std::uint32_t>(out.local.size());
  return {};
}

}  // namespace cudactor::detail
