// actors/barrier_actor.hpp
//
// A barrier over a set of the runtime's streams (the seeds' CrossStreamBarrier), answering
// each synchronize with its crossing. Each synchronize is one generation, numbered from 1 in
// the order requests arrive; several may be open at once and are crossed in that order.
//
// The crossing itself is the coordinator's: each generation is one of its barrier operations
// (actors/coordinator/coordinator_barriers.cpp), the one implementation of both modes, of
// the arrival times and of the limit naming the streams that did not arrive. A mark goes on
// every member through its stream actor, after everything that actor accepted before (what
// it still holds back too), then:
//
//   host mode    answered once every member's mark has been reached, with when each was
//                seen there; the coordinator's work on the members waits meanwhile. A limit
//                turns into errc::timeout naming the streams that did not arrive (and where
//                each had got to), and the generation ends, giving its streams back; a stream
//                whose newest work before the barrier failed answers dependency_failed naming
//                it; a lost device, device_lost.
//   device mode  every member waits for every other's mark on the device, so nothing handed
//                to any of them afterwards starts before all have passed the barrier. Answered
//                once the waits are placed: no host thread waits. When a stream's newest work
//                before the barrier had failed by then, the answer is dependency_failed naming
//                it; the waits are placed all the same and the streams go on.
//
// What the barrier actor adds: the generations' numbers, its defaults (mode, limit), its
// counters and metrics, its callers' withdraw keys, and words: each error names the barrier
// and the generation. It hands each request on (delegates it), so the coordinator answers the
// caller directly and tells the barrier actor the outcome first (barrier_outcome).
#pragma once

#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cudactor/gpu/types.hpp"
#include "cudactor/messaging/barrier_protocol.hpp"
#include "cudactor/messaging/coordinator_protocol.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor {

struct barrier_options {
  std::string name = "barrier";
  barrier_mode mode = barrier_mode::host;           // what a plain synchronize does
  caf::timespan timeout{std::chrono::seconds{10}};  // a plain synchronize's limit
};

// One stream of the barrier: its name and the runtime's id of it.
struct barrier_member {
  std::string name;
  stream_id id;
};

struct barrier_context {
  coordinator_actor coordinator;               // schedules onto every member
  std::string gpu;                             // the metrics' gpu label
  std::shared_ptr<metrics::registry> metrics;  // empty: the barrier's metrics go nowhere
};

// Refuses a context without coordinator, no members, a repeated stream.
[[nodiscard]] gpu::result<barrier_actor> spawn_barrier(caf::actor_system& system,
                                                       const barrier_context& context,
                                                       std::vector<barrier_member> members,
                                                       barrier_options options = {});

}  // namespace cudactor
