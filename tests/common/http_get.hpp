// tests/common/http_get.hpp
//
// A plain HTTP/1.0 GET on loopback, for scraping an exposer or asking Prometheus' HTTP API:
// the server closes the connection after the body. Answers the whole response, headers and
// all, or "" when nothing listens.
#pragma once

#include <boost/asio.hpp>

#include <cstdint>
#include <string>

namespace cudactor::test {

inline std::string http_get(std::uint16_t port, const std::string& path) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket socket{io};
  boost::system::error_code ec;
  socket.connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return {};
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  asio::write(socket, asio::buffer(request), ec);
  if (ec) return {};
  std::string response;
  asio::read(socket, asio::dynamic_buffer(response), ec);
  return response;
}

// A port nothing listens on right now (bound, then released): for servers that cannot be told
// to pick one themselves.
inline std::uint16_t free_loopback_port() {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
  return acceptor.local_endpoint().port();
}

}  // namespace cudactor::test
