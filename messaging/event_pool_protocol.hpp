// messaging/event_pool_protocol.hpp
//
// What may be said to the event pool actor. acquire leases n events of one kind at once (all
// or none: pool_exhausted when the pool is at its maximum); release returns leases (all or
// none: one stale or doubly released ref refuses the whole call with stale_event, naming
// it); elapsed answers the time between two recorded timing events once the device has
// passed both, as cudaEventElapsedTime (not_ready before). Stream actors lease in batches for their
// local caches, so a submit needs no round trip to the pool.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <vector>

#include "cudactor/gpu/types.hpp"
#include "cudactor/messaging/atoms.hpp"
#include "cudactor/messaging/types.hpp"

namespace cudactor {

using event_pool_actor = caf::typed_actor<
    caf::replies_to<acquire_atom, gpu::event_kind, std::uint32_t>::with<std::vector<event_lease>>,
    caf::replies_to<release_atom, std::vector<event_lease>>::with<void>,
    caf::replies_to<utilization_atom>::with<pool_utilization>,
    // end - start of two timing events, both recorded and reached (not_ready before)
    caf::replies_to<elapsed_atom, event_lease, event_lease>::with<caf::timespan>,
    // runtime and the pool's own idle timer
    caf::reacts_to<shutdown_atom>, caf::reacts_to<shrink_atom>>;

}  // namespace cudactor
