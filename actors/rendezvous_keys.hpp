// actors/rendezvous_keys.hpp
//
// Which keys of a communicator's rendezvous each rank may write, as the cluster passes the
// ranks' entries on (actors/cluster_actor.hpp): only its own, so that no member node can
// publish another rank's addresses (or, for NCCL, the communicator's id) before that rank does
// and place itself between honest ranks. The engines' keys, under "<name>/<generation>/":
// Gloo's "<rank>" (each rank its pair addresses, gpu/gloo_communicator.cpp) and "rank_<rank>"
// (what each rank waits for of the others), and NCCL's "nccl-id" (rank 0's unique id,
// gpu/nccl_communicator.cpp).
#pragma once

#include <cstddef>

#include "cudactor/messaging/communicator_types.hpp"

namespace cudactor {

// Whether rank `rank` of `entry`'s communicator and generation may write `entry.key`.
[[nodiscard]] bool is_own_rendezvous_key(const rendezvous_entry& entry, std::size_t rank);

}  // namespace cudactor
