// messaging/barrier_protocol.hpp
//
// What may be said to a barrier actor (actors/barrier_actor.hpp). synchronize begins the next
// generation: in host mode it is answered once every stream has reached the barrier, with
// errc::timeout naming the streams that did not arrive in time, or with the failure a stream
// reached it with; in device mode it is answered once every stream has been made to wait for
// every other on the device. A plain synchronize uses the barrier's own mode and timeout.
//
// Each generation is one of the coordinator's barrier operations: the barrier actor hands
// the request on (delegates it) and the coordinator answers the caller; a withdraw is handed
// on the same way. shutdown (the runtime's) has every pending generation answered with
// shutting_down; barrier_outcome is the coordinator's word of each generation it answered.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>

#include "cudactor/messaging/atoms.hpp"
#include "cudactor/messaging/barrier_types.hpp"

namespace cudactor {

using barrier_actor = caf::typed_actor<
    caf::replies_to<synchronize_atom>::with<barrier_crossing>,
    caf::replies_to<synchronize_atom, barrier_mode>::with<barrier_crossing>,
    // with this limit (0: none): host mode until every stream arrived, device mode until
    // the waits are placed (they wait for a stream held by another barrier or a caller)
    caf::replies_to<synchronize_atom, barrier_mode, caf::timespan>::with<barrier_crossing>,
    // the same with a withdraw key: withdraw answers the generation cancelled (true), unless
    // it has been answered (false)
    caf::replies_to<synchronize_atom, barrier_mode, wait_limit>::with<barrier_crossing>,
    caf::replies_to<withdraw_atom, std::uint64_t>::with<bool>,
    caf::replies_to<status_atom>::with<barrier_status>,
    // the runtime
    caf::reacts_to<shutdown_atom>,
    // the coordinator: a generation it answered
    caf::reacts_to<barrier_outcome>>;

// A barrier actor's generation as it hands it to the coordinator, which answers the caller
// directly (the request is delegated): the words its answers carry, and who hears the outcome.
struct barrier_generation {
  std::string barrier;  // the barrier's name
  std::uint64_t generation = 0;
  barrier_actor front;  // the barrier actor
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, barrier_generation& x) {
  return f(caf::meta::type_name("cudactor::barrier_generation"), x.barrier, x.generation,
           x.front);
}

}  // namespace cudactor
