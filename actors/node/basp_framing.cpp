// actors/node/basp_framing.cpp
#include "cudactor/actors/node/basp_framing.hpp"

#include <algorithm>

namespace cudactor::detail {
namespace {

// BASP's message types (caf/io/basp/message_type.hpp). A peer that connected to the node
// sends a client handshake first (and again to select this connection for its route), then
// anything from a client handshake to a heartbeat; never a server handshake.
constexpr unsigned char client_handshake = 0x01;
constexpr unsigned char heartbeat = 0x06;

}  // namespace

bool basp_framing::take(const void* data, std::size_t n) {
  if (!why_.empty()) return false;
  const auto* at = static_cast<const unsigned char*>(data);
  while (n > 0) {
    if (payload_left_ > 0) {
      const auto skip = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, n));
      payload_left_ -= skip;
      at += skip;
      n -= skip;
      if (payload_left_ == 0) ++messages_;
      continue;
    }
    const std::size_t part = std::min(header_size - have_, n);
    std::copy_n(at, part, header_.begin() + static_cast<std::ptrdiff_t>(have_));
    have_ += part;
    at += part;
    n -= part;
    if (have_ < header_size) break;
    have_ = 0;
    if (!check_header()) return false;
  }
  return true;
}

bool basp_framing::check_header() {
  const unsigned char type = header_[0];
  // The payload's length, bytes 4 to 7 in network order, as CAF's binary serializer writes it.
  const std::uint32_t length = (std::uint32_t{header_[4]} << 24) |
                               (std::uint32_t{header_[5]} << 16) |
                               (std::uint32_t{header_[6]} << 8) | std::uint32_t{header_[7]};
  const bool first = messages_ == 0;
  if (first ? type != client_handshake : type < client_handshake || type > heartbeat) {
    why_ = first ? "a first message that is no handshake (type " + std::to_string(type) + ")"
                 : "a message of unknown type " + std::to_string(type);
    return false;
  }
  const bool handshake = type == client_handshake;
  const std::uint32_t most = handshake ? bounds_.max_handshake : bounds_.max_message;
  if (length > most) {
    why_ = std::string{handshake ? "a handshake" : "a message"} + " announcing " +
           std::to_string(length) + " bytes (at most " + std::to_string(most) + ")";
    return false;
  }
  payload_left_ = length;
  if (length == 0) ++messages_;
  return true;
}

}  // namespace cudactor::detail
