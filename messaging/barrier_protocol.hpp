// messaging/barrier_protocol.hpp
//
// What may be said to a barrier actor (actors/barrier_actor.hpp). synchronize begins the next
// generation: in host mode it is answered once every stream has reached the barrier, with
// errc::timeout naming the streams that did not arrive in time, or with the failure a stream
// reached it with; in device mode it is answered once every stream has been made to wait for
// every other on the device. A plain synchronize uses the barrier's own mode and timeout.
//
// shutdown (the runtime's) answers every pending generation with shutting_down.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>

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
    caf::reacts_to<shutdown_atom>>;

}  // namespace cudactor
