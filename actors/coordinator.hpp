// actors/coordinator.hpp
//
// The operation coordinator: users register operations with their dependencies (one at a time
// or as whole graphs) and it runs each on one of its own streams as soon as every dependency
// has been *submitted*, never waiting on the GPU from the host. A dependency on another stream
// becomes a device-side wait for that dependency's timeline point (backend::wait_point), one
// on the same stream needs nothing, and a wait already covered by a newer one on the same pair
// of streams is skipped. Ready operations go out in priority order onto streams picked by the
// pool's strategy (detail/stream_pool.hpp); completions come from the completion poller's
// per-tick reports, so nothing in the actor blocks.
//
// Every operation ends exactly once: completed, failed, or cancelled (a failure cancels its
// dependents, with the cause). A lost device fails everything open and the coordinator refuses
// new work until reset: reset the backend from outside any actor (backend::reset(), which
// waits for the device), then send reset_atom; the coordinator makes new streams and goes on.
// Operations that ended are forgotten once nothing can refer to them (memory stays flat);
// describe still answers for the newest `ended_kept` of them.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "cudactor/actors/operation_registry.hpp"
#include "cudactor/actors/pool_strategy.hpp"
#include "cudactor/actors/trace_writer.hpp"
#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/completion_poller.hpp"
#include "cudactor/messaging/coordinator_protocol.hpp"
#include "cudactor/messaging/input_limits.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor {

struct coordinator_options {
  std::size_t streams = 4;
  std::size_t high_priority_streams = 0;  // the first n
  std::size_t low_priority_streams = 0;   // the last n
  pool_strategy strategy = pool_strategy::load_balanced;
  std::uint64_t max_in_flight = 1024;  // per stream; ready operations wait beyond it
  std::size_t ended_kept = 4096;       // ended operations describe still knows
  std::size_t failures_kept = 65536;   // failed ids remembered to refuse dependencies on them
  caf::timespan stall_after{std::chrono::seconds{10}};  // detect_deadlocks' default age
  // What one message may hold (messaging/input_check.hpp). Local input only, so more than a
  // node takes from peers; still bounded, so that no graph costs more than linear work.
  input_limits limits = local_limits();
  // Host callbacks around each operation on its stream stamp when it started and finished
  // (report's run times, the trace). Two more stream operations per operation: off unless
  // asked for; a trace turns it on.
  bool timing = false;
  std::size_t report_names = 1024;  // distinct operation names the report keeps apart

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

  // The priority class of the pool's stream `index`.
  [[nodiscard]] gpu::stream_priority priority_of(std::size_t index) const noexcept {
    if (index < high_priority_streams) return gpu::stream_priority::high;
    if (index >= streams - low_priority_streams) return gpu::stream_priority::low;
    return gpu::stream_priority::normal;
  }
};

namespace detail {
class device_clock;  // actors/detail/device_clock.hpp
}  // namespace detail

// What the coordinator shares with the runtime. The backend and the poller must outlive it.
struct coordinator_context {
  gpu::backend* device = nullptr;
  gpu::completion_poller* poller = nullptr;
  std::shared_ptr<const operation_registry> operations;
  std::shared_ptr<metrics::registry> metrics;  // empty: the coordinator's metrics go nowhere
  std::shared_ptr<trace_writer> trace;         // empty: no trace
  // The device's clock, for timing and the trace (the runtime's); empty: the coordinator
  // starts one of its own when it times.
  std::shared_ptr<const detail::device_clock> clock;
};

// Creates the coordinator's streams and spawns it; the first stream's creation error otherwise.
[[nodiscard]] gpu::result<coordinator_actor> spawn_coordinator(caf::actor_system& system,
                                                               const coordinator_context& context,
                                                               coordinator_options options);

}  // namespace cudactor
