// messaging/operation_types.hpp
//
// The vocabulary of the coordinator's operations: their id, type, priority, workload class and
// state. Plain values that cross process boundaries (enums serialize as their underlying
// integer); each is registered by add_message_types().
// Priorities are ordered: a lower value is served first.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace cudactor {

// One operation registered with a coordinator. Ids count from 1 and are never reused by that
// coordinator, so an id below the next one to be issued names an operation that existed.
struct op_id {
  std::uint64_t value = 0;

  [[nodiscard]] bool empty() const noexcept { return value == 0; }
  friend bool operator==(op_id a, op_id b) noexcept { return a.value == b.value; }
  friend bool operator!=(op_id a, op_id b) noexcept { return a.value != b.value; }
  friend bool operator<(op_id a, op_id b) noexcept { return a.value < b.value; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_id& x) {
  return f(caf::meta::type_name("cudactor::op_id"), x.value);
}

enum class op_type : std::uint8_t {
  kernel,
  memory_transfer,
  synchronization,
  reduction,
  broadcast,
  all_reduce,
  barrier,
  release,  // a buffer's release: after every use of it (messaging/buffer_types.hpp)
  // Collectives of kinds without an older label (messaging/collective_types.hpp); reduction,
  // broadcast and all_reduce above name the others.
  all_gather,
  reduce_scatter,
  collective_barrier,  // every rank of a communicator has arrived (not a barrier of streams)
  // A replay of a recorded step (messaging/step_types.hpp): the coordinator's own, never
  // registered by a caller.
  step,
};

enum class op_priority : std::uint8_t { critical, high, normal, low, cleanup };

// What an operation mostly uses; the workload strategy picks streams by it.
enum class op_workload : std::uint8_t { compute, memory, mixed, coordination };

// How the coordinator picks a stream for an operation: the runtime's default
// (cudactor.coordinator.strategy) or one operation's own (op_placement).
//   round_robin    the next stream with room after the last one chosen
//   load_balanced  the fewest operations in flight (the default)
//   priority       critical/high on high-priority streams, low/cleanup on low-priority ones,
//                  normal on normal ones (cudactor.high- / low-priority-streams)
//   workload       compute, memory and coordination on streams of their own role
//   adaptive       the smallest expected wait: (in flight + 1) x the mean completion
//                  interval measured on that stream for that workload
// docs/coordinator.md has the details; the coordinator's stream pool applies them.
enum class pool_strategy : std::uint8_t {
  round_robin,
  load_balanced,
  priority,
  workload,
  adaptive
};

// How a barrier crosses. host: once the completion poller has seen every stream reach the
// barrier (the crossing says when each arrived). device: every stream waits on the device for
// every other; nothing on the host waits for the crossing.
enum class barrier_mode : std::uint8_t { host, device };

// Where an operation stands. The last three are terminal: every operation reaches exactly one.
enum class op_state : std::uint8_t {
  pending,    // some dependency not yet submitted
  ready,      // every dependency submitted; waiting for a stream (or for begin())
  running,    // handed a stream; its work is being enqueued (or the caller launches it)
  submitted,  // on its stream at a known point; completion is tracked from here
  completed,
  failed,
  cancelled,
};

[[nodiscard]] constexpr bool is_terminal(op_state s) noexcept {
  return s == op_state::completed || s == op_state::failed || s == op_state::cancelled;
}

// "op 7": how errors and reports name an operation.
[[nodiscard]] std::string to_string(op_id id);
[[nodiscard]] std::string_view to_string(op_type x) noexcept;
[[nodiscard]] std::string_view to_string(op_priority x) noexcept;
[[nodiscard]] std::string_view to_string(op_workload x) noexcept;
[[nodiscard]] std::string_view to_string(op_state x) noexcept;
[[nodiscard]] std::string_view to_string(barrier_mode x) noexcept;
[[nodiscard]] std::string_view to_string(pool_strategy x) noexcept;
// round_robin, load_balanced, priority, workload or adaptive.
[[nodiscard]] std::optional<pool_strategy> parse_pool_strategy(std::string_view text) noexcept;

}  // namespace cudactor

template <>
struct std::hash<cudactor::op_id> {
  std::size_t operator()(cudactor::op_id id) const noexcept {
    return std::hash<std::uint64_t>{}(id.value);
  }
};
