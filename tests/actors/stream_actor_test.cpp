#define BOOST_TEST_MODULE stream_actor
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "common/device_word.hpp"
#include "common/gate.hpp"
#include "common/runtime_fixture.hpp"
#include "cudactor/messaging/errc.hpp"

using namespace std::chrono_literals;
using cudactor::completion;
using cudactor::errc;
using cudactor::ticket;
using cudactor::work;
namespace gpu = cudactor::gpu;

namespace {

using cudactor::test::gate;

work noop() {
  return work::local([](const gpu::launch_context&) { return gpu::status{}; });
}

work failing(std::string why) {
  return work::local([why](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, why};
  });
}

struct stream_fixture : cudactor::test::runtime_fixture {
  stream_fixture() : runtime_fixture({"--cudactor.streams=2"}) {}

  // The first `n` bytes of a buffer, copied to pinned host memory on stream 0 (on CUDA the
  // buffer is device memory, which the host cannot read).
  std::vector<std::uint8_t> read_back(const cudactor::buffer_ref& b, std::size_t n) {
    auto host = rt().device().allocate_pinned(n);
    BOOST_REQUIRE_MESSAGE(host.ok(), host.error().to_string());
    const auto to = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(host->data()));
    auto t = ask<ticket>(rt().stream(0), cudactor::copy_atom::value, to, b.address,
                         std::uint64_t{n}, gpu::copy_kind::device_to_host);
    BOOST_REQUIRE_MESSAGE(t, why(t));
    auto done = ask<completion>(rt().stream(0), cudactor::await_atom::value, t->point);
    BOOST_REQUIRE_MESSAGE(done, why(done));
    const auto* bytes = host->as<std::uint8_t>();
    return {bytes, bytes + n};
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(stream_actor, stream_fixture)

BOOST_AUTO_TEST_CASE(work_runs_in_submission_order_and_tickets_count_up) {
  auto order = std::make_shared<std::vector<int>>();
  auto mutex = std::make_shared<std::mutex>();
  std::vector<ticket> tickets;
  for (int i = 0; i < 200; ++i) {
    auto t = ask<ticket>(rt().stream(0), cudactor::submit_atom::value,
                         work::local([=](const gpu::launch_context&) {
                           std::lock_guard<std::mutex> lock{*mutex};
                           order->push_back(i);
                           return gpu::status{};
                         }));
    BOOST_REQUIRE(t);
    tickets.push_back(*t);
  }
  for (std::size_t i = 1; i < tickets.size(); ++i) {
    BOOST_TEST(tickets[i].point == tickets[i - 1].point + 1);
  }
  auto done = ask<completion>(rt().stream(0), cudactor::synchronize_atom::value);
  BOOST_REQUIRE_MESSAGE(done, why(done));
  BOOST_TEST(done->op.point == tickets.back().point);
  std::lock_guard<std::mutex> lock{*mutex};
  BOOST_REQUIRE_EQUAL(order->size(), 200u);
  for (int i = 0; i < 200; ++i) BOOST_TEST((*order)[i] == i);
}

BOOST_AUTO_TEST_CASE(a_batch_gets_one_ticket_per_work_in_order) {
  std::vector<work> batch(64, noop());
  auto tickets = ask<std::vector<ticket>>(rt().stream(0), cudactor::submit_atom::value, batch);
  BOOST_REQUIRE_MESSAGE(tickets, why(tickets));
  BOOST_REQUIRE_EQUAL(tickets->size(), 64u);
  for (std::size_t i = 0; i < 64; ++i) BOOST_TEST(tickets->at(i).point == i + 1);
  auto last = ask<completion>(rt().stream(0), cudactor::await_atom::value, tickets->back().point);
  BOOST_REQUIRE_MESSAGE(last, why(last));
  BOOST_TEST(last->detected_ns >= last->issued_ns);

  auto empty =
      ask<std::vector<ticket>>(rt().stream(0), cudactor::submit_atom::value, std::vector<work>{});
  BOOST_TEST((empty.error() == errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(await_of_a_completed_point_answers_at_once) {
  auto t = ask<ticket>(rt().stream(0), cudactor::submit_atom::value, noop());
  BOOST_REQUIRE(t);
  BOOST_REQUIRE(ask<completion>(rt().stream(0), cudactor::await_atom::value, t->point));
  auto again = ask<completion>(rt().stream(0), cudactor::await_atom::value, t->point);
  BOOST_REQUIRE_MESSAGE(again, why(again));
  BOOST_TEST(again->op.point == t->point);
}

BOOST_AUTO_TEST_CASE(await_beyond_anything_submitted_is_a_clear_error) {
  auto t = ask<ticket>(rt().stream(0), cudactor::submit_atom::value, noop());
  BOOST_REQUIRE(t);
  auto beyond = ask<completion>(rt().stream(0), cudactor::await_atom::value, t->point + 5);
  BOOST_REQUIRE(!beyond);
  BOOST_TEST((beyond.error() == errc::out_of_range));
  BOOST_TEST(render(beyond.error()).find("beyond anything submitted") != std::string::npos);
  auto zero = ask<completion>(rt().stream(0), cudactor::await_atom::value, gpu::timeline_point{0});
  BOOST_TEST((zero.error() == errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(failed_work_is_reported_to_its_awaiter_and_to_synchronize) {
  auto before = ask<ticket>(rt().stream(0), cudactor::submit_atom::value, noop());
  auto bad = ask<ticket>(rt().stream(0), cudactor::submit_atom::value, failing("bad input"));
  auto after = ask<ticket>(rt().stream(0), cudactor::submit_atom::value, noop());
  BOOST_REQUIRE(before && bad && after);
  auto failed = ask<completion>(rt().stream(0), cudactor::await_atom::value, bad->point);
  BOOST_REQUIRE(!failed);
  BOOST_TEST((failed.error() == errc::op_failed));
  BOOST_TEST(render(failed.error()).find("bad input") != std::string::npos);
  // The stream goes on: the neighbours completed.
  BOOST_TEST(ask<completion>(rt().stream(0), cudactor::await_atom::value, before->point));
  BOOST_TEST(ask<completion>(rt().stream(0), cudactor::await_atom::value, after->point));
  auto sync = ask<completion>(rt().stream(0), cudactor::synchronize_atom::value);
  BOOST_TEST((sync.error() == errc::op_failed));
  // Reported once: the next synchronize covers only what came after.
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::submit_atom::value, noop()));
  BOOST_TEST(ask<completion>(rt().stream(0), cudactor::synchronize_atom::value));
  auto st = ask<cudactor::stream_status>(rt().stream(0), cudactor::status_atom::value);
  BOOST_REQUIRE(st);
  BOOST_TEST(st->failures == 1u);
}

BOOST_AUTO_TEST_CASE(a_failure_inside_a_batch_is_reported_at_its_own_point) {
  // A batch is watched as one range; each point still answers for itself.
  std::vector<work> works{noop(), noop(), failing("third of five"), noop(), noop()};
  auto tickets =
      ask<std::vector<ticket>>(rt().stream(0), cudactor::submit_atom::value, std::move(works));
  BOOST_REQUIRE_MESSAGE(tickets, why(tickets));
  BOOST_REQUIRE(tickets->size() == 5u);
  for (std::size_t i = 0; i < tickets->size(); ++i) {
    auto done = ask<completion>(rt().stream(0), cudactor::await_atom::value, (*tickets)[i].point);
    if (i == 2) {
      BOOST_TEST((done.error() == errc::op_failed));
      BOOST_TEST(render(done.error()).find("third of five") != std::string::npos);
    } else {
      BOOST_TEST(done, "point " << i << ": " << why(done));
    }
  }
  auto st = ask<cudactor::stream_status>(rt().stream(0), cudactor::status_atom::value);
  BOOST_REQUIRE(st);
  BOOST_TEST(st->failures == 1u);
  BOOST_TEST(st->completed == tickets->back().point);
}

BOOST_AUTO_TEST_CASE(a_wait_on_an_event_orders_work_across_streams) {
  // Words the work writes where it runs (on CUDA, kernels): what stream 1 saw of stream 0.
  gate g;
  const cudactor::test::device_word flag{0};
  const cudactor::test::device_word seen{-1};
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::submit_atom::value, g.hold()));
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::submit_atom::value, flag.store(1)));
  auto ev = ask<cudactor::event_lease>(rt().stream(0), cudactor::record_atom::value,
                                     gpu::event_kind::regular);
  BOOST_REQUIRE_MESSAGE(ev, why(ev));
  BOOST_TEST(ev->recorded());
  BOOST_REQUIRE(ask<ticket>(rt().stream(1), cudactor::wait_atom::value, *ev));
  auto checked = ask<ticket>(rt().stream(1), cudactor::submit_atom::value, seen.copy_from(flag));
  BOOST_REQUIRE(checked);
  std::this_thread::sleep_for(20ms);
  BOOST_TEST(seen.load() == -1);  // stream 1 waits for stream 0's event
  g.open();
  BOOST_REQUIRE(ask<completion>(rt().stream(1), cudactor::await_atom::value, checked->point));
  BOOST_TEST(seen.load() == 1);
  BOOST_TEST(!tell(rt().event_pool(), cudactor::release_atom::value,
                   std::vector<cudactor::event_lease>{*ev}));
  // Released: the ref is stale now.
  auto stale = ask<ticket>(rt().stream(1), cudactor::wait_atom::value, *ev);
  BOOST_TEST((stale.error() == errc::stale_event));
}

// A record takes no timeline point: the event says which point it follows, and the next
// operation's ticket is the one after that point. Many events in one message, each its own
// lease, in order with the work around them; every one completes with that point.
BOOST_AUTO_TEST_CASE(records_take_no_point_and_come_many_to_a_message) {
  gate g;
  auto held = ask<ticket>(rt().stream(0), cudactor::submit_atom::value, g.hold());
  BOOST_REQUIRE(held);
  auto one = ask<cudactor::event_lease>(rt().stream(0), cudactor::record_atom::value,
                                      gpu::event_kind::regular);
  BOOST_REQUIRE_MESSAGE(one, why(one));
  BOOST_TEST(one->recorded());
  BOOST_TEST(one->point == held->point);
  auto many = ask<std::vector<cudactor::event_lease>>(rt().stream(0), cudactor::record_atom::value,
                                                    gpu::event_kind::regular, std::uint32_t{64});
  BOOST_REQUIRE_MESSAGE(many, why(many));
  BOOST_REQUIRE(many->size() == 64u);
  std::vector<std::uint32_t> slots;
  for (const auto& e : *many) {
    BOOST_TEST(e.recorded());
    BOOST_TEST(e.point == held->point);
    BOOST_TEST(!e.same_lease(*one));
    slots.push_back(e.slot);
  }
  std::sort(slots.begin(), slots.end());
  BOOST_TEST((std::adjacent_find(slots.begin(), slots.end()) == slots.end()));
  auto next = ask<ticket>(rt().stream(0), cudactor::submit_atom::value, noop());
  BOOST_REQUIRE(next);
  BOOST_TEST(next->point == held->point + 1);
  // The events complete with the work before them: stream 1 waits on the last of them.
  const cudactor::test::device_word seen{-1};
  const cudactor::test::device_word flag{0};
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::submit_atom::value, flag.store(1)));
  auto after = ask<cudactor::event_lease>(rt().stream(0), cudactor::record_atom::value,
                                        gpu::event_kind::regular);
  BOOST_REQUIRE(after);
  BOOST_REQUIRE(ask<ticket>(rt().stream(1), cudactor::wait_atom::value, *after));
  auto checked = ask<ticket>(rt().stream(1), cudactor::submit_atom::value, seen.copy_from(flag));
  BOOST_REQUIRE(checked);
  std::this_thread::sleep_for(20ms);
  BOOST_TEST(seen.load() == -1);  // the gate holds stream 0, so the event is not reached
  g.open();
  BOOST_REQUIRE(ask<completion>(rt().stream(1), cudactor::await_atom::value, checked->point));
  BOOST_TEST(seen.load() == 1);
  auto leases = *many;
  leases.push_back(*one);
  leases.push_back(*after);
  BOOST_TEST(!tell(rt().event_pool(), cudactor::release_atom::value, leases));
  // Bounded per message, and a pool that cannot give that many refuses the batch by name,
  // leaving the stream as it was.
  for (std::uint32_t n : {0u, cudactor::max_records_per_message + 1}) {
    auto refused = ask<std::vector<cudactor::event_lease>>(
        rt().stream(0), cudactor::record_atom::value, gpu::event_kind::regular, n);
    BOOST_TEST((refused.error() == errc::invalid_argument));
  }
  auto fine = ask<ticket>(rt().stream(0), cudactor::submit_atom::value, noop());
  BOOST_REQUIRE(fine);
  BOOST_TEST(fine->point == next->point + 2);
}

BOOST_AUTO_TEST_CASE(a_record_batch_larger_than_the_pool_is_refused_and_the_stream_goes_on) {
  stop();
  start({"--cudactor.streams=1", "--cudactor.pool.max-events=100"});
  auto refused = ask<std::vector<cudactor::event_lease>>(
      rt().stream(0), cudactor::record_atom::value, gpu::event_kind::regular, std::uint32_t{200});
  BOOST_TEST((refused.error() == errc::invalid_argument));
  BOOST_TEST(why(refused).find("at most 100") != std::string::npos);
  auto t = ask<ticket>(rt().stream(0), cudactor::submit_atom::value, noop());
  BOOST_REQUIRE_MESSAGE(t, why(t));
  BOOST_REQUIRE(ask<completion>(rt().stream(0), cudactor::await_atom::value, t->point));
  auto fits = ask<std::vector<cudactor::event_lease>>(
      rt().stream(0), cudactor::record_atom::value, gpu::event_kind::regular, std::uint32_t{50});
  BOOST_REQUIRE_MESSAGE(fits, why(fits));
  BOOST_TEST(fits->size() == 50u);
  BOOST_TEST(!tell(rt().event_pool(), cudactor::release_atom::value, *fits));
}

BOOST_AUTO_TEST_CASE(backpressure_holds_in_flight_at_the_cap_and_loses_nothing) {
  stop();
  start({"--cudactor.streams=1", "--cudactor.max-in-flight=4"});
  gate g;
  auto ran = std::make_shared<std::atomic<int>>(0);
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::submit_atom::value, g.hold()));
  ticket last;
  for (int i = 0; i < 100; ++i) {
    auto t = ask<ticket>(rt().stream(0), cudactor::submit_atom::value,
                         work::local([ran](const gpu::launch_context&) {
                           ran->fetch_add(1);
                           return gpu::status{};
                         }));
    BOOST_REQUIRE(t);  // nothing is refused
    last = *t;
  }
  auto st = ask<cudactor::stream_status>(rt().stream(0), cudactor::status_atom::value);
  BOOST_REQUIRE(st);
  BOOST_TEST(st->in_flight == 4u);
  BOOST_TEST(st->queued == 97u);
  BOOST_TEST(st->accepted == 101u);
  g.open();
  BOOST_REQUIRE(ask<completion>(rt().stream(0), cudactor::await_atom::value, last.point));
  BOOST_TEST(ran->load() == 100);
  st = ask<cudactor::stream_status>(rt().stream(0), cudactor::status_atom::value);
  BOOST_TEST(st->in_flight == 0u);
  BOOST_TEST(st->queued == 0u);
}

BOOST_AUTO_TEST_CASE(the_cap_never_exceeds_the_backends_bound_on_signalled_points) {
  // The stream actor's option asks for 1024, the backend's timeline takes 8: before the cap
  // agreed with the backend, the 9th signal was refused and the stream broke as if the device
  // were lost. On CUDA the gate is a kernel that holds the stream, as long work would.
  stop();
  start({"--cudactor.streams=1", "--cudactor.max-in-flight=1024", "--cudactor.host.max-in-flight=8",
         "--cudactor.cuda.max-in-flight=8"});
  gate g;
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::submit_atom::value, g.hold()));
  constexpr int n = 600;
  std::vector<work> works(n, noop());
  auto tickets = ask<std::vector<ticket>>(rt().stream(0), cudactor::submit_atom::value, works);
  BOOST_REQUIRE_MESSAGE(tickets, why(tickets));
  BOOST_REQUIRE_EQUAL(tickets->size(), std::size_t{n});
  auto st = ask<cudactor::stream_status>(rt().stream(0), cudactor::status_atom::value);
  BOOST_REQUIRE(st);
  BOOST_TEST(st->max_in_flight == 8u);
  BOOST_TEST(st->in_flight <= 8u);
  BOOST_TEST(st->queued >= std::uint64_t{n + 1 - 8});
  g.open();
  auto done = ask<completion>(rt().stream(0), cudactor::await_atom::value, tickets->back().point);
  BOOST_REQUIRE_MESSAGE(done, why(done));
  st = ask<cudactor::stream_status>(rt().stream(0), cudactor::status_atom::value);
  BOOST_REQUIRE(st);
  BOOST_TEST(st->failures == 0u);
  BOOST_TEST(st->queued == 0u);
}

BOOST_AUTO_TEST_CASE(memory_is_reused_only_after_the_stream_passes_the_free) {
  gate g;
  auto a =
      ask<cudactor::buffer_ref>(rt().stream(0), cudactor::alloc_atom::value, std::uint64_t{4096});
  BOOST_REQUIRE_MESSAGE(a, why(a));
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::fill_atom::value, a->address, std::uint8_t{7},
                            a->size));
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::submit_atom::value, g.hold()));
  auto freed = ask<ticket>(rt().stream(0), cudactor::free_atom::value, *a);
  BOOST_REQUIRE_MESSAGE(freed, why(freed));
  // The stream has not passed the free: a new allocation must not get the same memory.
  auto b =
      ask<cudactor::buffer_ref>(rt().stream(0), cudactor::alloc_atom::value, std::uint64_t{4096});
  BOOST_REQUIRE(b);
  BOOST_TEST(b->address != a->address);
  auto double_free = ask<ticket>(rt().stream(0), cudactor::free_atom::value, *a);
  BOOST_TEST((double_free.error() == errc::invalid_argument));
  g.open();
  BOOST_REQUIRE(ask<completion>(rt().stream(0), cudactor::await_atom::value, freed->point));
  auto c =
      ask<cudactor::buffer_ref>(rt().stream(0), cudactor::alloc_atom::value, std::uint64_t{4000});
  BOOST_REQUIRE(c);
  BOOST_TEST(c->address == a->address);  // reused once passed
  BOOST_TEST(read_back(*c, 1)[0] == 7);

  // Copies between device buffers go in stream order.
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::fill_atom::value, b->address, std::uint8_t{9},
                            b->size));
  auto copied = ask<ticket>(rt().stream(0), cudactor::copy_atom::value, c->address, b->address,
                            std::uint64_t{16}, gpu::copy_kind::device_to_device);
  BOOST_REQUIRE(copied);
  BOOST_REQUIRE(ask<completion>(rt().stream(0), cudactor::await_atom::value, copied->point));
  const auto copied_bytes = read_back(*c, 17);
  BOOST_TEST(copied_bytes[15] == 9);
  BOOST_TEST(copied_bytes[16] == 7);
}

BOOST_AUTO_TEST_CASE(a_prefetch_takes_its_place_in_order_and_needs_managed_memory) {
  auto managed = rt().device().allocate_managed(4096);
  BOOST_REQUIRE(managed);
  const auto address =
      static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(managed->data()));
  gate g;
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::submit_atom::value, g.hold()));
  auto t = ask<ticket>(rt().stream(0), cudactor::prefetch_atom::value, address, std::uint64_t{4096},
                       gpu::prefetch_target::device);
  BOOST_REQUIRE_MESSAGE(t, why(t));
  auto st = ask<cudactor::stream_status>(rt().stream(0), cudactor::status_atom::value);
  BOOST_REQUIRE(st);
  BOOST_TEST(st->completed < t->point);  // behind the held work
  g.open();
  auto done = ask<completion>(rt().stream(0), cudactor::await_atom::value, t->point);
  BOOST_TEST(done, why(done));

  // Device memory is refused when the prefetch is launched: the awaiter hears why.
  auto device_memory =
      ask<cudactor::buffer_ref>(rt().stream(0), cudactor::alloc_atom::value, std::uint64_t{4096});
  BOOST_REQUIRE(device_memory);
  auto bad = ask<ticket>(rt().stream(0), cudactor::prefetch_atom::value, device_memory->address,
                         std::uint64_t{4096}, gpu::prefetch_target::host);
  BOOST_REQUIRE(bad);
  auto refused = ask<completion>(rt().stream(0), cudactor::await_atom::value, bad->point);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(render(refused.error()).find("managed") != std::string::npos, render(refused.error()));
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::free_atom::value, *device_memory));
  // Nothing to prefetch is refused at once.
  auto empty = ask<ticket>(rt().stream(0), cudactor::prefetch_atom::value, address,
                           std::uint64_t{0}, gpu::prefetch_target::device);
  BOOST_TEST((empty.error() == errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(a_callback_runs_once_the_stream_reaches_it) {
  gate g;
  auto called = std::make_shared<std::promise<std::string>>();
  auto result = called->get_future();
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::submit_atom::value, g.hold()));
  auto t = ask<ticket>(rt().stream(0), cudactor::callback_atom::value,
                       cudactor::stream_callback{[called](const caf::error& err) {
                         called->set_value(err ? "error" : "ok");
                       }});
  BOOST_REQUIRE(t);
  BOOST_TEST((result.wait_for(20ms) == std::future_status::timeout));
  g.open();
  BOOST_REQUIRE((result.wait_for(10s) == std::future_status::ready));
  BOOST_TEST(result.get() == "ok");
}

// The poller's report can be in the mailbox behind a shutdown: the actor has answered every
// request and given back the records of its points in flight, and must take the report as
// the nothing it now is (it once took records it no longer had).
BOOST_AUTO_TEST_CASE(a_report_behind_a_shutdown_is_ignored) {
  gate g;
  ticket last;
  BOOST_REQUIRE(ask<ticket>(rt().stream(0), cudactor::submit_atom::value, g.hold()));
  for (int i = 0; i < 3; ++i) {
    auto t = ask<ticket>(rt().stream(0), cudactor::submit_atom::value, noop());
    BOOST_REQUIRE(t);
    last = *t;
  }
  auto waited =
      self()->request(rt().stream(0), caf::infinite, cudactor::await_atom::value, last.point);
  self()->send(rt().stream(0), cudactor::shutdown_atom::value);
  cudactor::completion_batch late;
  late.stream = last.stream;
  late.reached = last.point;
  self()->send(rt().stream(0), cudactor::progress_atom::value, late, std::uint64_t{1});
  auto st = ask<cudactor::stream_status>(rt().stream(0), cudactor::status_atom::value);
  BOOST_REQUIRE_MESSAGE(st, why(st));
  BOOST_TEST(st->completed == 0u);  // the gate holds every point
  BOOST_TEST(st->awaiting == 0u);
  // The await was refused by the shutdown, once.
  int answers = 0;
  waited.receive([&](const completion&) { ++answers; },
                 [&](const caf::error& err) {
                   ++answers;
                   BOOST_TEST((err == errc::shutting_down), render(err));
                 });
  BOOST_TEST(answers == 1);
  g.open();
}

BOOST_AUTO_TEST_CASE(subscribers_hear_completions_in_batches) {
  struct seen {
    std::mutex mutex;
    std::uint64_t reached = 0;
    std::size_t batches = 0;
    std::size_t failures = 0;
  };
  auto log = std::make_shared<seen>();
  auto listener = rt().system().spawn([log](cudactor::completion_listener::pointer)
                                          -> cudactor::completion_listener::behavior_type {
    return {[log](const cudactor::completion_batch& b) {
      std::lock_guard<std::mutex> lock{log->mutex};
      log->reached = std::max(log->reached, b.reached);
      ++log->batches;
      log->failures += b.failures.size();
    }};
  });
  BOOST_REQUIRE(!tell(rt().stream(0), cudactor::subscribe_atom::value, listener));
  std::vector<work> batch(500, noop());
  batch[100] = failing("one of many");
  auto tickets = ask<std::vector<ticket>>(rt().stream(0), cudactor::submit_atom::value, batch);
  BOOST_REQUIRE(tickets);
  BOOST_REQUIRE(
      ask<completion>(rt().stream(0), cudactor::await_atom::value, tickets->back().point));
  for (int i = 0; i < 100; ++i) {
    {
      std::lock_guard<std::mutex> lock{log->mutex};
      if (log->reached == tickets->back().point) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  std::lock_guard<std::mutex> lock{log->mutex};
  BOOST_TEST(log->reached == tickets->back().point);
  BOOST_TEST(log->failures == 1u);
  BOOST_TEST(log->batches >= 1u);
  BOOST_TEST(log->batches < 500u);  // batched, not one message per operation
  caf::anon_send_exit(listener, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_thousand_concurrent_clients_on_one_stream) {
  constexpr int clients = 1000;
  auto answered = std::make_shared<std::atomic<int>>(0);
  auto errors = std::make_shared<std::atomic<int>>(0);
  const auto s = rt().stream(0);
  for (int i = 0; i < clients; ++i) {
    rt().system().spawn([=](caf::event_based_actor* client) {
      client->request(s, 10s, cudactor::submit_atom::value, noop())
          .then(
              [=](const ticket& t) {
                client->request(s, 10s, cudactor::await_atom::value, t.point)
                    .then([=](const completion&) { answered->fetch_add(1); },
                          [=](caf::error&) { errors->fetch_add(1); });
              },
              [=](caf::error&) { errors->fetch_add(1); });
    });
  }
  for (int i = 0; i < 1000 && answered->load() + errors->load() < clients; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  BOOST_TEST(answered->load() == clients);
  BOOST_TEST(errors->load() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
