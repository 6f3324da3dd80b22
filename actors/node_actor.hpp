// actors/node_actor.hpp
//
// A node: the face a runtime shows to control planes in other processes (messaging/
// node_protocol.hpp). It takes graphs and operations of named work, checks everything that
// arrived as it would check local input (counts, sizes, names, argument types), hands them
// to its runtime's coordinator with itself as the listener, and answers each request once
// all of it has ended. Errors name the node, so that a control plane driving many can tell
// which one said what.
//
// A barrier across nodes (actors/cluster_actor.hpp) asks each node to arrive: the node
// answers once every request it took before the call has ended, then holds back new work
// until the caller releases it, the call's hold runs out, or the caller is gone. So nothing
// given to any node after a barrier runs before every node has arrived.
//
// The runtime spawns one (runtime::node()) and publishes it on request
// (runtime::publish_node); cudactor-node is a program that does both.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cudactor/actors/operation_registry.hpp"
#include "cudactor/messaging/coordinator_protocol.hpp"
#include "cudactor/messaging/node_protocol.hpp"

namespace cudactor {

struct node_options {
  std::string name = "node";
  std::size_t max_graph = 65536;      // operations in one graph
  std::size_t max_description = 256;  // characters of an operation's description
  std::size_t max_pending = 4096;     // requests not yet answered; more: resource_exhausted
  // The longest a barrier call may hold the node's work back after it arrived.
  caf::timespan max_hold{std::chrono::minutes{10}};
};

struct node_context {
  coordinator_actor coordinator;
  std::shared_ptr<const operation_registry> operations;
  std::string backend;
  std::uint32_t coordinator_streams = 0;
};

[[nodiscard]] node_actor spawn_node(caf::actor_system& system, node_context context,
                                    node_options options);

}  // namespace cudactor
