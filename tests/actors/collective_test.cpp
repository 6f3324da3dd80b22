// Communicators across node processes: cudactor-node processes on 127.0.0.1, made into a
// communicator by a cluster that is its rendezvous (the ranks' addresses travel as CAF
// messages through the control plane). Checks that 2 and 4 nodes connect and run collective
// barriers in step, interleaved with other work; that a name is refused where it cannot be a
// communicator's; that kill -9 of a rank while the others wait in a collective fails theirs
// within the bound, naming the rank and its node; and that asking again rebuilds the
// communicator as its next generation over the nodes that are left, which then works.
// (collective_ops_test checks every kind and element type against computed values, ranks
// in one process; nodes take no buffers from a control plane yet.)
#define BOOST_TEST_MODULE collective
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <signal.h>

#include <chrono>
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

struct job {
  explicit job(std::size_t n) {
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
    cluster_options options;
    options.name = "training";
    options.barrier_timeout = std::chrono::duration_cast<caf::timespan>(scaled(60s));
    options.collective_timeout = std::chrono::duration_cast<caf::timespan>(scaled(20s));
    options.rendezvous_timeout = std::chrono::duration_cast<caf::timespan>(scaled(20s));
    auto spawned = spawn_cluster(cp.system, remotes, options);
    BOOST_REQUIRE_MESSAGE(spawned, cp.why(spawned));
    owner.emplace(std::move(*spawned));
    cluster = owner->actor();
    runtime::release_calling_thread();
  }

  // A collective barrier on communicator `name`, for the node `node`.
  std::future<caf::expected<op_notice>> barrier(const std::string& node,
                                                const std::string& name = "grads") {
    op_collective c;
    c.communicator = name;
    c.kind = gpu::collective_kind::barrier;
    return std::async(std::launch::async, [this, node, c] {
      return cp.ask_for<op_notice>(scaled(60s), cluster, register_atom::value, node,
                                   op_spec::of(c, "collective barrier"));
    });
  }

  control_plane cp;
  std::vector<std::unique_ptr<node_process>> nodes;
  std::optional<cudactor::cluster> owner;
  cluster_actor cluster;
};

void connects_and_runs_in_step(std::size_t n) {
  job j{n};
  auto made = j.cp.ask_for<communicator_info>(scaled(60s), j.cluster, communicator_atom::value,
                                              std::string{"grads"});
  BOOST_REQUIRE_MESSAGE(made, j.cp.why(made));
  BOOST_TEST(made->generation == 1u);
  BOOST_TEST(made->engine == "gloo");
  BOOST_REQUIRE(made->members.size() == n);
  for (std::size_t i = 0; i < n; ++i) BOOST_TEST(made->members[i] == "n" + std::to_string(i));
  BOOST_TEST_MESSAGE(
      n << " ranks connected in "
        << std::chrono::duration_cast<std::chrono::milliseconds>(made->duration).count() << " ms");
  // Five barriers in a row, each node also given work of its own between them: every rank
  // passes each barrier only with every other.
  for (int round = 0; round < 5; ++round) {
    std::vector<std::future<caf::expected<op_notice>>> ends;
    std::vector<std::future<caf::expected<op_notice>>> work;
    for (std::size_t i = 0; i < n; ++i) {
      const std::string node = "n" + std::to_string(i);
      op_spec busy;
      busy.description = "busy";
      busy.body = work::named("busy", std::uint64_t{1000 * (i + 1)});
      work.push_back(std::async(std::launch::async, [&j, node, busy] {
        return j.cp.ask_for<op_notice>(scaled(60s), j.cluster, register_atom::value, node, busy);
      }));
      ends.push_back(j.barrier(node));
    }
    for (auto& f : ends) {
      auto end = f.get();
      BOOST_REQUIRE_MESSAGE(end, j.cp.why(end));
      BOOST_TEST((end->state == op_state::completed), j.cp.render(end->cause));
    }
    for (auto& f : work) {
      auto end = f.get();
      BOOST_REQUIRE_MESSAGE(end, j.cp.why(end));
      BOOST_TEST((end->state == op_state::completed));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_nodes_make_a_communicator_and_run_collectives_in_step) {
  connects_and_runs_in_step(2);
}

BOOST_AUTO_TEST_CASE(four_nodes_make_a_communicator_and_run_collectives_in_step) {
  connects_and_runs_in_step(4);
}

BOOST_AUTO_TEST_CASE(a_collective_on_a_communicator_the_node_lacks_or_a_bad_name_is_refused) {
  job j{2};
  auto bad = j.cp.ask<communicator_info>(j.cluster, communicator_atom::value, std::string{"a/b"});
  BOOST_REQUIRE(!bad);
  BOOST_TEST(is(bad.error(), errc::invalid_argument));
  auto none = j.barrier("n0", "nobody").get();
  BOOST_REQUIRE(!none);
  BOOST_TEST(is(none.error(), errc::unknown_communicator), j.cp.why(none));
  BOOST_TEST(j.cp.why(none).find("'nobody'") != std::string::npos, j.cp.why(none));
}

BOOST_AUTO_TEST_CASE(a_rank_killed_mid_collective_fails_the_others_by_name_then_a_rebuild_works) {
  job j{3};
  auto made = j.cp.ask_for<communicator_info>(scaled(60s), j.cluster, communicator_atom::value,
                                              std::string{"grads"});
  BOOST_REQUIRE_MESSAGE(made, j.cp.why(made));
  // n0 and n1 enter a barrier n2 never joins; then n2 is killed.
  auto first = j.barrier("n0");
  auto second = j.barrier("n1");
  std::this_thread::sleep_for(scaled(500ms));
  const auto killed = clock_type::now();
  BOOST_REQUIRE(kill(j.nodes[2]->child.pid(), SIGKILL) == 0);
  for (auto* f : {&first, &second}) {
    auto end = f->get();
    BOOST_REQUIRE_MESSAGE(end, j.cp.why(end));
    BOOST_TEST((end->state == op_state::failed));
    const std::string said = j.cp.render(end->cause);
    BOOST_TEST_MESSAGE("the survivor's failure: " << said);
    BOOST_TEST(said.find("rank 2") != std::string::npos, said);
    BOOST_TEST(said.find("node 'n2'") != std::string::npos, said);
  }
  const auto took = clock_type::now() - killed;
  // Well inside the collective timeout (20 s): the transport fails at once, the loss names it.
  BOOST_TEST((took < scaled(10s)));
  BOOST_TEST_MESSAGE("kill -9 failed the collective after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                     << " ms");
  BOOST_TEST(j.nodes[2]->child.wait_exit(10s).value_or(0) == -1);
  // Broken on the ranks left, until rebuilt: refused at once.
  auto refused = j.barrier("n0").get();
  BOOST_REQUIRE(!refused);
  BOOST_TEST(j.cp.why(refused).find("node 'n2'") != std::string::npos, j.cp.why(refused));
  // One call rebuilds it over the nodes that are up, as generation 2.
  auto rebuilt = j.cp.ask_for<communicator_info>(scaled(60s), j.cluster, communicator_atom::value,
                                                 std::string{"grads"});
  BOOST_REQUIRE_MESSAGE(rebuilt, j.cp.why(rebuilt));
  BOOST_TEST(rebuilt->generation == 2u);
  BOOST_TEST((rebuilt->members == std::vector<std::string>{"n0", "n1"}));
  auto a = j.barrier("n0");
  auto b = j.barrier("n1");
  for (auto* f : {&a, &b}) {
    auto end = f->get();
    BOOST_REQUIRE_MESSAGE(end, j.cp.why(end));
    BOOST_TEST((end->state == op_state::completed), j.cp.render(end->cause));
  }
}
