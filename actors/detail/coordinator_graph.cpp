// Registering: one operation, or a whole DAG in one message, checked as a whole (indices,
// cycles, dependencies on operations registered before, work) before any of it is
// registered.
#include <caf/all.hpp>

#include <string>
#include <vector>

#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/actors/detail/coordinator_state.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

namespace cudactor::detail {

caf::result<op_id> coordinator_state::register_op(op_spec& spec, const op_listener* listener) {
  op_id id;
  if (auto bad = add_op(spec, listener, 0, id)) return bad;
  return id;
}

caf::error coordinator_state::add_op(op_spec& spec, const op_listener* listener, std::uint64_t run,
                                     op_id& out) {
  if (auto why = refusal()) return why;
  if (auto bad = check_input(spec, options_.limits)) return bad;
  const bool manual = spec.is_manual();
  gpu::work_fn fn;
  if (!spec.body.empty()) {
    if (auto bad = resolve(spec.body, fn)) return bad;
  }
  if (spec.is_barrier()) {
    std::vector<std::uint32_t> members;
    if (auto bad = members_of(spec, members)) return bad;
  }
  if (auto bad = check_placement(spec)) return bad;
  const op_id id{graph_.newest().value + 1};
  if (auto bad = graph_.add(id, spec.priority, manual, spec.deps)) return bad;
  op_record& r = add_record(id, spec, std::move(fn), manual, now_ns());
  if (spec.is_barrier()) add_barrier(id, spec);
  r.run = run;
  if (listener != nullptr) add_listener(r, *listener);
  out = id;
  pass_or_later();
  return {};
}

caf::result<std::vector<op_id>> coordinator_state::submit_graph(graph_spec& graph,
                                                                const op_listener* listener) {
  std::vector<op_id> ids;
  if (auto bad = add_graph(graph, listener, 0, ids)) return bad;
  return ids;
}

namespace {

// The graph's operations in an order where each comes after those it names in `after`
// (Kahn), or the cycle that makes one impossible, named. Linear in operations and edges.
caf::error order_of(const graph_spec& graph, std::vector<std::uint32_t>& order) {
  const std::size_t n = graph.ops.size();
  // Local edges, checked and ordered (Kahn): ids are issued in that order, so every
  // dependency is older than its dependent, as op_graph requires.
  std::vector<std::uint32_t> waiting(n, 0);
  std::vector<std::uint32_t> first(n + 1, 0);  // dependents of i: next_of[first[i] .. first[i+1])
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint32_t a : graph.ops[i].after) {
      if (a == i) {
        return make_error(errc::dependency_cycle,
                          "graph op " + std::to_string(i) + " comes after itself");
      }
      ++first[a + 1];
      ++waiting[i];
    }
  }
  for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<std::uint32_t> next_of(first[n]);
  {
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint32_t a : graph.ops[i].after) next_of[fill[a]++] = i;
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
      for (std::uint32_t a : graph.ops[at].after) {
        if (waiting[a] != 0) {
          at = a;
          break;
        }
      }
    }
    std::string cycle;
    for (std::size_t k = seen[at] - 1; k < path.size(); ++k) {
      cycle += "graph op " + std::to_string(path[k]) + " -> ";
    }
    cycle += "graph op " + std::to_string(at);
    return make_error(errc::dependency_cycle,
                      "the graph has the cycle " + cycle + " (each comes after the next)");
  }
  return {};
}

}  // namespace

caf::error coordinator_state::check_placement(const op_spec& spec) const {
  const op_placement& p = spec.placement;
  if (p.pinned && !pool_.slot_of(p.stream)) {
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

caf::error coordinator_state::check_graph(const graph_spec& graph,
                                          std::vector<gpu::work_fn>& fns) const {
  const std::size_t n = graph.ops.size();
  // Dependencies on operations registered before, and the work: all checked before any is
  // registered.
  fns.assign(n, gpu::work_fn{});
  std::vector<std::uint32_t> members;
  for (std::size_t i = 0; i < n; ++i) {
    if (graph.ops[i].spec.is_barrier()) {
      if (auto bad = members_of(graph.ops[i].spec, members)) {
        return make_error(static_cast<errc>(bad.code()),
                          "graph op " + std::to_string(i) + ": " + to_string(bad));
      }
    }
    if (auto bad = check_placement(graph.ops[i].spec)) {
      return make_error(static_cast<errc>(bad.code()),
                        "graph op " + std::to_string(i) + ": " + to_string(bad));
    }
    for (op_id dep : graph.ops[i].spec.deps) {
      if (auto bad = graph_.check_dep(dep)) {
        return make_error(static_cast<errc>(bad.code()),
                          "graph op " + std::to_string(i) + ": " + to_string(bad));
      }
    }
    if (!graph.ops[i].spec.body.empty()) {
      if (auto bad = resolve(graph.ops[i].spec.body, fns[i])) {
        return make_error(static_cast<errc>(bad.code()),
                          "graph op " + std::to_string(i) + ": " + to_string(bad));
      }
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
  std::vector<std::uint32_t> order;
  if (auto bad = order_of(graph, order)) return bad;
  std::vector<gpu::work_fn> fns;
  if (auto bad = check_graph(graph, fns)) return bad;
  ids.assign(n, op_id{});
  std::vector<op_id> deps;
  const std::int64_t arrived = now_ns();  // the whole graph came in one message
  for (std::uint32_t i : order) {
    op_spec& spec = graph.ops[i].spec;
    const op_id id{graph_.newest().value + 1};
    deps = spec.deps;
    for (std::uint32_t a : graph.ops[i].after) deps.push_back(ids[a]);
    const bool manual = spec.is_manual();
    if (auto bad = graph_.add(id, spec.priority, manual, deps)) {
      // Checked above: reaching this is a bug. What was added is withdrawn, so that the
      // graph is still all or nothing; the error is the answer, a run's too.
      for (op_id added : ids) {
        if (added.empty()) continue;
        if (auto r = records_.find(added); r != records_.end()) r->second.run = 0;
        graph_.cancel(added, bad, ended_);
      }
      finish();
      return make_error(errc::backend_error, "graph submission: " + to_string(bad));
    }
    spec.deps = std::move(deps);
    op_record& r = add_record(id, spec, std::move(fns[i]), manual, arrived);
    if (spec.is_barrier()) add_barrier(id, spec);
    r.run = run;
    r.run_index = i;
    if (listener != nullptr) add_listener(r, *listener);
    ids[i] = id;
    deps = {};
  }
  pass_or_later();
  return {};
}

}  // namespace cudactor::detail
