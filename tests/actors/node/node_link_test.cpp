// What the link to a node passes on of the node's answers (actors/node/node_link.hpp): a node
// is a peer, so an answer that cannot be the answer to what was asked (more ends than
// operations, other bytes than were fetched, a communicator nobody asked for) is refused as
// node_mismatch naming the node, and a node's error comes back in bounded words.
#define BOOST_TEST_MODULE node_link
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <string>
#include <vector>

#include "cudactor/actors/node/node_link.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/message_types.hpp"

using namespace cudactor;

namespace {

// A node that lies in every answer it gives.
caf::behavior liar() {
  return {
      [](submit_atom, const graph_spec& g) { return std::vector<op_notice>(g.ops.size() + 5); },
      [](fetch_atom, const buffer_call& call) {
        return std::vector<std::uint8_t>(call.bytes + 1, 0);
      },
      [](communicator_atom, const communicator_call& call) {
        return communicator_ready{call.name, call.generation, 0, "n1", "mpi"};
      },
      [](register_atom, const op_spec&) -> caf::result<op_notice> {
        return make_error(errc::op_failed, std::string(100'000, 'x'));
      },
      [](replay_atom, const replay_request& request) {
        step_outcome out;
        out.step = step_handle{request.step.slot + 1, request.step.generation};  // another's
        return out;
      },
      [](store_atom, const buffer_call&) {
        op_notice n;  // an end whose error, of CAF's kind, is long
        n.state = op_state::failed;
        n.cause = caf::make_error(caf::sec::runtime_error, std::string(100'000, 'y'));
        return n;
      },
  };
}

struct fixture {
  fixture() : system{(add_message_types(config), config)} {
    auto fake = caf::actor_cast<node_actor>(system.spawn(liar));
    link = detail::spawn_node_link(system, fake, "node 'n1'", input_limits{});
  }
  template <class T, class... Ts>
  caf::expected<T> ask(Ts&&... xs) {
    caf::scoped_actor self{system};
    caf::expected<T> out{caf::sec::request_timeout};
    self->request(link.actor, std::chrono::seconds{20}, std::forward<Ts>(xs)...)
        .receive([&](T& x) { out = std::move(x); }, [&](caf::error& e) { out = std::move(e); });
    return out;
  }
  std::string words(const caf::error& e) { return system.render(e); }
  caf::actor_system_config config;
  caf::actor_system system;
  detail::node_link link;
};

bool is(const caf::error& e, errc code) {
  return e && e.category() == error_category && e.code() == static_cast<std::uint8_t>(code);
}

op_spec noop() {
  op_spec s;
  s.body = work::named("noop");
  return s;
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(answers_that_cannot_be_the_answer_are_refused_naming_the_node, fixture) {
  graph_spec g;
  g.add(noop());
  g.add(noop());
  auto ends = ask<std::vector<op_notice>>(submit_atom::value, std::move(g));
  BOOST_REQUIRE(!ends);
  BOOST_TEST(is(ends.error(), errc::node_mismatch), words(ends.error()));
  BOOST_TEST(words(ends.error()).find("node 'n1' answered 7 ends for a graph of 2 operations") !=
                 std::string::npos,
             words(ends.error()));
  auto bytes = ask<std::vector<std::uint8_t>>(fetch_atom::value,
                                              buffer_call::fetch(buffer_id{0, 1, 1}, 0, 16));
  BOOST_REQUIRE(!bytes);
  BOOST_TEST(is(bytes.error(), errc::node_mismatch), words(bytes.error()));
  BOOST_TEST(words(bytes.error()).find("17 bytes to a fetch of 16") != std::string::npos,
             words(bytes.error()));
  auto ready = ask<communicator_ready>(
      communicator_atom::value,
      communicator_call{
          "grads", 1, 0, {"n1"}, std::chrono::seconds{1}, std::chrono::seconds{1}, {}});
  BOOST_REQUIRE(!ready);
  BOOST_TEST(is(ready.error(), errc::node_mismatch), words(ready.error()));
  auto replayed = ask<step_outcome>(replay_atom::value, replay_request{step_handle{1, 1}, {}, {}});
  BOOST_REQUIRE(!replayed);
  BOOST_TEST(is(replayed.error(), errc::node_mismatch), words(replayed.error()));
  auto stored = ask<op_notice>(
      store_atom::value, buffer_call::store(buffer_id{0, 1, 1}, 0, std::vector<std::uint8_t>(4)));
  BOOST_REQUIRE(!stored);
  BOOST_TEST(is(stored.error(), errc::node_mismatch), words(stored.error()));
}

BOOST_FIXTURE_TEST_CASE(a_nodes_error_comes_back_in_bounded_words, fixture) {
  auto end = ask<op_notice>(register_atom::value, noop());
  BOOST_REQUIRE(!end);
  BOOST_TEST(is(end.error(), errc::op_failed), words(end.error()));
  const std::string said = words(end.error());
  BOOST_TEST(said.size() < 5000u);
  BOOST_TEST(said.find("xxx... (") != std::string::npos, said.substr(said.size() - 40));
  BOOST_TEST(said.find(" bytes)") != std::string::npos);
}
