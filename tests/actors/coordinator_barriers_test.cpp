// Barrier operations in the coordinator's graphs, on either backend: nothing after a barrier
// (by dependency or only by coming after it on a stream) starts before everything before it
// ended, by the times the work recorded where it ran, in device and host mode, with timing on
// and off; where it sat and when each stream arrived; streams named and refused; a barrier
// cancelled by a failed dependency gives its streams back; a barrier whose mark is reached
// before its pass's tickets come back.
#define BOOST_TEST_MODULE coordinator_barriers
#include "coordinator_fixture.hpp"

#include <limits>
#include <set>

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

namespace {

// Timing on: the stream actors hold work back while they fetch timing events.
struct four_timed_streams : coordinator_fixture {
  four_timed_streams()
      : coordinator_fixture({"--cudactor.streams=4", "--cudactor.coordinator.timing"}) {}
};

struct one_narrow_stream : coordinator_fixture {
  one_narrow_stream()
      : coordinator_fixture({"--cudactor.streams=1", "--cudactor.max-in-flight=2"}) {}
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(coordinator_barriers, four_streams)

namespace {

op_spec barrier_over(std::vector<stream_id> streams, barrier_mode mode) {
  op_spec b;
  b.type = op_type::barrier;
  b.description = "barrier";
  b.barrier.streams = std::move(streams);
  b.barrier.mode = mode;
  return b;
}


// Eight operations of 2 ms, two on each of the four streams, a barrier over all of them with
// no dependency, then eight short ones, two on each stream: one depends on the barrier, one
// does not (it is after it only by coming after it on its stream). Nothing after the barrier
// starts before everything before it ended, by the times the work recorded where it ran.
void a_barrier_orders_its_graph(coordinator_fixture& fx, barrier_mode mode) {
  constexpr std::size_t before = 8, after = 8;
  auto log = std::make_shared<work_log>(before + after);
  graph_spec g;
  for (std::size_t i = 0; i < before; ++i) {
    g.add(pinned_to(log->record(i, 2ms), static_cast<std::uint32_t>(i % 4)));
  }
  const auto b = g.add(barrier_over({}, mode));
  for (std::size_t j = 0; j < after; ++j) {
    std::vector<std::uint32_t> deps;
    if (j % 2 == 1) deps.push_back(b);
    g.add(pinned_to(log->record(before + j, 200us), static_cast<std::uint32_t>(j / 2)), deps);
  }
  auto ids = fx.ask<std::vector<op_id>>(fx.co(), submit_atom::value, std::move(g), fx.me());
  BOOST_REQUIRE_MESSAGE(ids, fx.why(ids));
  auto told = fx.collect(*ids);
  for (const auto& [id, n] : told) {
    BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << fx.render(n.cause));
  }
  std::int64_t last_end = 0, first_start = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 0; i < before; ++i) last_end = std::max(last_end, log->ended(i));
  std::set<std::uint32_t> after_streams;
  for (std::size_t j = 0; j < after; ++j) {
    first_start = std::min(first_start, log->started(before + j));
    after_streams.insert(told.at((*ids)[b + 1 + j].value).stream.value);
  }
  BOOST_TEST(last_end <= first_start);
  BOOST_TEST(after_streams.size() == 4u);  // work after it on every stream
  const op_notice& crossed = told.at((*ids)[b].value);
  BOOST_REQUIRE_EQUAL(crossed.arrivals.size(), 4u);
  std::set<std::uint32_t> members;
  for (const auto& a : crossed.arrivals) {
    members.insert(a.stream.value);
    BOOST_TEST(a.point != 0u);
    BOOST_TEST(a.arrived_ns != 0);  // seen reached, in either mode
    BOOST_TEST(!a.name.empty());
    auto status = fx.ask<stream_status>(fx.rt().stream(a.stream.value), status_atom::value);
    BOOST_REQUIRE(status);
    BOOST_TEST(a.name == status->name);  // the stream id names the stream actor it sat on
  }
  BOOST_TEST(members.size() == 4u);
  BOOST_TEST(crossed.stream == crossed.arrivals.front().stream);
  if (mode == barrier_mode::host) BOOST_TEST(crossed.point == crossed.arrivals.front().point);
  if (mode == barrier_mode::device) BOOST_TEST(crossed.point > crossed.arrivals.front().point);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_device_barrier_in_a_graph_orders_everything_on_its_streams) {
  a_barrier_orders_its_graph(*this, barrier_mode::device);
}

BOOST_AUTO_TEST_CASE(a_host_barrier_in_a_graph_orders_everything_and_says_when_each_arrived) {
  a_barrier_orders_its_graph(*this, barrier_mode::host);
}

BOOST_FIXTURE_TEST_CASE(a_barrier_orders_its_graph_with_timing_on, four_timed_streams) {
  a_barrier_orders_its_graph(*this, barrier_mode::device);
  a_barrier_orders_its_graph(*this, barrier_mode::host);
}

BOOST_AUTO_TEST_CASE(a_barrier_over_some_streams_leaves_the_others_free) {
  // Streams 0 and 1 held by a gate's work; a barrier over 2 and 3 crosses meanwhile.
  gate g;
  auto held0 = ask<ticket>(rt().stream(0), submit_atom::value, g.hold());
  BOOST_REQUIRE_MESSAGE(held0, why(held0));
  gate g1;
  auto held1 = ask<ticket>(rt().stream(1), submit_atom::value, g1.hold());
  BOOST_REQUIRE_MESSAGE(held1, why(held1));
  for (auto mode : {barrier_mode::device, barrier_mode::host}) {
    auto b = add(barrier_over({stream_id{3}, stream_id{2}}, mode));
    const auto n = told(b);
    BOOST_TEST((n.state == op_state::completed), render(n.cause));
    BOOST_REQUIRE_EQUAL(n.arrivals.size(), 2u);
    BOOST_TEST(n.arrivals[0].stream.value == 3u);  // in the order named
    BOOST_TEST(n.arrivals[1].stream.value == 2u);
    BOOST_TEST(n.arrivals[1].member == 1u);
  }
  g.open();
  g1.open();
}

BOOST_AUTO_TEST_CASE(a_barrier_is_refused_for_streams_it_cannot_span_and_with_work) {
  auto unknown = ask<op_id>(co(), register_atom::value,
                            barrier_over({stream_id{1}, stream_id{9}}, barrier_mode::device));
  BOOST_REQUIRE(!unknown);
  BOOST_TEST(unknown.error().code() == static_cast<std::uint8_t>(errc::invalid_argument));
  BOOST_TEST(render(unknown.error()).find("stream 9") != std::string::npos);
  graph_spec twice;
  twice.add(spec_of(noop()));
  twice.add(barrier_over({stream_id{2}, stream_id{2}}, barrier_mode::host), {0});
  auto refused = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(twice));
  BOOST_REQUIRE(!refused);
  BOOST_TEST(render(refused.error()).find("graph op 1") != std::string::npos);
  BOOST_TEST(render(refused.error()).find("twice") != std::string::npos);
  op_spec with_work = barrier_over({}, barrier_mode::device);
  with_work.body = noop();
  auto carried = ask<op_id>(co(), register_atom::value, std::move(with_work));
  BOOST_REQUIRE(!carried);
  BOOST_TEST(render(carried.error()).find("carries no work") != std::string::npos);
  BOOST_TEST(metrics().total == 0u);  // nothing registered
}

BOOST_AUTO_TEST_CASE(a_barrier_after_a_failure_is_cancelled_and_gives_its_streams_back) {
  auto log = std::make_shared<work_log>(2);
  graph_spec g;
  const auto bad_at = g.add(spec_of(log->record(0, 0us, true)));
  const auto b_at = g.add(barrier_over({}, barrier_mode::device));
  g.add(spec_of(noop()), {b_at});
  g.add(barrier_over({}, barrier_mode::host), {bad_at});
  auto graph = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
  BOOST_REQUIRE_MESSAGE(graph, why(graph));
  const op_id bad = (*graph)[0], b = (*graph)[1], dependent = (*graph)[2], b_deps = (*graph)[3];
  auto notices = collect(*graph);
  BOOST_TEST((notices.at(bad.value).state == op_state::failed));
  BOOST_TEST((notices.at(b.value).state == op_state::completed));  // no dependency on it
  BOOST_TEST((notices.at(dependent.value).state == op_state::completed));
  BOOST_TEST((notices.at(b_deps.value).state == op_state::cancelled));
  // Every stream is free again: work goes out on each.
  graph_spec later;
  for (std::size_t i = 0; i < 8; ++i) later.add(spec_of(log->record(1)));
  auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(later), me());
  BOOST_REQUIRE_MESSAGE(ids, why(ids));
  for (const auto& [id, n] : collect(*ids)) BOOST_TEST((n.state == op_state::completed));
  BOOST_TEST(metrics().live == 0u);
}

// An await of a barrier that runs past its limit says which of its streams it still waits
// for, as a barrier actor's synchronize does (one implementation).
BOOST_AUTO_TEST_CASE(an_await_on_a_barrier_names_the_streams_it_still_waits_for) {
  gate g;
  const op_id held = add(pinned_to(g.hold(), 1));
  const op_id b = add(barrier_over({stream_id{0}, stream_id{1}}, barrier_mode::host));
  auto late = ask<op_notice>(co(), await_atom::value, b, wait_limit{caf::timespan{50ms}, 0});
  BOOST_REQUIRE(!late);
  BOOST_TEST(late.error().code() == static_cast<std::uint8_t>(errc::timeout));
  const std::string text = render(late.error());
  BOOST_TEST(text.find("did not end in time") != std::string::npos, text);
  BOOST_TEST(text.find("1 of 2 streams did not arrive: 'stream-1' (passed point 0, the barrier "
                       "is at 2)") != std::string::npos,
             text);
  BOOST_TEST(text.find("'stream-0'") == std::string::npos, text);
  g.open();
  auto notices = collect({held, b});
  BOOST_TEST((notices.at(b.value).state == op_state::completed));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(narrow_stream, one_narrow_stream)

// A barrier's mark among operations reached before their pass's tickets came back (the
// stream's cap taken by work of someone else's, as in coordinator_test's narrow_stream): the
// barrier still sees its stream arrive, once.
BOOST_AUTO_TEST_CASE(a_barrier_whose_mark_was_reached_before_its_ticket_came_back_crosses) {
  for (auto mode : {barrier_mode::host, barrier_mode::device}) {
    auto log = std::make_shared<work_log>(3);
    gate g;
    auto held = ask<ticket>(rt().stream(0), submit_atom::value, g.hold());
    BOOST_REQUIRE_MESSAGE(held, why(held));
    graph_spec spec;
    spec.add(spec_of(log->record(0)));
    op_spec b;
    b.type = op_type::barrier;
    b.barrier.mode = mode;
    spec.add(std::move(b));
    spec.add(spec_of(log->record(2)), {1});
    auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(spec), me());
    BOOST_REQUIRE_MESSAGE(ids, why(ids));
    g.open();
    auto notices = collect(*ids);
    for (const auto& [id, n] : notices) {
      BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
    }
    const auto& crossed = notices.at((*ids)[1].value);
    BOOST_REQUIRE_EQUAL(crossed.arrivals.size(), 1u);
    BOOST_TEST(crossed.arrivals[0].point > held->point);
    BOOST_TEST(log->started(2) >= log->ended(0));
  }
}

BOOST_AUTO_TEST_SUITE_END()
