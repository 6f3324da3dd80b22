// Where an operation may run (op_placement, actors/coordinator/coordinator_state.cpp's place()):
// on a stream it names, waiting for room there; only on streams of its priority class and
// role (strict); by a strategy of its own; and the stream the coordinator would choose now
// (choose_atom). Four streams, the first high priority, the last low: roles compute, compute,
// memory, coordination (actors/coordinator/stream_pool.cpp).
#define BOOST_TEST_MODULE coordinator_placement
#include "coordinator_fixture.hpp"

#include <set>

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

namespace {

struct placed_streams : coordinator_fixture {
  placed_streams()
      : coordinator_fixture({"--cudactor.streams=4", "--cudactor.high-priority-streams=1",
                             "--cudactor.low-priority-streams=1", "--cudactor.max-in-flight=2",
                             "--cudactor.coordinator.strategy=load_balanced"}) {}
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(coordinator_placement, placed_streams)

BOOST_AUTO_TEST_CASE(an_operation_that_names_its_stream_runs_there_and_waits_for_room) {
  // Stream 2 is held by two gates (its cap): the third pinned op waits, though three other
  // streams are free, and runs there once a gate opens.
  gate a, b;
  auto held_a = add(pinned_to(a.hold(), 2));
  auto held_b = add(pinned_to(b.hold(), 2));
  auto waiting = add(pinned_to(noop(), 2));
  std::this_thread::sleep_for(50ms);
  auto info = ask<op_info>(co(), describe_atom::value, waiting);
  BOOST_REQUIRE_MESSAGE(info, why(info));
  // Taken from the ready queue but held back for its stream: not on any stream.
  BOOST_TEST(!info->on_stream);
  BOOST_TEST((info->state == op_state::ready || info->state == op_state::running));
  a.open();
  b.open();
  auto notices = collect({held_a, held_b, waiting});
  for (const auto& [id, n] : notices) {
    BOOST_TEST((n.state == op_state::completed));
    BOOST_TEST(n.stream.value == 2u);
  }
  // The notice's stream is the runtime's: the stream actor there ran it.
  auto status = ask<stream_status>(rt().stream(2), status_atom::value);
  BOOST_REQUIRE(status);
  BOOST_TEST(status->completed >= notices.at(waiting.value).point);
}

BOOST_AUTO_TEST_CASE(strict_operations_keep_to_their_class_and_role) {
  // High priority, compute: only stream 0 (high, compute). Low priority, mixed: only stream 3.
  std::vector<op_id> high, low;
  for (int i = 0; i < 12; ++i) {
    auto h = spec_of(noop(), {}, op_priority::high, op_workload::compute);
    h.placement.strict = true;
    high.push_back(add(std::move(h)));
    auto l = spec_of(noop(), {}, op_priority::cleanup, op_workload::mixed);
    l.placement.strict = true;
    low.push_back(add(std::move(l)));
  }
  std::vector<op_id> all = high;
  all.insert(all.end(), low.begin(), low.end());
  auto notices = collect(all);
  for (op_id id : high) BOOST_TEST(notices.at(id.value).stream.value == 0u);
  for (op_id id : low) BOOST_TEST(notices.at(id.value).stream.value == 3u);
  // Without strict, the same ops spread (load_balanced picks any stream with room).
  auto log = std::make_shared<work_log>(24);
  std::vector<op_id> loose;
  for (std::size_t i = 0; i < 24; ++i) {
    loose.push_back(add(spec_of(log->record(i, 200us), {}, op_priority::high)));
  }
  std::set<std::uint32_t> used;
  for (const auto& [id, n] : collect(loose)) used.insert(n.stream.value);
  BOOST_TEST(used.size() > 1u);
}

BOOST_AUTO_TEST_CASE(placements_no_stream_can_satisfy_are_refused_by_name) {
  auto nowhere = pinned_to(noop(), 9);
  auto refused = ask<op_id>(co(), register_atom::value, nowhere);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.error().code() == static_cast<std::uint8_t>(errc::invalid_argument));
  BOOST_TEST(render(refused.error()).find("stream 9") != std::string::npos, render(refused.error()));
  // High priority and memory: no stream is both (stream 0 is compute).
  auto strict = spec_of(noop(), {}, op_priority::critical, op_workload::memory);
  strict.placement.strict = true;
  auto no_class = ask<op_id>(co(), register_atom::value, strict);
  BOOST_REQUIRE(!no_class);
  BOOST_TEST(render(no_class.error()).find("strict") != std::string::npos);
  // In a graph: the graph is refused whole, naming the op.
  graph_spec g;
  g.add(spec_of(noop()));
  g.add(pinned_to(noop(), 4));
  auto graph = ask<std::vector<op_id>>(co(), submit_atom::value, g);
  BOOST_REQUIRE(!graph);
  BOOST_TEST(render(graph.error()).find("graph op 1") != std::string::npos);
  // A barrier takes no placement.
  op_spec barrier;
  barrier.type = op_type::barrier;
  barrier.placement.strict = true;
  BOOST_TEST(!ask<op_id>(co(), register_atom::value, barrier));
  // An out-of-range strategy is refused with the other enums.
  auto odd = spec_of(noop());
  odd.placement.own_strategy = true;
  odd.placement.strategy = static_cast<pool_strategy>(9);
  auto bad = ask<op_id>(co(), register_atom::value, odd);
  BOOST_REQUIRE(!bad);
  BOOST_TEST(render(bad.error()).find("pool_strategy") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_operation_may_bring_its_own_strategy) {
  // The coordinator balances load; these ops ask for the priority strategy, which puts
  // critical work on the high-priority stream while it has room.
  std::vector<op_id> ids;
  for (int i = 0; i < 2; ++i) {
    auto s = spec_of(noop(), {}, op_priority::critical, op_workload::mixed);
    s.placement.own_strategy = true;
    s.placement.strategy = pool_strategy::priority;
    ids.push_back(add(std::move(s)));
  }
  for (const auto& [id, n] : collect(ids)) BOOST_TEST(n.stream.value == 0u);
}

BOOST_AUTO_TEST_CASE(the_stream_to_use_now_is_one_call) {
  auto high = ask<stream_id>(co(), choose_atom::value, op_priority::critical, op_workload::mixed);
  BOOST_REQUIRE_MESSAGE(high, why(high));
  BOOST_TEST(high->value < 4u);
  // Every stream at its cap: still an answer, the least loaded of the class (stream 3 is the
  // only low one), never a wait.
  std::vector<gate> gates(8);
  std::vector<op_id> held;
  for (std::uint32_t i = 0; i < 8; ++i) held.push_back(add(pinned_to(gates[i].hold(), i / 2)));
  std::this_thread::sleep_for(50ms);
  auto low = ask<stream_id>(co(), choose_atom::value, op_priority::low, op_workload::compute);
  BOOST_REQUIRE_MESSAGE(low, why(low));
  BOOST_TEST(low->value == 3u);
  auto wrong = ask<stream_id>(co(), choose_atom::value, static_cast<op_priority>(42),
                              op_workload::compute);
  BOOST_REQUIRE(!wrong);
  BOOST_TEST(render(wrong.error()).find("op_priority") != std::string::npos);
  for (auto& g : gates) g.open();
  collect(held);
}

BOOST_AUTO_TEST_SUITE_END()
