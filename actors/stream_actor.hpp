// actors/stream_actor.hpp
//
// One stream actor per backend stream: it owns the stream, hands every operation the next
// point of the stream's timeline (the ticket), and learns of completions only through the
// completion poller's per-tick progress report (one message per stream per tick, never one
// per operation). await and synchronize are answered from those reports through response
// promises; nothing in the actor blocks.
//
// Operations beyond max_in_flight keep their tickets and wait inside the actor until
// completions make room (backpressure: nothing is refused or lost). Events come from a small
// local cache leased from the event pool in batches. Memory is stream-ordered with deferred
// reclamation (gpu::stream_allocator). On shutdown every outstanding request is answered,
// completed or with shutting_down.
#pragma once

#include <caf/actor_system.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cudactor/actors/event_table.hpp"
#include "cudactor/actors/operation_registry.hpp"
#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/completion_poller.hpp"
#include "cudactor/messaging/event_pool_protocol.hpp"
#include "cudactor/messaging/stream_protocol.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor {

struct stream_actor_options {
  stream_id id;
  std::string name;                                              // "stream-<id>" when empty
  gpu::stream_priority priority = gpu::stream_priority::normal;  // fixed for the actor's life
  // Operations handed to the backend and not complete; never more than the backend's own
  // bound (gpu::backend::max_in_flight(), effective_max_in_flight()).
  std::uint64_t max_in_flight = 1024;
  // Timing events around each operation, so completions carry device start and end times.
  bool timing = false;
  std::uint32_t event_batch = 32;                    // events leased from the pool per refill
  std::size_t max_batch = 65536;                     // most works in one submit message
  std::size_t reuse_limit = std::size_t{256} << 20;  // freed bytes kept for reuse
  std::size_t failure_history = 4096;                // failed points remembered for late awaits
  // Completed points whose times are remembered (newest first), so that an await or a
  // synchronize on a point already reached answers with its times, not zeros.
  std::size_t times_kept = 4096;
};

// The cap a stream actor keeps: its option, at most the backend's bound on signalled points in
// flight per stream, at least 1.
[[nodiscard]] std::uint64_t effective_max_in_flight(const stream_actor_options& options,
                                                    const gpu::backend& device) noexcept;

namespace detail {
class device_clock;      // actors/detail/device_clock.hpp
class stream_ledger;     // actors/detail/stream_ledger.hpp
class stream_directory;  // actors/detail/stream_directory.hpp
}  // namespace detail

// What every stream actor of a runtime shares. The backend and the poller must outlive the
// actor.
struct stream_context {
  gpu::backend* device = nullptr;
  gpu::completion_poller* poller = nullptr;
  event_pool_actor pool;
  std::shared_ptr<event_table> events;
  std::shared_ptr<const operation_registry> operations;
  std::shared_ptr<metrics::registry> metrics;  // empty: the actor's metrics go nowhere
  // The device's clock, for timing (the runtime's, started before any actor); empty: an actor
  // with timing on starts one of its own on its new stream.
  std::shared_ptr<const detail::device_clock> clock;
  // Where each stream actor publishes its backend stream, and looks up the others' for the
  // device-side waits it places (one entry per stream of the runtime).
  std::shared_ptr<detail::stream_directory> directory;
};

// A stream actor, its name and its published ledger.
struct spawned_stream {
  stream_actor actor;
  std::string name;
  // What the actor publishes of its ledger (its cap, the load on it, how far it got): the
  // coordinator reads it rather than keep a count of its own.
  std::shared_ptr<detail::stream_ledger> ledger;
};

// Creates the backend stream and spawns its actor; the stream's creation error otherwise.
[[nodiscard]] gpu::result<spawned_stream> spawn_stream_actor(caf::actor_system& system,
                                                             const stream_context& context,
                                                             stream_actor_options options);

}  // namespace cudactor
