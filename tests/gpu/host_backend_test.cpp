// The host backend: the shared conformance checks, then what only CPU threads can show
// directly (timestamps taken inside the work, worker counts, priorities).
#define BOOST_TEST_MODULE host_backend
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/host_target.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;
using conformance::make_event;
using conformance::make_stream;
using clock_type = std::chrono::steady_clock;

namespace {

// Spins until `flag` is set or `limit` passes; answers whether it was set.
bool spin_until(const std::atomic<bool>& flag, std::chrono::milliseconds limit = 5s) {
  const auto deadline = clock_type::now() + limit;
  while (!flag.load()) {
    if (clock_type::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(conformance_on_host)
CUDACTOR_CONFORMANCE_CASES(two_worker_host)
BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(host_semantics, two_worker_host)

BOOST_AUTO_TEST_CASE(it_describes_itself_as_a_host_device) {
  BOOST_TEST(backend().kind() == gpu::backend_kind::host);
  BOOST_TEST(host().workers() == 2u);
  BOOST_TEST(backend().device().total_memory == std::size_t{1} << 30);
  BOOST_TEST(backend().device().name.find("2 workers") != std::string::npos);
  auto s = make_stream(backend());
  CUDACTOR_CHECK_ERRC(backend().native_handle(s).error(), gpu::status_code::not_supported);
}

BOOST_AUTO_TEST_CASE(work_on_one_stream_runs_in_submission_order) {
  auto s = make_stream(backend(), "ordered");
  constexpr int n = 2000;
  std::vector<int> order;
  std::vector<clock_type::time_point> stamps;
  std::atomic<int> wrong_context{0};
  order.reserve(n);
  stamps.reserve(n);
  for (int i = 0; i < n; ++i) {
    CUDACTOR_REQUIRE_OK(backend().enqueue(s, [&, i](const gpu::launch_context& context) {
      // No Boost.Test assertions here: it is not thread-safe, and this runs on a worker.
      if (context.kind() != gpu::backend_kind::host || context.native_stream() != nullptr) {
        ++wrong_context;
      }
      order.push_back(i);  // only this stream's worker touches it: in order, one at a time
      stamps.push_back(clock_type::now());
      return gpu::status{};
    }));
  }
  CUDACTOR_REQUIRE_OK(backend().synchronize(s));
  BOOST_TEST(wrong_context.load() == 0);
  BOOST_REQUIRE(order.size() == std::size_t{n});
  BOOST_TEST(std::is_sorted(order.begin(), order.end()));
  BOOST_TEST(std::is_sorted(stamps.begin(), stamps.end()));
}

BOOST_AUTO_TEST_CASE(work_on_different_streams_runs_concurrently) {
  auto a = make_stream(backend(), "a");
  auto b = make_stream(backend(), "b");
  std::atomic<bool> a_running{false};
  std::atomic<bool> b_running{false};
  std::atomic<bool> a_saw_b{false};
  std::atomic<bool> b_saw_a{false};
  // Each waits, inside its work, for the other to be running: only true concurrency passes.
  CUDACTOR_REQUIRE_OK(backend().enqueue(a, [&](const gpu::launch_context&) {
    a_running = true;
    a_saw_b = spin_until(b_running);
    return gpu::status{};
  }));
  CUDACTOR_REQUIRE_OK(backend().enqueue(b, [&](const gpu::launch_context&) {
    b_running = true;
    b_saw_a = spin_until(a_running);
    return gpu::status{};
  }));
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  BOOST_TEST(a_saw_b.load());
  BOOST_TEST(b_saw_a.load());
}

BOOST_AUTO_TEST_CASE(work_after_a_cross_stream_wait_starts_after_the_awaited_work_ends) {
  constexpr int rounds = 50;
  auto producer = make_stream(backend(), "producer");
  auto consumer = make_stream(backend(), "consumer");
  std::vector<clock_type::time_point> produced(rounds);
  std::vector<clock_type::time_point> consumed(rounds);
  std::vector<gpu::event> events;
  for (int r = 0; r < rounds; ++r) {
    events.push_back(make_event(backend()));
    CUDACTOR_REQUIRE_OK(backend().enqueue(producer, [&, r](const gpu::launch_context&) {
      std::this_thread::sleep_for(200us);  // a "kernel" that takes a while
      produced[r] = clock_type::now();
      return gpu::status{};
    }));
    CUDACTOR_REQUIRE_OK(backend().record(events.back(), producer));
    CUDACTOR_REQUIRE_OK(backend().wait(consumer, events.back()));
    CUDACTOR_REQUIRE_OK(backend().enqueue(consumer, [&, r](const gpu::launch_context&) {
      consumed[r] = clock_type::now();
      return gpu::status{};
    }));
  }
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  int violations = 0;
  for (int r = 0; r < rounds; ++r)
    if (consumed[r] < produced[r]) ++violations;
  BOOST_TEST(violations == 0);
}

// A batch hands its burst to the workers when it ends: nothing of it starts before, nested
// batches hand over at the outermost end, and the order on each stream is kept.
BOOST_AUTO_TEST_CASE(a_batch_starts_its_work_when_it_ends) {
  auto a = make_stream(backend(), "a");
  auto b = make_stream(backend(), "b");
  std::mutex mutex;
  std::vector<int> ran;
  auto log = [&](int i) {
    return [&, i](const gpu::launch_context&) {
      std::lock_guard<std::mutex> lock{mutex};
      ran.push_back(i);
      return gpu::status{};
    };
  };
  gpu::timeline_point last_a = 0;
  {
    gpu::batch_scope outer{backend()};
    CUDACTOR_REQUIRE_OK(backend().enqueue(a, log(1)));
    {
      gpu::batch_scope inner{backend()};
      CUDACTOR_REQUIRE_OK(backend().enqueue(b, log(2)));
      CUDACTOR_REQUIRE_OK(backend().enqueue(a, log(3)));
    }
    auto point = backend().signal(a);
    BOOST_REQUIRE(point.ok());
    last_a = point.value();
    std::this_thread::sleep_for(20ms);  // two idle workers had all the time they need
    std::lock_guard<std::mutex> lock{mutex};
    BOOST_TEST(ran.empty(), "work of an open batch started");
  }
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  BOOST_REQUIRE(ran.size() == 3u);
  const auto at = [&](int i) { return std::find(ran.begin(), ran.end(), i) - ran.begin(); };
  BOOST_TEST(at(1) < at(3));  // stream a's order
  auto line = backend().timeline_of(a);
  BOOST_REQUIRE(line.ok());
  BOOST_TEST(line.value()->query(last_a).ready());
}

// A thread that blocks inside its batch hands the batch over first, or it would wait for work
// it deferred itself: synchronize (one stream, all of them) and a timeline's wait.
BOOST_AUTO_TEST_CASE(blocking_inside_a_batch_hands_it_over_first) {
  auto s = make_stream(backend(), "s");
  std::atomic<int> ran{0};
  auto count = [&](const gpu::launch_context&) {
    ++ran;
    return gpu::status{};
  };
  gpu::batch_scope batch{backend()};
  CUDACTOR_REQUIRE_OK(backend().enqueue(s, count));
  CUDACTOR_REQUIRE_OK(backend().synchronize(s));
  BOOST_TEST(ran.load() == 1);
  CUDACTOR_REQUIRE_OK(backend().enqueue(s, count));
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  BOOST_TEST(ran.load() == 2);
  CUDACTOR_REQUIRE_OK(backend().enqueue(s, count));
  auto point = backend().signal(s);
  BOOST_REQUIRE(point.ok());
  auto line = backend().timeline_of(s);
  BOOST_REQUIRE(line.ok());
  CUDACTOR_REQUIRE_OK(line.value()->wait(point.value(), 5000ms));
  BOOST_TEST(ran.load() == 3);
}

// A thread's batch is one backend's: another backend's work inside it is not deferred.
BOOST_AUTO_TEST_CASE(a_batch_defers_only_its_own_backends_work) {
  gpu::host_backend other{gpu::host_backend_options{1, std::size_t{1} << 20, "other"}};
  auto mine = make_stream(backend(), "mine");
  auto theirs = make_stream(other, "theirs");
  std::atomic<bool> mine_ran{false}, theirs_ran{false};
  {
    gpu::batch_scope batch{backend()};
    BOOST_TEST(!other.begin_batch());  // this thread's batch is the first backend's
    CUDACTOR_REQUIRE_OK(backend().enqueue(mine, [&](const gpu::launch_context&) {
      mine_ran = true;
      return gpu::status{};
    }));
    CUDACTOR_REQUIRE_OK(other.enqueue(theirs, [&](const gpu::launch_context&) {
      theirs_ran = true;
      return gpu::status{};
    }));
    BOOST_TEST(spin_until(theirs_ran));
    BOOST_TEST(!mine_ran.load());
  }
  CUDACTOR_REQUIRE_OK(backend().synchronize(mine));
  BOOST_TEST(mine_ran.load());
}

// What the barrier's device mode is checked with: only calls that hold a host thread up
// count, device-side waits and queries do not.
BOOST_AUTO_TEST_CASE(host_waits_count_the_calls_that_hold_a_host_thread) {
  auto a = make_stream(backend(), "a");
  auto b = make_stream(backend(), "b");
  const std::uint64_t start = host().host_waits();
  CUDACTOR_REQUIRE_OK(
      backend().enqueue(a, [](const gpu::launch_context&) { return gpu::status{}; }));
  auto point = backend().signal(a);
  BOOST_REQUIRE(point.ok());
  CUDACTOR_REQUIRE_OK(backend().wait_point(b, a, point.value()));
  auto line = backend().timeline_of(a);
  BOOST_REQUIRE(line.ok());
  (void)line.value()->query(point.value());
  BOOST_TEST(host().host_waits() == start);
  CUDACTOR_REQUIRE_OK(backend().synchronize(a));
  BOOST_TEST(host().host_waits() == start + 1);
  CUDACTOR_REQUIRE_OK(line.value()->wait(point.value(), 1000ms));
  BOOST_TEST(host().host_waits() == start + 2);
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  BOOST_TEST(host().host_waits() == start + 3);
}

BOOST_AUTO_TEST_CASE(thirty_two_streams_waiting_on_each_other_finish_on_two_workers) {
  constexpr int streams = 32;
  constexpr int rounds = 20;
  std::vector<gpu::stream> s;
  std::vector<gpu::event> e;
  for (int i = 0; i < streams; ++i) {
    s.push_back(make_stream(backend(), "ring-" + std::to_string(i)));
    e.push_back(make_event(backend()));
  }
  std::vector<std::atomic<int>> progress(streams);
  auto held = hold(s.back());  // the last stream starts late: everyone else must park
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < streams; ++i) {
      CUDACTOR_REQUIRE_OK(backend().enqueue(s[i], [&, i](const gpu::launch_context&) {
        progress[i].fetch_add(1);
        return gpu::status{};
      }));
      CUDACTOR_REQUIRE_OK(backend().record(e[i], s[i]));
    }
    // Each stream waits on its neighbour's newest point and on the last stream's.
    for (int i = 0; i < streams; ++i) {
      CUDACTOR_REQUIRE_OK(backend().wait(s[i], e[(i + 1) % streams]));
      CUDACTOR_REQUIRE_OK(backend().wait(s[i], e[streams - 1]));
    }
  }
  std::this_thread::sleep_for(20ms);
  // Round 0 work of every stream but the held one may run; nothing past the first wait.
  for (int i = 0; i < streams - 1; ++i) BOOST_TEST(progress[i].load() <= 1);
  held->release();
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  for (int i = 0; i < streams; ++i) BOOST_TEST(progress[i].load() == rounds);
}

BOOST_AUTO_TEST_CASE(higher_priority_streams_are_served_first) {
  host_target single{gpu::host_backend_options{1, std::size_t{1} << 20, "single"}};
  auto& b = single.backend();
  auto blocker = make_stream(b, "blocker");
  auto low = make_stream(b, "low", gpu::stream_priority::low);
  auto high = make_stream(b, "high", gpu::stream_priority::high);
  std::atomic<bool> blocker_running{false};
  std::atomic<bool> go{false};
  std::mutex mutex;
  std::vector<std::string> order;
  // Occupy the only worker so that both streams become ready while it is busy.
  CUDACTOR_REQUIRE_OK(b.enqueue(blocker, [&](const gpu::launch_context&) {
    blocker_running = true;
    return spin_until(go) ? gpu::status{} : gpu::status{gpu::status_code::timeout, "never released"};
  }));
  BOOST_REQUIRE(spin_until(blocker_running));
  auto note = [&](std::string who) {
    return [&, who](const gpu::launch_context&) {
      std::lock_guard<std::mutex> lock{mutex};
      order.push_back(who);
      return gpu::status{};
    };
  };
  CUDACTOR_REQUIRE_OK(b.enqueue(low, note("low")));
  CUDACTOR_REQUIRE_OK(b.enqueue(high, note("high")));
  go = true;
  CUDACTOR_REQUIRE_OK(b.synchronize());
  BOOST_TEST(order == (std::vector<std::string>{"high", "low"}), boost::test_tools::per_element());
}

// A worker takes a stream's whole queue at once and runs it without the lock. An operation
// that parks in the middle of what it took, and work enqueued while it is parked, must still
// run in submission order after the release.
BOOST_AUTO_TEST_CASE(order_holds_across_a_park_in_the_middle_of_a_taken_batch) {
  auto s = make_stream(backend(), "parked");
  std::vector<int> order;  // touched only by the stream's current worker
  std::atomic<int> ran{0};
  auto add = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      CUDACTOR_REQUIRE_OK(backend().enqueue(s, [&, i](const gpu::launch_context&) {
        order.push_back(i);
        ++ran;
        return gpu::status{};
      }));
    }
  };
  add(0, 100);
  auto held = hold(s);
  add(100, 200);  // taken with the hold, or queued behind it
  const auto deadline = clock_type::now() + 5s;
  while (ran.load() < 100 && clock_type::now() < deadline) std::this_thread::yield();
  add(200, 300);  // enqueued while the stream is parked
  std::this_thread::sleep_for(20ms);
  BOOST_TEST(ran.load() == 100);  // nothing passed the hold
  held->release();
  CUDACTOR_REQUIRE_OK(backend().synchronize(s));
  BOOST_REQUIRE(order.size() == 300u);
  for (int i = 0; i < 300; ++i) BOOST_REQUIRE(order[static_cast<std::size_t>(i)] == i);
}

BOOST_AUTO_TEST_CASE(a_held_or_slow_stream_does_not_hold_a_worker) {
  host_target single{gpu::host_backend_options{1, std::size_t{1} << 20, "single"}};
  auto& b = single.backend();
  auto stuck = make_stream(b, "stuck");
  auto slow = make_stream(b, "slow");
  auto free_stream = make_stream(b, "free");
  auto held = single.hold(stuck);
  CUDACTOR_REQUIRE_OK(single.busy(slow, 10s));
  auto done = make_event(b);
  auto slow_done = make_event(b);
  CUDACTOR_REQUIRE_OK(b.record(slow_done, slow));
  CUDACTOR_REQUIRE_OK(
      b.enqueue(free_stream, [](const gpu::launch_context&) { return gpu::status{}; }));
  CUDACTOR_REQUIRE_OK(b.record(done, free_stream));
  // The only worker is free although one stream is held and one sleeps for ten seconds.
  CUDACTOR_REQUIRE_OK(b.synchronize(free_stream));
  BOOST_TEST(b.query(done).ready());
  BOOST_TEST(b.query(slow_done).state == gpu::event_state::not_ready);
  held->release();
  // Losing the device cuts the slow operation short instead of waiting ten seconds.
  single.host().lose_device("test over");
  BOOST_TEST(b.query(slow_done).failed());
}

BOOST_AUTO_TEST_CASE(many_threads_enqueueing_on_one_stream_keep_each_threads_order) {
  auto s = make_stream(backend(), "shared");
  constexpr int threads = 4;
  constexpr int per_thread = 500;
  std::vector<std::vector<int>> seen(threads);
  std::vector<std::thread> producers;
  std::atomic<int> refused{0};
  for (int t = 0; t < threads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        auto ok = backend().enqueue(s, [&seen, t, i](const gpu::launch_context&) {
          seen[t].push_back(i);
          return gpu::status{};
        });
        if (!ok.ok()) ++refused;
      }
    });
  }
  for (auto& p : producers) p.join();
  BOOST_TEST(refused.load() == 0);
  CUDACTOR_REQUIRE_OK(backend().synchronize(s));
  for (int t = 0; t < threads; ++t) {
    BOOST_TEST(seen[t].size() == std::size_t{per_thread});
    BOOST_TEST(std::is_sorted(seen[t].begin(), seen[t].end()));
  }
}

BOOST_AUTO_TEST_CASE(a_destroyed_stream_still_runs_what_was_enqueued) {
  auto s = make_stream(backend(), "short-lived");
  auto held = hold(s);
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) {
    CUDACTOR_REQUIRE_OK(backend().enqueue(s, [&](const gpu::launch_context&) {
      ++ran;
      return gpu::status{};
    }));
  }
  CUDACTOR_REQUIRE_OK(s.reset());
  held->release();
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  BOOST_TEST(ran.load() == 10);
}

BOOST_AUTO_TEST_CASE(the_memory_budget_is_enforced_and_freed_memory_returns_to_it) {
  host_target small{gpu::host_backend_options{2, 1 << 20, "small"}};
  auto& b = small.backend();
  auto s = make_stream(b);
  auto first = b.allocate(s, 600 << 10);
  BOOST_REQUIRE(first.ok());
  BOOST_TEST(small.host().memory_in_use() == std::size_t{600 << 10});
  auto second = b.allocate(s, 600 << 10);
  CUDACTOR_CHECK_ERRC(second.error(), gpu::status_code::out_of_memory);
  BOOST_TEST(second.error().message().find("'small'") != std::string::npos);
  CUDACTOR_REQUIRE_OK(b.free_async(s, first.value()));
  CUDACTOR_REQUIRE_OK(b.synchronize(s));  // the free happens when the stream gets there
  BOOST_TEST(small.host().memory_in_use() == 0u);
  BOOST_TEST(b.allocate(s, 600 << 10).ok());
}

// A work's scratch is host memory it may write, under the same budget as allocations: in use
// while the work runs, back in the budget once it returned; more than is left is refused.
BOOST_AUTO_TEST_CASE(scratch_counts_against_the_memory_budget_while_its_work_runs) {
  host_target small{gpu::host_backend_options{2, 1 << 20, "small"}};
  auto& b = small.backend();
  auto s = make_stream(b);
  auto held = b.allocate(s, 600 << 10);
  BOOST_REQUIRE(held.ok());
  struct seen {
    std::size_t in_use = 0;
    int sum = 0;
    gpu::status over;
  };
  auto got = std::make_shared<seen>();
  gpu::host_backend* host = &small.host();
  CUDACTOR_REQUIRE_OK(b.enqueue(s, [got, host](const gpu::launch_context& on) {
    auto block = on.scratch(100 << 10);
    if (!block) return block.error();
    auto* ints = static_cast<int*>(block.value());
    for (int i = 0; i < 1000; ++i) ints[i] = i;
    for (int i = 0; i < 1000; ++i) got->sum += ints[i];
    got->in_use = host->memory_in_use();
    got->over = on.scratch(400 << 10).error();  // 700 KiB of 1 MiB in use
    return gpu::status{};
  }));
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  BOOST_TEST(got->sum == 999 * 1000 / 2);
  BOOST_TEST(got->in_use == std::size_t{700 << 10});
  CUDACTOR_CHECK_ERRC(got->over, gpu::status_code::out_of_memory);
  BOOST_TEST(got->over.message().find("scratch") != std::string::npos, got->over.to_string());
  BOOST_TEST(small.host().memory_in_use() == std::size_t{600 << 10});
}

// An option of 0 values in flight means 1, on both backends, and max_in_flight() says the bound
// that is enforced (it said 0 while 1 was enforced).
BOOST_AUTO_TEST_CASE(a_bound_of_zero_values_in_flight_is_one) {
  gpu::host_backend_options options;
  options.max_in_flight = 0;
  host_target one{options};
  auto& b = one.backend();
  BOOST_TEST(b.max_in_flight() == 1u);
  auto s = make_stream(b);
  auto held = one.hold(s);
  BOOST_REQUIRE(b.signal(s).ok());
  CUDACTOR_CHECK_ERRC(b.signal(s).error(), gpu::status_code::resource_exhausted);
  held->release();
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  BOOST_TEST(b.signal(s).ok());
}

BOOST_AUTO_TEST_CASE(device_memory_must_be_the_backends_own) {
  auto s = make_stream(backend());
  std::vector<std::uint8_t> not_device(64);
  std::vector<std::uint8_t> host(64);
  CUDACTOR_CHECK_ERRC(
      backend().copy(s, not_device.data(), host.data(), 64, gpu::copy_kind::host_to_device),
      gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(backend().fill(s, not_device.data(), 0, 64), gpu::status_code::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
