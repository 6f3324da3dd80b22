// The lease of a caller-launched operation: the work it launches goes on the held stream
// before the operation's point, so the operation ends after its work; several launches and
// the end keep their order without a wait; a launch that fails fails the operation; work sent
// to the held stream another way goes on after the operation; a lease past its hold is
// refused in words; fail() cancels the dependents.
#define BOOST_TEST_MODULE facade_launch_lease
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cudactor/facade/coordinator.hpp"
#include "cudactor/facade/stream.hpp"
#include "facade/facade_fixture.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

// Appends `i` to a shared log once the stream runs it, after `pause`.
struct order_log {
  std::mutex mutex;
  std::vector<int> order;
  gpu::work_fn step(int i, std::chrono::milliseconds pause = 0ms) {
    return [this, i, pause](const gpu::launch_context&) {
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
      std::lock_guard<std::mutex> lock{mutex};
      order.push_back(i);
      return gpu::status{};
    };
  }
  std::vector<int> seen() {
    std::lock_guard<std::mutex> lock{mutex};
    return order;
  }
};

op_id manual_op(const cudactor::coordinator& c, std::vector<op_id> deps = {}) {
  op_spec spec;
  spec.description = "launched by the caller";
  spec.deps = std::move(deps);
  auto added = c.add(spec);
  return get_within(added);
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(facade_launch_lease, facade_fixture)

BOOST_AUTO_TEST_CASE(the_operation_ends_after_the_work_its_lease_launched) {
  cudactor::coordinator c{rt()};
  auto log = std::make_shared<order_log>();
  const op_id op = manual_op(c);
  auto begun = c.begin(op);
  const launch_lease lease = get_within(begun);
  BOOST_TEST((lease.op() == op));
  // Two launches and the end, asked without waiting: they arrive in this order.
  auto first = lease.launch(log->step(1, 30ms));
  auto second = lease.launch(log->step(2));
  auto done = lease.complete();
  auto end = c.on_end(op);
  const ticket t1 = get_within(first);
  const ticket t2 = get_within(second);
  const ticket at = get_within(done);
  BOOST_TEST((t1.stream == lease.stream()));
  BOOST_TEST(t1.point == at.point);  // the launches are tracked by the operation's point
  BOOST_TEST(t2.point == at.point);
  const op_notice n = get_within(end);
  BOOST_TEST((n.state == op_state::completed));
  // Told completed only once the stream ran both (the old way, stream::submit, queued the
  // work behind the hold and the operation ended first).
  const auto seen = log->seen();
  BOOST_REQUIRE_EQUAL(seen.size(), 2u);
  BOOST_TEST(seen[0] == 1);
  BOOST_TEST(seen[1] == 2);
}

BOOST_AUTO_TEST_CASE(work_sent_to_the_held_stream_directly_goes_on_after_the_operation) {
  cudactor::coordinator c{rt()};
  auto log = std::make_shared<order_log>();
  const op_id op = manual_op(c);
  auto begun = c.begin(op);
  const launch_lease lease = get_within(begun);
  cudactor::stream held{rt(), lease.stream().value};
  // Sent to the stream while it is held: not the operation's, ordered after it.
  auto direct = held.submit(log->step(2));
  auto launched = lease.launch(log->step(1, 20ms));
  auto done = lease.complete();
  const ticket later = get_within(direct);
  const ticket at = get_within(done);
  get_within(launched);
  BOOST_TEST(later.point > at.point);
  auto reached = held.await(later.point);
  get_within(reached);
  auto end = c.on_end(op);
  BOOST_TEST((get_within(end).state == op_state::completed));
  const auto seen = log->seen();
  BOOST_REQUIRE_EQUAL(seen.size(), 2u);
  BOOST_TEST(seen[0] == 1);
  BOOST_TEST(seen[1] == 2);
}

BOOST_AUTO_TEST_CASE(a_launch_that_fails_fails_the_operation_whatever_complete_says) {
  cudactor::coordinator c{rt()};
  // Work that fails when it runs (on CUDA: when launched; on the host: on the stream).
  {
    const op_id op = manual_op(c);
    auto begun = c.begin(op);
    const launch_lease lease = get_within(begun);
    auto launched = lease.launch([](const gpu::launch_context&) {
      return gpu::status{gpu::status_code::op_failed, "the kernel did not start"};
    });
    auto done = lease.complete();
    auto end = c.on_end(op);
    (void)launched.wait_for(scaled(10s));
    const op_notice n = get_within(end);
    BOOST_TEST((n.state == op_state::failed));
    BOOST_TEST(describe(n.cause).find("the kernel did not start") != std::string::npos,
               describe(n.cause));
    (void)done.wait_for(scaled(10s));
  }
  // Work the stream cannot resolve: the launch is refused, in words, and the operation fails.
  {
    const op_id op = manual_op(c);
    auto begun = c.begin(op);
    const launch_lease lease = get_within(begun);
    auto launched = lease.launch(work::named("no-such-kernel"));
    const failure why = failure_of(launched);
    BOOST_TEST(mentions(why, "no-such-kernel"), why.what());
    auto done = lease.complete();
    get_within(done);
    auto end = c.on_end(op);
    BOOST_TEST((get_within(end).state == op_state::failed));
  }
}

BOOST_AUTO_TEST_CASE(a_lease_past_its_hold_is_refused_in_words) {
  cudactor::coordinator c{rt()};
  const op_id op = manual_op(c);
  auto begun = c.begin(op);
  const launch_lease lease = get_within(begun);
  auto done = lease.complete();
  get_within(done);
  auto late = lease.launch([](const gpu::launch_context&) { return gpu::status{}; });
  const failure why = failure_of(late);
  BOOST_TEST((why.code() == errc::invalid_state));
  BOOST_TEST(mentions(why, "is not held for"), why.what());
  BOOST_TEST(mentions(why, "begin"), why.what());
  auto again = lease.complete();
  BOOST_TEST((failure_of(again).code() == errc::invalid_state));
}

BOOST_AUTO_TEST_CASE(fail_ends_the_operation_failed_and_cancels_its_dependents) {
  cudactor::coordinator c{rt()};
  const op_id op = manual_op(c);
  op_spec after;
  after.body = work::local([](const gpu::launch_context&) { return gpu::status{}; });
  after.deps = {op};
  auto dependent = c.run(after);
  auto begun = c.begin(op);
  const launch_lease lease = get_within(begun);
  auto failed = lease.fail("out of device memory");
  BOOST_TEST((get_within(failed) == op_state::failed));
  auto end = c.on_end(op);
  const op_notice n = get_within(end);
  BOOST_TEST((n.state == op_state::failed));
  BOOST_TEST(describe(n.cause).find("out of device memory") != std::string::npos);
  BOOST_TEST((get_within(dependent).state == op_state::cancelled));
}

BOOST_AUTO_TEST_SUITE_END()
