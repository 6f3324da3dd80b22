// The barrier facade: made over some of the runtime's streams (bad members refused at once,
// by name), crossed in host and device mode, a negative limit refused; a barrier object that
// outlives its runtime answers shutting_down.
#define BOOST_TEST_MODULE facade_barrier
#include <boost/test/unit_test.hpp>

#include "cudactor/facade/barrier.hpp"
#include "cudactor/facade/stream.hpp"
#include "facade/facade_fixture.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

BOOST_FIXTURE_TEST_SUITE(facade_barrier, facade_fixture)

BOOST_AUTO_TEST_CASE(every_stream_reaches_the_barrier_in_either_mode) {
  cudactor::barrier b{rt(), {0, 1}};
  cudactor::stream{rt(), 0}.submit([](const gpu::launch_context&) { return gpu::status{}; });
  auto host = b.synchronize(barrier_mode::host, 5s);
  const barrier_crossing crossed = get_within(host);
  BOOST_TEST(crossed.generation == 1u);
  BOOST_TEST(crossed.members.size() == 2u);
  auto device = b.synchronize(barrier_mode::device, 0s);
  const barrier_crossing placed = get_within(device);
  BOOST_TEST(placed.generation == 2u);
  BOOST_TEST((placed.mode == barrier_mode::device));
  cudactor::barrier copy = b;  // the same barrier
  auto plain = copy.synchronize();
  BOOST_TEST(get_within(plain).generation == 3u);
  // A limit alone (and with a cancellation), as stream::synchronize takes: the barrier's mode.
  auto limited = b.synchronize(5s);
  const barrier_crossing fourth = get_within(limited);
  BOOST_TEST(fourth.generation == 4u);
  BOOST_TEST((fourth.mode == barrier_mode::host));
  cudactor::cancellation never;
  auto cancellable = b.synchronize(5s, never);
  BOOST_TEST(get_within(cancellable).generation == 5u);
  auto st = b.status();
  BOOST_TEST(get_within(st).crossed == 5u);
}

BOOST_AUTO_TEST_CASE(bad_members_and_limits_are_named) {
  try {
    cudactor::barrier bad{rt(), {0, 5}};
    BOOST_FAIL("a barrier over a stream the runtime does not have");
  } catch (const failure& f) {
    BOOST_TEST_MESSAGE(f.what());
    BOOST_TEST((f != errc::none));
    BOOST_TEST(mentions(f, "5"));
  }
  try {
    cudactor::barrier twice{rt(), {1, 1}};
    BOOST_FAIL("a barrier naming a stream twice");
  } catch (const failure& f) {
    BOOST_TEST_MESSAGE(f.what());
    BOOST_TEST((f == errc::invalid_argument));
  }
  cudactor::barrier b{rt(), {0}};
  auto past = b.synchronize(barrier_mode::host, -1ms);
  const failure f = failure_of(past);
  BOOST_TEST_MESSAGE(f.what());
  BOOST_TEST((f == errc::invalid_argument));
  BOOST_TEST(mentions(f, "negative"));
}

BOOST_AUTO_TEST_CASE(a_barrier_object_that_outlives_its_runtime_answers_shutting_down) {
  cudactor::barrier b{rt(), {0, 1}};
  stop();
  auto f = b.synchronize();
  BOOST_TEST((failure_of(f) == errc::shutting_down));
}

BOOST_AUTO_TEST_SUITE_END()
