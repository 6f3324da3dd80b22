// messaging/cluster_protocol.hpp
//
// What a control plane says to its cluster actor (actors/cluster_actor.hpp), the one actor
// that stands for a set of remote nodes: a barrier across all of them that are up, and work
// for one of them by name. Every request is answered once, also when a node dies or hangs
// (then with errc::node_lost naming it), so callers need no timeouts of their own to learn of
// a lost node.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cudactor/messaging/atoms.hpp"
#include "cudactor/messaging/cluster_types.hpp"
#include "cudactor/messaging/communicator_types.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/node_types.hpp"
#include "cudactor/messaging/step_types.hpp"

namespace cudactor {

using cluster_actor = caf::typed_actor<
    // the next generation of the barrier, with the cluster's limit or this one (0: none)
    caf::replies_to<synchronize_atom>::with<cluster_crossing>,
    caf::replies_to<synchronize_atom, caf::timespan>::with<cluster_crossing>,
    // work for the node of this name (node_actor's submit and register)
    caf::replies_to<submit_atom, std::string, graph_spec>::with<std::vector<op_notice>>,
    caf::replies_to<register_atom, std::string, op_spec>::with<op_notice>,
    // the buffers of the node of this name (node_actor's), the call made with the cluster's
    // owner token: the cluster owns its nodes, so only its control plane may
    caf::replies_to<alloc_atom, std::string, buffer_call>::with<buffer_handle>,
    caf::replies_to<store_atom, std::string, buffer_call>::with<op_notice>,
    caf::replies_to<fetch_atom, std::string, buffer_call>::with<std::vector<std::uint8_t>>,
    caf::replies_to<release_atom, std::string, buffer_call>::with<op_notice>,
    // the steps of the node of this name (node_actor's record, replay and release)
    caf::replies_to<record_atom, std::string, step_spec>::with<step_handle>,
    caf::replies_to<replay_atom, std::string, replay_request>::with<step_outcome>,
    caf::replies_to<release_atom, std::string, step_handle>::with<bool>,
    caf::replies_to<status_atom>::with<cluster_status>,
    // a communicator of the nodes that are up, one rank each in the cluster's order, under
    // this name: its next generation (a rebuild is the same call); answered once every rank
    // is connected (messaging/communicator_types.hpp)
    caf::replies_to<communicator_atom, std::string>::with<communicator_info>,
    // from a node: an entry of its rank's rendezvous, passed on to the communicator's others
    caf::reacts_to<rendezvous_atom, rendezvous_entry>,
    // its own timer: a generation's limit ran out
    caf::reacts_to<expire_atom, std::uint64_t>>;

}  // namespace cudactor
