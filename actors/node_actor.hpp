// actors/node_actor.hpp
//
// A node: the face a runtime shows to control planes in other processes (messaging/
// node_protocol.hpp), and the one actor it publishes. Everything a peer sends is hostile
// until checked: the face checks every field of every request in one place
// (messaging/input_check.hpp) under the limits below, and only then asks the node's core
// (actors/node/node_core.hpp), which hands graphs of named work to the coordinator and
// answers each request once all of it has ended. The face's interface holds only what a
// control plane may say; lifecycle, the coordinator's notices and timers reach the core,
// whose handle never leaves the process. A message outside the interface, or an exit or
// down message from a peer, is refused, counted (cudactor_node_refused_messages_total) and
// logged as one bounded line. Errors name the node, so that a control plane driving many can
// tell which one said what, and quote at most a short prefix of what a peer sent.
//
// A barrier across nodes (actors/cluster_actor.hpp) asks each node to arrive: the node
// answers once every request it took before the call has ended, then holds back new work
// until the caller releases it, the call's hold runs out, or the caller is gone. Only one
// control plane (process) holds a node: the first to call a barrier, until none of its
// callers is left.
//
// The runtime spawns one (runtime::node()) and publishes it on request
// (runtime::publish_node); cudactor-node is a program that does both.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cudactor/actors/communicator_table.hpp"
#include "cudactor/actors/operation_registry.hpp"
#include "cudactor/gpu/types.hpp"
#include "cudactor/messaging/coordinator_protocol.hpp"
#include "cudactor/messaging/input_limits.hpp"
#include "cudactor/messaging/node_protocol.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor {

struct node_options {
  std::string name = "node";
  input_limits limits;             // per message (graph size, edges, bytes, ...)
  std::size_t max_pending = 4096;  // requests not yet answered
  std::size_t max_pending_ops = std::size_t{1} << 20;  // operations of those requests
  // Bytes of the open stores and fetches together (a store's data, a fetch's reply): a
  // request of 100 bytes asks for a 4 MiB reply, held from the request until it is answered,
  // so the count of requests alone let a peer hold far more host memory than its buffers.
  std::uint64_t max_transfer_bytes = std::uint64_t{256} << 20;
  // The longest a barrier call may hold the node's work back after it arrived.
  caf::timespan max_hold{std::chrono::seconds{30}};
  // Longest a communicator's rendezvous may wait for its ranks (a longer one is refused):
  // what one making can hold (a thread, sockets, the name) if its ranks never come.
  caf::timespan max_rendezvous{std::chrono::minutes{10}};
  // The configured owner: only barrier calls carrying this token are taken (16 to 256 bytes).
  // Empty: the first control plane to call a barrier owns the node until it is gone.
  std::string owner_token;
  // The buffers the owner may hold on the node at once, and their bytes in all: what a
  // control plane can take of the node's memory (its buffers are released when it is gone).
  std::size_t max_buffers = 1024;
  std::uint64_t max_buffer_bytes = std::uint64_t{1} << 32;
  // The steps the owner may have recorded on the node at once (docs/replay.md): each holds its
  // operations' work and plan (on CUDA a CUDA graph) until released, or until the owner goes.
  std::size_t max_steps = 64;
};

struct node_context {
  coordinator_actor coordinator;
  std::shared_ptr<const operation_registry> operations;
  // The node's communicators: the cluster's rendezvous installs its ranks here.
  std::shared_ptr<communicator_table> communicators;
  gpu::backend_kind device_kind = gpu::backend_kind::host;  // which engine its collectives use
  int device_ordinal = 0;                                   // the CUDA device, for NCCL
  std::string backend;
  std::uint32_t coordinator_streams = 0;
  std::shared_ptr<metrics::registry> metrics;  // empty: the node's counters go nowhere
};

// The node's two actors: what peers talk to, and the core the runtime stops (shutdown_atom
// answers every open request with shutting_down; the face goes with the core).
struct node_actors {
  node_actor face;
  caf::actor core;
};

[[nodiscard]] node_actors spawn_node(caf::actor_system& system, node_context context,
                                     node_options options);

}  // namespace cudactor
