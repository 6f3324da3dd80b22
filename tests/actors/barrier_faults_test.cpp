// The barrier actor when the device is lost under it, on the host backend (its fault
// injection): a pending crossing is answered device_lost, with the backend's words.
#define BOOST_TEST_MODULE barrier_faults
#include "barrier_fixture.hpp"

#include "cudactor/gpu/host_backend.hpp"

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

BOOST_FIXTURE_TEST_SUITE(barrier_faults, barrier_fixture)

BOOST_AUTO_TEST_CASE(a_lost_device_answers_device_lost) {
  auto b = barrier({0, 1, 2});
  gate g;
  on(2, g.hold());
  auto pending = self()->request(b, 10s, synchronize_atom::value);
  static_cast<gpu::host_backend&>(rt().device()).lose_device("pulled from the bus");
  const caf::error lost = refusal_of(pending, "crossed on a lost device");
  BOOST_TEST(lost.code() == static_cast<std::uint8_t>(errc::device_lost), render(lost));
  BOOST_TEST(says(render(lost), "pulled from the bus"), render(lost));
  g.open();
}

BOOST_AUTO_TEST_SUITE_END()
