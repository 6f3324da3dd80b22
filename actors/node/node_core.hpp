// actors/node/node_core.hpp
//
// The node's state and work, behind its published face (actors/node_actor.hpp). The face
// takes what peers send, checks it and asks the core; the core alone holds the requests that
// are open (each one run request to the coordinator, answered when all of it has ended), runs
// barrier holds and their timers, and answers
// shutting_down to everything when the runtime stops it. Its handle never leaves the
// process (every reply to a peer comes from the face), so no peer can address the messages
// below: they are not part of what a control plane may say.
#pragma once

#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cudactor/actors/node_actor.hpp"
#include "cudactor/messaging/atoms.hpp"
#include "cudactor/messaging/communicator_types.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/node_types.hpp"
#include "cudactor/messaging/step_types.hpp"

namespace cudactor::detail {

using node_core_actor = caf::typed_actor<
    // a claim of the node for the caller's control plane (node_actor's claim), with who made it
    caf::replies_to<claim_atom, std::string, caf::actor_addr>::with<bool>,
    // the owner admitting a guest (node_actor's admit), with who made it
    caf::replies_to<admit_atom, guest_call, caf::actor_addr>::with<bool>,
    // the coordinator's ends of the operations the core handed it (it listens to them)
    caf::reacts_to<std::vector<op_notice>>,
    // checked by the face already, with who sent it (only the owner may name buffers):
    // handed to the coordinator, answered once all has ended
    caf::replies_to<submit_atom, graph_spec, caf::actor_addr>::with<std::vector<op_notice>>,
    caf::replies_to<register_atom, op_spec, caf::actor_addr>::with<op_notice>,
    // the owner's buffers (checked by the face already), with who called
    caf::replies_to<alloc_atom, buffer_call, caf::actor_addr>::with<buffer_handle>,
    caf::replies_to<store_atom, buffer_call, caf::actor_addr>::with<op_notice>,
    caf::replies_to<fetch_atom, buffer_call, caf::actor_addr>::with<std::vector<std::uint8_t>>,
    caf::replies_to<release_atom, buffer_call, caf::actor_addr>::with<op_notice>,
    // the owner's steps (checked by the face already), with who called
    caf::replies_to<record_atom, step_spec, caf::actor_addr>::with<step_handle>,
    caf::replies_to<replay_atom, replay_request, caf::actor_addr>::with<step_outcome>,
    caf::replies_to<release_atom, step_handle, caf::actor_addr>::with<bool>,
    // a barrier call, and who made it (the face relays it: the caller is not the sender)
    caf::replies_to<synchronize_atom, barrier_call, caf::actor_addr>::with<node_arrival>,
    caf::reacts_to<release_atom, std::string, std::uint64_t, caf::actor_addr>,
    // making a communicator's rank (checked by the face already): the call, who made it and
    // the face (the rank's rendezvous entries go out as the face's); entries and losses from
    // the cluster, with their sender; and a rank's thread saying how it went
    caf::replies_to<communicator_atom, communicator_call, caf::actor_addr,
                    node_actor>::with<communicator_ready>,
    caf::reacts_to<rendezvous_atom, rendezvous_entry, caf::actor_addr>,
    caf::reacts_to<lost_atom, std::string, std::uint64_t, std::string, caf::actor_addr>,
    caf::reacts_to<communicator_atom, std::string, std::uint64_t, caf::error>,
    // its own hold timers; the runtime
    caf::reacts_to<expire_atom, std::uint64_t>, caf::reacts_to<shutdown_atom>>;

[[nodiscard]] node_core_actor spawn_node_core(caf::actor_system& system, node_context context,
                                              node_options options);

}  // namespace cudactor::detail
