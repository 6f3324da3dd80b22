// The coordinator when the device fails under it, on the host backend (its fault injection
// and work that fails after holding its stream exist only there): a lost device fails
// everything until reset, and a begun operation that ends without completing leaves its
// stream clean for the next.
#define BOOST_TEST_MODULE coordinator_faults
#include "coordinator_fixture.hpp"

#include <set>

#include "cudactor/gpu/host_backend.hpp"

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

BOOST_FIXTURE_TEST_SUITE(coordinator_faults, four_streams)

// What a begun operation left on its stream (waits for its dependencies, the caller's work)
// is its own: when it ends without completing, the next operation there must not inherit a
// failure from it.
BOOST_AUTO_TEST_CASE(a_begun_operation_that_never_completes_leaves_its_stream_clean) {
  gate g;
  auto shared = g.opened();
  auto bad = add(spec_of(work::local([shared](const gpu::launch_context&) {
    shared.wait();
    return gpu::status{gpu::status_code::op_failed, "the held kernel failed"};
  })));
  const op_info held_on = placed(bad);  // a dependent then goes where the pool says
  auto manual = add(spec_of({}, {bad}));
  auto lease = ask<op_lease>(co(), begin_atom::value, manual);
  BOOST_REQUIRE_MESSAGE(lease, why(lease));
  // On another stream than its dependency, the begin put a device wait on the lease's stream.
  BOOST_REQUIRE(lease->stream != held_on.stream);
  g.open();
  auto ended = collect({bad, manual});
  BOOST_TEST((ended.at(manual.value).state == op_state::cancelled));
  BOOST_TEST(!ask<ticket>(co(), enqueued_atom::value, manual));

  // A second begun op whose caller's own work failed, reported with complete(error).
  auto second = add(spec_of({}));
  auto second_lease = ask<op_lease>(co(), begin_atom::value, second);
  BOOST_REQUIRE_MESSAGE(second_lease, why(second_lease));
  BOOST_REQUIRE(rt().device()
                    .enqueue(rt().backend_stream(second_lease->stream),
                             [](const gpu::launch_context&) {
                               return gpu::status{gpu::status_code::op_failed, "the caller's kernel"};
                             })
                    .ok());
  auto failed = ask<op_state>(co(), enqueued_atom::value, second,
                              make_error(errc::op_failed, "the caller saw its launch fail"));
  BOOST_TEST((failed && *failed == op_state::failed));

  // Sixteen operations of 300 us in one graph: dispatched in one pass while all are in
  // flight, so the load-balanced pool puts some on every stream, the two leased ones included.
  auto log = std::make_shared<work_log>(16);
  graph_spec later;
  for (std::size_t i = 0; i < 16; ++i) later.add(spec_of(log->record(i, 300us)));
  auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(later), me());
  BOOST_REQUIRE_MESSAGE(ids, why(ids));
  const std::vector<op_id> after = *ids;
  auto notices = collect(after);
  std::set<std::uint32_t> used;
  for (auto& [id, n] : notices) {
    BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
    used.insert(n.stream.value);
  }
  BOOST_TEST(used.count(lease->stream.value) == 1u);
  BOOST_TEST(used.count(second_lease->stream.value) == 1u);
  const auto m = metrics();
  BOOST_TEST(m.live == 0u);
}

BOOST_AUTO_TEST_CASE(a_lost_device_fails_everything_and_work_is_refused_until_reset) {
  auto manual = add(spec_of({}));
  auto waiting = add(spec_of(noop(), {manual}));
  auto lease = ask<op_lease>(co(), begin_atom::value, manual);
  BOOST_REQUIRE_MESSAGE(lease, why(lease));
  auto& host = static_cast<gpu::host_backend&>(rt().device());
  BOOST_REQUIRE(
      host.inject_device_fault(rt().backend_stream(lease->stream), "illegal address").ok());
  // The coordinator learns of it from the poller once the stream reaches the next point.
  BOOST_REQUIRE(ask<ticket>(co(), enqueued_atom::value, manual) || true);
  auto notices = collect({manual, waiting});
  for (auto& [id, n] : notices) {
    BOOST_TEST((n.state == op_state::failed));
    BOOST_TEST(n.cause.code() == static_cast<std::uint8_t>(errc::device_lost));
  }
  auto refused = ask<op_id>(co(), register_atom::value, spec_of(noop()));
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.error().code() == static_cast<std::uint8_t>(errc::device_lost));
  BOOST_TEST(render(refused.error()).find("reset") != std::string::npos);
  auto early = ask<bool>(co(), reset_atom::value);  // the backend is still lost
  BOOST_TEST(!early);
  BOOST_REQUIRE(rt().device().reset().ok());  // from outside any actor
  auto reset = ask<bool>(co(), reset_atom::value);
  BOOST_REQUIRE_MESSAGE(reset, why(reset));
  BOOST_TEST(*reset);
  auto again = add(spec_of(noop()));
  BOOST_TEST((told(again).state == op_state::completed));
}

// The poller's report of the loss can reach a stream actor after the stream was replaced (it
// was on its way when the reset came): it is about the old stream and must not break the new.
BOOST_AUTO_TEST_CASE(a_report_about_the_stream_before_a_reset_does_not_break_the_new_one) {
  auto manual = add(spec_of({}));
  auto lease = ask<op_lease>(co(), begin_atom::value, manual);
  BOOST_REQUIRE_MESSAGE(lease, why(lease));
  auto& host = static_cast<gpu::host_backend&>(rt().device());
  BOOST_REQUIRE(
      host.inject_device_fault(rt().backend_stream(lease->stream), "illegal address").ok());
  BOOST_REQUIRE(ask<ticket>(co(), enqueued_atom::value, manual) || true);
  (void)collect({manual});
  BOOST_REQUIRE(rt().device().reset().ok());
  auto reset = ask<bool>(co(), reset_atom::value);
  BOOST_REQUIRE_MESSAGE(reset && *reset, why(reset));
  // Late reports of the loss, as the poller sent them about each stream's first incarnation
  // (the one before the reset); each is followed by a request from the same sender, so it
  // has been handled when the answer comes.
  for (std::size_t i = 0; i < rt().streams().size(); ++i) {
    completion_batch late;
    late.stream = stream_id{static_cast<std::uint32_t>(i)};
    late.failures.push_back(
        op_failure{1, make_error(errc::device_lost, "illegal address, reported late")});
    late.broken = make_error(errc::device_lost, "illegal address, reported late");
    self()->send(rt().stream(i), progress_atom::value, late, std::uint64_t{1});
    BOOST_REQUIRE(ask<stream_status>(rt().stream(i), status_atom::value));
  }
  std::vector<op_id> after;
  for (int i = 0; i < 16; ++i) after.push_back(add(spec_of(noop())));
  for (auto& [id, n] : collect(after)) {
    BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
  }
}

BOOST_AUTO_TEST_SUITE_END()
