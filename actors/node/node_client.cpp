#include "cudactor/actors/node_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/remote_actor.hpp>

#include "cudactor/actors/node/node_link.hpp"
#include "cudactor/actors/runtime.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

namespace cudactor {

namespace {

// Whether something accepts TCP connections at host:port within `timeout`: CAF's own
// connect has no time limit, so an address that drops packets would hold the caller for
// the kernel's connect timeout (minutes).
caf::error probe(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::resolver resolver{io};
  boost::system::error_code ec;
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  const std::string where = host + ":" + std::to_string(port);
  if (ec) {
    return make_error(errc::node_unreachable, "cannot resolve " + where + ": " + ec.message());
  }
  asio::ip::tcp::socket socket{io};
  bool done = false;
  asio::async_connect(socket, endpoints, [&](const boost::system::error_code& e, const auto&) {
    ec = e;
    done = true;
  });
  io.run_for(timeout);
  if (!done) {
    return make_error(errc::node_unreachable, "no answer from " + where + " within " +
                                                  std::to_string(timeout.count()) + " ms");
  }
  if (ec)
    return make_error(errc::node_unreachable, "cannot connect to " + where + ": " + ec.message());
  return {};
}

// CAF's handshake with the node (TLS when the configuration turned it on:
// cudactor.tls.enabled loads CAF's OpenSSL module).
caf::expected<node_actor> handshake(caf::actor_system& system, const std::string& host,
                                    std::uint16_t port) {
  auto actor = system.has_openssl_manager()
                   ? caf::openssl::remote_actor<node_actor>(system, host, port)
                   : system.middleman().remote_actor<node_actor>(host, port);
  runtime::release_calling_thread();
  return actor;
}

}  // namespace

caf::expected<remote_node> connect_node(caf::actor_system& system, const std::string& host,
                                        std::uint16_t port, std::chrono::milliseconds timeout) {
  const std::string where = host + ":" + std::to_string(port);
  if (!system.has_middleman()) {
    return make_error(errc::invalid_argument,
                      "connecting to a node needs CAF's network layer: call "
                      "runtime_config::enable_network() before parse()");
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (auto err = probe(host, port, timeout)) return err;
  auto actor = handshake(system, host, port);
  // CAF closes a connection that stayed silent for middleman.connection-timeout, the
  // handshake's included: a node that is alive but starved of CPU for that long (a loaded
  // machine, a sanitized build) is tried again while the caller's time lasts. Any other
  // failure (refused, TLS rejected, wrong protocol) is final.
  while (!actor && actor.error() == caf::sec::connection_timeout &&
         std::chrono::steady_clock::now() < deadline) {
    actor = handshake(system, host, port);
  }
  if (!actor) {
    if (actor.error() == caf::sec::unexpected_actor_messaging_interface) {
      return make_error(errc::node_mismatch, "the peer at " + where +
                                                 " is not a cudactor node that speaks this "
                                                 "protocol: " +
                                                 system.render(actor.error()));
    }
    return make_error(errc::node_unreachable,
                      "cannot reach the node at " + where + ": " + system.render(actor.error()));
  }
  remote_node out;
  out.address = where;
  caf::error failed;
  {
    caf::scoped_actor self{system};
    self->request(*actor, timeout, info_atom::value)
        .receive([&](node_info& info) { out.info = std::move(info); },
                 [&](caf::error& err) { failed = std::move(err); });
  }
  runtime::release_calling_thread();
  if (failed) {
    return make_error(errc::node_unreachable,
                      "the node at " + where + " did not say what it is: " + system.render(failed));
  }
  if (auto bad = check_input(out.info, input_limits{})) {
    return make_error(
        errc::node_mismatch,
        "the peer at " + where + " is not a node that can be trusted: " + error_context(bad));
  }
  auto link = detail::spawn_node_link(
      system, std::move(*actor), "node '" + out.info.name + "' (" + where + ")", out.info.limits);
  out.actor = std::move(link.actor);
  out.link = std::move(link.guard);
  return out;
}

}  // namespace cudactor
