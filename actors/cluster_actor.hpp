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
//
// It is also the rendezvous of the communicators it makes of its nodes (docs/collectives.md):
// each node makes its rank on the engine its backend uses, the ranks exchange their addresses
// through this actor's messages (no port or file of their own), and the answer comes once
// every rank is connected. A node lost later breaks the communicators it had a rank in on
// every other node, naming it; asking for the same name again rebuilds it, over the nodes
// that are up, as the next generation.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/actors/node_client.hpp"
#include "cudactor/messaging/cluster_protocol.hpp"

namespace cudactor {

struct cluster_options {
  std::string name = "cluster";  // in every error, and the barrier's name on the nodes
  // A plain synchronize's limit; 0: none (a lost node still ends it).
  caf::timespan barrier_timeout{std::chrono::seconds{30}};
  // How long a node that arrived holds new work back without a release; at most what the
  // nodes accept (cudactor.node.max-hold, 30 s by default).
  caf::timespan max_hold{std::chrono::seconds{30}};
  // The nodes' cudactor.node.owner-token where they are configured with one: sent with every
  // barrier and communicator call, proving this cluster is their owner. Empty: the first
  // caller owns a node.
  std::string owner_token;
  // Each collective on the cluster's communicators, end to end: a rank that does not take
  // part within it fails the call on the others. Below barrier_timeout (when that is set), so
  // that a collective fails before a barrier waiting behind it gives up.
  caf::timespan collective_timeout{std::chrono::seconds{10}};
  // How long the ranks of a new communicator have to find each other.
  caf::timespan rendezvous_timeout{std::chrono::seconds{30}};
};

// The owner of a cluster actor: it stops the actor when it goes. An actor that has talked to
// another process stays in CAF's registry until it ends, so a cluster whose handles were all
// dropped would never end, and the actor system's destructor would wait for it forever.
// Move-only; the handle it gives out is a non-owning view.
class cluster {
 public:
  explicit cluster(cluster_actor actor) noexcept : actor_(std::move(actor)) {}
  cluster(cluster&& other) noexcept : actor_(std::exchange(other.actor_, cluster_actor{})) {}
  cluster& operator=(cluster&& other) noexcept;
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;
  ~cluster() { stop(); }

  [[nodiscard]] const cluster_actor& actor() const noexcept { return actor_; }
  // Ends the actor now: what it had open is answered (node requests and generations fail
  // with shutting_down). Idempotent.
  void stop() noexcept;

 private:
  cluster_actor actor_;
};

// At least one node, names unique (work is addressed by name): invalid_argument otherwise.
[[nodiscard]] caf::expected<cluster> spawn_cluster(caf::actor_system& system,
                                                   std::vector<remote_node> nodes,
                                                   cluster_options options = {});

}  // namespace cudactor
