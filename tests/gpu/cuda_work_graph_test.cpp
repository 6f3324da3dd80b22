// CUDA graphs built from work (gpu/detail/cuda_work_graph.hpp) on a real device: kernels,
// copies and memsets captured, each node's work run once at build and its dependencies kept
// as edges; a launch from a stream's work, repeated; set_work swapping a node in place
// (updates counted, no instantiation) unless its shape changed (then one instantiation);
// work that cannot be captured refused naming its node, leaving the device usable; node
// priorities; a node's scratch from the graph's pool, the same memory from launch to launch
// and across an update; and an NCCL collective captured into a graph (a one-rank
// communicator).
// Skipped, and reported as such, without a device.
#define BOOST_TEST_MODULE cuda_work_graph
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/gpu_test_main.hpp"
#include "cuda_target.hpp"
#include "cudactor/gpu/nccl_communicator.hpp"

using namespace cudactor;
using namespace cudactor::test;
using conformance::make_stream;

namespace {

constexpr int n = 1000;

cudaStream_t native(const gpu::launch_context& on) {
  return static_cast<cudaStream_t>(on.native_stream());
}

// Device ints, freed when the test ends (after synchronizing what used them).
struct device_ints {
  int* data = nullptr;
  device_ints() {
    void* p = nullptr;
    BOOST_REQUIRE(cudaMalloc(&p, n * sizeof(int)) == cudaSuccess);
    data = static_cast<int*>(p);
  }
  ~device_ints() {
    (void)cudaDeviceSynchronize();
    (void)cudaFree(data);
  }
  std::vector<int> read() const {
    std::vector<int> out(n);
    BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    BOOST_REQUIRE(cudaMemcpy(out.data(), data, n * sizeof(int), cudaMemcpyDeviceToHost) ==
                  cudaSuccess);
    return out;
  }
};

gpu::work_fn iota(int* d, int offset, std::shared_ptr<std::atomic<int>> runs = {}) {
  return [=](const gpu::launch_context& on) {
    if (runs) ++*runs;
    return launched(kernels::iota(on.native_stream(), d, n, offset), "iota");
  };
}
gpu::work_fn add(int* d, int value) {
  return [=](const gpu::launch_context& on) {
    return launched(kernels::add(on.native_stream(), d, n, value), "add");
  };
}
gpu::work_fn memset_zero(int* d) {
  return [=](const gpu::launch_context& on) {
    return launched(cudaMemsetAsync(d, 0, n * sizeof(int), native(on)), "memset");
  };
}
gpu::work_fn copy(int* to, const int* from) {
  return [=](const gpu::launch_context& on) {
    return launched(
        cudaMemcpyAsync(to, from, n * sizeof(int), cudaMemcpyDeviceToDevice, native(on)), "copy");
  };
}

// Launches `graph` from work on `s` and waits for the point after it.
gpu::status launch_on(gpu::backend& b, gpu::stream_ref s, gpu::work_graph& graph) {
  auto done = b.enqueue_signalled(
      s, [&graph](const gpu::launch_context& on) { return graph.launch(on, nullptr); });
  if (!done.launched.ok()) return done.launched;
  BOOST_REQUIRE(done.point.ok());
  return b.timeline_of(s).value()->wait(done.point.value(), std::chrono::seconds{30});
}

std::vector<int> expected(int offset) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i + offset;
  return v;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(cuda_work_graph, cuda_target)

BOOST_AUTO_TEST_CASE(kernels_copies_and_memsets_are_captured_once_with_their_edges) {
  device_ints a, b;
  auto runs = std::make_shared<std::atomic<int>>(0);
  std::vector<gpu::graph_node> nodes(4);
  nodes[0].work = memset_zero(a.data);
  nodes[1].work = iota(a.data, 5, runs);
  nodes[1].after = {0};
  nodes[2].work = add(a.data, 3);
  nodes[2].after = {1};
  nodes[3].work = copy(b.data, a.data);
  nodes[3].after = {2, 1, 2};  // one named twice: CUDA refuses that, the graph merges it
  auto built = backend().build_graph(std::move(nodes));
  BOOST_REQUIRE_MESSAGE(built.ok(), built.error().to_string());
  gpu::work_graph& graph = *built.value();
  BOOST_TEST(!graph.observes_nodes());
  BOOST_TEST(runs->load() == 1);  // captured at build
  auto s = make_stream(backend(), "graphs");
  for (int round = 0; round < 3; ++round) {
    CUDACTOR_REQUIRE_OK(launch_on(backend(), s.ref(), graph));
    BOOST_TEST((b.read() == expected(8)));
    CUDACTOR_REQUIRE_OK(backend().fill(s.ref(), b.data, 0, n * sizeof(int)));
  }
  BOOST_TEST(runs->load() == 1);  // launches run the graph, not the work
  BOOST_TEST(graph.instantiations() == 1u);
  BOOST_TEST(graph.updates() == 0u);
}

BOOST_AUTO_TEST_CASE(set_work_swaps_a_node_in_place_unless_its_shape_changes) {
  device_ints a, other;
  std::vector<gpu::graph_node> nodes(2);
  nodes[0].work = iota(a.data, 5);
  nodes[1].work = add(a.data, 3);
  nodes[1].after = {0};
  auto built = backend().build_graph(std::move(nodes));
  BOOST_REQUIRE_MESSAGE(built.ok(), built.error().to_string());
  gpu::work_graph& graph = *built.value();
  auto s = make_stream(backend(), "updates");
  // Other parameters: the offset, then other memory (a rebinding), in place.
  CUDACTOR_REQUIRE_OK(graph.set_work(0, iota(a.data, 7)));
  CUDACTOR_REQUIRE_OK(launch_on(backend(), s.ref(), graph));
  BOOST_TEST((a.read() == expected(10)));
  CUDACTOR_REQUIRE_OK(graph.set_work(0, iota(other.data, 1)));
  CUDACTOR_REQUIRE_OK(graph.set_work(1, add(other.data, 1)));
  CUDACTOR_REQUIRE_OK(launch_on(backend(), s.ref(), graph));
  BOOST_TEST((other.read() == expected(2)));
  BOOST_TEST(graph.updates() == 3u);
  BOOST_TEST(graph.instantiations() == 1u);
  // A node that launches nothing now, then something again: another shape each time.
  CUDACTOR_REQUIRE_OK(graph.set_work(1, [](const gpu::launch_context&) { return gpu::status{}; }));
  CUDACTOR_REQUIRE_OK(launch_on(backend(), s.ref(), graph));
  BOOST_TEST((other.read() == expected(1)));
  CUDACTOR_REQUIRE_OK(graph.set_work(1, add(other.data, 4)));
  CUDACTOR_REQUIRE_OK(launch_on(backend(), s.ref(), graph));
  BOOST_TEST((other.read() == expected(5)));
  BOOST_TEST(graph.instantiations() == 3u);
  BOOST_TEST(graph.updates() == 3u);
}

BOOST_AUTO_TEST_CASE(a_nodes_scratch_comes_from_the_graphs_pool_and_stays_put) {
  device_ints out;
  auto where = std::make_shared<std::vector<void*>>();
  // iota into scratch, then scratch into `out`: the captured kernels use the scratch address.
  const auto through_scratch = [to = out.data, where](int offset) -> gpu::work_fn {
    return [=](const gpu::launch_context& on) {
      auto block = on.scratch(n * sizeof(int));
      if (!block) return block.error();
      where->push_back(block.value());
      int* tmp = static_cast<int*>(block.value());
      if (auto bad = launched(kernels::iota(on.native_stream(), tmp, n, offset), "iota");
          !bad.ok()) {
        return bad;
      }
      return launched(
          cudaMemcpyAsync(to, tmp, n * sizeof(int), cudaMemcpyDeviceToDevice, native(on)), "copy");
    };
  };
  auto s = make_stream(backend(), "scratch");
  std::unique_ptr<conformance_target::hold_handle> held;
  {
    std::vector<gpu::graph_node> nodes(1);
    nodes[0].work = through_scratch(5);
    auto built = backend().build_graph(std::move(nodes));
    BOOST_REQUIRE_MESSAGE(built.ok(), built.error().to_string());
    gpu::work_graph& graph = *built.value();
    BOOST_TEST(graph.scratch_bytes() == n * sizeof(int));
    for (int round = 0; round < 3; ++round) {
      CUDACTOR_REQUIRE_OK(launch_on(backend(), s.ref(), graph));
      BOOST_TEST((out.read() == expected(5)));
      CUDACTOR_REQUIRE_OK(backend().fill(s.ref(), out.data, 0, n * sizeof(int)));
    }
    CUDACTOR_REQUIRE_OK(graph.set_work(0, through_scratch(9)));
    CUDACTOR_REQUIRE_OK(launch_on(backend(), s.ref(), graph));
    BOOST_TEST((out.read() == expected(9)));
    BOOST_REQUIRE(where->size() == 2u);
    BOOST_TEST(where->front() == where->back());  // captured again into the same memory
    BOOST_TEST(graph.updates() == 1u);
    BOOST_TEST(graph.instantiations() == 1u);
    BOOST_TEST(graph.scratch_bytes() == n * sizeof(int));
    // Gone with a launch still waiting behind a held stream: the pool is freed after it.
    CUDACTOR_REQUIRE_OK(backend().fill(s.ref(), out.data, 0, n * sizeof(int)));
    held = hold(s.ref());
    CUDACTOR_REQUIRE_OK(backend().enqueue(
        s.ref(), [&graph](const gpu::launch_context& on) { return graph.launch(on, nullptr); }));
  }
  held->release();
  CUDACTOR_REQUIRE_OK(backend().synchronize(s.ref()));
  BOOST_TEST((out.read() == expected(9)));
  // Had the pool been freed under the launch, the memory could still read right while mapped;
  // a fault it caused would not: the device is still healthy.
  CUDACTOR_REQUIRE_OK(backend().health());
}

BOOST_AUTO_TEST_CASE(work_that_cannot_be_captured_is_refused_by_name_and_the_device_goes_on) {
  device_ints a;
  std::vector<gpu::graph_node> nodes(2);
  nodes[0].work = iota(a.data, 1);
  nodes[1].work = [](const gpu::launch_context& on) {
    // Waiting for the stream is not something a graph can hold.
    return launched(cudaStreamSynchronize(native(on)), "synchronize");
  };
  nodes[1].label = "the synchronizing one";
  auto built = backend().build_graph(std::move(nodes));
  BOOST_REQUIRE(!built.ok());
  BOOST_TEST(built.error().message().find("the synchronizing one") != std::string::npos,
             built.error().to_string());
  std::vector<gpu::graph_node> failing(1);
  failing[0].work = [](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "refused on purpose"};
  };
  auto refused = backend().build_graph(std::move(failing));
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.error().message().find("refused on purpose") != std::string::npos);
  // Nothing sticky: the backend and a graph built next work.
  CUDACTOR_REQUIRE_OK(backend().health());
  std::vector<gpu::graph_node> fine(1);
  fine[0].work = iota(a.data, 2);
  fine[0].priority = gpu::stream_priority::high;
  auto ok = backend().build_graph(std::move(fine));
  BOOST_REQUIRE_MESSAGE(ok.ok(), ok.error().to_string());
  auto s = make_stream(backend(), "after");
  CUDACTOR_REQUIRE_OK(launch_on(backend(), s.ref(), *ok.value()));
  BOOST_TEST((a.read() == expected(2)));
}

BOOST_AUTO_TEST_CASE(an_nccl_collective_is_captured_and_replayed) {
  BOOST_REQUIRE_MESSAGE(gpu::nccl_available().ok(), gpu::nccl_available().to_string());
  gpu::memory_store store;
  gpu::nccl_options o;
  o.name = "graph";
  o.timeout = std::chrono::milliseconds{20000};
  auto made = gpu::make_nccl_communicator(o, store);
  BOOST_REQUIRE_MESSAGE(made, made.error().to_string());
  std::shared_ptr<gpu::communicator> comm{std::move(made.value())};
  device_ints a, b;
  gpu::collective_call call;
  call.kind = gpu::collective_kind::all_reduce;
  call.op = gpu::reduce_op::sum;
  call.type = gpu::element_type::i32;
  call.count = n;
  call.send = a.data;
  call.recv = b.data;
  std::vector<gpu::graph_node> nodes(3);
  nodes[0].work = iota(a.data, 0);
  nodes[1].work = gpu::collective_work(comm, call);
  nodes[1].after = {0};
  nodes[2].work = add(b.data, 1);
  nodes[2].after = {1};
  auto built = backend().build_graph(std::move(nodes));
  BOOST_REQUIRE_MESSAGE(built.ok(), built.error().to_string());
  auto s = make_stream(backend(), "collective");
  for (int round = 0; round < 3; ++round) {
    CUDACTOR_REQUIRE_OK(launch_on(backend(), s.ref(), *built.value()));
    BOOST_TEST((b.read() == expected(1)));  // one rank: the sum is the input
  }
  BOOST_TEST(comm->broken().ok(), comm->broken().to_string());
}

BOOST_AUTO_TEST_SUITE_END()
