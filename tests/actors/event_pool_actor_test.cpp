#define BOOST_TEST_MODULE event_pool_actor
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "common/runtime_fixture.hpp"
#include "cudactor/messaging/errc.hpp"

using cudactor::errc;
using cudactor::event_lease;
using cudactor::pool_utilization;
namespace gpu = cudactor::gpu;

namespace {

struct pool_fixture : cudactor::test::runtime_fixture {
  pool_fixture()
      : runtime_fixture({"--cudactor.streams=1", "--cudactor.pool.max-events=16",
                         "--cudactor.pool.grow-batch=4", "--cudactor.event-batch=2"}) {}

  caf::expected<std::vector<event_lease>> acquire(gpu::event_kind kind, std::uint32_t n) {
    return ask<std::vector<event_lease>>(rt().event_pool(), cudactor::acquire_atom::value, kind, n);
  }
  caf::error release(std::vector<event_lease> refs) {
    return tell(rt().event_pool(), cudactor::release_atom::value, std::move(refs));
  }
  pool_utilization usage() {
    auto u = ask<pool_utilization>(rt().event_pool(), cudactor::utilization_atom::value);
    BOOST_REQUIRE(u);
    return *u;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(event_pool_actor, pool_fixture)

BOOST_AUTO_TEST_CASE(acquire_and_release_move_events_between_free_and_in_use) {
  const auto before = usage();
  auto leases = acquire(gpu::event_kind::timing, 3);
  BOOST_REQUIRE_MESSAGE(leases, why(leases));
  BOOST_TEST(leases->size() == 3u);
  for (const auto& e : *leases) BOOST_TEST((e.kind == gpu::event_kind::timing));
  auto during = usage();
  BOOST_TEST(during.in_use == before.in_use + 3);
  BOOST_TEST(during.capacity == 16u);
  BOOST_TEST(!release(*leases));
  auto after = usage();
  BOOST_TEST(after.in_use == before.in_use);
  BOOST_TEST(after.timing_available >= 3u);
}

BOOST_AUTO_TEST_CASE(the_pool_grows_to_its_maximum_then_says_exhausted) {
  std::vector<event_lease> held;
  for (;;) {
    auto more = acquire(gpu::event_kind::regular, 1);
    if (!more) {
      BOOST_TEST((more.error() == errc::pool_exhausted));
      BOOST_TEST(render(more.error()).find("maximum of 16") != std::string::npos);
      break;
    }
    held.insert(held.end(), more->begin(), more->end());
    BOOST_REQUIRE(held.size() <= 16u);
  }
  BOOST_TEST(usage().in_use == 16u);
  // All or none: a request larger than what is left gets nothing.
  BOOST_TEST(!release({held.back()}));
  held.pop_back();
  BOOST_TEST((acquire(gpu::event_kind::regular, 2).error() == errc::pool_exhausted));
  BOOST_TEST(acquire(gpu::event_kind::regular, 1));
  BOOST_TEST((acquire(gpu::event_kind::regular, 0).error() == errc::invalid_argument));
  BOOST_TEST((acquire(gpu::event_kind::regular, 17).error() == errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(stale_and_double_releases_are_refused_by_generation) {
  auto first = acquire(gpu::event_kind::regular, 1);
  BOOST_REQUIRE(first);
  const event_lease old = first->front();
  BOOST_TEST(!release({old}));
  auto twice = release({old});
  BOOST_TEST((twice == errc::stale_event));
  BOOST_TEST(render(twice).find("already released") != std::string::npos);
  // The slot is leased again under a new generation; the old ref stays stale.
  std::vector<event_lease> again;
  for (int i = 0; i < 8; ++i) {
    auto e = acquire(gpu::event_kind::regular, 1);
    BOOST_REQUIRE(e);
    again.push_back(e->front());
  }
  bool reused = false;
  for (const auto& e : again) reused = reused || (e.slot == old.slot);
  BOOST_REQUIRE(reused);
  auto stale = release({old});
  BOOST_TEST((stale == errc::stale_event));
  BOOST_TEST(render(stale).find("stale") != std::string::npos);
  // One bad ref refuses the whole call; the good ones stay leased.
  const auto in_use = usage().in_use;
  std::vector<event_lease> mixed = again;
  mixed.push_back(old);
  BOOST_TEST((release(mixed) == errc::stale_event));
  BOOST_TEST(usage().in_use == in_use);
  BOOST_TEST((release({again[0], again[0]}) == errc::stale_event));
  BOOST_TEST(!release(again));
}

BOOST_AUTO_TEST_CASE(stream_actors_lease_in_batches_not_per_record) {
  std::vector<event_lease> recorded;
  for (int i = 0; i < 6; ++i) {
    auto e = ask<event_lease>(rt().stream(0), cudactor::record_atom::value, gpu::event_kind::regular);
    BOOST_REQUIRE_MESSAGE(e, why(e));
    recorded.push_back(*e);
  }
  for (std::size_t i = 1; i < recorded.size(); ++i) {
    BOOST_TEST(recorded[i].point == recorded[i - 1].point);  // a record takes no point
    BOOST_TEST(!recorded[i].same_lease(recorded[i - 1]));
  }
  BOOST_TEST(!release(recorded));
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// A pool that forgets its spare events after 100 ms without an acquire, keeping 2 per kind.
struct shrinking_pool : pool_fixture {
  shrinking_pool() {
    stop();  // the base runtime, replaced by one with a short idle period
    start({"--cudactor.streams=1", "--cudactor.pool.max-events=64", "--cudactor.pool.grow-batch=16",
           "--cudactor.event-batch=2", "--cudactor.pool.keep-free=2",
           "--cudactor.pool.idle-period=100ms"});
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(the_pool_shrinks_to_keep_free_after_an_idle_period, shrinking_pool) {
  auto leases = acquire(gpu::event_kind::regular, 40);
  BOOST_REQUIRE_MESSAGE(leases, why(leases));
  auto timing = acquire(gpu::event_kind::timing, 20);
  BOOST_REQUIRE_MESSAGE(timing, why(timing));
  const auto in_use = usage().in_use;
  BOOST_TEST(!release(*leases));
  BOOST_TEST(!release(*timing));
  const auto released = usage();
  BOOST_TEST(released.available >= 40u);
  BOOST_TEST(released.timing_available >= 20u);
  BOOST_TEST(released.in_use == in_use - 60);
  // Acquires keep it from shrinking: one every 30 ms for 300 ms, three idle periods.
  for (int i = 0; i < 10; ++i) {
    auto one = acquire(gpu::event_kind::regular, 1);
    BOOST_REQUIRE(one);
    BOOST_TEST(!release(*one));
    std::this_thread::sleep_for(std::chrono::milliseconds{30});
  }
  BOOST_TEST(usage().available >= 40u);
  // Then idle: it shrinks within a few periods (bounded wait; a loaded machine is slow).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  pool_utilization now = usage();
  while ((now.available > 2 || now.timing_available > 2) &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
    now = usage();
  }
  BOOST_TEST(now.available == 2u);
  BOOST_TEST(now.timing_available == 2u);
  BOOST_TEST(now.in_use == in_use - 60);  // leased events are never touched
  // And it grows again on demand.
  auto again = acquire(gpu::event_kind::regular, 30);
  BOOST_REQUIRE_MESSAGE(again, why(again));
  BOOST_TEST(!release(*again));
}

namespace {

// A pool made up front: 4 regular and 8 timing events of at most 12, so it cannot grow.
struct sized_pool : pool_fixture {
  sized_pool() {
    stop();
    start({"--cudactor.streams=1", "--cudactor.pool.max-events=12", "--cudactor.pool.grow-batch=4",
           "--cudactor.pool.regular=4",
           "--cudactor.pool.timing=8", "--cudactor.event-batch=2", "--cudactor.pool.keep-free=0",
           "--cudactor.pool.idle-period=50ms"});
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(events_made_up_front_and_timing_ones_lent_for_regular_requests,
                        sized_pool) {
  // Made up front (the stream actor may have leased a batch of each kind meanwhile).
  auto start = usage();
  BOOST_TEST(start.available + start.timing_available + start.in_use == 12u);
  BOOST_TEST(start.timing_lent == 0u);
  // Every regular event first, then timing events on loan: the refs say timing, and
  // they go back to the timing events.
  const auto regular_free = static_cast<std::uint32_t>(start.available);
  auto asked = acquire(gpu::event_kind::regular, regular_free + 3);
  BOOST_REQUIRE_MESSAGE(asked, why(asked));
  std::size_t timing_refs = 0;
  for (const auto& e : *asked) timing_refs += e.kind == gpu::event_kind::timing ? 1 : 0;
  BOOST_TEST(timing_refs == 3u);
  auto during = usage();
  BOOST_TEST(during.timing_lent == 3u);
  BOOST_TEST(during.available == 0u);
  BOOST_TEST(during.timing_available == start.timing_available - 3);
  // Never the other way round: a timing request beyond the timing events fails though
  // regular ones are free.
  auto regular_one = std::find_if(asked->begin(), asked->end(), [](const event_lease& e) {
    return e.kind == gpu::event_kind::regular;
  });
  BOOST_REQUIRE(regular_one != asked->end());
  BOOST_TEST(!release({*regular_one}));  // a regular one back
  asked->erase(regular_one);
  auto too_many = acquire(gpu::event_kind::timing,
                          static_cast<std::uint32_t>(during.timing_available + 1));
  BOOST_REQUIRE(!too_many);
  BOOST_TEST((too_many.error() == errc::pool_exhausted));
  BOOST_TEST(!release(*asked));
  auto after = usage();
  BOOST_TEST(after.timing_lent == 0u);
  BOOST_TEST(after.timing_available == start.timing_available);
  BOOST_TEST(after.available == start.available);
  // Idle: the pool keeps what it made up front, whatever keep-free says.
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  auto idle = usage();
  BOOST_TEST(idle.available + idle.timing_available + idle.in_use == 12u);
}

BOOST_AUTO_TEST_CASE(up_front_events_over_the_maximum_are_refused_by_name) {
  cudactor::runtime_config config;
  BOOST_REQUIRE(!config.parse(std::vector<std::string>{
      cudactor::test::backend_option(), "--cudactor.metrics.no-exposer",
      "--cudactor.pool.max-events=8", "--cudactor.pool.grow-batch=4", "--cudactor.pool.regular=4",
      "--cudactor.pool.timing=5"}));
  auto settings = config.runtime_settings();
  BOOST_REQUIRE(!settings.ok());
  BOOST_TEST(settings.error().message().find("cudactor.pool.timing") != std::string::npos);
}
