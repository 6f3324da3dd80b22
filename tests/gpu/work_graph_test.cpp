// Work graphs on the host backend (gpu/work_graph.hpp): the nodes a graph refuses, named; a
// launch runs every node in the list's order inside the work that launches it, each outcome
// told to the observer, the first failure the launch's (a throw is a failure, and the nodes
// after it still run, as work after a failure on a stream does); set_work replaces a node's
// work from the next launch on, counted as an update, never as an instantiation. The CUDA
// graph's own tests are in cuda_work_graph_test.cpp.
#define BOOST_TEST_MODULE work_graph
#include <boost/test/unit_test.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/host_target.hpp"

using namespace cudactor;
using namespace cudactor::test;
using conformance::make_stream;

namespace {

gpu::work_fn append(std::shared_ptr<std::vector<int>> log, int value) {
  return [log = std::move(log), value](const gpu::launch_context&) {
    log->push_back(value);
    return gpu::status{};
  };
}

struct outcome {
  gpu::status launched;
  gpu::status reached;
};

// Launches `graph` from work on `s` and waits for the point after it.
outcome launch_on(gpu::backend& b, gpu::stream_ref s, gpu::work_graph& graph,
                  const gpu::node_observer* observer) {
  auto done = b.enqueue_signalled(
      s, [&graph, observer](const gpu::launch_context& on) { return graph.launch(on, observer); });
  BOOST_REQUIRE(done.point.ok());
  auto line = b.timeline_of(s);
  BOOST_REQUIRE(line.ok());
  return {done.launched, line.value()->wait(done.point.value(), std::chrono::seconds{10})};
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(work_graph_on_the_host, host_target)

BOOST_AUTO_TEST_CASE(nodes_without_work_or_with_later_dependencies_are_refused_by_name) {
  auto none = backend().build_graph({});
  BOOST_REQUIRE(!none);
  BOOST_TEST((none.code() == gpu::status_code::invalid_argument));

  std::vector<gpu::graph_node> empty_work(2);
  empty_work[0].work = gpu::work_fn{[](const gpu::launch_context&) { return gpu::status{}; }};
  empty_work[1].label = "the second";
  auto no_work = backend().build_graph(std::move(empty_work));
  BOOST_REQUIRE(!no_work);
  BOOST_TEST(no_work.error().message().find("the second has no work") != std::string::npos,
             no_work.error().to_string());

  auto log = std::make_shared<std::vector<int>>();
  std::vector<gpu::graph_node> forward(2);
  forward[0].work = append(log, 0);
  forward[0].after = {1};
  forward[1].work = append(log, 1);
  auto later = backend().build_graph(std::move(forward));
  BOOST_REQUIRE(!later);
  BOOST_TEST(later.error().message().find("graph node 0 comes after node 1") != std::string::npos,
             later.error().to_string());
  BOOST_TEST(log->empty());  // nothing ran
}

BOOST_AUTO_TEST_CASE(a_launch_runs_every_node_in_order_and_tells_each) {
  auto s = make_stream(backend(), "graphs");
  auto log = std::make_shared<std::vector<int>>();
  std::vector<gpu::graph_node> nodes(4);
  for (int i = 0; i < 4; ++i) nodes[i].work = append(log, i);
  nodes[2].after = {0, 1};
  nodes[3].after = {2};
  auto built = backend().build_graph(std::move(nodes));
  BOOST_REQUIRE_MESSAGE(built.ok(), built.error().to_string());
  gpu::work_graph& graph = *built.value();
  BOOST_TEST(graph.size() == 4u);
  BOOST_TEST(graph.observes_nodes());
  BOOST_TEST(graph.instantiations() == 1u);
  BOOST_TEST(log->empty());  // building runs nothing on the host
  std::vector<std::uint32_t> told;
  const gpu::node_observer observer = [&](std::uint32_t node, const gpu::status& how) {
    BOOST_TEST(how.ok());
    told.push_back(node);
  };
  for (int round = 1; round <= 3; ++round) {
    const outcome o = launch_on(backend(), s.ref(), graph, &observer);
    BOOST_TEST(o.launched.ok(), o.launched.to_string());
    BOOST_TEST(o.reached.ok(), o.reached.to_string());
    BOOST_TEST(log->size() == static_cast<std::size_t>(4 * round));
  }
  BOOST_TEST((*log == std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  BOOST_TEST((told == std::vector<std::uint32_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  BOOST_TEST(graph.instantiations() == 1u);
  BOOST_TEST(graph.updates() == 0u);
}

BOOST_AUTO_TEST_CASE(the_first_failure_is_the_launch_and_the_nodes_after_it_still_run) {
  auto s = make_stream(backend(), "failing");
  auto log = std::make_shared<std::vector<int>>();
  std::vector<gpu::graph_node> nodes(4);
  nodes[0].work = append(log, 0);
  nodes[1].work = [](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "node one failed"};
  };
  nodes[2].work = [](const gpu::launch_context&) -> gpu::status {
    throw std::runtime_error{"node two threw"};
  };
  nodes[3].work = append(log, 3);
  auto built = backend().build_graph(std::move(nodes));
  BOOST_REQUIRE(built.ok());
  std::vector<std::pair<std::uint32_t, gpu::status>> told;
  const gpu::node_observer observer = [&](std::uint32_t node, const gpu::status& how) {
    told.emplace_back(node, how);
  };
  const outcome o = launch_on(backend(), s.ref(), *built.value(), &observer);
  BOOST_TEST(o.launched.ok());  // the host backend answers a work's failure at its point
  BOOST_TEST(!o.reached.ok());
  BOOST_TEST(o.reached.message().find("node one failed") != std::string::npos,
             o.reached.to_string());
  BOOST_TEST((*log == std::vector<int>{0, 3}));
  BOOST_REQUIRE(told.size() == 4u);
  BOOST_TEST(told[0].second.ok());
  BOOST_TEST((told[1].second.code() == gpu::status_code::op_failed));
  BOOST_TEST((told[2].second.code() == gpu::status_code::op_failed));
  BOOST_TEST(told[2].second.message().find("node two threw") != std::string::npos);
  BOOST_TEST(told[3].second.ok());
  // The stream goes on.
  const outcome again = launch_on(backend(), s.ref(), *built.value(), nullptr);
  BOOST_TEST(!again.reached.ok());
  BOOST_TEST((*log == std::vector<int>{0, 3, 0, 3}));
}

BOOST_AUTO_TEST_CASE(set_work_replaces_a_node_from_the_next_launch_on_as_an_update) {
  auto s = make_stream(backend(), "updates");
  auto log = std::make_shared<std::vector<int>>();
  std::vector<gpu::graph_node> nodes(2);
  nodes[0].work = append(log, 0);
  nodes[1].work = append(log, 1);
  nodes[1].after = {0};
  auto built = backend().build_graph(std::move(nodes));
  BOOST_REQUIRE(built.ok());
  gpu::work_graph& graph = *built.value();
  BOOST_TEST(graph.set_work(1, append(log, 10)).ok());
  BOOST_TEST((launch_on(backend(), s.ref(), graph, nullptr).reached.ok()));
  BOOST_TEST(graph.set_work(1, append(log, 1)).ok());
  BOOST_TEST((launch_on(backend(), s.ref(), graph, nullptr).reached.ok()));
  BOOST_TEST((*log == std::vector<int>{0, 10, 0, 1}));
  BOOST_TEST(graph.updates() == 2u);
  BOOST_TEST(graph.instantiations() == 1u);
  BOOST_TEST((graph.set_work(2, append(log, 2)).code() == gpu::status_code::invalid_argument));
  BOOST_TEST((graph.set_work(0, {}).code() == gpu::status_code::invalid_argument));
  BOOST_TEST(graph.updates() == 2u);
  // Launched outside a host stream's work: refused.
  const gpu::launch_context elsewhere{gpu::backend_kind::cuda, gpu::stream_ref{}, nullptr};
  BOOST_TEST((graph.launch(elsewhere, nullptr).code() == gpu::status_code::invalid_argument));
}

BOOST_AUTO_TEST_SUITE_END()
