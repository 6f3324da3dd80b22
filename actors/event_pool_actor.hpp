// actors/event_pool_actor.hpp
//
// The event pool: regular and timing events, leased in batches so that stream actors (which
// keep a small local cache) do not ask for each operation. It grows by grow_batch events at a
// time up to max_events in all, then answers pool_exhausted; after idle_period without an
// acquire it destroys the free events beyond keep_free of each kind. A stale or double
// release is refused by generation (event_table), naming the ref.
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
  std::uint32_t grow_batch = 64;                // events created at once when the pool runs dry
  std::uint32_t max_events = 8192;              // both kinds together
  std::uint32_t keep_free = 64;                 // per kind, kept through idle periods
  std::chrono::milliseconds idle_period{5000};  // 0: never shrink
};

// Spawns the pool over `events` (which it fills; stream actors read it). Its metrics go to
// `metrics`, or nowhere when that is empty.
[[nodiscard]] event_pool_actor spawn_event_pool(
    caf::actor_system& system, std::shared_ptr<event_table> events, event_pool_options options,
    std::shared_ptr<metrics::registry> metrics = nullptr);

}  // namespace cudactor
