// actors/barrier_actor.hpp
//
// A barrier over a set of streams (the seeds' CrossStreamBarrier). Each synchronize is one
// generation and places the barrier, on every stream, after the newest point handed to the
// device so far:
//
//   host mode    the completion poller watches each stream's point, and the request is
//                answered once all have been seen there, with how long that took. A limit
//                turns into errc::timeout naming the streams that did not arrive (and where
//                each had got to); a stream that reached it with failed work answers with
//                that failure, a lost device with device_lost.
//   device mode  every stream waits for every other's point on the device
//                (backend::wait_point), so nothing submitted to any of them afterwards starts
//                before all of them have passed the barrier. Answered as soon as the waits are
//                placed: no host thread waits and nothing is watched. A stream whose point
//                fails makes the other streams' next work fail with dependency_failed.
//
// Generations are numbered from 1 in the order requests arrive; several may be open at once,
// and none is crossed before an earlier one has been answered. The barrier neither signals nor
// records on its streams, so it can sit beside their owners (stream actors, the coordinator)
// without disturbing their timelines: what an owner holds back (a stream actor's in-flight cap)
// reaches the device after the barrier and is therefore after it.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/completion_poller.hpp"
#include "cudactor/messaging/barrier_protocol.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor {

struct barrier_options {
  std::string name = "barrier";
  barrier_mode mode = barrier_mode::host;           // what a plain synchronize does
  caf::timespan timeout{std::chrono::seconds{10}};  // a plain host synchronize's limit
};

// One stream of the barrier. The stream belongs to someone else and must outlive the barrier
// or be found gone (stale handle) by it, which answers invalid_state naming it.
struct barrier_member {
  std::string name;
  gpu::stream_ref stream;
};

// The backend and the poller must outlive the barrier.
struct barrier_context {
  gpu::backend* device = nullptr;
  gpu::completion_poller* poller = nullptr;
  std::shared_ptr<metrics::registry> metrics;  // empty: the barrier's metrics go nowhere
};

// Refuses an incomplete context, no members, an empty or repeated stream.
[[nodiscard]] gpu::result<barrier_actor> spawn_barrier(caf::actor_system& system,
                                                       const barrier_context& context,
                                                       std::vector<barrier_member> members,
                                                       barrier_options options = {});

}  // namespace cudactor
