// How the coordinator's operations reach the stream actors: a dependent goes out in the same
// pass as its dependencies, whatever streams they are on, and its stream actor places the
// device wait once the dependency is issued there (messaging/point_cell.hpp), never waiting for
// the coordinator to learn the dependency's point. One dispatch message per stream per pass.
#define BOOST_TEST_MODULE coordinator_dispatch
#include "coordinator_fixture.hpp"

#include <random>
#include <set>

#include "common/test_seed.hpp"

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

// Four streams, load_balanced, dependents sent in the pass of their dependencies.
struct in_pass : coordinator_fixture {
  in_pass()
      : coordinator_fixture({"--cudactor.streams=4", "--cudactor.coordinator.strategy=load_balanced",
                             "--cudactor.coordinator.dependents-in-pass"}) {}
};

BOOST_FIXTURE_TEST_SUITE(coordinator_dispatch, in_pass)

// 1000 operations, each after up to three random earlier ones, over four streams with room
// for all of them (250 each against a cap of 512): one pass places them all, dependents on
// other streams included, so each stream gets exactly one dispatch message. Before, a
// dependent of an operation on its way to another stream waited for that operation's ticket:
// a pass per level of the graph.
BOOST_AUTO_TEST_CASE(a_random_dag_with_room_goes_out_in_one_message_per_stream) {
  constexpr std::size_t n = 1000;
  std::mt19937_64 rng{test_seed("coordinator_dispatch")};
  auto log = std::make_shared<work_log>(n);
  graph_spec g;
  std::vector<std::vector<std::uint32_t>> deps(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) {
      std::uniform_int_distribution<std::size_t> earlier{0, i - 1};
      const std::size_t count = std::min<std::size_t>(i, 3);
      std::set<std::uint32_t> chosen;
      for (std::size_t k = 0; k < count; ++k) {
        chosen.insert(static_cast<std::uint32_t>(earlier(rng)));
      }
      deps[i].assign(chosen.begin(), chosen.end());
    }
    g.add(spec_of(log->record(i)), deps[i]);
  }
  const auto before = metrics();
  auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
  BOOST_REQUIRE_MESSAGE(ids, why(ids));
  BOOST_REQUIRE_EQUAL(ids->size(), n);
  auto notices = collect(*ids, 60s);
  std::set<std::uint32_t> streams;
  std::size_t across = 0;  // dependencies on another stream
  for (std::size_t i = 0; i < n; ++i) {
    const op_notice& mine = notices.at((*ids)[i].value);
    BOOST_REQUIRE((mine.state == op_state::completed));
    streams.insert(mine.stream.value);
    for (std::uint32_t d : deps[i]) {
      BOOST_TEST(log->started(i) >= log->ended(d), "op " << i << " began before op " << d);
      if (notices.at((*ids)[d].value).stream.value != mine.stream.value) ++across;
    }
  }
  const auto after = metrics();
  BOOST_TEST(streams.size() > 1u);
  BOOST_TEST(across > 100u);  // the graph crossed streams all over
  BOOST_TEST(after.passes - before.passes == streams.size());
  BOOST_TEST(after.dispatched - before.dispatched == n);
}

// Stream 1 is held (a hold sent to its actor directly, which the coordinator does not know
// of): an operation the coordinator sends there is accepted but not issued, and its ticket
// cannot come back. Its dependent on stream 0 goes out all the same, in the same pass, and
// waits there for the dependency's point. Direct work sent to stream 0 before the dependent
// runs before it, direct work sent after runs after it (one stream, one order), and the
// dependent runs after its dependency. The stamps are taken inside the work, where it runs.
BOOST_AUTO_TEST_CASE(a_dependent_goes_out_before_its_dependencys_ticket_could_come_back) {
  auto log = std::make_shared<work_log>(4);  // 0: dependency, 1: dependent, 2, 3: direct
  auto held = ask<ticket>(rt().stream(1), hold_atom::value, stream_hold{hold_request{}});
  BOOST_REQUIRE_MESSAGE(held, why(held));
  auto first = ask<ticket>(rt().stream(0), submit_atom::value, log->record(2));
  BOOST_REQUIRE_MESSAGE(first, why(first));
  graph_spec graph;
  graph.add(pinned_to(log->record(0), 1));
  graph.add(pinned_to(log->record(1), 0), {0});
  const auto before = metrics();
  auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(graph), me());
  BOOST_REQUIRE_MESSAGE(ids, why(ids));
  // Both went out while the dependency cannot have been issued.
  const auto sent = metrics();
  BOOST_TEST(sent.dispatched - before.dispatched == 2u);
  BOOST_TEST(sent.passes - before.passes == 2u);
  auto then = ask<ticket>(rt().stream(0), submit_atom::value, log->record(3));
  BOOST_REQUIRE_MESSAGE(then, why(then));
  BOOST_TEST(silent_for(30ms));  // nothing of the graph ended: stream 1 is held
  BOOST_TEST(log->started(1) == 0);
  BOOST_TEST(log->started(3) == 0);  // behind the dependent, on its stream
  auto released = ask<ticket>(rt().stream(1), hold_end_atom::value, held->point, caf::error{});
  BOOST_REQUIRE_MESSAGE(released, why(released));
  auto notices = collect(*ids);
  for (const auto& [id, n] : notices) BOOST_TEST((n.state == op_state::completed));
  BOOST_TEST(notices.at((*ids)[0].value).stream.value == 1u);
  BOOST_TEST(notices.at((*ids)[1].value).stream.value == 0u);
  BOOST_REQUIRE(ask<completion>(rt().stream(0), await_atom::value, then->point));
  BOOST_TEST(log->started(1) >= log->ended(0));
  BOOST_TEST(log->started(1) >= log->ended(2));
  BOOST_TEST(log->started(3) >= log->ended(1));
}

BOOST_AUTO_TEST_SUITE_END()

// Four roots on four streams and one operation after all of them. Sent in the pass of its
// dependencies, it takes no message of its own; by default it waits for their tickets and
// goes out in a pass of its own. (A runtime each: operation ids start anew in each.)
BOOST_AUTO_TEST_CASE(a_fan_in_goes_with_its_dependencies_and_by_default_after_their_tickets) {
  for (const bool in_pass : {true, false}) {
    BOOST_TEST_CONTEXT("dependents in pass: " << in_pass) {
      std::vector<std::string> args{"--cudactor.streams=4",
                                    "--cudactor.coordinator.strategy=round_robin"};
      if (in_pass) args.emplace_back("--cudactor.coordinator.dependents-in-pass");
      coordinator_fixture fx{std::move(args)};
      graph_spec g;
      for (int root = 0; root < 4; ++root) g.add(spec_of(noop()));
      g.add(spec_of(noop()), {0, 1, 2, 3});
      const auto before = fx.metrics();
      auto ids =
          fx.ask<std::vector<op_id>>(fx.co(), submit_atom::value, std::move(g), fx.me());
      BOOST_REQUIRE_MESSAGE(ids, fx.why(ids));
      std::set<std::uint32_t> roots;
      const auto notices = fx.collect(*ids);
      for (std::size_t k = 0; k < 4; ++k) roots.insert(notices.at((*ids)[k].value).stream.value);
      BOOST_REQUIRE_EQUAL(roots.size(), 4u);  // round robin: one root per stream
      for (const auto& [id, n] : notices) BOOST_TEST((n.state == op_state::completed));
      BOOST_TEST(fx.metrics().passes - before.passes == (in_pass ? 4u : 5u));
    }
  }
}
