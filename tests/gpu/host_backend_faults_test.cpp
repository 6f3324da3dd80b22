// The host backend's fault model, which mirrors CUDA's two classes: an operation that fails
// alone (the stream goes on) and a lost device (everything pending fails, nothing new is
// accepted until reset). Every operation must still end exactly once.
#define BOOST_TEST_MODULE host_backend_faults
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/host_target.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;
using conformance::make_event;
using conformance::make_stream;

BOOST_FIXTURE_TEST_SUITE(host_faults, two_worker_host)

BOOST_AUTO_TEST_CASE(a_failing_operation_fails_the_next_point_only) {
  auto s = make_stream(backend(), "flaky");
  auto before = make_event(backend());
  auto failed = make_event(backend());
  auto after = make_event(backend());
  CUDACTOR_REQUIRE_OK(backend().record(before, s));
  CUDACTOR_REQUIRE_OK(host().inject_failure(s, "launch rejected"));
  CUDACTOR_REQUIRE_OK(backend().record(failed, s));
  std::atomic<bool> later_work_ran{false};
  CUDACTOR_REQUIRE_OK(backend().enqueue(s, [&](const gpu::launch_context&) {
    later_work_ran = true;
    return gpu::status{};
  }));
  CUDACTOR_REQUIRE_OK(backend().record(after, s));
  CUDACTOR_REQUIRE_OK(backend().synchronize(s));
  BOOST_TEST(backend().query(before).ready());
  const auto answer = backend().query(failed);
  BOOST_TEST(answer.failed());
  BOOST_TEST(answer.error.code() == gpu::status_code::op_failed);
  BOOST_TEST(answer.error.message().find("launch rejected") != std::string::npos);
  BOOST_TEST(answer.error.message().find("'flaky'") != std::string::npos);
  BOOST_TEST(later_work_ran.load());  // the stream went on
  BOOST_TEST(backend().query(after).ready());
  BOOST_TEST(backend().health().ok());  // one failed op does not lose the device
}

// An event between the failed work and the signal (a stream actor's timing event) reports the
// failure, and so does the signal: the timeline, which barriers and wait_point read, keeps it.
BOOST_AUTO_TEST_CASE(an_event_before_the_signal_does_not_take_the_failure_from_it) {
  auto s = make_stream(backend(), "timed");
  auto line = backend().timeline_of(s).value();
  auto end = make_event(backend(), gpu::event_kind::timing);
  CUDACTOR_REQUIRE_OK(backend().enqueue(s, [](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "kernel 7 failed"};
  }));
  CUDACTOR_REQUIRE_OK(backend().record(end, s));
  const auto point = backend().signal(s).value();
  auto after = make_event(backend());
  CUDACTOR_REQUIRE_OK(backend().record(after, s));
  const auto next = backend().signal(s).value();
  CUDACTOR_REQUIRE_OK(backend().synchronize(s));
  BOOST_TEST(backend().query(end).failed());
  const auto at_point = line->query(point);
  BOOST_TEST(at_point.failed());
  BOOST_TEST(at_point.error.message().find("kernel 7 failed") != std::string::npos);
  BOOST_TEST(backend().query(after).ready());  // reported, so the next points are clean
  BOOST_TEST(line->query(next).ready());
}

BOOST_AUTO_TEST_CASE(work_that_returns_an_error_or_throws_fails_alone) {
  auto s = make_stream(backend(), "work");
  auto line = backend().timeline_of(s).value();
  CUDACTOR_REQUIRE_OK(backend().enqueue(s, [](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::invalid_argument, "bad shape 3x0"};
  }));
  auto first = backend().signal(s).value();
  CUDACTOR_REQUIRE_OK(backend().enqueue(s, [](const gpu::launch_context&) -> gpu::status {
    throw std::runtime_error("kernel threw");
  }));
  auto second = backend().signal(s).value();
  auto third = backend().signal(s).value();
  const auto one = line->wait(first, 0ms);
  BOOST_TEST(one.code() == gpu::status_code::op_failed);
  BOOST_TEST(one.message().find("bad shape 3x0") != std::string::npos);
  const auto two = line->wait(second, 0ms);
  BOOST_TEST(two.code() == gpu::status_code::op_failed);
  BOOST_TEST(two.message().find("kernel threw") != std::string::npos);
  CUDACTOR_REQUIRE_OK(line->wait(third, 0ms));
  BOOST_TEST(line->query(third).ready());
}

BOOST_AUTO_TEST_CASE(a_stream_waiting_on_a_failed_event_reports_the_dependency) {
  auto producer = make_stream(backend(), "producer");
  auto consumer = make_stream(backend(), "consumer");
  auto produced = make_event(backend());
  auto consumed = make_event(backend());
  CUDACTOR_REQUIRE_OK(host().inject_failure(producer, "bad input"));
  CUDACTOR_REQUIRE_OK(backend().record(produced, producer));
  CUDACTOR_REQUIRE_OK(backend().wait(consumer, produced));
  CUDACTOR_REQUIRE_OK(backend().record(consumed, consumer));
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  const auto answer = backend().query(consumed);
  BOOST_TEST(answer.failed());
  BOOST_TEST(answer.error.code() == gpu::status_code::dependency_failed);
  BOOST_TEST(answer.error.message().find("'consumer'") != std::string::npos);
  BOOST_TEST(answer.error.message().find("bad input") != std::string::npos);
  // Elapsed time over a failed point reports the failure rather than a number.
  auto start = make_event(backend(), gpu::event_kind::timing);
  auto end = make_event(backend(), gpu::event_kind::timing);
  CUDACTOR_REQUIRE_OK(backend().record(start, producer));
  CUDACTOR_REQUIRE_OK(host().inject_failure(producer, "again"));
  CUDACTOR_REQUIRE_OK(backend().record(end, producer));
  CUDACTOR_REQUIRE_OK(backend().synchronize(producer));
  BOOST_TEST(backend().elapsed(start, end).code() == gpu::status_code::op_failed);
}

BOOST_AUTO_TEST_CASE(an_order_after_a_failed_point_carries_no_failure) {
  auto producer = make_stream(backend(), "producer");
  auto consumer = make_stream(backend(), "consumer");
  auto ordered = make_event(backend());
  std::atomic<bool> producer_done{false};
  bool ran_after = false;
  {
    auto held = hold(producer);
    CUDACTOR_REQUIRE_OK(host().inject_failure(producer, "bad input"));
    CUDACTOR_REQUIRE_OK(backend().enqueue(producer, [&](const gpu::launch_context&) {
      producer_done = true;
      return gpu::status{};
    }));
    auto failed = backend().signal(producer).value();
    CUDACTOR_REQUIRE_OK(backend().order_after(consumer, producer, failed));
    CUDACTOR_REQUIRE_OK(backend().enqueue(consumer, [&](const gpu::launch_context&) {
      ran_after = producer_done.load();
      return gpu::status{};
    }));
    CUDACTOR_REQUIRE_OK(backend().record(ordered, consumer));
  }
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  BOOST_TEST(ran_after);                         // it came after the producer's work
  BOOST_TEST(backend().query(ordered).ready());  // and the failure stayed there
  // A failed point already reached orders nothing and carries nothing either.
  auto late = make_event(backend());
  auto point = backend().signal(producer).value();
  CUDACTOR_REQUIRE_OK(backend().synchronize(producer));
  CUDACTOR_REQUIRE_OK(backend().order_after(consumer, producer, point));
  CUDACTOR_REQUIRE_OK(backend().record(late, consumer));
  CUDACTOR_REQUIRE_OK(backend().synchronize(consumer));
  BOOST_TEST(backend().query(late).ready());
}

BOOST_AUTO_TEST_CASE(a_stream_waiting_on_a_failed_point_reports_the_dependency) {
  auto producer = make_stream(backend(), "producer");
  auto consumer = make_stream(backend(), "consumer");
  auto before = make_event(backend());
  auto after = make_event(backend());
  gpu::timeline_point failed = 0;
  {
    auto held = hold(producer);  // the waits below are made before the failure happens
    CUDACTOR_REQUIRE_OK(host().inject_failure(producer, "bad input"));
    failed = backend().signal(producer).value();
    auto clean = backend().signal(producer).value();
    CUDACTOR_REQUIRE_OK(backend().wait_point(consumer, producer, failed));
    CUDACTOR_REQUIRE_OK(backend().record(before, consumer));
    CUDACTOR_REQUIRE_OK(backend().wait_point(consumer, producer, clean));
    CUDACTOR_REQUIRE_OK(backend().record(after, consumer));
  }
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  const auto answer = backend().query(before);
  BOOST_TEST(answer.error.code() == gpu::status_code::dependency_failed);
  BOOST_TEST(answer.error.message().find("bad input") != std::string::npos);
  // Named when it fails, not when it is queued: the point and the stream it belongs to.
  BOOST_TEST(answer.error.message().find("waited on point " + std::to_string(failed) +
                                         " of stream 'producer'") != std::string::npos,
             answer.error.message());
  BOOST_TEST(backend().query(after).ready());  // the failure is reported once, then clean
  // A failed point already reached is still reported to a later waiter.
  auto late = make_event(backend());
  auto failed_again = make_stream(backend(), "failed-again");
  CUDACTOR_REQUIRE_OK(host().inject_failure(failed_again, "again"));
  auto point = backend().signal(failed_again).value();
  CUDACTOR_REQUIRE_OK(backend().synchronize(failed_again));
  CUDACTOR_REQUIRE_OK(backend().wait_point(consumer, failed_again, point));
  CUDACTOR_REQUIRE_OK(backend().record(late, consumer));
  CUDACTOR_REQUIRE_OK(backend().synchronize(consumer));
  BOOST_TEST(backend().query(late).error.code() == gpu::status_code::dependency_failed);
}

BOOST_AUTO_TEST_CASE(waits_for_points_end_as_their_points_are_reached_whatever_their_order) {
  // The waits on a stream are kept in point order: one for a later point that came first must
  // stay while an earlier point releases the ones before it, and go when its own is reached.
  auto producer = make_stream(backend(), "producer");
  auto late = make_stream(backend(), "late");
  auto early = make_stream(backend(), "early");
  auto also_early = make_stream(backend(), "also-early");
  auto first_gate = hold(producer);
  auto first = backend().signal(producer).value();
  auto second_gate = hold(producer);
  auto second = backend().signal(producer).value();
  auto late_done = make_event(backend());
  auto early_done = make_event(backend());
  auto also_early_done = make_event(backend());
  CUDACTOR_REQUIRE_OK(backend().wait_point(late, producer, second));
  CUDACTOR_REQUIRE_OK(backend().record(late_done, late));
  CUDACTOR_REQUIRE_OK(backend().wait_point(early, producer, first));
  CUDACTOR_REQUIRE_OK(backend().record(early_done, early));
  CUDACTOR_REQUIRE_OK(backend().wait_point(also_early, producer, first));
  CUDACTOR_REQUIRE_OK(backend().record(also_early_done, also_early));
  // Waited for with a bound: a wait left behind must fail the test, not hang it.
  auto early_point = backend().signal(early).value();
  auto also_early_point = backend().signal(also_early).value();
  first_gate->release();
  CUDACTOR_REQUIRE_OK(backend().timeline_of(early).value()->wait(early_point, 5000ms));
  CUDACTOR_REQUIRE_OK(backend().timeline_of(also_early).value()->wait(also_early_point, 5000ms));
  BOOST_TEST(backend().query(early_done).ready());
  BOOST_TEST(backend().query(also_early_done).ready());
  BOOST_TEST(!backend().query(late_done).done());  // its point is still held back
  second_gate->release();
  CUDACTOR_REQUIRE_OK(backend().synchronize(late));
  BOOST_TEST(backend().query(late_done).ready());
}

BOOST_AUTO_TEST_CASE(a_lost_device_ends_a_wait_for_a_point_never_reached) {
  auto producer = make_stream(backend(), "producer");
  auto consumer = make_stream(backend(), "consumer");
  auto held = hold(producer);
  auto never = backend().signal(producer).value();
  CUDACTOR_REQUIRE_OK(backend().wait_point(consumer, producer, never));
  auto consumer_line = backend().timeline_of(consumer).value();
  auto value = backend().signal(consumer).value();
  auto other = make_stream(backend(), "faulty");
  CUDACTOR_REQUIRE_OK(host().inject_device_fault(other, "illegal address"));
  BOOST_TEST(consumer_line->wait(value, 5000ms).code() == gpu::status_code::device_lost);
  CUDACTOR_CHECK_ERRC(backend().wait_point(consumer, producer, never), gpu::status_code::device_lost);
  held->release();
}

BOOST_AUTO_TEST_CASE(a_device_fault_fails_everything_pending_on_every_stream) {
  auto faulty = make_stream(backend(), "faulty");
  auto bystander = make_stream(backend(), "bystander");
  auto held = hold(bystander);  // its work is pending when the device goes
  auto pending_event = make_event(backend());
  auto faulty_event = make_event(backend());
  std::atomic<int> callbacks{0};
  std::atomic<int> callbacks_told_lost{0};
  auto count = [&](const gpu::status& outcome) {
    ++callbacks;
    if (outcome.code() == gpu::status_code::device_lost) ++callbacks_told_lost;
  };
  std::atomic<bool> bystander_work_ran{false};
  CUDACTOR_REQUIRE_OK(backend().enqueue(bystander, [&](const gpu::launch_context&) {
    bystander_work_ran = true;
    return gpu::status{};
  }));
  CUDACTOR_REQUIRE_OK(backend().record(pending_event, bystander));
  CUDACTOR_REQUIRE_OK(backend().add_callback(bystander, count));
  auto bystander_line = backend().timeline_of(bystander).value();
  auto pending_value = backend().signal(bystander).value();
  std::atomic<bool> signalled_work_ran{false};
  auto with_point = backend().enqueue_signalled(bystander, [&](const gpu::launch_context&) {
    signalled_work_ran = true;
    return gpu::status{};
  });
  CUDACTOR_REQUIRE_OK(with_point.launched);
  BOOST_REQUIRE(with_point.point.ok());

  {
    // Hold the faulty stream until everything is queued: the fault happens asynchronously,
    // and once it has, new work is (rightly) refused.
    auto until_queued = hold(faulty);
    CUDACTOR_REQUIRE_OK(host().inject_device_fault(faulty, "illegal address"));
    CUDACTOR_REQUIRE_OK(backend().record(faulty_event, faulty));
    CUDACTOR_REQUIRE_OK(backend().add_callback(faulty, count));
  }

  // The timeline waiter is answered without anyone releasing the held stream.
  const auto waited = bystander_line->wait(pending_value, 5000ms);
  BOOST_TEST(waited.code() == gpu::status_code::device_lost);
  BOOST_TEST(waited.message().find("illegal address") != std::string::npos);
  BOOST_TEST(backend().health().code() == gpu::status_code::device_lost);
  BOOST_TEST(backend().synchronize().code() == gpu::status_code::device_lost);
  BOOST_TEST(callbacks.load() == 2);  // every callback ran, exactly once, told why
  BOOST_TEST(callbacks_told_lost.load() == 2);
  BOOST_TEST(!bystander_work_ran.load());
  // Work queued with its point: neither runs, the point fails with the loss.
  BOOST_TEST(bystander_line->wait(with_point.point.value(), 5000ms).code() ==
             gpu::status_code::device_lost);
  BOOST_TEST(!signalled_work_ran.load());
  BOOST_TEST(backend().query(pending_event).error.code() == gpu::status_code::device_lost);
  BOOST_TEST(backend().query(faulty_event).error.code() == gpu::status_code::device_lost);

  // Nothing new is accepted while the device is lost.
  CUDACTOR_CHECK_ERRC(
      backend().enqueue(faulty, [](const gpu::launch_context&) { return gpu::status{}; }),
      gpu::status_code::device_lost);
  CUDACTOR_CHECK_ERRC(backend().create_stream({}).error(), gpu::status_code::device_lost);
  CUDACTOR_CHECK_ERRC(backend().signal(faulty).error(), gpu::status_code::device_lost);
  auto refused =
      backend().enqueue_signalled(faulty, [](const gpu::launch_context&) { return gpu::status{}; });
  CUDACTOR_CHECK_ERRC(refused.launched, gpu::status_code::device_lost);
  BOOST_REQUIRE(!refused.point.ok());
  CUDACTOR_CHECK_ERRC(refused.point.error(), gpu::status_code::device_lost);
  CUDACTOR_CHECK_ERRC(backend().allocate_managed(64).error(), gpu::status_code::device_lost);
  held->release();
}

BOOST_AUTO_TEST_CASE(reset_recovers_a_lost_device_and_invalidates_old_handles) {
  auto old_stream = make_stream(backend(), "old");
  auto old_event = make_event(backend());
  auto memory = backend().allocate(old_stream, 128);
  BOOST_REQUIRE(memory.ok());
  host().lose_device("test");
  BOOST_TEST(backend().health().code() == gpu::status_code::device_lost);
  CUDACTOR_REQUIRE_OK(backend().reset());
  BOOST_TEST(backend().health().ok());
  CUDACTOR_CHECK_ERRC(backend().stream_name(old_stream).error(), gpu::status_code::invalid_handle);
  CUDACTOR_CHECK_ERRC(backend().query(old_event).error, gpu::status_code::invalid_handle);
  BOOST_TEST(host().memory_in_use() == 0u);
  // Owning handles from before the reset release nothing and count nothing.
  old_stream = gpu::stream{};
  old_event = gpu::event{};
  memory.value() = gpu::buffer{};
  BOOST_TEST(backend().failed_releases() == 0u);
  // New work runs.
  auto fresh = make_stream(backend(), "fresh");
  std::atomic<bool> ran{false};
  CUDACTOR_REQUIRE_OK(backend().enqueue(fresh, [&](const gpu::launch_context&) {
    ran = true;
    return gpu::status{};
  }));
  CUDACTOR_REQUIRE_OK(backend().synchronize(fresh));
  BOOST_TEST(ran.load());
}

BOOST_AUTO_TEST_CASE(destroying_the_backend_ends_every_pending_operation) {
  std::atomic<int> callbacks{0};
  std::atomic<int> told_lost{0};
  gpu::hang_release never_released;
  {
    host_target doomed{gpu::host_backend_options{2, std::size_t{1} << 20, "doomed"}};
    auto s = make_stream(doomed.backend(), "held");
    auto slow = make_stream(doomed.backend(), "slow");
    never_released = doomed.host().inject_hang(s).value();
    CUDACTOR_REQUIRE_OK(doomed.busy(slow, 60s));
    for (auto* target : {&s, &slow}) {
      CUDACTOR_REQUIRE_OK(doomed.backend().add_callback(*target, [&](const gpu::status& why) {
        ++callbacks;
        if (why.code() == gpu::status_code::device_lost) ++told_lost;
      }));
    }
    // Streams and events die with the scope, then the backend: neither hangs.
  }
  BOOST_TEST(callbacks.load() == 2);
  BOOST_TEST(told_lost.load() == 2);
  never_released.release();  // after the backend is gone: harmless
  BOOST_TEST(never_released.released());
}

BOOST_AUTO_TEST_CASE(injections_are_checked_like_any_other_call) {
  auto s = make_stream(backend());
  CUDACTOR_CHECK_ERRC(host().inject_delay(s, -1ms), gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(host().inject_failure(gpu::stream_ref{}, "x"), gpu::status_code::invalid_argument);
  const gpu::stream_ref stale = s.ref();
  CUDACTOR_REQUIRE_OK(s.reset());
  CUDACTOR_CHECK_ERRC(host().inject_hang(stale).error(), gpu::status_code::invalid_handle);
}

BOOST_AUTO_TEST_SUITE_END()
