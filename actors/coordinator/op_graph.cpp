#include "cudactor/actors/coordinator/op_graph.hpp"

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {
op_graph::op_graph(std::size_t failures_kept)
    : failures_kept_(std::max<std::size_t>(failures_kept, 1)) {}

caf::error op_graph::resolve(op_id id, op_id dep, bool& live) const {
  live = false;
  if (dep.empty())
    return make_error(errc::unknown_op, to_string(id) + " depends on op 0, which is no operation");
  if (dep == id) return make_error(errc::dependency_cycle, to_string(id) + " depends on itself");
  if (const node* d = find(dep)) {
    switch (d->state) {
      case op_state::completed: return {};
      case op_state::failed:
      case op_state::cancelled:
        return make_error(errc::dependency_failed,
                          to_string(id) + " depends on " + to_string(dep) + ", which " +
                              (d->state == op_state::failed ? "failed" : "was cancelled") + ": " +
                              describe(d->cause));
      default: live = true; return {};
    }
  }
  if (dep.value > newest_.value) {
    return make_error(errc::unknown_op, to_string(id) + " depends on " + to_string(dep) +
                                            ", which was never registered");
  }
  if (auto failed = failures_.find(dep); failed != failures_.end()) {
    return make_error(errc::dependency_failed,
                      to_string(id) + " depends on " + to_string(dep) +
                          ", which ended without completing: " + describe(failed->second));
  }
  if (dep.value < certain_from_) {
    return make_error(errc::unknown_op, to_string(id) + " depends on " + to_string(dep) +
                                            ", whose outcome is no longer kept (too old)");
  }
  return {};  // forgotten after it completed: nothing to wait for
}

caf::error op_graph::resolve_order(op_id id, op_id dep, bool& live) const {
  live = false;
  if (dep.empty())
    return make_error(errc::unknown_op, to_string(id) + " comes after op 0, which is no operation");
  if (dep == id) return make_error(errc::dependency_cycle, to_string(id) + " comes after itself");
  if (const node* d = find(dep)) {
    live = !is_terminal(d->state);
    return {};
  }
  if (dep.value > newest_.value) {
    return make_error(errc::unknown_op, to_string(id) + " comes after " + to_string(dep) +
                                            ", which was never registered");
  }
  return {};  // forgotten: it has ended, however it ended
}

namespace {

// ids[from, end) each once, sorted. A sort, not a search per dependency: an operation that
// names thousands must not cost their square.
void sort_unique(std::vector<op_id>& ids, std::size_t from) {
  if (ids.size() < from + 2) return;
  const auto first = ids.begin() + static_cast<std::ptrdiff_t>(from);
  std::sort(first, ids.end());
  ids.erase(std::unique(first, ids.end()), ids.end());
}

}  // namespace

caf::error op_graph::add(op_id id, op_priority priority, bool manual,
                         const std::vector<op_id>& deps) {
  return add(id, priority, manual, deps, {});
}

caf::error op_graph::add(op_id id, op_priority priority, bool manual,
                         const std::vector<op_id>& deps, const std::vector<op_id>& order_deps) {
  if (id.value <= newest_.value) {
    return make_error(errc::invalid_argument, to_string(id) + " is not newer than " +
                                                  to_string(newest_) + ", the newest added");
  }
  // Gathered in a vector kept for it, then copied into the node: nothing allocated while the
  // node's list fits in it.
  std::vector<op_id>& live_deps = deps_work_;
  live_deps.clear();
  live_deps.reserve(deps.size() + order_deps.size());
  for (op_id dep : deps) {
    bool live = false;
    if (auto err = resolve(id, dep, live)) return err;
    if (live) live_deps.push_back(dep);
  }
  sort_unique(live_deps, 0);
  // The order-only ones after the data ones, but those also named as data dependencies.
  const std::size_t data_count = live_deps.size();
  for (op_id dep : order_deps) {
    bool live = false;
    if (auto err = resolve_order(id, dep, live)) return err;
    if (live &&
        !std::binary_search(live_deps.begin(),
                            live_deps.begin() + static_cast<std::ptrdiff_t>(data_count), dep)) {
      live_deps.push_back(dep);
    }
  }
  sort_unique(live_deps, data_count);
  newest_ = id;
  node& n = nodes_.add(id.value);
  n.id = id;
  n.priority = priority;
  n.manual = manual;
  for (op_id dep : live_deps) {
    node& d = *get(dep);
    d.dependents.push_back(id);
    ++d.holders;
    if (d.state != op_state::submitted) ++n.unsubmitted;
  }
  n.data_count = static_cast<std::uint32_t>(data_count);
  n.dep_ids.assign(live_deps.data(), live_deps.data() + live_deps.size());
  ++live_;
  if (n.unsubmitted == 0) make_ready(n);
  return {};
}

caf::error op_graph::add_dependency(op_id op, op_id dep) {
  node* n = get(op);
  if (n == nullptr || is_terminal(n->state)) {
    return make_error(errc::invalid_state,
                      to_string(op) + (n == nullptr ? " is unknown or ended" : " has ended") +
                          ": it can take no new dependency");
  }
  if (n->state != op_state::pending && n->state != op_state::ready) {
    return make_error(errc::invalid_state, to_string(op) + " is " +
                                               std::string{to_string(n->state)} +
                                               ": dependencies are added before dispatch");
  }
  bool live = false;
  if (auto err = resolve(op, dep, live)) return err;
  const id_span has = n->deps();
  if (!live || std::find(has.begin(), has.end(), dep) != has.end()) return {};
  // A cycle exists if `dep` already depends, directly or not, on `op`.
  std::unordered_map<std::uint64_t, std::uint64_t> came_from;  // node -> the dependent we came from
  std::vector<op_id> stack{dep};
  came_from[dep.value] = 0;
  bool found = false;
  while (!stack.empty() && !found) {
    const node* x = find(stack.back());
    stack.pop_back();
    if (x == nullptr) continue;
    for (op_id next : x->deps()) {
      if (came_from.count(next.value) != 0) continue;
      came_from[next.value] = x->id.value;
      if (next == op) {
        found = true;
        break;
      }
      stack.push_back(next);
    }
  }
  if (found) {
    // Walk back from `op` to `dep`: op <- ... <- dep, i.e. dep depends on ... on op.
    std::vector<std::uint64_t> path{op.value};
    for (std::uint64_t at = came_from[op.value]; at != 0; at = came_from[at]) path.push_back(at);
    std::string cycle = to_string(op);
    for (auto it = path.rbegin(); it != path.rend(); ++it) cycle += " -> op " + std::to_string(*it);
    return make_error(errc::dependency_cycle, "making " + to_string(op) + " depend on " +
                                                  to_string(dep) + " closes the cycle " + cycle +
                                                  " (each waits for the next)");
  }
  node& d = *get(dep);
  d.dependents.push_back(op);
  ++d.holders;
  // Among the data dependencies, kept sorted as add() leaves them.
  const op_id* data_end = n->dep_ids.begin() + n->data_count;
  n->dep_ids.insert(static_cast<std::size_t>(std::lower_bound(n->dep_ids.begin(), data_end, dep) -
                                             n->dep_ids.begin()),
                    dep);
  ++n->data_count;
  if (d.state != op_state::submitted) {
    ++n->unsubmitted;
    if (n->state == op_state::ready) n->state = op_state::pending;  // its queue entry goes stale
  }
  return {};
}

void op_graph::make_ready(node& n) {
  n.state = op_state::ready;
  n.ready_seq = next_seq_++;
  // Priorities are checked where they enter (messaging/input_check.hpp).
  assert(in_range(n.priority));
  if (!n.manual) ready_[static_cast<std::size_t>(n.priority)].push_back({n.ready_seq, n.id});
}

bool op_graph::has_ready() {
  for (auto& lane : ready_) {
    while (!lane.empty()) {
      const ready_entry& front = lane.front();
      const node* n = find(front.id);
      if (n != nullptr && n->state == op_state::ready && n->ready_seq == front.seq) return true;
      lane.pop_front();  // stale: the op went back to pending, or ended
    }
  }
  return false;
}

void op_graph::prefetch_links(op_id id) const noexcept {
  const node* n = nodes_.find(id.value);
  if (n == nullptr) return;
  // Neighbours in id order are in cache already (a chain's links).
  for (op_id d : n->dep_ids) {
    if (d.value + 1 != id.value) __builtin_prefetch(nodes_.find(d.value));
  }
  for (op_id d : n->dependents) {
    if (d.value != id.value + 1) __builtin_prefetch(nodes_.find(d.value));
  }
}

op_id op_graph::peek_ready() const noexcept {
  for (const auto& lane : ready_) {
    if (!lane.empty()) return lane.front().id;
  }
  return op_id{};
}

std::optional<op_id> op_graph::next_ready() {
  for (auto& lane : ready_) {
    while (!lane.empty()) {
      const ready_entry front = lane.front();
      lane.pop_front();
      node* n = get(front.id);
      if (n != nullptr && n->state == op_state::ready && n->ready_seq == front.seq) {
        n->state = op_state::running;
        return front.id;
      }
    }
  }
  return std::nullopt;
}

caf::error op_graph::begin(op_id id) {
  node* n = get(id);
  if (n == nullptr) return make_error(errc::unknown_op, to_string(id) + " is unknown or has ended");
  if (!n->manual) {
    return make_error(errc::invalid_state,
                      to_string(id) + " carries its own work: the coordinator launches it");
  }
  if (n->state != op_state::ready) {
    return make_error(errc::invalid_state,
                      to_string(id) + " is " + std::string{to_string(n->state)} + ", not ready: " +
                          (n->state == op_state::pending ? "a dependency is not submitted yet"
                                                         : "it cannot begin again"));
  }
  n->state = op_state::running;
  return {};
}

bool op_graph::submitted(op_id id, op_position where) {
  node* n = get(id);
  if (n == nullptr || n->state != op_state::running) return false;
  n->state = op_state::submitted;
  n->position = where;
  // Dependents are later operations not touched since they were added: ask for all of
  // their nodes before reading the first.
  for (op_id d : n->dependents) __builtin_prefetch(get(d));
  release_deps(*n);
  for (op_id d : n->dependents) {
    node* dependent = get(d);
    if (dependent == nullptr || is_terminal(dependent->state)) continue;
    if (--dependent->unsubmitted == 0 && dependent->state == op_state::pending) {
      make_ready(*dependent);
    }
  }
  forget_unneeded();
  return true;
}

void op_graph::placed(op_id id, gpu::timeline_point point) {
  node* n = get(id);
  if (n != nullptr && n->position) n->position->point = point;
}

bool op_graph::complete(op_id id) {
  node* n = get(id);
  if (n == nullptr || is_terminal(n->state)) return false;
  if (n->state == op_state::running) {
    (void)submitted(id, op_position{});
    n->position.reset();
  } else if (n->state != op_state::submitted) {
    return false;  // never dispatched: it cannot have completed
  }
  end(*n, op_state::completed, {}, nullptr);
  forget_unneeded();
  return true;
}

bool op_graph::fail(op_id id, caf::error cause, std::vector<ended_op>& ended) {
  node* n = get(id);
  if (n == nullptr || is_terminal(n->state)) return false;
  end_with_dependents(*n, op_state::failed, std::move(cause), ended);
  return true;
}

bool op_graph::cancel(op_id id, caf::error cause, std::vector<ended_op>& ended) {
  node* n = get(id);
  if (n == nullptr || is_terminal(n->state)) return false;
  end_with_dependents(*n, op_state::cancelled, std::move(cause), ended);
  return true;
}

void op_graph::fail_all(const caf::error& cause, std::vector<ended_op>& ended) {
  std::vector<op_id> open;
  nodes_.for_each([&](std::uint64_t id, const node& n) {
    if (!is_terminal(n.state)) open.push_back(op_id{id});
  });
  std::sort(open.begin(), open.end());  // oldest first: a stable order for the caller
  for (op_id id : open) {
    node* n = get(id);
    if (n != nullptr && !is_terminal(n->state)) end(*n, op_state::failed, cause, &ended);
  }
  forget_unneeded();
}

void op_graph::end(node& n, op_state state, caf::error cause, std::vector<ended_op>* ended) {
  n.state = state;
  n.cause = std::move(cause);
  --live_;
  ++ends_;
  if (ended != nullptr) ended->push_back({n.id, state, n.cause});
  release_deps(n);
  if (n.holders == 0) to_forget_.push_back(n.id);
}

void op_graph::end_with_dependents(node& first, op_state state, caf::error cause,
                                   std::vector<ended_op>& ended) {
  const std::size_t from = ended.size();
  const std::string why = to_string(first.id) +
                          (state == op_state::failed ? " failed" : " was cancelled") +
                          (cause ? ": " + describe(cause) : std::string{});
  end(first, state, std::move(cause), &ended);
  // Breadth first over dependents: each ends once, cancelled with the first cause. One that
  // only comes after the ended operation is not cancelled: it stops waiting for it.
  for (std::size_t i = from; i < ended.size(); ++i) {
    const node& x = *get(ended[i].id);        // none forgotten yet
    const id_list dependents = x.dependents;  // a copy: ending them changes the graph
    const bool never_submitted = !x.position.has_value();
    for (op_id d : dependents) {
      node* dependent = get(d);
      if (dependent == nullptr || is_terminal(dependent->state)) continue;
      if (is_order_only(*dependent, x.id)) {
        if (never_submitted && --dependent->unsubmitted == 0 &&
            dependent->state == op_state::pending) {
          make_ready(*dependent);
        }
        continue;
      }
      end(*dependent, op_state::cancelled,
          make_error(errc::dependency_failed, to_string(d) + " cancelled: " + why), &ended);
    }
  }
  forget_unneeded();
}

bool op_graph::deps_ended(op_id id) const {
  const node* n = find(id);
  if (n == nullptr) return true;
  const id_span all = n->deps();
  for (std::size_t k = 0; k < all.size(); ++k) {
    const node* dep = find(all[k]);
    if (dep == nullptr || dep->state == op_state::completed) continue;
    if (!is_terminal(dep->state) || k < n->data_count) return false;
  }
  return true;
}

void op_graph::release_deps(node& n) {
  if (n.released) return;
  n.released = true;
  for (op_id d : n.deps()) {
    node* dep = get(d);
    if (dep == nullptr) continue;
    --dep->holders;
    if (dep->holders == 0 && is_terminal(dep->state)) to_forget_.push_back(d);
  }
}

// Forgetting waits until a transition is over: a cascade still walks the dependents of
// nodes that have ended.
void op_graph::forget_unneeded() {
  for (std::size_t i = 0; i < to_forget_.size(); ++i) {
    node* n = get(to_forget_[i]);
    if (n == nullptr || !is_terminal(n->state) || n->holders != 0) continue;
    if (n->state != op_state::completed) remember_failure(n->id, n->cause);
    forgotten_.push_back(n->id);
    nodes_.erase(n->id.value);
  }
  to_forget_.clear();
}

void op_graph::remember_failure(op_id id, const caf::error& cause) {
  failures_.emplace(id, cause);
  failure_order_.push_back(id);
  while (failure_order_.size() > failures_kept_) {
    const op_id oldest = failure_order_.front();
    failure_order_.pop_front();
    failures_.erase(oldest);
    certain_from_ = std::max(certain_from_, oldest.value + 1);
  }
}

std::vector<op_id> op_graph::take_forgotten() { return std::exchange(forgotten_, {}); }

}  // namespace cudactor::detail
