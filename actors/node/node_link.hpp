// actors/node/node_link.hpp
//
// The local stand-in for a node in another process: what connect_node() hands out as
// remote_node::actor. CAF 0.17 drops a message sent to the proxy of a peer whose connection
// has closed, so a request to a node that has gone would wait out its whole timeout. The
// link relays every request to the node and monitors it: when the node goes, every request
// it has not answered fails at once with node_lost naming the node, and the link ends with
// that reason, so later requests on the handle are refused at once (CAF bounces requests to
// an actor that has ended) and whoever monitors the handle (a cluster) learns why. Work past
// the node's limits is refused before it leaves the process. The node is a peer: an answer
// that cannot be the answer to its request (ends other than one per operation, other bytes
// than were fetched, a communicator nobody asked for, an end's error past 4 KiB) is refused as
// node_mismatch naming the node, and the node's errors come back cut to 4 KiB.
//
// A local actor that has sent to another process stays in CAF's registry until it ends,
// so the link cannot end by being unreferenced: remote_node holds a guard that stops it
// when the last copy of the remote_node goes.
#pragma once

#include <caf/actor_system.hpp>

#include <memory>
#include <string>

#include "cudactor/messaging/node_protocol.hpp"

namespace cudactor::detail {

struct node_link {
  node_actor actor;             // the stand-in, typed as the node
  std::shared_ptr<void> guard;  // stops the stand-in when the last copy goes
};

// `who` names the node in errors ("node 'n1' (127.0.0.1:7000)"); `limits` are what it said
// it takes (node_info): work past them is refused here, before it is sent.
[[nodiscard]] node_link spawn_node_link(caf::actor_system& system, node_actor remote,
                                        std::string who, input_limits limits);

}  // namespace cudactor::detail
