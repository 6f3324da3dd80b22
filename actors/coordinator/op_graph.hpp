// actors/coordinator/op_graph.hpp
//
// The coordinator's dependency graph: which operations wait for which, when each may be
// dispatched, and how failure spreads. No CAF actor, no device: the coordinator actor owns one
// and drives it from its messages, and tests drive it directly.
//
// An operation is ready once every dependency has been *submitted* (placed on a stream at a
// known point), not completed: the dependent then waits for it on the device. Dependencies
// that were already submitted when it is dispatched are where those device waits go
// (for_each_unfinished_dep). A failed or cancelled operation cancels every operation that
// depends on it, transitively, with the cause attached; every operation ends exactly once.
//
// A dependency may instead be order-only (a write after a read or after another write of the
// same bytes, inferred from declared buffer uses): the operation still comes after it, on the
// device too, but its failure or cancellation does not cancel the operation, which then
// waits only until it has ended.
//
// Memory stays flat: a terminal operation is forgotten once no dependent can still need it
// (every dependent submitted or ended). A dependency on a forgotten id is resolved from the
// id alone: ids are issued in increasing order, a bounded memory keeps the ids that failed or
// were cancelled, and every other forgotten id completed.
#pragma once

#include <caf/error.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "cudactor/actors/coordinator/id_list.hpp"
#include "cudactor/actors/coordinator/id_table.hpp"
#include "cudactor/actors/detail/ring_queue.hpp"
#include "cudactor/gpu/types.hpp"
#include "cudactor/messaging/enum_range.hpp"
#include "cudactor/messaging/operation_types.hpp"

namespace cudactor::detail {

// Where a submitted operation sits: the coordinator's index of its stream and the point its
// timeline reaches when the operation has run (0 while on its way to the stream).
struct op_position {
  std::uint32_t stream = 0;
  gpu::timeline_point point = 0;
};

// An operation that reached a terminal state, with why: it may be forgotten at once.
struct ended_op {
  op_id id;
  op_state state = op_state::completed;
  caf::error cause;
};

// A run of ids inside a vector it does not own (valid until that vector changes).
struct id_span {
  const op_id* first = nullptr;
  const op_id* last = nullptr;
  [[nodiscard]] const op_id* begin() const noexcept { return first; }
  [[nodiscard]] const op_id* end() const noexcept { return last; }
  [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(last - first); }
  [[nodiscard]] bool empty() const noexcept { return first == last; }
  [[nodiscard]] op_id operator[](std::size_t i) const noexcept { return first[i]; }
};

class op_graph {
 public:
  struct node {
    op_id id;
    op_priority priority = op_priority::normal;
    bool manual = false;  // the caller launches it (begin / complete), never next_ready()
    op_state state = op_state::pending;
    std::uint32_t unsubmitted = 0;  // dependencies not yet submitted
    std::uint32_t holders = 0;      // dependents that may still need this node
    bool released = false;          // this node no longer holds its dependencies
    std::uint64_t ready_seq = 0;    // FIFO among equal priorities; stale queue entries differ
    // Its dependencies still in the graph when added: the data ones sorted, then the
    // order-only ones sorted, each once, in one list (held in the node while short). A list
    // of each kind, not one sorted list with the order-only ones again after it: an operation
    // with buffer uses has as many of each, and the copies took most such lists out of the node.
    id_list dep_ids;
    std::uint32_t data_count = 0;  // dep_ids[0, data_count) are the data dependencies
    id_list dependents;
    std::optional<op_position> position;  // once submitted
    caf::error cause;                     // why it failed or was cancelled

    // Every dependency, of both kinds (data ones first).
    [[nodiscard]] id_span deps() const noexcept {
      return {dep_ids.data(), dep_ids.data() + dep_ids.size()};
    }
    // The order-only ones, sorted.
    [[nodiscard]] id_span order_deps() const noexcept {
      return {dep_ids.data() + data_count, dep_ids.data() + dep_ids.size()};
    }
  };

  // `failures_kept`: how many failed or cancelled ids are remembered after they are
  // forgotten, so that a later dependency on one is refused with its cause.
  explicit op_graph(std::size_t failures_kept = 65536);

  // Adds `id` (greater than every id added before) depending on `deps`. On error nothing
  // changed. Dependencies already completed (or forgotten after completing) are dropped.
  [[nodiscard]] caf::error add(op_id id, op_priority priority, bool manual,
                               const std::vector<op_id>& deps);
  // The same with order-only dependencies besides: one that has ended (however it ended, or
  // was forgotten) is dropped; one named in both lists is a dependency.
  [[nodiscard]] caf::error add(op_id id, op_priority priority, bool manual,
                               const std::vector<op_id>& deps,
                               const std::vector<op_id>& order_deps);

  // Makes `op` (pending or ready) also depend on `dep`. Refuses a cycle, naming it.
  [[nodiscard]] caf::error add_dependency(op_id op, op_id dep);

  // The ready operation to dispatch next: highest priority first, then the one ready
  // longest. It is marked running. Manual operations are never returned.
  [[nodiscard]] std::optional<op_id> next_ready();
  [[nodiscard]] bool has_ready();

  // A manual operation the caller launches itself: ready -> running.
  [[nodiscard]] caf::error begin(op_id id);

  // running -> submitted at `where`. Dependents whose last unsubmitted dependency this was
  // become ready. False if `id` is not running (ended meanwhile, say). A point of 0 says the
  // operation is on its way to that stream and its point is not known yet (placed() tells it):
  // a dependent may follow it onto the same stream, in order, but cannot wait for it from
  // another one until then.
  bool submitted(op_id id, op_position where);
  // The point of an operation submitted with point 0.
  void placed(op_id id, gpu::timeline_point point);

  // Terminal transitions. They return false, and change nothing, for an operation that has
  // already ended or is unknown: a late notice. `ended` receives every operation that ended,
  // the named one first.
  bool complete(op_id id);
  bool fail(op_id id, caf::error cause, std::vector<ended_op>& ended);
  bool cancel(op_id id, caf::error cause, std::vector<ended_op>& ended);
  // Fails every operation that has not ended (the device was lost).
  void fail_all(const caf::error& cause, std::vector<ended_op>& ended);

  [[nodiscard]] const node* find(op_id id) const { return nodes_.find(id.value); }

  // Calls f(dep, position) or f(dep, position, order_only) for each dependency of `id` that
  // is submitted and not completed: where a dispatched operation must wait on the device.
  template <class F>
  void for_each_unfinished_dep(op_id id, F&& f) const {
    const node* n = find(id);
    if (n == nullptr) return;
    const id_span all = n->deps();
    for (std::size_t k = 0; k < all.size(); ++k) {
      const op_id d = all[k];
      const node* dep = find(d);
      if (dep != nullptr && dep->state == op_state::submitted && dep->position) {
        if constexpr (std::is_invocable_v<F&, op_id, const op_position&, bool>) {
          f(d, *dep->position, k >= n->data_count);
        } else {
          f(d, *dep->position);
        }
      }
    }
  }
  // Whether `dep`, one of n's dependencies, is order-only.
  [[nodiscard]] static bool is_order_only(const node& n, op_id dep) {
    const id_span order_only = n.order_deps();
    return !order_only.empty() && std::binary_search(order_only.begin(), order_only.end(), dep);
  }
  // Every dependency of `id` has ended as it must before `id` may be told ended: a dependency
  // completed, an order-only one ended in any way.
  [[nodiscard]] bool deps_ended(op_id id) const;

  // What a dependency on `dep` would mean for an operation added next: empty when add()
  // would take it, else the error add() would give. Graph submission checks a whole graph so.
  [[nodiscard]] caf::error check_dep(op_id dep) const {
    bool live = false;
    return resolve(op_id{newest_.value + 1}, dep, live);
  }
  // The newest id added (0 before any).
  [[nodiscard]] op_id newest() const noexcept { return newest_; }
  // Calls f(node) for every node still in the graph, in no particular order.
  template <class F>
  void for_each_node(F&& f) const {
    nodes_.for_each([&](std::uint64_t, const node& n) { f(n); });
  }

  // Operations forgotten since the last call, so that their owner drops what it keeps.
  [[nodiscard]] std::vector<op_id> take_forgotten();

  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  // Its nodes' memory (id_table.hpp): chunks held, nodes made ever, the spare chunks freed.
  [[nodiscard]] std::size_t chunks() const noexcept { return nodes_.chunks(); }
  [[nodiscard]] std::uint64_t made() const noexcept { return nodes_.made(); }
  std::size_t shed_spares() noexcept { return nodes_.shed_spares(); }
  // The operation next_ready() would look at first (its entry may be stale; a null id when
  // none): for a prefetch, never for a decision.
  [[nodiscard]] op_id peek_ready() const noexcept;
  // Asks the processor for `id`'s node (its first cache line), about to be read.
  void prefetch(op_id id) const noexcept { __builtin_prefetch(nodes_.find(id.value)); }
  // Asks for the nodes of `id`'s dependencies and dependents, which placing it and handing
  // it to a stream read next (the node itself is in cache: next_ready() just read it).
  void prefetch_links(op_id id) const noexcept;
  [[nodiscard]] std::size_t live() const noexcept { return live_; }
  // Operations ended so far, over the graph's life: it only grows.
  [[nodiscard]] std::uint64_t ends() const noexcept { return ends_; }

 private:
  struct ready_entry {
    std::uint64_t seq;  // matches the node's ready_seq while the entry is current
    op_id id;
  };
  node* get(op_id id) { return nodes_.find(id.value); }
  // What a dependency on `dep` means for an operation being added: an error, or whether it
  // is live (still to be waited for) rather than satisfied.
  [[nodiscard]] caf::error resolve(op_id id, op_id dep, bool& live) const;
  // The same for an order-only dependency: any end satisfies it.
  [[nodiscard]] caf::error resolve_order(op_id id, op_id dep, bool& live) const;
  void make_ready(node& n);
  // `ended`, when given, receives the operation (a completion, told by its caller, needs not).
  void end(node& n, op_state state, caf::error cause, std::vector<ended_op>* ended);
  void end_with_dependents(node& n, op_state state, caf::error cause, std::vector<ended_op>& ended);
  void release_deps(node& n);
  void forget_unneeded();
  void remember_failure(op_id id, const caf::error& cause);

  id_table<node> nodes_;
  // One FIFO per priority, most urgent first: ops become ready in seq order, so each lane is
  // sorted by readiness without a heap.
  static constexpr std::size_t op_priorities = enum_count<op_priority>;
  std::array<ring_queue<ready_entry>, op_priorities> ready_;
  std::uint64_t next_seq_ = 1;
  op_id newest_;                  // the greatest id added
  std::vector<op_id> deps_work_;  // add()'s room for the dependencies
  std::size_t live_ = 0;
  std::uint64_t ends_ = 0;
  std::vector<op_id> forgotten_;
  std::vector<op_id> to_forget_;  // candidates, looked at once a transition is over

  // Failed or cancelled ids after they were forgotten, oldest first, and the first id whose
  // outcome is still known for certain once older records were dropped.
  std::size_t failures_kept_;
  std::unordered_map<op_id, caf::error> failures_;
  std::deque<op_id> failure_order_;
  std::uint64_t certain_from_ = 1;
};

}  // namespace cudactor::detail
