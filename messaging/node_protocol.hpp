// messaging/node_protocol.hpp
//
// What a control plane in another process may say to a node: the one actor a node publishes
// on the network, and nothing more. It takes work only as named operations (no code crosses
// the wire) and answers a graph or an operation once it has ended, so that a remote caller
// needs no actor of its own to listen with. Everything that arrives is checked before it
// reaches the coordinator (messaging/input_check.hpp); anything else a peer sends (another
// message, an exit or down message) is refused and counted. The node's lifecycle, the
// coordinator's notices and its timers go to an actor a peer cannot address
// (actors/node/node_core.hpp).
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cudactor/messaging/atoms.hpp"
#include "cudactor/messaging/communicator_types.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/node_types.hpp"
#include "cudactor/messaging/step_types.hpp"

namespace cudactor {

using node_actor = caf::typed_actor<
    caf::replies_to<info_atom>::with<node_info>,
    // the node claimed for the caller's control plane, with the node's owner token where one
    // is configured (cudactor.node.owner-token): from then on it takes work, barriers,
    // communicators and buffers only from that control plane's process, until the last of its
    // callers is gone. Without a token the first caller of any kind claims it (one tenant);
    // with one, work is refused until the token's holder has claimed it. true, or
    // permission_denied
    // A guest claims with a token the owner admitted (admit below): its process may then hand
    // the node work within the guest's quotas, and nothing else.
    caf::replies_to<claim_atom, std::string>::with<bool>,
    // from the node's owner: a guest token admitted, its quotas set, or revoked (guest_call).
    // true, or permission_denied for anyone else
    caf::replies_to<admit_atom, guest_call>::with<bool>,
    // a graph of named operations on the node's coordinator: every operation's
    // end, in the graph's order, once the last has ended
    caf::replies_to<submit_atom, graph_spec>::with<std::vector<op_notice>>,
    // one named operation: its end
    caf::replies_to<register_atom, op_spec>::with<op_notice>,
    // a barrier across nodes: answered once every request taken before it has
    // ended; then work is held back until the release (or the call's hold)
    caf::replies_to<synchronize_atom, barrier_call>::with<node_arrival>,
    caf::reacts_to<release_atom, std::string, std::uint64_t>,
    // a communicator's rank on this node (messaging/communicator_types.hpp),
    // from the control plane that owns the node: answered once it is
    // connected; the rendezvous entries the other ranks wrote; a rank lost
    caf::replies_to<communicator_atom, communicator_call>::with<communicator_ready>,
    // the node's buffers (buffer_call), for the control plane that owns it, which names them
    // in its operations' uses and collectives: allocated (the handle without the address:
    // nothing a peer could use), written and read in the order of each buffer's other work,
    // released (answered once every use has ended and the memory went back)
    caf::replies_to<alloc_atom, buffer_call>::with<buffer_handle>,
    caf::replies_to<store_atom, buffer_call>::with<op_notice>,
    caf::replies_to<fetch_atom, buffer_call>::with<std::vector<std::uint8_t>>,
    caf::replies_to<release_atom, buffer_call>::with<op_notice>,
    // steps (docs/replay.md), for the control plane that owns the node: a graph of named work
    // and collectives on its buffers, recorded once (at most cudactor.node.max-steps at once);
    // replayed, answered once with its outcome; released (false: the node holds no such step
    // of the caller's). The owner's steps are released when it is gone.
    caf::replies_to<record_atom, step_spec>::with<step_handle>,
    caf::replies_to<replay_atom, replay_request>::with<step_outcome>,
    caf::replies_to<release_atom, step_handle>::with<bool>,
    caf::reacts_to<rendezvous_atom, rendezvous_entry>,
    caf::reacts_to<lost_atom, std::string, std::uint64_t, std::string>>;

}  // namespace cudactor
