// A node in another process, as a control plane sees it: cudactor-node is started and always
// reaped by the test, the control plane connects over 127.0.0.1 with an actor system of its
// own (no runtime), asks what the node runs, submits graphs and operations by name, and gets
// their ends back; what a node must refuse is refused with errors that name it; connecting
// where nothing listens, or to something that is not a node, says so.
#define BOOST_TEST_MODULE node
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "common/child_process.hpp"
#include "common/http_get.hpp"
#include "common/log_file.hpp"
#include "common/remote_node.hpp"
#include "common/test_backend.hpp"
#include "cudactor/actors/client.hpp"
#include "cudactor/actors/node_client.hpp"
#include "cudactor/actors/runtime.hpp"
#include "cudactor/messaging/errc.hpp"
#include "kernels.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

// A node process and a control plane connected to it. Members go in reverse: the node's
// handle first, then the control plane's actor system, then the process.
struct connected_node {
  explicit connected_node(const std::string& name) : node(name) {
    BOOST_REQUIRE_MESSAGE(node.port != 0, "no port printed: " << read_file(node.log));
    auto reached = connect_node(cp.system, "127.0.0.1", node.port, connect_limit());
    BOOST_REQUIRE_MESSAGE(reached, cp.why(reached));
    connected = std::move(*reached);
  }
  node_process node;
  control_plane cp;
  std::optional<remote_node> connected;
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_control_plane_runs_named_work_on_a_node_in_another_process) {
  connected_node fixture{"n1"};
  auto& [node, cp, connected] = fixture;
  BOOST_TEST(connected->info.name == "n1");
  BOOST_TEST(connected->info.backend.find(test_backend()) != std::string::npos,
             connected->info.backend);
  BOOST_TEST(connected->info.coordinator_streams == 4u);
  BOOST_TEST((connected->info.operations ==
              std::vector<std::string>{"busy", "dp_grad", "dp_sgd", "fail", "noop", "scale"}));
  BOOST_TEST(connected->info.limits.max_graph_ops == input_limits{}.max_graph_ops);
  const node_actor& n = connected->actor;

  // A graph: noop -> busy 2 ms -> (noop, fail) ; after the fail, a noop that never runs.
  graph_spec g;
  const auto first = g.add(named("first", work::named("noop")));
  const auto busy = g.add(named("busy", work::named("busy", std::uint64_t{2000})), {first});
  g.add(named("after busy", work::named("noop")), {busy});
  const auto fails = g.add(named("fails", work::named("fail", std::string{"boom"})), {busy});
  g.add(named("after the failure", work::named("noop")), {fails});
  auto ends = cp.ask<std::vector<op_notice>>(n, submit_atom::value, g);
  BOOST_REQUIRE_MESSAGE(ends, cp.why(ends));
  BOOST_REQUIRE(ends->size() == 5u);
  BOOST_TEST((ends->at(0).state == op_state::completed));
  BOOST_TEST((ends->at(1).state == op_state::completed));
  BOOST_TEST(ends->at(1).ended_ns - ends->at(1).dispatched_ns >= 2'000'000);
  BOOST_TEST((ends->at(2).state == op_state::completed));
  BOOST_TEST((ends->at(3).state == op_state::failed));
  BOOST_TEST(cp.render(ends->at(3).cause).find("boom") != std::string::npos);
  BOOST_TEST((ends->at(4).state == op_state::cancelled));
  BOOST_TEST(is(ends->at(4).cause, errc::dependency_failed));
  for (const auto& e : *ends) BOOST_TEST(!e.id.empty());

  // One operation.
  auto one = cp.ask<op_notice>(n, register_atom::value, named("one", work::named("noop")));
  BOOST_REQUIRE_MESSAGE(one, cp.why(one));
  BOOST_TEST((one->state == op_state::completed));

  // Many graphs at once, from several threads: each answered once, with its own ends.
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < 10; ++k) {
        graph_spec small;
        auto a = small.add(named("a", work::named("noop")));
        small.add(named("b", work::named("busy", std::uint64_t{100})), {a});
        auto r = cp.ask<std::vector<op_notice>>(n, submit_atom::value, small);
        if (r && r->size() == 2u && all_completed(*r)) ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  BOOST_TEST(good.load() == 40);
}

BOOST_AUTO_TEST_CASE(a_node_refuses_what_it_cannot_run_and_says_which_node_it_is) {
  connected_node fixture{"n2"};
  auto& [node, cp, connected] = fixture;
  const node_actor& n = connected->actor;

  auto unknown = cp.ask<op_notice>(n, register_atom::value, named("x", work::named("warp_drive")));
  BOOST_REQUIRE(!unknown);
  BOOST_TEST(is(unknown.error(), errc::unknown_operation));
  BOOST_TEST(cp.render(unknown.error()).find("node 'n2'") != std::string::npos);
  BOOST_TEST(cp.render(unknown.error()).find("warp_drive") != std::string::npos);

  auto ill_typed =
      cp.ask<op_notice>(n, register_atom::value, named("x", work::named("busy", std::string{"1"})));
  BOOST_REQUIRE(!ill_typed);
  BOOST_TEST(is(ill_typed.error(), errc::invalid_argument));
  BOOST_TEST(cp.render(ill_typed.error()).find("takes (uint64)") != std::string::npos,
             cp.render(ill_typed.error()));

  graph_spec by_id;
  op_spec with_dep = named("x", work::named("noop"));
  with_dep.deps.push_back(op_id{1});
  by_id.add(with_dep);
  auto refused = cp.ask<std::vector<op_notice>>(n, submit_atom::value, by_id);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(is(refused.error(), errc::invalid_argument));

  graph_spec beyond;
  beyond.add(named("x", work::named("noop")), {7});
  auto bad_index = cp.ask<std::vector<op_notice>>(n, submit_atom::value, beyond);
  BOOST_REQUIRE(!bad_index);
  BOOST_TEST(is(bad_index.error(), errc::invalid_argument));

  auto empty = cp.ask<std::vector<op_notice>>(n, submit_atom::value, graph_spec{});
  BOOST_REQUIRE(!empty);
  BOOST_TEST(is(empty.error(), errc::invalid_argument));

  // What is not in the published interface reaches nothing: forged notices, a shutdown, an
  // expiry, an exit message. The node refuses each (an error to a request) and goes on.
  {
    // CAF's own handle on what the node publishes, as a peer that does not use connect_node
    // has: connect_node's stand-in relays only the interface.
    auto reached = cp.system.middleman().remote_actor<node_actor>("127.0.0.1", node.port);
    runtime::release_calling_thread();
    BOOST_REQUIRE_MESSAGE(reached, cp.why(reached));
    caf::scoped_actor self{cp.system};
    const auto untyped = caf::actor_cast<caf::actor>(*reached);
    op_notice forged;
    forged.id = op_id{1};
    self->send(untyped, std::vector<op_notice>{forged});
    self->send(untyped, shutdown_atom::value);
    self->send(untyped, expire_atom::value, std::uint64_t{1});
    self->send_exit(untyped, caf::exit_reason::kill);
    self->send_exit(untyped, caf::exit_reason::user_shutdown);
    caf::error refused_shutdown;
    self->request(untyped, 5s, shutdown_atom::value)
        .receive([] { BOOST_FAIL("a peer's shutdown was taken"); },
                 [&](caf::error& err) { refused_shutdown = err; });
    BOOST_TEST((refused_shutdown == caf::sec::unexpected_message));
  }
  runtime::release_calling_thread();
  auto still = cp.ask<op_notice>(n, register_atom::value, named("ok", work::named("noop")));
  BOOST_REQUIRE(still);
  BOOST_TEST((still->state == op_state::completed));
}

BOOST_AUTO_TEST_CASE(connecting_where_no_node_listens_says_so) {
  control_plane cp;
  const std::uint16_t port = free_loopback_port();
  const auto started = std::chrono::steady_clock::now();
  auto refused = connect_node(cp.system, "127.0.0.1", port, 2s);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(is(refused.error(), errc::node_unreachable));
  BOOST_TEST(cp.render(refused.error()).find("127.0.0.1:" + std::to_string(port)) !=
             std::string::npos);
  BOOST_TEST((std::chrono::steady_clock::now() - started < 10s));

  // Something that is not a node: another actor published by another actor system.
  control_plane other;
  using echo_actor = caf::typed_actor<caf::replies_to<int>::with<int>>;
  auto echo =
      other.system.spawn([]() -> echo_actor::behavior_type { return {[](int x) { return x; }}; });
  auto published = other.system.middleman().publish(echo, 0, "127.0.0.1", true);
  BOOST_REQUIRE(published);
  auto mismatch = connect_node(cp.system, "127.0.0.1", *published, 5s);
  BOOST_REQUIRE(!mismatch);
  BOOST_TEST(is(mismatch.error(), errc::node_mismatch), cp.render(mismatch.error()));
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_node_silent_through_a_handshake_is_tried_again_while_the_limit_lasts) {
  // A node that is alive but does not run (SIGSTOP; a starved process under load looks the
  // same to CAF): the kernel accepts the connection, CAF's handshake hears nothing and closes
  // it after the connection timeout (2 s, scaled). The node runs again after one such
  // timeout and a half: connect_node's next try reaches it.
  node_process node{"silent"};
  BOOST_REQUIRE_MESSAGE(node.port != 0, "no port printed: " << read_file(node.log));
  control_plane cp;
  BOOST_REQUIRE(node.child.pause(scaled(5s)));
  auto resumer = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(scaled(3s));
    node.child.resume();
  });
  const auto started = std::chrono::steady_clock::now();
  auto reached = connect_node(cp.system, "127.0.0.1", node.port, scaled(10s));
  const auto took = std::chrono::steady_clock::now() - started;
  resumer.get();
  BOOST_REQUIRE_MESSAGE(reached, cp.why(reached));
  BOOST_TEST(reached->info.name == "silent");
  BOOST_TEST((took >= scaled(2s)));  // the first try did wait out the timeout

  // A node that stays silent fails with the timeout once the limit has passed.
  BOOST_REQUIRE(node.child.pause(scaled(5s)));
  control_plane late;
  auto given_up = connect_node(late.system, "127.0.0.1", node.port, scaled(3s));
  node.child.resume();
  BOOST_REQUIRE(!given_up);
  BOOST_TEST(is(given_up.error(), errc::node_unreachable), late.render(given_up.error()));
}

BOOST_AUTO_TEST_CASE(publishing_a_node_needs_the_network_layer) {
  runtime_config config;
  BOOST_REQUIRE(
      !config.parse(std::vector<std::string>{backend_option(), "--cudactor.metrics.no-exposer"}));
  auto rt = runtime::start(config);
  BOOST_REQUIRE(rt.ok());
  auto port = (*rt)->publish_node();
  BOOST_REQUIRE(!port.ok());
  BOOST_TEST(port.error().to_string().find("enable_network") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_node_answers_what_it_holds_when_its_runtime_shuts_down) {
  runtime_config config;
  // A kernel on CUDA, a spinning worker on the host (demo/kernels.hpp).
  BOOST_REQUIRE(
      config.operations()
          .add_typed<std::uint64_t>("busy", [](const gpu::launch_context& ctx,
                                               std::uint64_t us) { return demo::busy(ctx, us); })
          .ok());
  BOOST_REQUIRE(!config.parse(std::vector<std::string>{
      backend_option(), "--cudactor.metrics.no-exposer", "--cudactor.node.name=local"}));
  auto rt = runtime::start(config);
  BOOST_REQUIRE(rt.ok());
  auto answer = std::make_shared<std::promise<caf::error>>();
  auto told = answer->get_future();
  (*rt)->system().spawn([node = (*rt)->node(), answer](caf::event_based_actor* self) {
    op_spec op;
    op.body = work::named("busy", std::uint64_t{2'000'000});  // 2 s: still running at shutdown
    self->request(node, caf::infinite, register_atom::value, std::move(op))
        .then([answer](const op_notice&) { answer->set_value(caf::error{}); },
              [answer](caf::error& err) { answer->set_value(std::move(err)); });
  });
  runtime::release_calling_thread();
  std::this_thread::sleep_for(100ms);  // the operation is on its stream
  (*rt)->shutdown();
  BOOST_REQUIRE((told.wait_for(10s) == std::future_status::ready));
  const caf::error err = told.get();
  BOOST_TEST(is(err, errc::shutting_down));
}

BOOST_AUTO_TEST_CASE(requests_on_the_handle_of_a_node_that_has_gone_fail_at_once) {
  connected_node fixture{"gone"};
  auto& [node, cp, connected] = fixture;
  const node_actor n = connected->actor;
  // One request in flight when the node dies (busy 20 s), one sent after: both must end long
  // before their 30 s limit, and the one in flight with node_lost naming the node.
  std::optional<caf::expected<op_notice>> in_flight;
  std::thread asker{[&] {
    in_flight =
        cp.ask_for<op_notice>(30s, n, register_atom::value,
                              named("long", work::named("busy", std::uint64_t{20'000'000})));
  }};
  std::this_thread::sleep_for(300ms);
  const auto killed = std::chrono::steady_clock::now();
  BOOST_REQUIRE(kill(node.child.pid(), SIGKILL) == 0);
  BOOST_TEST(node.child.wait_exit(10s).value_or(0) == -1);
  asker.join();
  BOOST_TEST_MESSAGE("the request in flight failed "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - killed)
                            .count()
                     << " ms after kill -9 (its limit: 30 s)");
  BOOST_REQUIRE(in_flight.has_value());
  BOOST_TEST((!*in_flight && is(in_flight->error(), errc::node_lost)), cp.why(*in_flight));
  BOOST_TEST(cp.why(*in_flight).find("'gone'") != std::string::npos, cp.why(*in_flight));
  // The handle has ended with the node (a monitor learns why, naming it): CAF refuses a
  // request to an ended actor at once.
  auto after =
      cp.ask_for<op_notice>(30s, n, register_atom::value, named("late", work::named("noop")));
  BOOST_TEST((!after && after.error() == caf::sec::request_receiver_down), cp.why(after));
  caf::error why_gone;
  {
    caf::scoped_actor self{cp.system};
    self->monitor(n);
    self->receive([&](const caf::down_msg& down) { why_gone = down.reason; },
                  caf::after(10s) >> [] { BOOST_ERROR("no down message for an ended handle"); });
  }
  runtime::release_calling_thread();
  BOOST_TEST(is(why_gone, errc::node_lost), cp.render(why_gone));
  BOOST_TEST(cp.render(why_gone).find("'gone'") != std::string::npos, cp.render(why_gone));
}

BOOST_AUTO_TEST_CASE(the_largest_graph_a_node_takes_crosses_the_connection_and_is_answered) {
  // At every per-graph limit at once (operations, edges, bytes): the biggest message a node
  // accepts must arrive within CAF's connection timeout (2 s, which also bounds how fast a
  // hung node is seen) and be answered; docs/distribution.md quotes the figures.
  connected_node fixture{"big"};
  auto& [node, cp, connected] = fixture;
  const input_limits& limits = connected->info.limits;
  const std::size_t ops = limits.max_graph_ops;
  const std::size_t fan_in = limits.max_graph_edges / ops - 1;  // 15 with the defaults
  const std::size_t text = limits.max_graph_bytes / ops - 4;    // description + "noop"
  BOOST_REQUIRE(text <= limits.max_description);
  graph_spec g;
  std::size_t edges = 0;
  for (std::size_t i = 0; i < ops; ++i) {
    std::vector<std::uint32_t> deps;
    for (std::size_t d = 1; d <= fan_in && d <= i; ++d)
      deps.push_back(static_cast<std::uint32_t>(i - d));
    edges += deps.size();
    g.add(named(std::string(text, 'd'), work::named("noop")), deps);
  }
  BOOST_TEST_MESSAGE(ops << " operations, " << edges << " edges, " << ops * (text + 4)
                         << " bytes of text");
  const auto sent = std::chrono::steady_clock::now();
  auto ends = cp.ask_for<std::vector<op_notice>>(120s, connected->actor, submit_atom::value, g);
  const auto took = std::chrono::steady_clock::now() - sent;
  BOOST_REQUIRE_MESSAGE(ends, cp.why(ends));
  BOOST_TEST(ends->size() == ops);
  BOOST_TEST((ends->back().state == op_state::completed));
  // How long the message took to arrive: from sending to the first operation registered.
  std::int64_t first_registered = ends->front().registered_ns;
  for (const auto& e : *ends) first_registered = std::min(first_registered, e.registered_ns);
  const std::int64_t sent_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(sent.time_since_epoch()).count();
  BOOST_TEST_MESSAGE("answered after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                     << " ms; the first operation registered "
                     << (first_registered - sent_ns) / 1'000'000 << " ms after sending");
  // And the connection is still up: the node answers.
  auto info = cp.ask<node_info>(connected->actor, info_atom::value);
  BOOST_TEST(static_cast<bool>(info), cp.why(info));
}
