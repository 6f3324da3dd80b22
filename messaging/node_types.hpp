// messaging/node_types.hpp
//
// What a node says about itself when asked (info_atom): the values a control plane checks
// after connecting, before it hands the node any work. And a node's part in a barrier across
// nodes (actors/cluster_actor.hpp): what it is asked (barrier_call) and what it answers once
// it has reached the barrier (node_arrival).
#pragma once

#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/input_limits.hpp"

namespace cudactor {

struct node_info {
  std::string name;     // as configured (cudactor.node.name), unique per job
  std::string backend;  // the runtime's backend, and why it was chosen
  std::uint32_t coordinator_streams = 0;
  std::vector<std::string> operations;  // the named operations it runs, sorted
  input_limits limits;  // what it takes in one message: a control plane checks before sending
  // The longest rendezvous it takes for a communicator (cudactor.node.max-rendezvous): a
  // cluster asking for longer is refused where it is made, not by every node at each making.
  caf::timespan max_rendezvous{std::chrono::minutes{10}};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_info& x) {
  return f(caf::meta::type_name("cudactor::node_info"), x.name, x.backend, x.coordinator_streams,
           x.operations, x.limits, x.max_rendezvous);
}

// One generation of a barrier across nodes, as the node is asked to reach it. The node
// arrives once every request it took before this one has ended; from then until it is
// released (release_atom with the barrier's name and generation) it holds back the work it
// is given, for at most `hold`: a control plane that vanished cannot stop a node for good.
// A node's owner token (cudactor.node.owner-token, barrier_call::owner_token): long enough
// not to be guessed, short enough to bound what a peer sends.
inline constexpr std::size_t min_owner_token = 16;
inline constexpr std::size_t max_owner_token = 256;

struct barrier_call {
  std::string barrier;  // the barrier's name: a node may take part in several
  std::uint64_t generation = 0;
  caf::timespan hold{0};  // the longest the node holds work back after arriving
  // Proves the caller is the control plane configured for the node (its
  // cudactor.node.owner-token); empty where the node takes its first caller as owner.
  std::string owner_token;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, barrier_call& x) {
  return f(caf::meta::type_name("cudactor::barrier_call"), x.barrier, x.generation, x.hold,
           x.owner_token);
}

// The node's owner admitting other control planes as guests (node_actor's admit): a peer
// that claims the node with `guest_token` may hand it work (never barriers, communicators or
// buffers, which stay the owner's), within two quotas: `max_open_ops` operations of its open
// requests at once, and `stream_time` in all, charged per operation from its dispatch to its
// end. Admitting a token again sets both anew (the time from 0); `max_open_ops` 0 revokes it:
// its guests' queued work is cancelled and their later work refused.
struct guest_call {
  std::string owner_token;  // the owner's, where the node is configured with one
  std::string guest_token;  // min_owner_token to max_owner_token bytes
  std::uint64_t max_open_ops = 0;
  caf::timespan stream_time{0};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, guest_call& x) {
  return f(caf::meta::type_name("cudactor::guest_call"), x.owner_token, x.guest_token,
           x.max_open_ops, x.stream_time);
}

// A call on the node's buffers (node_actor's alloc, store, fetch and release): memory of the
// node's coordinator that the control plane owning the node names in its operations' uses
// and collectives. Only that control plane may make one, and every call carries its token
// where the node is configured with one.
struct buffer_call {
  std::string owner_token;
  buffer_id buffer;                // store, fetch, release
  std::uint64_t offset = 0;        // store, fetch: from this byte of the buffer
  std::uint64_t bytes = 0;         // alloc: the buffer's size; fetch: how many to read
  std::vector<std::uint8_t> data;  // store: what to write

  [[nodiscard]] static buffer_call alloc(std::uint64_t bytes, std::string token = {}) {
    buffer_call c;
    c.bytes = bytes;
    c.owner_token = std::move(token);
    return c;
  }
  [[nodiscard]] static buffer_call store(buffer_id b, std::uint64_t offset,
                                         std::vector<std::uint8_t> data, std::string token = {}) {
    buffer_call c;
    c.buffer = b;
    c.offset = offset;
    c.data = std::move(data);
    c.owner_token = std::move(token);
    return c;
  }
  [[nodiscard]] static buffer_call fetch(buffer_id b, std::uint64_t offset, std::uint64_t bytes,
                                         std::string token = {}) {
    buffer_call c;
    c.buffer = b;
    c.offset = offset;
    c.bytes = bytes;
    c.owner_token = std::move(token);
    return c;
  }
  [[nodiscard]] static buffer_call release(buffer_id b, std::string token = {}) {
    buffer_call c;
    c.buffer = b;
    c.owner_token = std::move(token);
    return c;
  }
};

// What a buffer call asks for: which of node_actor's buffer messages it came with.
enum class buffer_verb : std::uint8_t { alloc, store, fetch, release };

// The most bytes one store or fetch moves: larger transfers are several calls.
inline constexpr std::uint64_t max_buffer_transfer = std::uint64_t{4} << 20;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, buffer_call& x) {
  return f(caf::meta::type_name("cudactor::buffer_call"), x.owner_token, x.buffer, x.offset,
           x.bytes, x.data);
}

struct node_arrival {
  std::string node;  // the node's name
  std::uint64_t generation = 0;
  std::uint64_t waited = 0;   // requests still open when the call came: the node waited for them
  caf::timespan duration{0};  // from the call to the arrival, on the node's clock
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_arrival& x) {
  return f(caf::meta::type_name("cudactor::node_arrival"), x.node, x.generation, x.waited,
           x.duration);
}

}  // namespace cudactor
