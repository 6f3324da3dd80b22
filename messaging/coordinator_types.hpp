// messaging/coordinator_types.hpp
//
// The values the coordinator exchanges: what an operation is (op_spec) and a whole graph of
// them, the notice a subscriber gets when one ends, what describe answers, the stream a
// caller-launched operation is handed (op_lease), the coordinator's counters and its deadlock
// report. Plain data with inspect(), registered by add_message_types(); the work inside an
// op_spec is local-only when it is a closure (messaging/work.hpp).
//
// Times are nanoseconds on the coordinator's steady clock; 0 means "not yet".
#pragma once

#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cudactor/gpu/stream.hpp"
#include "cudactor/messaging/barrier_types.hpp"
#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/collective_types.hpp"
#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/messaging/types.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

// What a barrier operation spans and how it crosses. Every stream named reaches the barrier
// (everything handed to it before is done) before anything after the barrier on any of them
// runs. Only an operation of type barrier sets it.
struct op_barrier {
  // By the runtime's stream ids; empty: every stream the coordinator schedules onto (where any
  // operation of a graph may be placed).
  std::vector<stream_id> streams;
  barrier_mode mode = barrier_mode::device;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_barrier& x) {
  return f(caf::meta::type_name("cudactor::op_barrier"), x.streams, x.mode);
}

// Where an operation may run. By default any stream the coordinator's strategy picks; an
// operation may instead name its stream, keep to the streams of its priority class and role,
// or be placed by a strategy of its own.
struct op_placement {
  // Only on `stream` (a runtime stream id): it waits for room there rather than go elsewhere.
  bool pinned = false;
  stream_id stream;
  // Only on a stream of its priority class (critical and high: high-priority streams; low and
  // cleanup: low-priority ones; normal: normal ones) and, unless its workload is mixed, of its
  // role (actors/coordinator/stream_pool.hpp assigns roles): never another while those are busy.
  // Refused at registration when no stream is both.
  bool strict = false;
  // `strategy` instead of the coordinator's own (cudactor.coordinator.strategy).
  bool own_strategy = false;
  pool_strategy strategy = pool_strategy::load_balanced;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_placement& x) {
  return f(caf::meta::type_name("cudactor::op_placement"), x.pinned, x.stream, x.strict,
           x.own_strategy, x.strategy);
}

// One operation to register. An empty `body` makes it manual: the caller launches its work
// itself between begin() and complete(). A barrier (type barrier) carries no body: the
// coordinator places it on its streams (`barrier`).
struct op_spec {
  op_type type = op_type::kernel;
  op_priority priority = op_priority::normal;
  std::vector<op_id> deps;
  std::string description;
  op_workload workload = op_workload::compute;
  work body;
  op_barrier barrier;
  op_placement placement;  // not for a barrier, which names its streams
  // The buffers it uses: the coordinator orders it after what it must come after (in
  // submission order: a read after the last write of the bytes it reads, a write after the
  // last write and every read since), besides `deps`. Not for a barrier.
  std::vector<buffer_use> uses;
  // A collective on one of the node's communicators: its type is the kind's (op_type_of), it
  // carries no body, and the coordinator adds the uses of its buffers to `uses` (a read of
  // what it sends, a write of what it receives) and orders it after the communicator's
  // previous collective, so that every rank runs them in the order they were given.
  op_collective collective;

  // One operation in one line, as one registers it: with no body it is manual (the caller
  // launches it between begin and complete); a launch function becomes local work.
  [[nodiscard]] static op_spec of(op_type type, op_priority priority, std::vector<op_id> deps,
                                  std::string description, work body = {}) {
    op_spec s;
    s.type = type;
    s.priority = priority;
    s.deps = std::move(deps);
    s.description = std::move(description);
    s.body = std::move(body);
    return s;
  }
  [[nodiscard]] static op_spec of(op_type type, op_priority priority, std::vector<op_id> deps,
                                  std::string description, gpu::work_fn launch) {
    return of(type, priority, std::move(deps), std::move(description),
              work::local(std::move(launch)));
  }
  // A collective, typed by its kind.
  [[nodiscard]] static op_spec of(op_collective c, std::string description,
                                  op_priority priority = op_priority::normal) {
    op_spec s;
    s.type = op_type_of(c.kind);
    s.priority = priority;
    s.workload = op_workload::coordination;
    s.description = std::move(description);
    s.collective = std::move(c);
    return s;
  }

  [[nodiscard]] bool is_barrier() const noexcept { return type == op_type::barrier; }
  [[nodiscard]] bool is_collective() const noexcept { return !collective.empty(); }
  // The caller launches it (begin/complete).
  [[nodiscard]] bool is_manual() const noexcept {
    return body.empty() && !is_barrier() && !is_collective();
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_spec& x) {
  return f(caf::meta::type_name("cudactor::op_spec"), x.type, x.priority, x.deps, x.description,
           x.workload, x.body, x.barrier, x.placement, x.uses, x.collective);
}

// An operation of a graph: its spec, plus dependencies on other operations of the same graph
// by their index in it (spec.deps may name operations registered before).
struct graph_op {
  op_spec spec;
  std::vector<std::uint32_t> after;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, graph_op& x) {
  return f(caf::meta::type_name("cudactor::graph_op"), x.spec, x.after);
}

struct graph_spec {
  std::vector<graph_op> ops;

  // Appends an operation and answers its index.
  std::uint32_t add(op_spec spec, std::vector<std::uint32_t> after = {}) {
    ops.push_back({std::move(spec), std::move(after)});
    return static_cast<std::uint32_t>(ops.size() - 1);
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, graph_spec& x) {
  return f(caf::meta::type_name("cudactor::graph_spec"), x.ops);
}

// Told to subscribers, once per operation, when it ends. `stream`/`point` are where it ran
// (point 0: it never reached a stream).
struct op_notice {
  op_id id;
  op_state state = op_state::completed;
  caf::error cause;  // why it failed or was cancelled
  stream_id stream;
  timeline_point point = 0;
  std::int64_t registered_ns = 0;
  std::int64_t dispatched_ns = 0;
  std::int64_t ended_ns = 0;  // the coordinator learnt of the end
  // A barrier that reached its streams: where it sat on each (its mark, after everything
  // handed to that stream before) and when the coordinator saw the stream get there. `stream`
  // and `point` above are its first stream's, where it was crossed.
  std::vector<barrier_arrival> arrivals;
  // The dependencies the coordinator inferred from its declared buffer uses.
  std::vector<inferred_dep> inferred;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_notice& x) {
  return f(caf::meta::type_name("cudactor::op_notice"), x.id, x.state, x.cause, x.stream, x.point,
           x.registered_ns, x.dispatched_ns, x.ended_ns, x.arrivals, x.inferred);
}

// True when every operation of a graph completed.
[[nodiscard]] inline bool all_completed(const std::vector<op_notice>& ends) noexcept {
  for (const auto& n : ends) {
    if (n.state != op_state::completed) return false;
  }
  return true;
}

// describe(op): the operation as the coordinator knows it.
struct op_info {
  op_id id;
  op_type type = op_type::kernel;
  op_priority priority = op_priority::normal;
  op_workload workload = op_workload::compute;
  bool manual = false;
  std::string description;
  std::vector<op_id> deps;
  op_state state = op_state::pending;
  caf::error cause;
  bool on_stream = false;  // stream and point are set
  stream_id stream;
  timeline_point point = 0;
  std::int64_t registered_ns = 0;
  std::int64_t ready_ns = 0;
  std::int64_t dispatched_ns = 0;
  std::int64_t ended_ns = 0;
  std::vector<buffer_use> uses;
  // Those of `deps` inferred from `uses`, each with the buffer it came from.
  std::vector<inferred_dep> inferred;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_info& x) {
  return f(caf::meta::type_name("cudactor::op_info"), x.id, x.type, x.priority, x.workload,
           x.manual, x.description, x.deps, x.state, x.cause, x.on_stream, x.stream, x.point,
           x.registered_ns, x.ready_ns, x.dispatched_ns, x.ended_ns, x.uses, x.inferred);
}

// begin(op): the stream reserved for a caller-launched operation until complete(op), named
// by its runtime id; in the coordinator's process runtime::backend_stream(stream) is the
// backend stream to enqueue the operation's work on.
struct op_lease {
  op_id op;
  stream_id stream;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_lease& x) {
  return f(caf::meta::type_name("cudactor::op_lease"), x.op, x.stream);
}

struct coordinator_metrics {
  std::uint64_t total = 0;  // registered
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  std::uint64_t cancelled = 0;
  std::uint64_t live = 0;        // registered, not ended
  std::uint64_t dispatched = 0;  // reached a stream
  // Dispatch messages sent to stream actors: at most one per stream per scheduling pass, a
  // dependent going out with its dependencies whatever stream they are on.
  std::uint64_t passes = 0;
  std::int64_t mean_coordination_ns = 0;      // registered -> dispatched, over `dispatched`
  std::uint64_t device_waits = 0;             // cross-stream waits placed on the device
  std::uint64_t redundant_waits_skipped = 0;  // covered by a newer wait on the same pair
  std::uint64_t deadlock_detections = 0;      // detect_deadlocks calls that found something
  std::uint64_t tracked = 0;                  // operations the coordinator holds state for
  std::uint64_t awaiting = 0;                 // waits not yet answered (ends, ready streams)
  // Users the buffers' histories hold, over all buffers: those still to be waited for, and
  // ended ones until a compaction drops them (amortized, so a bounded multiple of the first).
  std::uint64_t buffer_users = 0;
  // Chunks of per-operation state held (in use, or kept empty for the next burst until the
  // coordinator has been idle for cudactor.coordinator.keep-memory-for).
  std::uint64_t state_chunks = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coordinator_metrics& x) {
  return f(caf::meta::type_name("cudactor::coordinator_metrics"), x.total, x.completed, x.failed,
           x.cancelled, x.live, x.dispatched, x.passes, x.mean_coordination_ns, x.device_waits,
           x.redundant_waits_skipped, x.deadlock_detections, x.tracked, x.awaiting, x.buffer_users,
           x.state_chunks);
}

// An operation that is stuck, and on what. It waits on an unfinished dependency, which may
// wait on one of its own, and so on to the root: the operation that waits on nothing (the
// hung one, or one not begun, or one no stream has room for).
struct op_stall {
  op_id id;
  op_state state = op_state::pending;
  std::int64_t age_ns = 0;  // since it was registered
  // The root: the operation that holds this one back (itself when nothing it depends on is
  // open; `reason` says why the root does not end).
  op_id waiting_on;
  // The links from the operation's unfinished dependency to the root, in order (the root
  // last); at most max_stall_chain of them, the nearest first.
  std::vector<op_id> chain;
  std::string reason;
};

inline constexpr std::size_t max_stall_chain = 64;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_stall& x) {
  return f(caf::meta::type_name("cudactor::op_stall"), x.id, x.state, x.age_ns, x.waiting_on,
           x.chain, x.reason);
}

struct deadlock_report {
  // Each as op -> dep -> ... -> op. Empty from this coordinator: depend and submit refuse a
  // dependency that would close a cycle (dependency_cycle, naming it), so none can form; kept
  // so that the report's shape does not change for readers (remote peers) if that changes.
  std::vector<std::vector<op_id>> cycles;
  std::vector<op_stall> stalls;

  [[nodiscard]] bool empty() const noexcept { return cycles.empty() && stalls.empty(); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, deadlock_report& x) {
  return f(caf::meta::type_name("cudactor::deadlock_report"), x.cycles, x.stalls);
}

}  // namespace cudactor
