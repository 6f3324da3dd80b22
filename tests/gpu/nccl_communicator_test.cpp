// The CUDA backend's collective engine on one device: a one-rank NCCL communicator still runs
// every call, so every kind, reduction and element type runs on a CUDA stream of the backend
// as a stream's work, against values computed here (one rank: a reduction is its input, a
// gather and a scatter are copies, an average is exact). Also: a host stream's context is
// refused, bad options are refused, an abort breaks the communicator, and a call, or a step's
// launch the communicator watches (what a replayed step's graph does), held past the timeout
// breaks it and fails its point. Needs a device and
// libnccl.so.2 (a missing library on a GPU machine is a failure, not a skip).
#define BOOST_TEST_MODULE nccl_communicator
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "common/gpu_test_main.hpp"
#include "cuda_target.hpp"
#include "cudactor/gpu/element_math.hpp"
#include "cudactor/gpu/nccl_communicator.hpp"

using namespace cudactor;
using namespace cudactor::test;
using conformance::make_stream;

namespace {

std::unique_ptr<gpu::communicator> one_rank(
    const std::string& name, std::chrono::milliseconds timeout = std::chrono::milliseconds{20000}) {
  BOOST_REQUIRE_MESSAGE(gpu::nccl_available().ok(), gpu::nccl_available().to_string());
  gpu::memory_store store;
  gpu::nccl_options o;
  o.name = name;
  o.rank = 0;
  o.size = 1;
  o.timeout = timeout;
  auto made = gpu::make_nccl_communicator(o, store);
  BOOST_REQUIRE_MESSAGE(made, made.error().to_string());
  return std::move(made.value());
}

// An all-reduce (sum) of 4 floats in place at `data`.
gpu::collective_call in_place_sum(void* data) {
  gpu::collective_call call;
  call.count = 4;
  call.send = data;
  call.recv = data;
  return call;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(nccl, cuda_target)

BOOST_AUTO_TEST_CASE(every_kind_reduction_and_type_runs_on_a_cuda_stream) {
  auto comm = one_rank("all");
  std::shared_ptr<gpu::communicator> shared{std::move(comm)};
  auto s = make_stream(backend(), "collectives");
  constexpr std::size_t n = 257;
  const gpu::element_type types[] = {gpu::element_type::f32, gpu::element_type::f64,
                                     gpu::element_type::f16, gpu::element_type::bf16,
                                     gpu::element_type::i32, gpu::element_type::i64,
                                     gpu::element_type::u8};
  const gpu::collective_kind kinds[] = {
      gpu::collective_kind::all_reduce,     gpu::collective_kind::broadcast,
      gpu::collective_kind::reduce,         gpu::collective_kind::all_gather,
      gpu::collective_kind::reduce_scatter, gpu::collective_kind::barrier};
  std::size_t runs = 0;
  for (auto type : types) {
    const std::size_t bytes = n * gpu::element_size(type);
    auto in = backend().allocate_managed(bytes);
    auto out = backend().allocate_managed(bytes);
    BOOST_REQUIRE(in.ok() && out.ok());
    auto* src = static_cast<unsigned char*>(in.value().data());
    auto* dst = static_cast<unsigned char*>(out.value().data());
    // Bytes whose values are small in every type (a 16-bit float of 0x00nn is tiny but
    // finite), so that one rank's sum, min, max, product and average are the input itself.
    for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i % 7 == 0 ? 0 : 1);
    for (auto kind : kinds) {
      for (auto op : {gpu::reduce_op::sum, gpu::reduce_op::prod, gpu::reduce_op::min,
                      gpu::reduce_op::max, gpu::reduce_op::avg}) {
        if (kind == gpu::collective_kind::barrier && op != gpu::reduce_op::sum) continue;
        std::memset(dst, 0xAB, bytes);
        gpu::collective_call call;
        call.kind = kind;
        call.op = op;
        call.type = type;
        call.count = kind == gpu::collective_kind::barrier ? 0 : n;
        call.send = src;
        call.recv = dst;
        BOOST_REQUIRE_MESSAGE(backend().enqueue(s, gpu::collective_work(shared, call)).ok(),
                              "enqueue");
        CUDACTOR_REQUIRE_OK(backend().synchronize(s));
        ++runs;
        if (kind == gpu::collective_kind::barrier) continue;
        // prod and avg of one rank are the input, save for u8 avg and the integer types,
        // which NCCL computes the same way: one value divided by one.
        BOOST_TEST(std::memcmp(src, dst, bytes) == 0, gpu::to_string(kind)
                                                          << " " << gpu::to_string(op) << " "
                                                          << gpu::to_string(type));
      }
    }
  }
  BOOST_TEST(shared->broken().ok(), shared->broken().to_string());
  BOOST_TEST(shared->sequence() == runs);
}

BOOST_AUTO_TEST_CASE(a_host_context_and_bad_options_are_refused) {
  auto comm = one_rank("refusals");
  gpu::collective_call call;
  call.count = 1;
  float x = 1;
  call.send = &x;
  call.recv = &x;
  const gpu::launch_context host{gpu::backend_kind::host, gpu::stream_ref{}, nullptr};
  BOOST_TEST((comm->run(call, host).code() == gpu::status_code::not_supported));
  gpu::memory_store store;
  gpu::nccl_options bad;
  bad.name = "bad";
  bad.rank = 2;
  bad.size = 2;
  auto refused = gpu::make_nccl_communicator(bad, store);
  BOOST_REQUIRE(!refused);
  BOOST_TEST((refused.error().code() == gpu::status_code::invalid_argument));
}

BOOST_AUTO_TEST_CASE(an_abort_breaks_it_and_later_calls_fail_at_once) {
  auto comm = one_rank("aborted");
  std::shared_ptr<gpu::communicator> shared{std::move(comm)};
  auto s = make_stream(backend(), "aborted");
  shared->abort("the test said so");
  BOOST_TEST((shared->broken().code() == gpu::status_code::cancelled));
  auto buf = backend().allocate_managed(16);
  BOOST_REQUIRE(buf.ok());
  const gpu::collective_call call = in_place_sum(buf.value().data());
  const auto enqueued = backend().enqueue(s, gpu::collective_work(shared, call));
  BOOST_TEST(!enqueued.ok());
  BOOST_TEST(enqueued.message().find("the test said so") != std::string::npos, enqueued.message());
}

BOOST_AUTO_TEST_CASE(a_call_or_launch_held_past_the_timeout_breaks_it_and_fails_its_point) {
  std::shared_ptr<gpu::communicator> shared{one_rank("watched", std::chrono::milliseconds{300})};
  auto s = make_stream(backend(), "watched");
  auto line = backend().timeline_of(s);
  BOOST_REQUIRE(line.ok());
  // What a replayed step's graph does after its launch (actors/coordinator/step_graph.cpp):
  // the communicator watches the stream from there.
  const auto launch = [&] {
    return backend().enqueue_signalled(
        s, [shared](const gpu::launch_context& on) { return shared->watch_launch(on); });
  };
  // A launch that ends in time leaves it as it was (the watchdog looks every 10 ms).
  auto in_time = launch();
  CUDACTOR_REQUIRE_OK(in_time.launched);
  BOOST_REQUIRE(in_time.point.ok());
  CUDACTOR_REQUIRE_OK(line.value()->wait(in_time.point.value(), std::chrono::seconds{10}));
  std::this_thread::sleep_for(std::chrono::milliseconds{500});
  BOOST_TEST(shared->broken().ok(), shared->broken().to_string());
  // Held on the device past the timeout (a rank dead or hung): a call, then a launch.
  auto buf = backend().allocate_managed(16);
  BOOST_REQUIRE(buf.ok());
  const gpu::collective_call call = in_place_sum(buf.value().data());
  auto held = hold(s);
  auto stuck_call = backend().enqueue_signalled(s, gpu::collective_work(shared, call));
  CUDACTOR_REQUIRE_OK(stuck_call.launched);
  auto stuck_launch = launch();
  CUDACTOR_REQUIRE_OK(stuck_launch.launched);
  BOOST_REQUIRE(stuck_call.point.ok() && stuck_launch.point.ok());
  // Broken at once, without waiting for the abort, which may wait for the device (the hold).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (shared->broken().ok() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  const gpu::status why = shared->broken();
  BOOST_TEST((why.code() == gpu::status_code::timeout), why.to_string());
  BOOST_TEST(
      why.message().find("collective #1 did not complete within 300 ms") != std::string::npos,
      why.message());
  held->release();
  // The abort ended the call's kernels as if they were done: both points fail, with the cause,
  // rather than read as reached.
  for (const auto* stuck : {&stuck_call, &stuck_launch}) {
    const gpu::status ended = line.value()->wait(stuck->point.value(), std::chrono::seconds{30});
    BOOST_TEST(!ended.ok());
    BOOST_TEST(ended.message().find("did not complete within 300 ms") != std::string::npos,
               ended.message());
  }
  CUDACTOR_REQUIRE_OK(backend().health());
  // Broken, it watches nothing more: the next launch fails with the cause.
  const auto again = launch();
  BOOST_TEST(!again.launched.ok());
  BOOST_TEST(again.launched.message().find("did not complete within 300 ms") != std::string::npos,
             again.launched.message());
  // A launch that timed out names itself as such.
  std::shared_ptr<gpu::communicator> other{one_rank("launch", std::chrono::milliseconds{300})};
  held.reset();  // before the next hold: its end synchronizes the stream
  held = hold(s);
  auto stuck = backend().enqueue_signalled(
      s, [other](const gpu::launch_context& on) { return other->watch_launch(on); });
  CUDACTOR_REQUIRE_OK(stuck.launched);
  const auto until_other = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (other->broken().ok() && std::chrono::steady_clock::now() < until_other) {
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  BOOST_TEST(other->broken().message().find("a launch of a step") != std::string::npos,
             other->broken().message());
  held->release();
  BOOST_TEST(!line.value()->wait(stuck.point.value(), std::chrono::seconds{30}).ok());
}

BOOST_AUTO_TEST_SUITE_END()
