// actors/coordinator.hpp
//
// The operation coordinator: users register operations with their dependencies (one at a time
// or as whole graphs) and it runs each on one of the runtime's stream actors as soon as every
// dependency has been *submitted* (holds a ticket on its stream), never waiting on the GPU from
// the host. It owns no stream: each scheduling pass sends every stream actor one message with
// all the operations that go to it, and the actor puts them on its timeline with whatever was
// submitted to it directly. A dependency on another stream becomes a device-side wait for that
// dependency's timeline point (backend::wait_point), one on the same stream needs nothing, and
// a wait already covered by a newer one on the same pair of streams is skipped. Ready
// operations go out in priority order onto streams picked by the pool's strategy
// (coordinator/stream_pool.hpp); completions come from the stream actors' batches (one per stream
// per completion-poller tick), so nothing in the actor blocks.
//
// Every operation ends exactly once: completed, failed, or cancelled (a failure cancels its
// dependents, with the cause). A lost device fails everything open and the coordinator refuses
// new work until reset: reset the backend from outside any actor (backend::reset(), which
// waits for the device), then send reset_atom; the coordinator has its stream actors make
// their streams anew and goes on.
// Operations that ended are forgotten once nothing can refer to them (memory stays flat);
// describe still answers for the newest `ended_kept` of them.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cudactor/actors/communicator_table.hpp"
#include "cudactor/actors/operation_registry.hpp"
#include "cudactor/actors/stream_actor.hpp"
#include "cudactor/actors/trace_writer.hpp"
#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/completion_poller.hpp"
#include "cudactor/messaging/coordinator_protocol.hpp"
#include "cudactor/messaging/input_limits.hpp"
#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor {

namespace detail {
class stream_ledger;  // actors/detail/stream_ledger.hpp
}  // namespace detail

// How a recorded step replays (docs/replay.md): as one backend graph launched on one stream
// (gpu/work_graph.hpp: a CUDA graph on CUDA), or as the plan's parts on the streams. automatic:
// a graph where the backend builds one natively (CUDA), the plan elsewhere; always: a graph on
// every backend (on the host its nodes run in order on one stream: for tests); never: the plan.
enum class step_graph_mode : std::uint8_t { automatic, always, never };

struct coordinator_options {
  // How a ready operation's stream is chosen. Each stream's in-flight cap is its stream
  // actor's, published in its ledger (detail::stream_ledger): ready operations wait beyond it.
  pool_strategy strategy = pool_strategy::load_balanced;
  std::size_t ended_kept = 4096;      // ended operations describe still knows
  std::size_t failures_kept = 65536;  // failed ids remembered to refuse dependencies on them
  std::size_t max_buffers = 65536;    // buffers allocated or adopted and not yet reclaimed
  std::size_t max_steps = 1024;       // recorded steps not yet released (docs/replay.md)
  step_graph_mode step_graphs = step_graph_mode::automatic;
  // Operations in one dispatch message, at most: what a stream actor takes in one
  // (cudactor.max-batch). A pass that holds more (replays' parts) goes in several.
  std::size_t max_pass = 65536;
  // Buffer inference's bounds (docs/buffers.md#bounds): what one graph's uses may cost the
  // coordinator, whose handler they run in. Segments one buffer's use history holds (each use
  // adds at most two; they go as their users end); dependencies one graph's uses infer (each
  // use's counted once, as with explicit ones the limit max-graph-edges); history segments
  // one graph's inference goes through (every segment each use covers, and the histories it
  // copies).
  std::size_t max_buffer_segments = 65536;
  std::size_t max_inferred_edges = std::size_t{1} << 20;
  std::size_t max_covered_segments = std::size_t{1} << 22;
  // detect_deadlocks' default age: an operation open this long is reported with what holds it
  // (a second: long enough to skip work merely queued, short enough for a program that asks
  // when it seems stuck).
  caf::timespan stall_after{std::chrono::seconds{1}};
  // What one message may hold (messaging/input_check.hpp). Local input only, so more than a
  // node takes from peers; still bounded, so that no graph costs more than linear work.
  input_limits limits = local_limits();
  // Timing events around each operation on its stream tell when it started and finished on
  // the device (report's run times, the trace), through the stream actor's timing. Two more
  // stream operations per operation: off unless asked for; a trace turns it on.
  bool timing = false;
  // A dependent goes out in the same pass as its dependencies on other streams, waiting on the
  // point its dependency's stream actor publishes once it issues it (messaging/point_cell.hpp),
  // instead of waiting for the dependency's ticket: one dispatch message per stream for a whole
  // graph with room. Off by default: on the host backend of a small VM the stream actors then
  // wake each other once per crossing of a fine-grained DAG, which costs more than the round
  // trip per level it saves (docs/coordinator.md has the figures); on a GPU it is to be
  // measured (bench/gpu/dag_gpu_bench).
  bool dependents_in_pass = false;
  std::size_t report_names = 1024;  // distinct operation names the report keeps apart
  // Per-operation state comes from chunks kept across graphs (actors/coordinator/value_chunks.hpp);
  // once the coordinator has held no operation for this long, the empty ones are freed
  // (zero: kept, up to their bound).
  caf::timespan keep_memory_for{std::chrono::seconds{2}};

  [[nodiscard]] static input_limits local_limits() noexcept {
    input_limits l;
    l.max_graph_ops = std::size_t{1} << 22;
    l.max_graph_edges = std::size_t{1} << 26;
    l.max_graph_bytes = std::size_t{1} << 32;
    l.max_description = std::size_t{1} << 16;
    l.max_args = 64;
    l.max_string = std::size_t{1} << 30;
    l.max_sequence = std::size_t{1} << 26;
    return l;
  }
};

namespace detail {
class device_clock;      // actors/detail/device_clock.hpp
class stream_directory;  // actors/detail/stream_directory.hpp
}  // namespace detail

// A stream the coordinator schedules onto: one of the runtime's stream actors.
struct coordinated_stream {
  stream_actor actor;
  stream_id id;  // the runtime's id of the stream (rt.stream(id.value))
  std::string name;
  gpu::stream_priority priority = gpu::stream_priority::normal;
  // The stream actor's published ledger (spawned_stream::ledger): its cap and its load.
  std::shared_ptr<detail::stream_ledger> ledger;
};

// What the coordinator shares with the runtime. The backend must outlive it.
struct coordinator_context {
  gpu::backend* device = nullptr;
  std::vector<coordinated_stream> streams;  // at least one
  std::shared_ptr<const operation_registry> operations;
  // The node's communicators, which its collectives run on; empty: collectives are refused.
  std::shared_ptr<communicator_table> communicators;
  std::shared_ptr<metrics::registry> metrics;  // empty: the coordinator's metrics go nowhere
  std::shared_ptr<trace_writer> trace;         // empty: no trace
  // The device's clock, for timing and the trace (the runtime's); empty: the coordinator
  // starts one of its own when it times.
  std::shared_ptr<const detail::device_clock> clock;
  // The backend streams behind the streams' ids (the runtime's, written by the stream actors):
  // where a synchronize reads the work a member reached the barrier with.
  std::shared_ptr<const detail::stream_directory> directory;
};

// Spawns the coordinator over context.streams; invalid_argument without any.
[[nodiscard]] gpu::result<coordinator_actor> spawn_coordinator(caf::actor_system& system,
                                                               const coordinator_context& context,
                                                               coordinator_options options);

}  // namespace cudactor
