// The framing check a node applies to each accepted connection before CAF reads it: the
// bytes of real BASP traffic pass however they are split; a first message that is no
// handshake, a handshake or message announcing more than its bound, and an unknown type are
// refused at the header that says so, and nothing after; random garbage is refused within
// its first header.
#define BOOST_TEST_MODULE basp_framing
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "cudactor/actors/node/basp_framing.hpp"

using cudactor::detail::basp_framing;
using cudactor::detail::framing_bounds;

namespace {

// A BASP message: a 32-byte header of `type` announcing `length` bytes, then the payload.
std::vector<unsigned char> message(unsigned char type, std::uint32_t length,
                                   std::size_t payload_bytes = SIZE_MAX) {
  std::vector<unsigned char> out(32, 0);
  out[0] = type;
  out[4] = static_cast<unsigned char>(length >> 24);
  out[5] = static_cast<unsigned char>(length >> 16);
  out[6] = static_cast<unsigned char>(length >> 8);
  out[7] = static_cast<unsigned char>(length);
  out.resize(32 + (payload_bytes == SIZE_MAX ? length : payload_bytes), 0xab);
  return out;
}

std::vector<unsigned char> operator+(std::vector<unsigned char> a,
                                     const std::vector<unsigned char>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

framing_bounds small() {
  framing_bounds b;
  b.max_handshake = 300;
  b.max_message = 5000;
  return b;
}

// A client's traffic: its handshake, the repeated one, a heartbeat, messages.
std::vector<unsigned char> traffic() {
  return message(0x01, 200) + message(0x01, 200) + message(0x06, 0) + message(0x02, 5000) +
         message(0x03, 1) + message(0x04, 16) + message(0x05, 40) + message(0x06, 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(real_traffic_passes_however_it_is_split) {
  const auto bytes = traffic();
  std::mt19937 rng{7};
  for (int split = 0; split < 200; ++split) {
    basp_framing f{small()};
    std::size_t at = 0;
    while (at < bytes.size()) {
      const std::size_t n = std::min<std::size_t>(bytes.size() - at, 1 + rng() % 97);
      BOOST_REQUIRE_MESSAGE(f.take(bytes.data() + at, n), f.why());
      at += n;
    }
    BOOST_TEST(f.messages() == 8u);
  }
  // All at once, and byte by byte.
  basp_framing whole{small()};
  BOOST_TEST(whole.take(bytes.data(), bytes.size()));
  basp_framing bytewise{small()};
  for (auto b : bytes) BOOST_REQUIRE(bytewise.take(&b, 1));
  BOOST_TEST(bytewise.messages() == 8u);
}

BOOST_AUTO_TEST_CASE(each_break_is_refused_at_its_header_and_named) {
  struct refused_case {
    std::vector<unsigned char> bytes;
    std::size_t refused_at;  // the byte whose taking breaks the framing
    const char* words;
  };
  const auto hs = message(0x01, 10);
  const std::vector<refused_case> cases = {
      {message(0x02, 10), 31, "a first message that is no handshake (type 2)"},
      {message(0x00, 10), 31, "a first message that is no handshake (type 0)"},
      {message(0x01, 301), 31, "a handshake announcing 301 bytes (at most 300)"},
      {message(0x01, 0xffffffffu, 0), 31, "a handshake announcing 4294967295 bytes"},
      {hs + message(0x02, 5001), hs.size() + 31, "a message announcing 5001 bytes (at most 5000)"},
      {hs + message(0x01, 301), hs.size() + 31, "a handshake announcing 301 bytes"},
      {hs + message(0x07, 0), hs.size() + 31, "a message of unknown type 7"},
      {hs + message(0x00, 1), hs.size() + 31, "a message of unknown type 0"},
  };
  for (const auto& c : cases) {
    basp_framing f{small()};
    for (std::size_t i = 0; i < c.bytes.size(); ++i) {
      const bool ok = f.take(&c.bytes[i], 1);
      BOOST_REQUIRE_MESSAGE(ok == (i < c.refused_at), "byte " << i << ": " << f.why());
      if (!ok) break;
    }
    BOOST_TEST(f.why().find(c.words) != std::string::npos, f.why());
    const unsigned char more = 0;
    BOOST_TEST(!f.take(&more, 1));  // refused for good
  }
}

BOOST_AUTO_TEST_CASE(random_garbage_is_refused_within_its_first_header) {
  std::mt19937_64 rng{11};
  int refused = 0;
  for (int trial = 0; trial < 10000; ++trial) {
    std::vector<unsigned char> bytes(32 + rng() % 4064);
    for (auto& b : bytes) b = static_cast<unsigned char>(rng());
    basp_framing f{framing_bounds{}};
    // Within the bounds, garbage passes its first header only as a handshake (type 1, 1 in
    // 256) announcing 64 KiB or less (1 in 65536 of those): never in these 10000 tries.
    BOOST_TEST(!f.take(bytes.data(), 32), "trial " << trial);
    refused += f.why().empty() ? 0 : 1;
  }
  BOOST_TEST(refused == 10000);
}
