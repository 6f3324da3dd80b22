// messaging/cluster_types.hpp
//
// What a cluster actor (actors/cluster_actor.hpp) answers: the crossing of one generation of
// its barrier across nodes, and its status (which nodes it drives, which of them were lost and
// why). Plain data with inspect(), registered by add_message_types().
#pragma once

#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cudactor/messaging/node_types.hpp"

namespace cudactor {

// One generation of the barrier, crossed: every node that was up when it began arrived.
struct cluster_crossing {
  std::string barrier;
  std::uint64_t generation = 0;  // 1, 2, ...: one per synchronize, in the order they came
  caf::timespan duration{0};     // from the request to the last node's arrival
  std::vector<node_arrival> nodes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_crossing& x) {
  return f(caf::meta::type_name("cudactor::cluster_crossing"), x.barrier, x.generation, x.duration,
           x.nodes);
}

struct cluster_member {
  std::string name;
  std::string address;  // host:port
  bool up = true;
  std::string lost;  // why it was lost (empty while up)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_member& x) {
  return f(caf::meta::type_name("cudactor::cluster_member"), x.name, x.address, x.up, x.lost);
}

struct cluster_status {
  std::string name;
  std::vector<cluster_member> nodes;
  std::uint64_t generations = 0;  // barrier generations begun
  std::uint64_t crossed = 0;
  std::uint64_t timed_out = 0;
  std::uint64_t failed = 0;     // any other error (a node lost, a node's refusal)
  std::uint64_t pending = 0;    // generations begun, not answered
  std::uint64_t forwarded = 0;  // requests passed on to nodes
  std::uint64_t open = 0;       // of those, not answered yet
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_status& x) {
  return f(caf::meta::type_name("cudactor::cluster_status"), x.name, x.nodes, x.generations,
           x.crossed, x.timed_out, x.failed, x.pending, x.forwarded, x.open);
}

}  // namespace cudactor
