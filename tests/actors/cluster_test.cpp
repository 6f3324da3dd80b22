// A barrier across node processes and what happens when a node dies or hangs: four
// cudactor-node processes on 127.0.0.1, started and always reaped by the test, driven by a
// control plane through a cluster actor. Checks that a generation crosses only once every
// node's earlier work has ended, that a node that arrived holds later work back until every
// node has, that a generation's limit names the late nodes, that kill -9 and SIGSTOP fail what
// waits on the node, naming it, within a bound, and that the cluster goes on with the rest.
#define BOOST_TEST_MODULE cluster
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/remote_node.hpp"
#include "common/time_scale.hpp"
#include "cudactor/actors/cluster_actor.hpp"
#include "cudactor/actors/node_client.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

using clock_type = std::chrono::steady_clock;

// n node processes and a control plane connected to all of them through one cluster.
struct job {
  explicit job(std::size_t n, cluster_options options = {}) {
    for (std::size_t i = 0; i < n; ++i) {
      nodes.push_back(std::make_unique<node_process>("n" + std::to_string(i)));
    }
    std::vector<remote_node> remotes;
    for (auto& node : nodes) {
      BOOST_REQUIRE_MESSAGE(node->port != 0, "no port printed: " << read_file(node->log));
      auto connected = connect_node(cp.system, "127.0.0.1", node->port, connect_limit());
      BOOST_REQUIRE_MESSAGE(connected, cp.why(connected));
      remotes.push_back(*connected);
    }
    actors = remotes;
    auto spawned = spawn_cluster(cp.system, remotes, std::move(options));
    BOOST_REQUIRE_MESSAGE(spawned, cp.why(spawned));
    owner.emplace(std::move(*spawned));
    cluster = owner->actor();
    runtime::release_calling_thread();
  }

  control_plane cp;
  std::vector<std::unique_ptr<node_process>> nodes;
  std::vector<remote_node> actors;
  std::optional<cudactor::cluster> owner;  // stops the cluster first when the job goes
  cluster_actor cluster;
};

std::string text(control_plane& cp, const caf::error& e) { return cp.render(e); }

}  // namespace

BOOST_AUTO_TEST_CASE(a_barrier_across_four_processes_waits_for_every_node_and_holds_later_work) {
  job j{4};
  auto& cp = j.cp;

  // Quiet nodes cross at once, generation after generation.
  for (std::uint64_t g = 1; g <= 3; ++g) {
    auto crossing = cp.ask<cluster_crossing>(j.cluster, synchronize_atom::value);
    BOOST_REQUIRE_MESSAGE(crossing, cp.why(crossing));
    BOOST_TEST(crossing->generation == g);
    BOOST_TEST(crossing->nodes.size() == 4u);
    for (const auto& a : crossing->nodes) BOOST_TEST(a.generation == g);
  }

  // n3 is busy for a second; the barrier begins while it is; 400 ms later a noop is given to
  // n0 directly (not through the cluster). n0 arrived at once, so it holds the noop back
  // until n3 has arrived too: the noop starts after n3's busy operation ended.
  auto busy = std::async(std::launch::async, [&] {
    return cp.ask_for<op_notice>(30s, j.cluster, register_atom::value, std::string{"n3"},
                                 named("long", work::named("busy", std::uint64_t{1'000'000})));
  });
  std::this_thread::sleep_for(50ms);  // the busy operation reaches n3 before the barrier
  const auto began = clock_type::now();
  auto crossing_f = std::async(std::launch::async, [&] {
    return cp.ask_for<cluster_crossing>(30s, j.cluster, synchronize_atom::value);
  });
  std::this_thread::sleep_for(400ms);
  const std::int64_t sent_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
          .count();
  auto held = cp.ask_for<op_notice>(30s, j.actors[0].actor, register_atom::value,
                                    named("after", work::named("noop")));
  auto crossing = crossing_f.get();
  auto busy_end = busy.get();
  BOOST_REQUIRE_MESSAGE(busy_end, cp.why(busy_end));
  BOOST_REQUIRE_MESSAGE(crossing, cp.why(crossing));
  BOOST_REQUIRE_MESSAGE(held, cp.why(held));
  BOOST_TEST(crossing->nodes.size() == 4u);
  BOOST_TEST((clock_type::now() - began >= 800ms));
  std::int64_t n3_arrived_after_ns = 0;
  for (const auto& a : crossing->nodes) {
    if (a.node == "n3") {
      BOOST_TEST(a.waited == 1u);  // the busy operation
      BOOST_TEST((a.duration >= std::chrono::milliseconds{800}));
      n3_arrived_after_ns = a.duration.count();
    } else {
      BOOST_TEST(a.waited == 0u);
    }
  }
  BOOST_TEST((held->state == op_state::completed));
  // Both clocks are CLOCK_MONOTONIC on this machine: the noop was sent about 450 ms in, and
  // n0 handed it to its coordinator only once released, when n3 had ended its busy second.
  BOOST_TEST(held->registered_ns - sent_ns >= 300'000'000);
  BOOST_TEST(n3_arrived_after_ns > 0);

  auto status = cp.ask<cluster_status>(j.cluster, status_atom::value);
  BOOST_REQUIRE_MESSAGE(status, cp.why(status));
  BOOST_TEST(status->generations == 4u);
  BOOST_TEST(status->crossed == 4u);
  BOOST_TEST(status->pending == 0u);
  BOOST_TEST(status->open == 0u);
  runtime::release_calling_thread();
}

BOOST_AUTO_TEST_CASE(work_goes_to_nodes_by_name_and_a_late_node_is_named_by_the_timeout) {
  job j{2};
  auto& cp = j.cp;
  graph_spec g;
  const auto first = g.add(named("first", work::named("noop")));
  g.add(named("fails", work::named("fail", std::string{"on purpose"})), {first});
  auto ends = cp.ask<std::vector<op_notice>>(j.cluster, submit_atom::value, std::string{"n1"}, g);
  BOOST_REQUIRE_MESSAGE(ends, cp.why(ends));
  BOOST_REQUIRE(ends->size() == 2u);
  BOOST_TEST((ends->at(0).state == op_state::completed));
  BOOST_TEST((ends->at(1).state == op_state::failed));
  BOOST_TEST(text(cp, ends->at(1).cause).find("on purpose") != std::string::npos);

  // Past the limits n1 said it takes: refused before anything is sent.
  graph_spec too_big;
  for (int i = 0; i < 65537; ++i) too_big.add(named("", work::named("noop")));
  auto refused =
      cp.ask<std::vector<op_notice>>(j.cluster, submit_atom::value, std::string{"n1"}, too_big);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(is(refused.error(), errc::invalid_argument));
  BOOST_TEST(text(cp, refused.error()).find("max-graph-ops") != std::string::npos);

  auto nobody = cp.ask<op_notice>(j.cluster, register_atom::value, std::string{"n9"},
                                  named("x", work::named("noop")));
  BOOST_REQUIRE(!nobody);
  BOOST_TEST(is(nobody.error(), errc::invalid_argument));
  BOOST_TEST(text(cp, nobody.error()).find("no node named 'n9'") != std::string::npos);
  auto unknown = cp.ask<op_notice>(j.cluster, register_atom::value, std::string{"n0"},
                                   named("x", work::named("launch_missiles")));
  BOOST_REQUIRE(!unknown);
  BOOST_TEST(is(unknown.error(), errc::unknown_operation));
  BOOST_TEST(text(cp, unknown.error()).find("node 'n0'") != std::string::npos);

  // n1 is busy for 1.5 s; a generation limited to 300 ms names n1, and only n1.
  auto busy = std::async(std::launch::async, [&] {
    return cp.ask_for<op_notice>(30s, j.cluster, register_atom::value, std::string{"n1"},
                                 named("long", work::named("busy", std::uint64_t{1'500'000})));
  });
  std::this_thread::sleep_for(50ms);
  const auto began = clock_type::now();
  auto late = cp.ask<cluster_crossing>(j.cluster, synchronize_atom::value,
                                       caf::timespan{std::chrono::milliseconds{300}});
  const auto took = clock_type::now() - began;
  BOOST_REQUIRE(!late);
  BOOST_TEST(is(late.error(), errc::timeout));
  const std::string said = text(cp, late.error());
  BOOST_TEST(said.find("1 of 2 nodes did not arrive within 300 ms: 'n1'") != std::string::npos,
             said);
  BOOST_TEST(said.find("'n0'") == std::string::npos, said);
  BOOST_TEST((took < 5s));
  // n0 was released with the failure: its work runs now, not after a hold.
  auto quick =
      cp.ask<op_notice>(j.actors[0].actor, register_atom::value, named("now", work::named("noop")));
  BOOST_REQUIRE_MESSAGE(quick, cp.why(quick));
  BOOST_TEST(quick->dispatched_ns - quick->registered_ns < 250'000'000);
  // The next generation waits for n1's busy operation, then crosses with both.
  auto next = cp.ask<cluster_crossing>(j.cluster, synchronize_atom::value);
  BOOST_REQUIRE_MESSAGE(next, cp.why(next));
  BOOST_TEST(next->generation == 2u);
  BOOST_TEST(next->nodes.size() == 2u);
  BOOST_TEST(static_cast<bool>(busy.get()));
}

BOOST_AUTO_TEST_CASE(a_node_killed_mid_barrier_fails_it_by_name_and_the_rest_go_on) {
  job j{4};
  auto& cp = j.cp;
  // n2 is busy for 20 s, so the generation waits for it; then n2 is killed.
  auto lost_work = std::async(std::launch::async, [&] {
    return cp.ask_for<op_notice>(60s, j.cluster, register_atom::value, std::string{"n2"},
                                 named("long", work::named("busy", std::uint64_t{20'000'000})));
  });
  std::this_thread::sleep_for(scaled(50ms));
  auto failed_f = std::async(std::launch::async, [&] {
    return cp.ask_for<cluster_crossing>(60s, j.cluster, synchronize_atom::value,
                                        caf::timespan{std::chrono::seconds{30}});
  });
  std::this_thread::sleep_for(scaled(300ms));  // the other three arrive first
  const auto killed = clock_type::now();
  BOOST_REQUIRE(kill(j.nodes[2]->child.pid(), SIGKILL) == 0);
  auto failed = failed_f.get();
  auto work_end = lost_work.get();
  const auto took = clock_type::now() - killed;
  BOOST_TEST(j.nodes[2]->child.wait_exit(10s).value_or(0) == -1);  // reaped: killed
  BOOST_REQUIRE(!failed);
  BOOST_REQUIRE(!work_end);
  BOOST_TEST((took < 5s));  // a closed connection is seen at once (~0.1 s here)
  BOOST_TEST_MESSAGE("kill -9 detected after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                     << " ms");
  BOOST_TEST(is(failed.error(), errc::node_lost));
  const std::string said = text(cp, failed.error());
  BOOST_TEST(said.find("node 'n2'") != std::string::npos, said);
  BOOST_TEST(said.find("3 of 4 nodes had arrived") != std::string::npos, said);
  BOOST_TEST(is(work_end.error(), errc::node_lost));
  BOOST_TEST(text(cp, work_end.error()).find("node 'n2'") != std::string::npos);

  // The rest go on.
  auto next = cp.ask<cluster_crossing>(j.cluster, synchronize_atom::value);
  BOOST_REQUIRE_MESSAGE(next, cp.why(next));
  BOOST_TEST(next->nodes.size() == 3u);
  for (const auto& a : next->nodes) BOOST_TEST(a.node != "n2");
  auto gone = cp.ask<op_notice>(j.cluster, register_atom::value, std::string{"n2"},
                                named("x", work::named("noop")));
  BOOST_REQUIRE(!gone);
  BOOST_TEST(is(gone.error(), errc::node_lost));
  auto status = cp.ask<cluster_status>(j.cluster, status_atom::value);
  BOOST_REQUIRE_MESSAGE(status, cp.why(status));
  BOOST_TEST(!status->nodes[2].up);
  BOOST_TEST(!status->nodes[2].lost.empty());
  BOOST_TEST(status->nodes[1].up);
  BOOST_TEST(status->failed == 1u);
}

BOOST_AUTO_TEST_CASE(a_stopped_node_is_detected_by_the_heartbeat) {
  job j{2};
  auto& cp = j.cp;
  auto first = cp.ask<cluster_crossing>(j.cluster, synchronize_atom::value);
  BOOST_REQUIRE_MESSAGE(first, cp.why(first));
  BOOST_REQUIRE_EQUAL(first->nodes.size(), 2u);  // both up: a loss seen later is the stop's
  // SIGSTOP: the connection stays open, nothing answers. Only the heartbeat can tell. The
  // barrier is asked for only once the kernel shows the process stopped.
  const auto stopped = clock_type::now();
  BOOST_REQUIRE(j.nodes[1]->child.pause(scaled(5s)));
  auto hung = cp.ask_for<cluster_crossing>(30s, j.cluster, synchronize_atom::value,
                                           caf::timespan{std::chrono::seconds{0}});  // no limit
  const auto took = clock_type::now() - stopped;
  kill(j.nodes[1]->child.pid(), SIGKILL);
  BOOST_REQUIRE(!hung);
  BOOST_TEST(is(hung.error(), errc::node_lost), text(cp, hung.error()));
  BOOST_TEST(text(cp, hung.error()).find("node 'n1'") != std::string::npos);
  // Heartbeat every 250 ms, connection timeout 2 s (runtime_config's defaults; scaled with
  // a sanitized build's slowdown, liveness_args).
  BOOST_TEST((took < scaled(8s)));
  BOOST_TEST((took >= 1s));
  BOOST_TEST_MESSAGE("SIGSTOP detected after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                     << " ms");
  auto next = cp.ask<cluster_crossing>(j.cluster, synchronize_atom::value);
  BOOST_REQUIRE_MESSAGE(next, cp.why(next));
  BOOST_TEST(next->nodes.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_control_plane_that_lets_go_of_its_cluster_and_nodes_shuts_down) {
  // CAF keeps any actor that has talked to another process in its registry until it ends,
  // so a cluster or a node's stand-in that nobody stops would hold the actor system's
  // destructor forever. Their owners (cluster, remote_node) stop them when they go; what was
  // open is answered.
  node_process node{"n0"};
  BOOST_REQUIRE_MESSAGE(node.port != 0, "no port printed: " << read_file(node.log));
  auto cp = std::make_unique<control_plane>();
  caf::expected<cluster_crossing> open_generation{caf::sec::request_timeout};
  {
    auto connected = connect_node(cp->system, "127.0.0.1", node.port, connect_limit());
    BOOST_REQUIRE_MESSAGE(connected, cp->why(connected));
    auto spawned = spawn_cluster(cp->system, {*connected});
    BOOST_REQUIRE_MESSAGE(spawned, cp->why(spawned));
    auto first = cp->ask<cluster_crossing>(spawned->actor(), synchronize_atom::value);
    BOOST_REQUIRE_MESSAGE(first, cp->why(first));
    // The node is busy for 3 s (longer under a sanitizer), so the next generation is still
    // open when the cluster goes; nobody waits for the busy operation's own answer.
    caf::anon_send(
        spawned->actor(), register_atom::value, std::string{"n0"},
        named("long", work::named("busy", static_cast<std::uint64_t>(3'000'000 * time_scale()))));
    std::this_thread::sleep_for(scaled(200ms));  // it reaches the node before the barrier
    {
      caf::scoped_actor self{cp->system};
      auto pending = self->request(spawned->actor(), 30s, synchronize_atom::value);
      std::this_thread::sleep_for(100ms);
      spawned->stop();
      pending.receive([&](cluster_crossing& c) { open_generation = c; },
                      [&](caf::error& e) { open_generation = e; });
    }
    runtime::release_calling_thread();
  }
  BOOST_TEST((!open_generation && is(open_generation.error(), errc::shutting_down)),
             cp->why(open_generation));
  // Every handle is gone: the actor system's destructor must return.
  auto ended = std::async(std::launch::async, [&] { cp.reset(); });
  if (ended.wait_for(30s) != std::future_status::ready) {
    std::fprintf(stderr, "the control plane's actor system did not shut down within 30 s\n");
    std::_Exit(1);  // the thread is stuck in ~actor_system: nothing else can end it
  }
}
