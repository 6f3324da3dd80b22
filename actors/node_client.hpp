// actors/node_client.hpp
//
// A control plane's side of a node: connect_node() reaches a node another process published
// (runtime::publish_node, cudactor-node), checks that it is one, and asks what it runs. The
// actor system needs CAF's network layer (runtime_config::enable_network()); it does not
// need a runtime of its own.
//
// Errors are clear about which of the usual failures it was: nothing listens or nothing
// answered in time (node_unreachable, with the address), or something else listens there
// (node_mismatch: another program, or a cudactor of another protocol).
#pragma once

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "cudactor/messaging/node_protocol.hpp"

namespace cudactor {

struct remote_node {
  // A local stand-in that relays to the node (actors/node/node_link.hpp): once the node
  // has gone, what it had not answered fails with node_lost naming it, and later requests
  // are refused at once instead of waiting out their timeout. It ends when the node is lost
  // (a monitor says why) or when the last copy of this remote_node goes.
  node_actor actor;
  node_info info;
  std::string address;         // host:port, for messages
  std::shared_ptr<void> link;  // keeps the stand-in; copies share it
};

// Blocking: for a control plane's start-up, not for an actor's handler. `timeout` bounds the
// TCP connection and the node's first answer; a handshake CAF closed because the node stayed
// silent for middleman.connection-timeout is tried again until `timeout` has passed since
// the call began (each try can take the connection timeout). The remote_node must go before its actor
// system does (the stand-in is an actor of it).
[[nodiscard]] caf::expected<remote_node> connect_node(
    caf::actor_system& system, const std::string& host, std::uint16_t port,
    std::chrono::milliseconds timeout = std::chrono::seconds{5});

}  // namespace cudactor
