// The barrier actor over a runtime's stream actors, on either backend: the seeds' multi-stream
// pattern (work on every stream, the barrier, more work) with times recorded where the work
// ran, generations open side by side, a limit naming the stream that did not arrive, the
// device-side mode with no poller watch and no host wait while it runs, failures and
// shutdown. A lost device is in barrier_faults_test (the host backend's fault injection).
#define BOOST_TEST_MODULE barrier_actor
#include "barrier_fixture.hpp"

#include <thread>

#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/gpu/host_backend.hpp"

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

namespace {

// Stream 1 reaches barrier `b` (over streams 0 and 1) with failed work ("kernel 0 failed"),
// stream 0 with clean work: the answer to a host-mode synchronize, which must be a refusal.
caf::error synchronize_over_failed_work(barrier_fixture& f, const barrier_actor& b) {
  gate g;
  auto log = std::make_shared<work_log>(1);
  f.on(0, noop());
  f.on(1, g.hold());
  f.on(1, log->record(0, 0us, true));
  auto pending = f.self()->request(b, 10s, synchronize_atom::value);
  g.open();
  return f.refusal_of(pending, "crossed despite the failure");
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(barrier, barrier_fixture)

// The seeds' pattern: launch on every stream, synchronize, launch the next step everywhere.
BOOST_AUTO_TEST_CASE(every_stream_reaches_the_barrier_before_it_is_crossed) {
  auto b = barrier();
  auto log = std::make_shared<work_log>(8);
  std::vector<ticket> first;
  for (std::size_t i = 0; i < 4; ++i) {
    first.push_back(on(i, log->record(i, std::chrono::microseconds{2000 * (i + 1)})));
  }
  auto crossed = ask<barrier_crossing>(b, synchronize_atom::value);
  const std::int64_t answered = detail::now_ns();
  BOOST_REQUIRE_MESSAGE(crossed, why(crossed));
  BOOST_TEST(crossed->generation == 1u);
  BOOST_TEST((crossed->mode == barrier_mode::host));
  BOOST_REQUIRE(crossed->members.size() == 4u);
  std::int64_t last_end = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& m = crossed->members[i];
    BOOST_TEST(m.member == i);
    BOOST_TEST(m.name == "stream-" + std::to_string(i));
    BOOST_TEST(m.point == first[i].point + 1);  // the barrier's mark, right after the work
    BOOST_TEST(log->ended(i) != 0);             // every stream's work ended before the answer
    if (!on_cuda()) {  // the work's stamps are on the host's clock, as the barrier's times
      BOOST_TEST(log->ended(i) <= answered);
      BOOST_TEST(m.arrived_ns >= log->ended(i));
    }
    last_end = std::max(last_end, log->ended(i));
  }
  if (!on_cuda()) BOOST_TEST(crossed->duration.count() >= last_end - crossed->began_ns);
  BOOST_TEST(crossed->device_waits == 0u);

  // The next step, then the barrier again: a new generation.
  for (std::size_t i = 0; i < 4; ++i) on(i, log->record(4 + i));
  auto again = ask<barrier_crossing>(b, synchronize_atom::value);
  BOOST_REQUIRE_MESSAGE(again, why(again));
  BOOST_TEST(again->generation == 2u);
  for (std::size_t i = 0; i < 4; ++i) {
    BOOST_TEST(log->started(4 + i) >= last_end);
    BOOST_TEST(again->members[i].point > crossed->members[i].point);
  }
  const auto s = status_of(b);
  BOOST_TEST(s.generations == 2u);
  BOOST_TEST(s.crossed == 2u);
  BOOST_TEST(s.pending == 0u);
  BOOST_TEST(s.members.size() == 4u);
}

BOOST_AUTO_TEST_CASE(generations_open_side_by_side_are_crossed_in_order) {
  auto b = barrier({0, 1});
  gate g;
  auto log = std::make_shared<work_log>(2);
  on(1, g.hold());
  on(1, log->record(0));
  auto first = self()->request(b, 10s, synchronize_atom::value);
  on(0, noop());
  auto second = self()->request(b, 10s, synchronize_atom::value);
  const auto s = status_of(b);  // answered after both requests: they are open now
  BOOST_TEST(s.generations == 2u);
  BOOST_TEST(s.pending == 2u);
  g.open();
  barrier_crossing one, two;
  first.receive([&](barrier_crossing& c) { one = std::move(c); },
                [&](caf::error& e) { BOOST_FAIL("first: " << render(e)); });
  second.receive([&](barrier_crossing& c) { two = std::move(c); },
                 [&](caf::error& e) { BOOST_FAIL("second: " << render(e)); });
  BOOST_TEST(one.generation == 1u);
  BOOST_TEST(two.generation == 2u);
  BOOST_TEST(two.members[0].point > one.members[0].point);  // the noop came between
  BOOST_TEST(two.members[1].point > one.members[1].point);  // each generation marks anew
  BOOST_TEST(log->ended(0) != 0);
  if (!on_cuda()) BOOST_TEST(one.members[1].arrived_ns >= log->ended(0));
  BOOST_TEST(two.began_ns + two.duration.count() >= one.began_ns + one.duration.count());
}

// A generation opened while the one before still waits for the poller's report, its marks
// already passed: it used to be answered at once, before the earlier one and with an earlier
// arrival (CI saw it under ASan, one run in many). A stream passes its marks in order, so the
// earlier generation is settled with it. Many rounds, because the window is a race.
BOOST_AUTO_TEST_CASE(a_later_generation_never_arrives_before_an_earlier_one) {
  auto b = barrier({0, 1});
  for (int round = 0; round < 200; ++round) {
    gate g;
    on(1, g.hold());
    auto first = self()->request(b, 10s, synchronize_atom::value);
    g.open();
    auto second = self()->request(b, 10s, synchronize_atom::value);
    barrier_crossing one, two;
    first.receive([&](barrier_crossing& c) { one = std::move(c); },
                  [&](caf::error& e) { BOOST_FAIL("first: " << render(e)); });
    second.receive([&](barrier_crossing& c) { two = std::move(c); },
                   [&](caf::error& e) { BOOST_FAIL("second: " << render(e)); });
    BOOST_REQUIRE(two.generation == one.generation + 1);
    for (std::size_t i = 0; i < 2; ++i) {
      BOOST_REQUIRE_MESSAGE(two.members[i].arrived_ns >= one.members[i].arrived_ns,
                            "round " << round << ", member " << i << ": generation "
                                     << two.generation << " arrived "
                                     << one.members[i].arrived_ns - two.members[i].arrived_ns
                                     << " ns before generation " << one.generation);
    }
    BOOST_REQUIRE(two.began_ns + two.duration.count() >= one.began_ns + one.duration.count());
  }
}

BOOST_AUTO_TEST_CASE(a_limit_names_the_streams_that_did_not_arrive) {
  auto b = barrier({0, 1, 2, 3}, barrier_options{"step", barrier_mode::host, 50ms});
  gate g;
  auto log = std::make_shared<work_log>(1);
  for (std::size_t i : {0, 1, 3}) on(i, noop());
  on(2, g.hold());
  on(2, log->record(0));
  auto late = ask<barrier_crossing>(b, synchronize_atom::value);
  BOOST_REQUIRE(!late);
  BOOST_TEST(late.error().code() == static_cast<std::uint8_t>(errc::timeout));
  const std::string text = render(late.error());
  BOOST_TEST(says(text, "barrier 'step' generation 1"), text);
  BOOST_TEST(says(text, "1 of 4 streams did not arrive within 50 ms"), text);
  BOOST_TEST(says(text, "'stream-2' (passed point 0, the barrier is at 3)"), text);
  for (const char* arrived : {"'stream-0'", "'stream-1'", "'stream-3'"}) {
    BOOST_TEST(!says(text, arrived), text);
  }
  g.open();
  // An explicit limit, and no limit at all: both cross now.
  auto crossed =
      ask<barrier_crossing>(b, synchronize_atom::value, barrier_mode::host, caf::timespan{5s});
  BOOST_REQUIRE_MESSAGE(crossed, why(crossed));
  BOOST_TEST(crossed->generation == 2u);
  BOOST_TEST(
      ask<barrier_crossing>(b, synchronize_atom::value, barrier_mode::host, caf::timespan{0}));
  const auto s = status_of(b);
  BOOST_TEST(s.timed_out == 1u);
  BOOST_TEST(s.crossed == 2u);
  BOOST_TEST(s.failed == 0u);
}

// The device-side mode: each stream waits for every other on the device. While it runs the
// poller is not asked to watch anything and no host thread waits; the answer comes while a
// stream is still held, and work after the barrier on the other streams waits for it.
BOOST_AUTO_TEST_CASE(the_device_side_mode_neither_watches_nor_waits_on_the_host) {
  auto b = barrier();
  gate g;
  auto log = std::make_shared<work_log>(8);
  on(0, g.hold());
  on(0, log->record(0));
  for (std::size_t i = 1; i < 4; ++i) on(i, log->record(i));

  // The host backend counts the waits its host threads made; CUDA's device waits make none.
  const auto* host = dynamic_cast<const gpu::host_backend*>(&rt().device());
  // The marks are points of the stream actors' own timelines, watched with the rest of them;
  // the barrier itself watches nothing and no host thread waits.
  const std::uint64_t waits_before = host != nullptr ? host->host_waits() : 0;
  auto crossed = ask<barrier_crossing>(b, synchronize_atom::value, barrier_mode::device);
  const std::uint64_t waits_after = host != nullptr ? host->host_waits() : 0;
  BOOST_REQUIRE_MESSAGE(crossed, why(crossed));
  BOOST_TEST(waits_after == waits_before);
  BOOST_TEST((crossed->mode == barrier_mode::device));
  BOOST_TEST(log->ended(0) == 0);  // answered while stream 0 is still held
  // Stream 0's point is not reached: each other stream waits for it; the others' points may
  // already be passed, which needs no wait.
  BOOST_TEST(crossed->device_waits >= 3u);
  BOOST_TEST(crossed->device_waits <= 12u);

  for (std::size_t i = 1; i < 4; ++i) on(i, log->record(4 + i));
  std::this_thread::sleep_for(20ms);
  for (std::size_t i = 1; i < 4; ++i) {
    BOOST_TEST(log->started(4 + i) == 0);  // held on the device behind stream 0
  }
  g.open();
  for (std::size_t i = 1; i < 4; ++i) {
    auto done = ask<completion>(rt().stream(i), synchronize_atom::value);
    BOOST_REQUIRE_MESSAGE(done, why(done));
    BOOST_TEST(log->started(4 + i) >= log->ended(0));
  }
  BOOST_TEST(status_of(b).device_waits == crossed->device_waits);
}

BOOST_AUTO_TEST_CASE(a_stream_that_reaches_the_barrier_with_failed_work_is_named) {
  auto b = barrier({0, 1});
  const caf::error failed = synchronize_over_failed_work(*this, b);
  BOOST_TEST(failed.code() == static_cast<std::uint8_t>(errc::dependency_failed));
  BOOST_TEST(says(render(failed), "stream 'stream-1' reached the barrier with failed work"),
             render(failed));
  BOOST_TEST(says(render(failed), "kernel 0 failed"), render(failed));

  // Device mode: the work is known to have failed by the time the waits are placed, so the
  // answer says so (the same member, the same cause); the waits are placed all the same, so
  // the order holds, and the streams go on: stream 0's crossing and next work run clean.
  auto device = ask<barrier_crossing>(b, synchronize_atom::value, barrier_mode::device);
  BOOST_REQUIRE(!device);
  BOOST_TEST(device.error().code() == static_cast<std::uint8_t>(errc::dependency_failed));
  BOOST_TEST(says(render(device.error()), "stream 'stream-1' reached the barrier with failed work"),
             render(device.error()));
  BOOST_TEST(says(render(device.error()), "generation 2"), render(device.error()));
  auto next = on(0, noop());
  auto crossing = ask<completion>(rt().stream(0), await_atom::value, next.point - 1);
  BOOST_TEST(crossing, why(crossing));
  BOOST_TEST(ask<completion>(rt().stream(0), await_atom::value, next.point));
  BOOST_TEST(status_of(b).failed == 2u);
}

BOOST_AUTO_TEST_CASE(shutdown_answers_every_open_generation_and_refuses_more) {
  auto b = barrier({0, 1});
  gate g;
  auto log = std::make_shared<work_log>(1);
  on(0, g.hold());
  on(0, log->record(0));
  auto pending = self()->request(b, 10s, synchronize_atom::value);
  self()->send(b, shutdown_atom::value);
  const caf::error why_not = refusal_of(pending, "crossed while held");
  BOOST_TEST(why_not.code() == static_cast<std::uint8_t>(errc::shutting_down), render(why_not));
  auto refused = ask<barrier_crossing>(b, synchronize_atom::value);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.error().code() == static_cast<std::uint8_t>(errc::shutting_down));
  g.open();
}

BOOST_AUTO_TEST_CASE(the_runtime_stops_its_barriers_first_and_answers_what_they_hold) {
  auto b = barrier({0, 1});
  gate g;
  auto log = std::make_shared<work_log>(1);
  on(1, g.hold());
  on(1, log->record(0));
  auto answer = std::async(std::launch::async, [this, b] {
    caf::error out;
    {
      caf::scoped_actor other{rt().system()};
      other->request(b, 10s, synchronize_atom::value)
          .receive([](barrier_crossing&) {}, [&](caf::error& e) { out = std::move(e); });
    }
    runtime::release_calling_thread();
    return out;
  });
  for (int i = 0; i < 1000 && status_of(b).pending == 0; ++i) std::this_thread::sleep_for(1ms);
  BOOST_REQUIRE(status_of(b).pending == 1u);
  std::thread opener{[&g] {
    std::this_thread::sleep_for(200ms);  // the runtime shuts down with the stream still held
    g.open();
  }};
  stop();
  opener.join();
  const caf::error why_not = answer.get();
  BOOST_TEST(why_not.code() == static_cast<std::uint8_t>(errc::shutting_down));
}

// A generation is one of the coordinator's barrier operations: a host-mode one holds the
// coordinator's work on its streams until every stream arrived. One whose limit ran out (or
// that was withdrawn) ends there and gives its streams back: the coordinator's work on a
// stream that did arrive runs while the late one is still held.
BOOST_AUTO_TEST_CASE(a_generation_given_up_gives_its_streams_back) {
  auto b = barrier({0, 1}, barrier_options{"step", barrier_mode::host, 50ms});
  gate g;
  on(1, g.hold());
  const auto before = metrics();
  auto late = ask<barrier_crossing>(b, synchronize_atom::value);
  BOOST_REQUIRE(!late);
  BOOST_TEST(late.error().code() == static_cast<std::uint8_t>(errc::timeout));
  BOOST_TEST(says(render(late.error()), "'stream-1' (passed point 0, the barrier is at 2)"),
             render(late.error()));
  const auto after = metrics();
  BOOST_TEST(after.total == before.total + 1);    // the generation's operation
  BOOST_TEST(after.failed == before.failed + 1);  // ended by its limit
  auto log = std::make_shared<work_log>(2);
  const op_id first = add(pinned_to(log->record(0), 0));
  BOOST_TEST((told(first).state == op_state::completed));

  // Withdrawn: answered cancelled at once, and the coordinator ends the operation.
  auto pending = self()->request(b, 10s, synchronize_atom::value, barrier_mode::host,
                                 wait_limit{caf::timespan{0}, 7});
  auto withdrawn = ask<bool>(b, withdraw_atom::value, std::uint64_t{7});
  BOOST_REQUIRE_MESSAGE(withdrawn, why(withdrawn));
  BOOST_TEST(*withdrawn);
  const caf::error why_not = refusal_of(pending, "crossed though withdrawn");
  BOOST_TEST(why_not.code() == static_cast<std::uint8_t>(errc::cancelled), render(why_not));
  for (int i = 0; i < 1000 && metrics().cancelled == before.cancelled; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  BOOST_TEST(metrics().cancelled == before.cancelled + 1);
  const op_id second = add(pinned_to(log->record(1), 0));
  BOOST_TEST((told(second).state == op_state::completed));
  BOOST_TEST(log->ended(1) != 0);
  g.open();
  BOOST_TEST(ask<barrier_crossing>(b, synchronize_atom::value));
  BOOST_TEST(metrics().live == 0u);
}

// A withdraw key names a generation of the barrier it was given to: the same key given to
// another barrier by the same caller is another wait, which the withdraw leaves alone.
BOOST_AUTO_TEST_CASE(a_withdraw_key_belongs_to_its_barrier) {
  auto one = barrier({0, 1}, barrier_options{"one", barrier_mode::host, 10s});
  auto two = barrier({0, 1}, barrier_options{"two", barrier_mode::host, 10s});
  gate g;
  on(1, g.hold());
  const wait_limit key_5{caf::timespan{0}, 5};
  auto first = self()->request(one, 10s, synchronize_atom::value, barrier_mode::host, key_5);
  auto second = self()->request(two, 10s, synchronize_atom::value, barrier_mode::host, key_5);
  BOOST_REQUIRE(status_of(one).pending == 1u);
  BOOST_REQUIRE(status_of(two).pending == 1u);
  auto withdrawn = ask<bool>(two, withdraw_atom::value, std::uint64_t{5});
  BOOST_REQUIRE_MESSAGE(withdrawn, why(withdrawn));
  BOOST_TEST(*withdrawn);
  const caf::error why_not = refusal_of(second, "crossed though withdrawn");
  BOOST_TEST(why_not.code() == static_cast<std::uint8_t>(errc::cancelled), render(why_not));
  BOOST_TEST(says(render(why_not), "barrier 'two' generation 1"), render(why_not));
  g.open();
  first.receive(
      [](barrier_crossing& c) { BOOST_TEST(c.generation == 1u); },
      [&](caf::error& e) { BOOST_FAIL("the other barrier's generation: " << render(e)); });
  const auto s = status_of(two);
  BOOST_TEST(s.pending == 0u);
  BOOST_TEST(s.failed == 0u);  // a withdrawal is not a failure
  BOOST_TEST(status_of(one).crossed == 1u);
  auto again = ask<bool>(one, withdraw_atom::value, std::uint64_t{5});
  BOOST_REQUIRE_MESSAGE(again, why(again));
  BOOST_TEST(!*again);  // answered: nothing left to withdraw
}

BOOST_AUTO_TEST_CASE(bad_member_lists_are_refused) {
  auto none = rt().spawn_barrier({});
  BOOST_REQUIRE(!none.ok());
  BOOST_TEST(says(none.error().message(), "needs at least one stream"));
  auto twice = rt().spawn_barrier({1, 1});
  BOOST_REQUIRE(!twice.ok());
  BOOST_TEST(says(twice.error().message(), "'stream-1' is named twice"));
  auto beyond = rt().spawn_barrier({0, 4});
  BOOST_REQUIRE(!beyond.ok());
  BOOST_TEST(says(beyond.error().message(), "the runtime has no stream 4 (it has 4)"));
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// Two streams whose actors hold back everything beyond one operation in flight.
struct capped_streams : barrier_fixture {
  explicit capped_streams(std::vector<std::string> more = {})
      : barrier_fixture(with(std::move(more))) {}
  static std::vector<std::string> with(std::vector<std::string> more) {
    more.insert(more.begin(), {"--cudactor.streams=2", "--cudactor.max-in-flight=1"});
    return more;
  }
};

struct capped_timed_streams : capped_streams {
  capped_timed_streams() : capped_streams({"--cudactor.timing"}) {}
};

// An operation whose ticket came back before the barrier was requested is before the barrier,
// though its stream actor still holds it back (the cap; with timing on, timing events being
// fetched too): work after the barrier on another stream starts only once it has ended.
template <class Fixture>
void held_back_work_is_before_the_barrier(Fixture& fx) {
  barrier_options options;
  options.mode = barrier_mode::device;
  auto b = fx.barrier({0, 1}, options);
  for (int round = 0; round < 3; ++round) {
    gate g;
    auto log = std::make_shared<work_log>(2);
    fx.on(0, g.hold());                                          // in flight: the cap is 1
    const ticket held = fx.on(0, log->record(0, scaled(30ms)));  // ticketed, held back
    auto status = fx.template ask<stream_status>(fx.rt().stream(0), status_atom::value);
    BOOST_REQUIRE(status);
    BOOST_TEST(status->queued >= 1u);  // really held back when the barrier is asked for
    auto pending = fx.self()->request(b, scaled(10s), synchronize_atom::value);
    g.open();
    barrier_crossing crossed;
    pending.receive([&](barrier_crossing& c) { crossed = std::move(c); },
                    [&](caf::error& e) { BOOST_FAIL("synchronize: " << fx.render(e)); });
    BOOST_TEST(crossed.members[0].point > held.point);  // the mark sits after it
    fx.on(1, log->record(1));
    auto done = fx.template ask<completion>(fx.rt().stream(1), synchronize_atom::value);
    BOOST_REQUIRE_MESSAGE(done, fx.why(done));
    BOOST_TEST(log->ended(0) != 0);
    BOOST_TEST(log->started(1) >= log->ended(0), "round " << round
                                                          << ": work after the barrier "
                                                             "started before held-back work ended");
  }
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(held_back_work_is_before_a_barrier_asked_for_after_its_ticket,
                        capped_streams) {
  held_back_work_is_before_the_barrier(*this);
}

BOOST_FIXTURE_TEST_CASE(held_back_work_is_before_the_barrier_with_timing_on, capped_timed_streams) {
  held_back_work_is_before_the_barrier(*this);
}

namespace {

struct timed_streams : barrier_fixture {
  timed_streams() : barrier_fixture({"--cudactor.streams=2", "--cudactor.timing"}) {}
};

}  // namespace

// With timing on, the stream actor records timing events around each work; a failure must
// still reach the stream's timeline, which the barrier reads, not stop at the end event.
BOOST_FIXTURE_TEST_CASE(failed_work_is_named_with_timing_on, timed_streams) {
  const caf::error failed = synchronize_over_failed_work(*this, barrier({0, 1}));
  BOOST_TEST(failed.code() == static_cast<std::uint8_t>(errc::dependency_failed));
  BOOST_TEST(says(render(failed), "kernel 0 failed"), render(failed));
}

// A generation given up while its points were still held back (the cap) leaves its mark and
// crossing on the streams once they go out. They are not work: the next generation reads the
// work before the barrier from before them, and names a stream whose newest work failed.
BOOST_FIXTURE_TEST_CASE(a_generation_given_up_before_its_tickets_hides_no_failed_work,
                        capped_streams) {
  auto b = barrier({0, 1}, barrier_options{"late", barrier_mode::device, scaled(50ms)});
  auto log = std::make_shared<work_log>(1);
  const ticket failing = on(0, log->record(0, 0us, true));
  (void)ask<completion>(rt().stream(0), await_atom::value, failing.point);  // failed, reached
  gate g;
  on(1, g.hold());  // stream 1's cap (1) is taken: its mark, and so stream 0's crossing, wait
  auto late = ask<barrier_crossing>(b, synchronize_atom::value);
  BOOST_REQUIRE(!late);
  BOOST_TEST(late.error().code() == static_cast<std::uint8_t>(errc::timeout), render(late.error()));
  g.open();
  for (std::size_t s = 0; s < 2; ++s) {
    auto drained = ask<stream_status>(rt().stream(s), status_atom::value);
    for (int i = 0; i < 2000 && drained && drained->completed < drained->accepted; ++i) {
      std::this_thread::sleep_for(1ms);
      drained = ask<stream_status>(rt().stream(s), status_atom::value);
    }
    BOOST_REQUIRE(drained);
    BOOST_REQUIRE(drained->completed == drained->accepted);  // the given-up points went out
  }
  auto next = ask<barrier_crossing>(b, synchronize_atom::value);
  BOOST_REQUIRE_MESSAGE(!next, "crossed though stream 0's newest work failed");
  BOOST_TEST(next.error().code() == static_cast<std::uint8_t>(errc::dependency_failed),
             render(next.error()));
  BOOST_TEST(says(render(next.error()), "stream 'stream-0' reached the barrier with failed work"),
             render(next.error()));
}
