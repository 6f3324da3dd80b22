// actors/event_pool_actor.hpp
//
// The event pool: regular and timing events, leased in batches so that stream actors (which
// keep a small local cache) do not ask for each operation. It starts with `regular` and
// `timing` events made up front, grows by grow_batch events at a time up to max_events in
// all, and when a regular request finds neither free regular events nor room to make them it
// lends free timing events (a timing event does all a regular one does; never the other way
// round); only then does it answer pool_exhausted. After idle_period without an acquire it
// destroys the free events beyond what it keeps of each kind (keep_free, or the up-front
// number if larger). A stale or double release is refused by generation (event_table),
// naming the ref.
#pragma once

#include <caf/actor_system.hpp>

#include <chrono>
#include <cstdint>
#include <memory>

#include "cudactor/actors/event_table.hpp"
#include "cudactor/messaging/event_pool_protocol.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor {

struct event_pool_options {
  std::uint32_t regular = 0;                    // regular events made up front
  std::uint32_t timing = 0;                     // timing events made up front
  std::uint32_t grow_batch = 64;                // events created at once when the pool runs dry
  std::uint32_t max_events = 8192;              // both kinds together
  std::uint32_t keep_free = 64;                 // per kind, kept through idle periods
  std::chrono::milliseconds idle_period{5000};  // 0: never shrink
};

// Spawns the pool over `events` (which it fills; stream actors read it), once the up-front
// events are made: the backend's failure to make them (or up-front numbers over max_events)
// is the answer instead. Its metrics go to `metrics`, or nowhere when that is empty.
[[nodiscard]] gpu::result<event_pool_actor> spawn_event_pool(
    caf::actor_system& system, std::shared_ptr<event_table> events, event_pool_options options,
    std::shared_ptr<metrics::registry> metrics = nullptr);

}  // namespace cudactor
