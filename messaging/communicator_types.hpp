// messaging/communicator_types.hpp
//
// How a cluster (actors/cluster_actor.hpp) makes a communicator of its nodes, one rank per
// node, with its control plane as the rendezvous: the call that asks a node to make its rank,
// the entries of the rendezvous store the ranks exchange through the cluster (so that no
// port or file of their own is needed), the node's answer once its rank is connected, and
// what the cluster answers its caller. Plain data with inspect(), registered by
// add_message_types(); everything a node takes is checked where it enters
// (messaging/input_check.hpp).
#pragma once

#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cudactor {

// The most ranks one communicator has, and the bytes of one rendezvous value (a rank's
// addresses: Gloo's take some 100 bytes per peer).
inline constexpr std::size_t max_communicator_ranks = 1024;
inline constexpr std::size_t max_rendezvous_value = std::size_t{256} << 10;

// Cluster to node: make rank `rank` of communicator `name`, generation `generation`, whose
// ranks are the nodes `members` (by name, in rank order).
struct communicator_call {
  std::string name;
  std::uint64_t generation = 0;
  std::uint32_t rank = 0;
  std::vector<std::string> members;
  caf::timespan timeout{std::chrono::seconds{30}};             // each collective, end to end
  caf::timespan rendezvous_timeout{std::chrono::seconds{30}};  // finding the other ranks
  std::string owner_token;  // as a barrier call's (node_options::owner_token)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, communicator_call& x) {
  return f(caf::meta::type_name("cudactor::communicator_call"), x.name, x.generation, x.rank,
           x.members, x.timeout, x.rendezvous_timeout, x.owner_token);
}

// One key of a rendezvous: a rank sends it to the cluster, which passes it to the others.
struct rendezvous_entry {
  std::string name;
  std::uint64_t generation = 0;
  std::string key;
  std::string value;  // bytes
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rendezvous_entry& x) {
  return f(caf::meta::type_name("cudactor::rendezvous_entry"), x.name, x.generation, x.key,
           x.value);
}

// Node to cluster: its rank is connected and installed.
struct communicator_ready {
  std::string name;
  std::uint64_t generation = 0;
  std::uint32_t rank = 0;
  std::string node;
  std::string engine;  // "gloo" or "nccl"
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, communicator_ready& x) {
  return f(caf::meta::type_name("cudactor::communicator_ready"), x.name, x.generation, x.rank,
           x.node, x.engine);
}

// Cluster to its caller: every rank is connected.
struct communicator_info {
  std::string name;
  std::uint64_t generation = 0;
  std::vector<std::string> members;  // node names, in rank order
  std::string engine;
  caf::timespan duration{0};  // from the request to the last rank's answer
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, communicator_info& x) {
  return f(caf::meta::type_name("cudactor::communicator_info"), x.name, x.generation, x.members,
           x.engine, x.duration);
}

}  // namespace cudactor
