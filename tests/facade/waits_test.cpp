// Waits with a deadline and a cancellation at every level (issue 22 item 3): a stream's await
// and synchronize, a barrier's crossing, an operation's end. Each is answered exactly once
// (its end, timeout, or cancelled), and the actor keeps nothing of a wait that timed out or
// was withdrawn (its count of open waits is back where it was).
#define BOOST_TEST_MODULE facade_waits
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>

#include "common/gate.hpp"
#include "cudactor/facade/barrier.hpp"
#include "cudactor/facade/cancellation.hpp"
#include "cudactor/facade/coordinator.hpp"
#include "cudactor/facade/stream.hpp"
#include "facade/facade_fixture.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

std::uint64_t awaiting(const cudactor::stream& s) {
  auto f = s.status();
  return get_within(f).awaiting;
}

std::uint64_t awaiting(const cudactor::coordinator& c) {
  auto f = c.metrics();
  return get_within(f).awaiting;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(facade_waits, facade_fixture)

BOOST_AUTO_TEST_CASE(a_stream_wait_ends_at_its_limit_or_its_cancel_and_leaves_nothing) {
  cudactor::stream s{rt(), 0};
  gate held;
  auto fh = s.submit(held.hold());
  const ticket t = get_within(fh);
  // The limit passes first: timeout, naming the stream and where it is.
  auto late = s.await(t.point, scaled(50ms));
  const failure timed_out = failure_of(late);
  BOOST_TEST_MESSAGE(timed_out.what());
  BOOST_TEST((timed_out == errc::timeout));
  BOOST_TEST(mentions(timed_out, "stream-0"));
  BOOST_TEST(awaiting(s) == 0u);
  // Cancelled first: cancelled, and nothing left in the actor either.
  cudactor::cancellation stop;
  auto a = s.await(t.point, 0s, stop);
  auto b = s.synchronize(scaled(60s), stop);
  BOOST_TEST(awaiting(s) == 2u);
  stop.cancel();
  stop.cancel();  // idempotent
  BOOST_TEST((failure_of(a) == errc::cancelled));
  BOOST_TEST((failure_of(b) == errc::cancelled));
  BOOST_TEST(awaiting(s) == 0u);
  // Made with a cancellation already cancelled: answered at once, never reaching the actor.
  auto c = s.await(t.point, 0s, stop);
  BOOST_TEST((failure_of(c) == errc::cancelled));
  // A wait that ends first is not disturbed by a later cancel.
  cudactor::cancellation unused;
  auto d = s.await(t.point, scaled(30s), unused);
  held.open();
  BOOST_TEST(get_within(d).op.point == t.point);
  unused.cancel();
  BOOST_TEST(awaiting(s) == 0u);
  // A deadline already past is refused, naming it.
  auto past = s.synchronize(-1ms);
  const failure refused = failure_of(past);
  BOOST_TEST_MESSAGE(refused.what());
  BOOST_TEST((refused == errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(a_bounded_await_of_a_point_not_yet_submitted_waits_for_it) {
  // As the seeds' wait(value, timeout): the point is handed out later, and reached.
  cudactor::stream s{rt(), 0};
  auto first = s.submit([](const gpu::launch_context&) { return gpu::status{}; });
  const timeline_point now = get_within(first).point;
  auto later = s.await(now + 2, 10s);
  std::this_thread::sleep_for(scaled(20ms));  // the wait is in before the points exist
  BOOST_TEST((later.wait_for(0s) == std::future_status::timeout));
  for (int i = 0; i < 2; ++i) s.submit([](const gpu::launch_context&) { return gpu::status{}; });
  BOOST_TEST(get_within(later).op.point == now + 2);
  // Never submitted: its limit ends it, and the stream keeps nothing of it.
  auto never = s.await(now + 10, 50ms);
  BOOST_TEST((failure_of(never) == errc::timeout));
  BOOST_TEST(awaiting(s) == 0u);
  // Unbounded, or too far ahead: refused, saying what to do.
  auto unbounded = s.await(now + 10);
  const failure why = failure_of(unbounded);
  BOOST_TEST((why == errc::out_of_range));
  BOOST_TEST(mentions(why, "give the wait a time limit"), why.what());
  auto far = s.await(now + (timeline_point{1} << 20), 1s);
  BOOST_TEST((failure_of(far) == errc::out_of_range));
}

BOOST_AUTO_TEST_CASE(a_barrier_crossing_is_withdrawn_with_its_watches) {
  cudactor::barrier b{rt(), {0, 1}};
  cudactor::stream s{rt(), 1};
  gate held;
  auto fh = s.submit(held.hold());
  get_within(fh);
  cudactor::cancellation stop;
  auto crossing = b.synchronize(barrier_mode::host, scaled(60s), stop);
  // Let the generation reach its watches (the marks come back from both streams first).
  for (int i = 0; i < 200; ++i) {
    auto st = b.status();
    if (get_within(st).pending == 1u) break;
    std::this_thread::sleep_for(1ms);
  }
  stop.cancel();
  const failure f = failure_of(crossing);
  BOOST_TEST_MESSAGE(f.what());
  BOOST_TEST((f == errc::cancelled));
  auto st = b.status();
  BOOST_TEST(get_within(st).pending == 0u);
  // Timed out instead: the limit names who did not arrive.
  auto timed = b.synchronize(barrier_mode::host, scaled(50ms));
  const failure late = failure_of(timed);
  BOOST_TEST_MESSAGE(late.what());
  BOOST_TEST((late == errc::timeout));
  held.open();
  auto next = b.synchronize(barrier_mode::host, scaled(10s));
  BOOST_TEST(get_within(next).generation == 3u);
}

BOOST_AUTO_TEST_CASE(an_operations_end_is_awaited_with_a_limit_or_a_cancel) {
  cudactor::coordinator c{rt()};
  op_spec manual;  // launched by the caller: it ends when the test says so
  auto fm = c.add(manual);
  const op_id m = get_within(fm);
  auto late = c.on_end(m, scaled(50ms));
  const failure timed_out = failure_of(late);
  BOOST_TEST_MESSAGE(timed_out.what());
  BOOST_TEST((timed_out == errc::timeout));
  BOOST_TEST(awaiting(c) == 0u);
  cudactor::cancellation stop;
  auto withdrawn = c.on_end(m, 0s, stop);
  auto kept = c.on_end(m);
  BOOST_TEST(awaiting(c) == 2u);
  stop.cancel();
  BOOST_TEST((failure_of(withdrawn) == errc::cancelled));
  BOOST_TEST(awaiting(c) == 1u);
  auto cancelled = c.cancel(m);
  BOOST_TEST((get_within(cancelled) == op_state::cancelled));
  BOOST_TEST((get_within(kept).state == op_state::cancelled));
  BOOST_TEST(awaiting(c) == 0u);
  auto past = c.on_end(m, -1ms);
  BOOST_TEST((failure_of(past) == errc::invalid_argument));
}

// The largest limit there is waits (it answered timeout at once: now + limit overflowed),
// on every object that takes one, and each wait ends with what it waited for.
BOOST_AUTO_TEST_CASE(the_largest_limit_waits_instead_of_overflowing) {
  constexpr auto forever = std::chrono::nanoseconds::max();
  cudactor::stream s{rt(), 0};
  cudactor::coordinator c{rt()};
  cudactor::barrier b{rt(), {0, 1}};
  gate held;
  auto fh = s.submit(held.hold());
  const ticket t = get_within(fh);
  auto awaited = s.await(t.point, forever);
  auto ahead = s.await(t.point + 2, forever);  // a point not yet submitted (the barrier's is next)
  auto synced = s.synchronize(forever);
  auto crossed = b.synchronize(barrier_mode::host, forever);
  op_spec manual;
  auto fm = c.add(manual);
  const op_id m = get_within(fm);
  auto ended = c.on_end(m, forever);
  // The barrier reaches the coordinator through its own actor: wait until it holds both
  // streams (none is ready), or wait_ready below could be answered by a stream still free.
  for (int i = 0; i < 500; ++i) {
    auto any = c.ready_streams();
    if (!get_within(any)) break;
    std::this_thread::sleep_for(1ms);
  }
  auto ready = c.wait_ready(forever);  // none has room: the barrier holds both
  std::this_thread::sleep_for(scaled(100ms));
  BOOST_TEST((ready.wait_for(0s) == std::future_status::timeout));
  for (auto* pending : {&awaited, &ahead, &synced}) {
    BOOST_TEST((pending->wait_for(0s) == std::future_status::timeout));
  }
  BOOST_TEST((crossed.wait_for(0s) == std::future_status::timeout));
  BOOST_TEST((ended.wait_for(0s) == std::future_status::timeout));
  held.open();
  get_within(awaited);
  get_within(synced);
  BOOST_TEST(get_within(crossed).generation == 1u);
  get_within(ready);
  auto next = s.submit([](const gpu::launch_context&) { return gpu::status{}; });
  BOOST_TEST(get_within(next).point >= t.point + 2);
  get_within(ahead);
  auto cancelled = c.cancel(m);
  get_within(cancelled);
  BOOST_TEST((get_within(ended).state == op_state::cancelled));
}

BOOST_AUTO_TEST_SUITE_END()
