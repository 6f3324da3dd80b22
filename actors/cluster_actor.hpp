// actors/cluster_actor.hpp
//
// A control plane's handle on a set of nodes in other processes (messaging/
// cluster_protocol.hpp): a barrier across all of them, and work for any one of them by name.
// It monitors every node. A node that dies (its connection drops) or hangs (CAF's heartbeat
// stops: runtime_config::enable_network() turns it on) is lost: the barrier generations that
// wait for it and the requests it has not answered fail at once with errc::node_lost naming
// it, and later generations go on with the nodes that are left.
//
// A generation asks every node that is up to arrive (node_actor: every request it took
// before has ended), and once all have, releases them all and answers with the crossing. A
// node holds back the work it is given between its arrival and the release, so nothing given
// to any node after the barrier runs before every node has arrived. A generation's limit
// (the cluster's, or per request) ends it with errc::timeout naming the nodes that did not
// arrive; the nodes that did are released.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "cudactor/actors/node_client.hpp"
#include "cudactor/messaging/cluster_protocol.hpp"
#include "cudactor/messaging/input_limits.hpp"

namespace cudactor {

struct cluster_options {
  std::string name = "cluster";  // in every error, and the barrier's name on the nodes
  // A plain synchronize's limit; 0: none (a lost node still ends it).
  caf::timespan barrier_timeout{std::chrono::seconds{30}};
  // How long a node that arrived holds new work back without a release; at most what the
  // nodes accept (cudactor.node.max-hold, 30 s by default).
  caf::timespan max_hold{std::chrono::seconds{30}};
  // What the nodes take in one message (cudactor.node.max-*): work past it is refused before
  // it is sent, rather than moved across the network to be refused there.
  input_limits limits;
};

// At least one node, names unique (work is addressed by name): invalid_argument otherwise.
[[nodiscard]] caf::expected<cluster_actor> spawn_cluster(caf::actor_system& system,
                                                         std::vector<remote_node> nodes,
                                                         cluster_options options = {});

}  // namespace cudactor
