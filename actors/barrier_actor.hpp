// actors/barrier_actor.hpp
//
// A barrier over a set of streams (the seeds' CrossStreamBarrier), each one a stream actor's.
// Each synchronize is one generation. It first puts a mark on every member stream through its
// stream actor: a point after everything that actor accepted before the request, including
// what it still holds back (its in-flight cap, events being fetched), answered once the mark
// is signalled. Then:
//
//   host mode    the completion poller watches each stream's mark, and the request is
//                answered once all have been seen there, with how long that took. A limit
//                turns into errc::timeout naming the streams that did not arrive (and where
//                each had got to); a stream whose newest work before the barrier failed
//                answers with that failure, a lost device with device_lost.
//   device mode  every stream waits for every other's mark on the device (a stream actor
//                operation with those waits, backend::wait_point), so nothing submitted to any
//                of them afterwards starts before all of them have passed the barrier.
//                Answered once the waits are placed: no host thread waits and nothing is
//                watched. When a stream's newest work before the barrier failed, the answer is
//                dependency_failed naming it, and the other streams' crossing points (not
//                their next work) fail with the dependency.
//
// Generations are numbered from 1 in the order requests arrive; several may be open at once.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/completion_poller.hpp"
#include "cudactor/messaging/barrier_protocol.hpp"
#include "cudactor/messaging/stream_protocol.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor {

struct barrier_options {
  std::string name = "barrier";
  barrier_mode mode = barrier_mode::host;           // what a plain synchronize does
  caf::timespan timeout{std::chrono::seconds{10}};  // a plain host synchronize's limit
};

// One stream of the barrier: the stream actor that owns it, and a view of its stream (for
// the other members' device waits and the poller's watches).
struct barrier_member {
  std::string name;
  gpu::stream_ref stream;
  stream_actor actor;
  stream_id id;  // the runtime's id of the stream
};

// The backend and the poller must outlive the barrier.
struct barrier_context {
  gpu::backend* device = nullptr;
  gpu::completion_poller* poller = nullptr;
  std::shared_ptr<metrics::registry> metrics;  // empty: the barrier's metrics go nowhere
};

// Refuses an incomplete context, no members, a member without stream or actor, a repeated
// stream.
[[nodiscard]] gpu::result<barrier_actor> spawn_barrier(caf::actor_system& system,
                                                       const barrier_context& context,
                                                       std::vector<barrier_member> members,
                                                       barrier_options options = {});

}  // namespace cudactor
