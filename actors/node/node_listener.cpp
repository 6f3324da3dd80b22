// actors/node/node_listener.cpp
#include "cudactor/actors/node/node_listener.hpp"

#include <caf/all.hpp>
#include <caf/detail/socket_guard.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <caf/io/network/native_socket.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/io/scribe.hpp>
#include <caf/openssl/session.hpp>
#include <caf/policy/tcp.hpp>

#include <memory>
#include <utility>

namespace cudactor::detail {
namespace {

namespace net = caf::io::network;
using net::native_socket;
using net::rw_state;

// A connection's bytes as plain TCP.
struct tcp_bytes {
  rw_state read_some(std::size_t& n, native_socket fd, void* buf, std::size_t len) {
    return caf::policy::tcp::read_some(n, fd, buf, len);
  }
  rw_state write_some(std::size_t& n, native_socket fd, const void* buf, std::size_t len) {
    return caf::policy::tcp::write_some(n, fd, buf, len);
  }
  bool must_read_more(native_socket, std::size_t) { return false; }
};

// A connection's bytes through a TLS session: what basp_framing sees is the plaintext.
struct tls_bytes {
  caf::openssl::session_ptr session;
  rw_state read_some(std::size_t& n, native_socket fd, void* buf, std::size_t len) {
    return session->read_some(n, fd, buf, len);
  }
  rw_state write_some(std::size_t& n, native_socket fd, const void* buf, std::size_t len) {
    return session->write_some(n, fd, buf, len);
  }
  bool must_read_more(native_socket fd, std::size_t threshold) {
    return session->must_read_more(fd, threshold);
  }
};

// Shared by a listener's connections: its bounds and whom to tell.
struct listener_shared {
  framing_bounds bounds;
  std::function<void(const std::string&)> on_refused;
};

// CAF's stream reads and writes through this (a stream needs no accept: the doorman accepted,
// and a TLS session made by make_session has done its accepting part): each read's bytes go through
// the framing check before CAF's stream has them; a read that breaks it fails, which closes the
// connection.
template <class Bytes>
class checked_policy {
 public:
  checked_policy(Bytes bytes, std::shared_ptr<const listener_shared> shared, std::string peer)
      : bytes_(std::move(bytes)),
        shared_(std::move(shared)),
        framing_(shared_->bounds),
        peer_(std::move(peer)) {}

  rw_state read_some(std::size_t& n, native_socket fd, void* buf, std::size_t len) {
    if (!framing_.why().empty()) return rw_state::failure;
    const rw_state state = bytes_.read_some(n, fd, buf, len);
    if (state == rw_state::failure || n == 0) return state;
    if (framing_.take(buf, n)) return state;
    if (shared_->on_refused) shared_->on_refused(peer_ + " sent " + framing_.why());
    n = 0;
    return rw_state::failure;
  }
  rw_state write_some(std::size_t& n, native_socket fd, const void* buf, std::size_t len) {
    return bytes_.write_some(n, fd, buf, len);
  }
  bool must_read_more(native_socket fd, std::size_t threshold) {
    return bytes_.must_read_more(fd, threshold);
  }

 private:
  Bytes bytes_;
  std::shared_ptr<const listener_shared> shared_;
  basp_framing framing_;
  std::string peer_;
};

// One accepted connection, as BASP's broker holds it (caf::io::network::scribe_impl, with
// the checked policy in place of plain TCP).
template <class Bytes>
class checked_scribe final : public caf::io::scribe {
 public:
  checked_scribe(net::default_multiplexer& mpx, native_socket fd, Bytes bytes,
                 std::shared_ptr<const listener_shared> shared, std::string peer, bool tls)
      : caf::io::scribe(net::conn_hdl_from_socket(fd)),
        tls_(tls),
        stream_(mpx, fd, std::move(bytes), std::move(shared), std::move(peer)) {}

  void configure_read(caf::io::receive_policy::config config) override {
    stream_.configure_read(config);
    if (!launched_) launch();
  }
  void ack_writes(bool enable) override { stream_.ack_writes(enable); }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }
  void flush() override { stream_.flush(this); }
  std::string addr() const override {
    auto x = net::remote_addr_of_fd(stream_.fd());
    return x ? *x : std::string{};
  }
  std::uint16_t port() const override {
    auto x = net::remote_port_of_fd(stream_.fd());
    return x ? *x : 0;
  }
  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override { stream_.passivate(); }

 private:
  void launch() {
    launched_ = true;
    stream_.start(this);
    // A TLS session writes its part of the handshake before anything else is written.
    if (tls_) stream_.force_empty_write(this);
  }

  bool launched_ = false;
  const bool tls_;
  net::stream_impl<checked_policy<Bytes>> stream_;
};

// The listening socket, as BASP's broker holds it: each connection it accepts gets a
// checked scribe (a TLS session first where the listener is TLS).
class checked_doorman final : public net::doorman_impl {
 public:
  checked_doorman(net::default_multiplexer& mpx, native_socket fd, caf::actor_system& system,
                  bool tls, std::shared_ptr<const listener_shared> shared)
      : net::doorman_impl(mpx, fd), system_(system), tls_(tls), shared_(std::move(shared)) {}

  bool new_connection() override {
    if (detached()) return false;  // closed by the broker while an accept was pending
    auto& mpx = acceptor_.backend();
    const native_socket fd = acceptor_.accepted_socket();
    caf::detail::socket_guard guard{fd};
    (void)net::nonblocking(fd, true);
    (void)net::keepalive(fd, true);
    const auto host = net::remote_addr_of_fd(fd);
    const auto port = net::remote_port_of_fd(fd);
    std::string peer =
        (host ? *host : std::string{"?"}) + ":" + (port ? std::to_string(*port) : std::string{"?"});
    caf::io::scribe_ptr scribe;
    if (tls_) {
      auto session = caf::openssl::make_session(system_, fd, true);
      if (session == nullptr) return false;  // the guard closes the socket
      scribe = caf::make_counted<checked_scribe<tls_bytes>>(mpx, fd, tls_bytes{std::move(session)},
                                                            shared_, std::move(peer), true);
    } else {
      scribe = caf::make_counted<checked_scribe<tcp_bytes>>(mpx, fd, tcp_bytes{}, shared_,
                                                            std::move(peer), false);
    }
    guard.release();  // the scribe owns the socket now
    const auto hdl = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mpx, hdl);
  }

 private:
  caf::actor_system& system_;
  const bool tls_;
  std::shared_ptr<const listener_shared> shared_;
};

}  // namespace

caf::expected<std::uint16_t> publish_checked(caf::actor_system& system,
                                             const caf::strong_actor_ptr& whom,
                                             std::set<std::string> signatures,
                                             const listener_options& options) {
  if (whom == nullptr) return caf::make_error(caf::sec::cannot_publish_invalid_actor);
  auto& mpx = static_cast<net::default_multiplexer&>(system.middleman().backend());
  auto fd = net::new_tcp_acceptor_impl(
      options.port, options.address.empty() ? nullptr : options.address.c_str(), true);
  if (!fd) return std::move(fd.error());
  auto shared = std::make_shared<listener_shared>();
  shared->bounds = options.bounds;
  shared->on_refused = options.on_refused;
  caf::io::doorman_ptr doorman =
      caf::make_counted<checked_doorman>(mpx, *fd, system, options.tls, std::move(shared));
  const std::uint16_t port = doorman->port();
  // As CAF's middleman actor publishes: the broker adds the doorman and the published actor.
  auto broker = system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::anon_send(broker, caf::publish_atom::value, std::move(doorman), port, whom,
                 std::move(signatures));
  return port;
}

}  // namespace cudactor::detail
