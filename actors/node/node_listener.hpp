// actors/node/node_listener.hpp
//
// Where a node listens for control planes: CAF's network layer (BASP over TCP, or over TLS
// with CAF's OpenSSL module), published as caf::io::middleman::publish (caf::openssl::publish)
// would, but with every accepted connection's bytes checked by basp_framing before CAF reads
// them. A connection that breaks the framing is closed, and on_refused told why, before CAF
// allocates what its header announced. (CAF's own publish has no such hook: its doorman
// hands a connection to a scribe that reads for BASP directly. This builds the doorman and
// scribes the same way, with a transport policy that checks, as CAF's OpenSSL module builds
// its own to encrypt.)
#pragma once

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "cudactor/actors/node/basp_framing.hpp"

namespace cudactor::detail {

struct listener_options {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;  // 0: any free port
  bool tls = false;        // CAF's OpenSSL module must be loaded
  framing_bounds bounds;
  // Told why a connection was closed, with its peer's address, on the network layer's
  // thread; may be empty.
  std::function<void(const std::string&)> on_refused;
};

// Listens on options.address:options.port for `whom` (whose interface is `signatures`), until
// the actor system's network layer stops. The port listened on, or why not.
[[nodiscard]] caf::expected<std::uint16_t> publish_checked(caf::actor_system& system,
                                                           const caf::strong_actor_ptr& whom,
                                                           std::set<std::string> signatures,
                                                           const listener_options& options);

}  // namespace cudactor::detail
