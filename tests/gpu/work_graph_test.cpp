// Work graphs on the host backend (gpu/work_graph.hpp): the nodes a graph refuses, named; a
// launch runs every node in the list's order inside the work that launches it, each outcome
// told to the observer, the first failure the launch's (a throw is a failure, and the nodes
// after it still run, as work after a failure on a stream does); set_work replaces a node's
// work from the next launch on, counted as an update, never as an instantiation; each node's
// scratch is its own and the same at every launch, grows only when a node asks for more,
// stays counted across a reset and goes back to the backend's budget with the graph. The CUDA
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

namespace {

// A work that takes `bytes` of scratch, notes where, and counts its launches in the block's
// first int: what a launch left there is there at the next.
gpu::work_fn counting_in_scratch(std::size_t bytes, std::shared_ptr<std::vector<void*>> where,
                                 std::shared_ptr<std::vector<int>> counts) {
  return [=](const gpu::launch_context& on) {
    auto block = on.scratch(bytes);
    if (!block) return block.error();
    where->push_back(block.value());
    auto* count = static_cast<int*>(block.value());
    if (where->size() == 1 || where->at(where->size() - 2) != block.value()) *count = 0;
    counts->push_back(++*count);
    return gpu::status{};
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_nodes_scratch_is_its_own_and_the_same_at_every_launch) {
  host_target small{gpu::host_backend_options{2, 1 << 20, "small"}};
  auto& b = small.backend();
  auto s = make_stream(b, "scratch");
  auto where0 = std::make_shared<std::vector<void*>>();
  auto where1 = std::make_shared<std::vector<void*>>();
  auto counts = std::make_shared<std::vector<int>>();
  std::vector<gpu::graph_node> nodes(2);
  nodes[0].work = counting_in_scratch(1000, where0, counts);
  nodes[1].work = counting_in_scratch(1000, where1, counts);
  nodes[1].after = {0};
  {
    auto built = b.build_graph(std::move(nodes));
    BOOST_REQUIRE(built.ok());
    gpu::work_graph& graph = *built.value();
    BOOST_TEST(graph.scratch_bytes() == 0u);  // taken when a node first asks
    for (int i = 0; i < 3; ++i) BOOST_TEST((launch_on(b, s.ref(), graph, nullptr).reached.ok()));
    BOOST_REQUIRE(where0->size() == 3u);
    BOOST_TEST(((*where0)[0] == (*where0)[2] && (*where1)[0] == (*where1)[2]));
    BOOST_TEST((*where0)[0] != (*where1)[0]);
    BOOST_TEST((*counts == std::vector<int>{1, 1, 2, 2, 3, 3}));
    BOOST_TEST(graph.scratch_bytes() == 2000u);
    BOOST_TEST(small.host().memory_in_use() == 2000u);  // held between launches
    // A node given work that needs more gets a new block; the old one stays with the graph.
    CUDACTOR_REQUIRE_OK(graph.set_work(1, counting_in_scratch(5000, where1, counts)));
    BOOST_TEST((launch_on(b, s.ref(), graph, nullptr).reached.ok()));
    BOOST_TEST(where1->back() != (*where1)[0]);
    BOOST_TEST(counts->back() == 1);
    BOOST_TEST(graph.scratch_bytes() == 7000u);
    // Less again: the new block serves it, as it is.
    CUDACTOR_REQUIRE_OK(graph.set_work(1, counting_in_scratch(100, where1, counts)));
    BOOST_TEST((launch_on(b, s.ref(), graph, nullptr).reached.ok()));
    BOOST_TEST(where1->back() == where1->at(where1->size() - 2));
    BOOST_TEST(counts->back() == 2);
    BOOST_TEST(graph.scratch_bytes() == 7000u);
    // A node asking for more than the budget has left fails its launch, naming scratch.
    CUDACTOR_REQUIRE_OK(graph.set_work(0, counting_in_scratch(2 << 20, where0, counts)));
    const outcome over = launch_on(b, s.ref(), graph, nullptr);
    CUDACTOR_CHECK_ERRC(over.reached, gpu::status_code::op_failed);
    BOOST_TEST(over.reached.message().find("scratch") != std::string::npos,
               over.reached.to_string());
    // A reset drops the allocations from the budget, not the scratch the graph still holds.
    auto memory = b.allocate(s, 4096);
    BOOST_REQUIRE(memory.ok());
    BOOST_TEST(small.host().memory_in_use() == 7000u + 4096u);
    CUDACTOR_REQUIRE_OK(b.reset());
    memory.value() = gpu::buffer{};
    BOOST_TEST(small.host().memory_in_use() == 7000u);
  }
  BOOST_TEST(small.host().memory_in_use() == 0u);  // the graph gave its scratch back
}

BOOST_AUTO_TEST_SUITE_END()
