// messaging/barrier_protocol.hpp
//
// What may be said to a barrier actor (actors/barrier_actor.hpp). synchronize begins the next
// generation: in host mode it is answered once every stream has reached the barrier (seen by
// the completion poller), with errc::timeout naming the streams that did not arrive in time,
// or with the failure a stream reached it with; in device mode it is answered once every
// stream has been made to wait for every other on the device. A plain synchronize uses the
// barrier's own mode and timeout.
//
// The last two entries are the runtime's and the poller's: shutdown answers every pending
// generation with shutting_down; progress carries one stream's arrival (generation, member,
// the watch's error if it did not arrive cleanly, when it was seen).
#pragma once

#include <caf/error.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>

#include "cudactor/messaging/atoms.hpp"
#include "cudactor/messaging/barrier_types.hpp"

namespace cudactor {

using barrier_actor = caf::typed_actor<
    caf::replies_to<synchronize_atom>::with<barrier_crossing>,
    caf::replies_to<synchronize_atom, barrier_mode>::with<barrier_crossing>,
    // host mode with this limit (0: none); device mode ignores it: nothing is waited for
    caf::replies_to<synchronize_atom, barrier_mode, caf::timespan>::with<barrier_crossing>,
    // the same with a withdraw key: withdraw answers the generation cancelled (true), unless
    // it has been answered, or its device-mode waits are being placed (false)
    caf::replies_to<synchronize_atom, barrier_mode, wait_limit>::with<barrier_crossing>,
    caf::replies_to<withdraw_atom, std::uint64_t>::with<bool>,
    caf::replies_to<status_atom>::with<barrier_status>,
    // runtime and poller
    caf::reacts_to<shutdown_atom>,
    caf::reacts_to<progress_atom, std::uint64_t, std::uint32_t, caf::error, std::int64_t>>;

}  // namespace cudactor
