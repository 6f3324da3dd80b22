// messaging/step_types.hpp
//
// Steps: a graph recorded once and replayed many times (docs/replay.md). Recording checks the
// graph as a whole, infers its dependencies and places its operations once; the coordinator
// answers a step_handle. A replay runs the step again as one operation of the coordinator,
// ordered against other work by the union of its operations' buffer uses, and answers once
// with the step's outcome. Bindings put other buffers of the same size in place of the
// recorded ones for one replay. Plain data with inspect(), registered by add_message_types();
// step_callback is local-only (messaging/work.hpp).
#pragma once

#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

// A recorded step of one coordinator: `slot` is its place in the coordinator's table,
// `generation` counts the slot's uses, so that a released step's handle is refused even once
// its slot holds another. Generation 0 names no step.
struct step_handle {
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;

  [[nodiscard]] bool empty() const noexcept { return generation == 0; }
  friend bool operator==(const step_handle& a, const step_handle& b) noexcept {
    return a.slot == b.slot && a.generation == b.generation;
  }
  friend bool operator!=(const step_handle& a, const step_handle& b) noexcept { return !(a == b); }
  // By slot, then generation: for sorted look-ups.
  friend bool operator<(const step_handle& a, const step_handle& b) noexcept {
    return a.slot != b.slot ? a.slot < b.slot : a.generation < b.generation;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_handle& x) {
  return f(caf::meta::type_name("cudactor::step_handle"), x.slot, x.generation);
}

// "step 3.1" (slot 3, generation 1): how errors and reports name a step.
[[nodiscard]] std::string to_string(const step_handle& step);

// What record takes: a graph, and the name its replays go by (the operation's description,
// the profile's row, the metrics' `step` label; empty: "step").
struct step_spec {
  std::string name;
  graph_spec graph;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_spec& x) {
  return f(caf::meta::type_name("cudactor::step_spec"), x.name, x.graph);
}

// For one replay: `to` takes the place of `from`, a buffer the step was recorded with, in
// every operation that uses it. Both the same size; each recorded buffer bound at most once
// and no two to the same buffer. Only named work can be rebound (a local closure's addresses
// are its own): a binding that touches one is refused, naming the operation.
struct buffer_binding {
  buffer_id from;
  buffer_id to;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, buffer_binding& x) {
  return f(caf::meta::type_name("cudactor::buffer_binding"), x.from, x.to);
}

// Which operations of a replay the outcome describes one by one: none (the step's outcome
// only), those that did not complete, or all of them.
enum class step_notices : std::uint8_t { none, failures, all };

[[nodiscard]] std::string_view to_string(step_notices x) noexcept;

struct replay_request {
  step_handle step;
  std::vector<buffer_binding> bindings;
  step_notices notices = step_notices::none;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replay_request& x) {
  return f(caf::meta::type_name("cudactor::replay_request"), x.step, x.bindings, x.notices);
}

// One operation of a replay, by its index in the recorded graph: completed, failed with its
// cause, or cancelled (it never ran: what it waited for failed, or the step ended first).
struct step_op_end {
  std::uint32_t index = 0;
  op_state state = op_state::completed;
  caf::error cause;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_op_end& x) {
  return f(caf::meta::type_name("cudactor::step_op_end"), x.index, x.state, x.cause);
}

// How one replay ended, told once. `op` is the coordinator's operation the replay was (its
// notice, describe and the trace use it); `cause` names the first operation that failed,
// by its graph index, when the step failed there. `ops` as the request's notices asked.
struct step_outcome {
  step_handle step;
  op_id op;
  op_state state = op_state::completed;
  caf::error cause;
  std::int64_t registered_ns = 0;
  std::int64_t dispatched_ns = 0;
  std::int64_t ended_ns = 0;
  std::vector<step_op_end> ops;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_outcome& x) {
  return f(caf::meta::type_name("cudactor::step_outcome"), x.step, x.op, x.state, x.cause,
           x.registered_ns, x.dispatched_ns, x.ended_ns, x.ops);
}

// How code that is not an actor (actors/client.hpp) hears a recording and a replay.
using step_record_callback = local_only<std::function<void(step_handle, caf::error)>>;
using step_callback = local_only<std::function<void(step_outcome)>>;

}  // namespace cudactor
