// actors/node/basp_framing.hpp
//
// What a node checks of a connection's bytes before CAF reads them. CAF 0.17's network layer
// (BASP) reads a 32-byte header and then allocates, zero-filled, as many bytes as the header
// announces, up to 4 GiB, before anything looks at them: a stranger's garbage stalls the
// node's network thread for seconds and takes gigabytes (docs/distribution.md, Security).
// This follows the framing of the bytes as they arrive (header, payload, header, ...) and
// refuses a header that announces more than a bound, or a message a peer cannot send at that
// point, while CAF has only buffered it. A connection's first message is the connecting
// peer's handshake, and small (as is a handshake repeated later); any other message is
// bounded by the node's largest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace cudactor::detail {

struct framing_bounds {
  // Bytes of a handshake's payload: CAF's client handshake (its node id and application
  // identifiers; a few hundred bytes).
  std::uint32_t max_handshake = std::uint32_t{64} << 10;
  // Bytes of any later message's payload (cudactor.node.max-message-bytes).
  std::uint32_t max_message = std::uint32_t{64} << 20;
};

// The inbound bytes of one connection that the node accepted.
class basp_framing {
 public:
  static constexpr std::size_t header_size = 32;  // caf::io::basp::header_size

  explicit basp_framing(framing_bounds bounds) noexcept : bounds_(bounds) {}

  // Takes the connection's next `n` bytes. False once they break the framing: the
  // connection must close before CAF reads them, and why() says how.
  [[nodiscard]] bool take(const void* data, std::size_t n);

  [[nodiscard]] const std::string& why() const noexcept { return why_; }

  // Whole messages taken so far (the handshake counts).
  [[nodiscard]] std::uint64_t messages() const noexcept { return messages_; }

 private:
  bool check_header();

  framing_bounds bounds_;
  std::array<unsigned char, header_size> header_{};
  std::size_t have_ = 0;            // bytes of the current header
  std::uint64_t payload_left_ = 0;  // bytes of the current payload still to come
  std::uint64_t messages_ = 0;
  std::string why_;
};

}  // namespace cudactor::detail
