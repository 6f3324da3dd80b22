// The CUDA backend on a real device: the shared conformance checks, then what is specific to
// CUDA (priorities, non-blocking streams, real kernels, cleared not-ready errors, rejected
// launches, the timeline's event ring). Skipped, and reported as such, without a device.
#define BOOST_TEST_MODULE cuda_backend
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>
#include <vector>

#include "common/gpu_test_main.hpp"
#include "cuda_target.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;
using conformance::make_event;
using conformance::make_stream;

namespace {

// `n` ints at `d`, copied out on `s` through pinned memory once the stream got there.
std::vector<int> read_back(gpu::backend& b, gpu::stream_ref s, const int* d, int n) {
  auto landing = b.allocate_pinned(n * sizeof(int));
  BOOST_REQUIRE(landing.ok());
  int* back = landing.value().as<int>();
  CUDACTOR_REQUIRE_OK(b.copy(s, back, d, n * sizeof(int), gpu::copy_kind::device_to_host));
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  return std::vector<int>(back, back + n);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(conformance_on_cuda)
CUDACTOR_CONFORMANCE_CASES(cuda_target)
BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(cuda_semantics, cuda_target)

BOOST_AUTO_TEST_CASE(it_describes_the_device) {
  const auto& info = backend().device();
  BOOST_TEST(backend().kind() == gpu::backend_kind::cuda);
  BOOST_TEST(!info.name.empty());
  BOOST_TEST(info.total_memory > 0u);
  BOOST_TEST(info.compute_capability_major >= 7);
  BOOST_TEST(info.greatest_priority <= info.least_priority);  // lower number: higher priority
  BOOST_TEST_MESSAGE("device: " << info.name << ", cc " << info.compute_capability_major << "."
                                << info.compute_capability_minor << ", priorities "
                                << info.greatest_priority << ".." << info.least_priority);
}

BOOST_AUTO_TEST_CASE(streams_are_non_blocking_with_priorities_from_the_device_range) {
  const auto& info = backend().device();
  for (auto p :
       {gpu::stream_priority::low, gpu::stream_priority::normal, gpu::stream_priority::high}) {
    auto s = make_stream(backend(), "p", p);
    auto native = static_cast<cudaStream_t>(backend().native_handle(s).value());
    unsigned flags = 0;
    int priority = 0;
    BOOST_REQUIRE(cudaStreamGetFlags(native, &flags) == cudaSuccess);
    BOOST_REQUIRE(cudaStreamGetPriority(native, &priority) == cudaSuccess);
    BOOST_TEST((flags & cudaStreamNonBlocking) != 0u);
    if (p == gpu::stream_priority::high) BOOST_TEST(priority == info.greatest_priority);
    if (p == gpu::stream_priority::low) BOOST_TEST(priority == info.least_priority);
    BOOST_TEST(priority >= info.greatest_priority);
    BOOST_TEST(priority <= info.least_priority);
  }
}

BOOST_AUTO_TEST_CASE(the_legacy_default_stream_does_not_wait_for_our_streams) {
  auto s = make_stream(backend(), "held");
  auto held = hold(s);
  BOOST_REQUIRE(kernels::busy(nullptr /* legacy default stream */, 1000) == 0);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  cudaError_t answer = cudaErrorNotReady;
  while (answer == cudaErrorNotReady && std::chrono::steady_clock::now() < deadline) {
    answer = cudaStreamQuery(nullptr);
    std::this_thread::sleep_for(1ms);
  }
  (void)cudaGetLastError();
  BOOST_TEST(answer == cudaSuccess);  // it finished although our stream is still held
  held->release();
  CUDACTOR_REQUIRE_OK(backend().synchronize(s));
}

BOOST_AUTO_TEST_CASE(kernels_run_in_stream_order_and_compute_the_right_result) {
  auto s = make_stream(backend(), "compute");
  constexpr int n = 1 << 20;
  auto data = backend().allocate(s, n * sizeof(int));
  BOOST_REQUIRE(data.ok());
  int* d = data.value().as<int>();
  CUDACTOR_REQUIRE_OK(backend().enqueue(s, [d](const gpu::launch_context& c) {
    return launched(kernels::iota(c.native_stream(), d, n, 5), "iota");
  }));
  for (int round = 0; round < 10; ++round) {
    CUDACTOR_REQUIRE_OK(backend().enqueue(s, [d](const gpu::launch_context& c) {
      return launched(kernels::add(c.native_stream(), d, n, 3), "add");
    }));
  }
  const std::vector<int> back = read_back(backend(), s, d, n);
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    if (back[i] != i + 5 + 30) ++wrong;
  BOOST_TEST(wrong == 0);
}

// A lone run's scratch is device memory its kernels use on its stream, given back after
// them: 200 runs one after another, each through its own scratch, add up right.
BOOST_AUTO_TEST_CASE(a_lone_runs_scratch_carries_its_kernels_data_in_stream_order) {
  auto s = make_stream(backend(), "scratch");
  constexpr int n = 1 << 16;
  auto data = backend().allocate(s, n * sizeof(int));
  BOOST_REQUIRE(data.ok());
  int* d = data.value().as<int>();
  CUDACTOR_REQUIRE_OK(backend().fill(s, d, 0, n * sizeof(int)));
  for (int round = 0; round < 200; ++round) {
    CUDACTOR_REQUIRE_OK(backend().enqueue(s, [d](const gpu::launch_context& c) {
      auto block = c.scratch(n * sizeof(int));
      if (!block) return block.error();
      int* tmp = static_cast<int*>(block.value());
      const auto stream = static_cast<cudaStream_t>(c.native_stream());
      if (auto bad =
              launched(cudaMemcpyAsync(tmp, d, n * sizeof(int), cudaMemcpyDeviceToDevice, stream),
                       "copy in");
          !bad.ok()) {
        return bad;
      }
      if (auto bad = launched(kernels::add(c.native_stream(), tmp, n, 1), "add"); !bad.ok()) {
        return bad;
      }
      return launched(cudaMemcpyAsync(d, tmp, n * sizeof(int), cudaMemcpyDeviceToDevice, stream),
                      "copy out");
    }));
  }
  const std::vector<int> back = read_back(backend(), s, d, n);
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    if (back[i] != 200) ++wrong;
  BOOST_TEST(wrong == 0);
}

// Scratch asked for after a launch of the same work failed is refused without allocating,
// naming that, and the launch's own error is what fails the work (a failed allocation's would
// have replaced it).
BOOST_AUTO_TEST_CASE(scratch_after_a_failed_launch_leaves_the_launchs_error) {
  auto s = make_stream(backend(), "after a rejected launch");
  auto refused = std::make_shared<gpu::status>();
  const gpu::status ran = backend().enqueue(s, [refused](const gpu::launch_context& c) {
    (void)kernels::rejected(c.native_stream());
    auto block = c.scratch(64);
    if (!block) *refused = block.error();
    return gpu::status{};
  });
  BOOST_TEST(!ran.ok());
  // The launch's error, not a refused allocation's (the stream's name has no "scratch" in it).
  BOOST_TEST(ran.message().find("launching work on stream 'after a rejected launch'") !=
                 std::string::npos,
             ran.message());
  BOOST_TEST(ran.message().find("scratch") == std::string::npos, ran.message());
  BOOST_TEST(refused->message().find("a launch of this work failed before it") != std::string::npos,
             refused->message());
  CUDACTOR_REQUIRE_OK(backend().health());
}

BOOST_AUTO_TEST_CASE(a_consumer_waiting_on_an_event_sees_the_producers_data) {
  auto producer = make_stream(backend(), "producer");
  auto consumer = make_stream(backend(), "consumer");
  constexpr int n = 4096;
  auto data = backend().allocate(producer, n * sizeof(int));
  BOOST_REQUIRE(data.ok());
  int* d = data.value().as<int>();
  auto ready = make_event(backend());
  CUDACTOR_REQUIRE_OK(busy(producer, 30ms));  // the consumer would otherwise copy too early
  CUDACTOR_REQUIRE_OK(backend().enqueue(producer, [d](const gpu::launch_context& c) {
    return launched(kernels::iota(c.native_stream(), d, n, 100), "iota");
  }));
  CUDACTOR_REQUIRE_OK(backend().record(ready, producer));
  CUDACTOR_REQUIRE_OK(backend().wait(consumer, ready));
  const std::vector<int> back = read_back(backend(), consumer, d, n);
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    if (back[i] != i + 100) ++wrong;
  BOOST_TEST(wrong == 0);
  CUDACTOR_REQUIRE_OK(backend().synchronize());
}

BOOST_AUTO_TEST_CASE(a_not_ready_query_leaves_no_error_behind) {
  auto s = make_stream(backend(), "held");
  auto e = make_event(backend());
  auto held = hold(s);
  CUDACTOR_REQUIRE_OK(backend().record(e, s));
  BOOST_TEST(backend().query(e).state == gpu::event_state::not_ready);
  auto line = backend().timeline_of(s).value();
  auto value = backend().signal(s);
  BOOST_REQUIRE(value.ok());
  BOOST_TEST(line->query(value.value()).state == gpu::event_state::not_ready);
  BOOST_TEST(cudaPeekAtLastError() == cudaSuccess);
  // A launch right after must not be blamed for the not-ready answer.
  auto other = make_stream(backend(), "other");
  CUDACTOR_REQUIRE_OK(busy(other, 1ms));
  held->release();
  CUDACTOR_REQUIRE_OK(backend().synchronize());
}

BOOST_AUTO_TEST_CASE(a_rejected_launch_fails_that_enqueue_alone) {
  auto s = make_stream(backend(), "rejecting");
  int code = 0;  // what the runtime said of the launch: its name must reach the caller
  const auto rejected = backend().enqueue(s, [&code](const gpu::launch_context& c) {
    code = kernels::rejected(c.native_stream());
    return launched(code, "rejected");
  });
  BOOST_TEST(code != 0);
  BOOST_TEST(rejected.code() == gpu::status_code::op_failed);
  const std::string name = cudaGetErrorName(static_cast<cudaError_t>(code));
  BOOST_TEST(rejected.message().find(name) != std::string::npos, rejected.message());
  BOOST_TEST(rejected.message().find("'rejecting'") != std::string::npos);
  BOOST_TEST(backend().health().ok());
  CUDACTOR_REQUIRE_OK(busy(s, 1ms));
  CUDACTOR_REQUIRE_OK(backend().synchronize(s));
  const auto thrown = backend().enqueue(s, [](const gpu::launch_context&) -> gpu::status {
    throw std::runtime_error("no kernel today");
  });
  BOOST_TEST(thrown.code() == gpu::status_code::op_failed);
  BOOST_TEST(thrown.message().find("no kernel today") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_timeline_recycles_its_events_over_many_values) {
  auto s = make_stream(backend(), "many");
  auto line = backend().timeline_of(s).value();
  constexpr gpu::timeline_point total = 20000;
  for (gpu::timeline_point v = 1; v <= total; ++v) {
    auto value = backend().signal(s);
    BOOST_REQUIRE_MESSAGE(value.ok(), value.error().to_string());
    // Waits often enough that the default in-flight bound (512) is never what stops it.
    if (v % 256 == 0) CUDACTOR_REQUIRE_OK(line->wait(v, 5000ms));
  }
  CUDACTOR_REQUIRE_OK(line->wait(total, 0ms));
  BOOST_TEST(line->completed() == total);
  BOOST_TEST(line->signalled() == total);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

struct small_bound : cuda_target {
  static constexpr std::size_t bound = 8;
  small_bound() : cuda_target(bound) {}
};

// Whatever the stream holds, a signal past the bound is refused at once: it never reaches a
// cudaEventRecord that could block on a full stream queue.
void bounded_in_flight(cuda_target& t, std::size_t bound) {
  auto& b = t.backend();
  auto s = make_stream(b, "bounded");
  auto line = b.timeline_of(s).value();
  auto held = t.hold(s);
  gpu::result<gpu::timeline_point> last = gpu::timeline_point{0};
  std::size_t accepted = 0;
  while (accepted < 100000) {
    last = b.signal(s);
    if (!last.ok()) break;
    ++accepted;
  }
  BOOST_TEST(last.code() == gpu::status_code::resource_exhausted);
  BOOST_TEST(last.error().message().find("max_in_flight") != std::string::npos);
  BOOST_TEST(accepted == bound);
  held->release();
  CUDACTOR_REQUIRE_OK(line->wait(static_cast<gpu::timeline_point>(accepted), 10000ms));
  BOOST_TEST(b.signal(s).ok());  // room again once values retire
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(the_timeline_bounds_what_is_in_flight_by_default, cuda_target) {
  bounded_in_flight(*this, gpu::cuda_default_max_in_flight);
}

BOOST_FIXTURE_TEST_CASE(the_timeline_bounds_what_is_in_flight_as_configured, small_bound) {
  bounded_in_flight(*this, bound);
}

BOOST_FIXTURE_TEST_SUITE(cuda_memory, cuda_target)

BOOST_AUTO_TEST_CASE(copies_from_or_to_pageable_memory_are_refused) {
  auto s = make_stream(backend(), "pageable");
  auto device = backend().allocate(s, 256);
  BOOST_REQUIRE(device.ok());
  std::vector<std::uint8_t> pageable(256, 1);
  const auto in = backend().copy(s, device.value().data(), pageable.data(), 256,
                                 gpu::copy_kind::host_to_device);
  BOOST_TEST(in.code() == gpu::status_code::invalid_argument);
  BOOST_TEST(in.message().find("pageable") != std::string::npos, in.to_string());
  const auto out = backend().copy(s, pageable.data(), device.value().data(), 256,
                                  gpu::copy_kind::device_to_host);
  BOOST_TEST(out.code() == gpu::status_code::invalid_argument);
  // Registered memory is pinned too, and accepted.
  BOOST_REQUIRE(cudaHostRegister(pageable.data(), 256, cudaHostRegisterDefault) == cudaSuccess);
  CUDACTOR_REQUIRE_OK(backend().copy(s, device.value().data(), pageable.data(), 256,
                                     gpu::copy_kind::host_to_device));
  CUDACTOR_REQUIRE_OK(backend().synchronize(s));
  BOOST_REQUIRE(cudaHostUnregister(pageable.data()) == cudaSuccess);
}

// Memory allocated on a stream and released after the stream is destroyed is freed only after
// the stream's work: the pool cannot hand it out again while a kernel still writes to it.
BOOST_AUTO_TEST_CASE(memory_released_after_its_stream_is_gone_waits_for_that_work) {
  constexpr int n = 1 << 20;
  auto doomed = make_stream(backend(), "doomed");
  auto held = hold(doomed);
  {
    auto late = backend().allocate(doomed, n * sizeof(int));
    BOOST_REQUIRE(late.ok());
    int* d = late.value().as<int>();
    CUDACTOR_REQUIRE_OK(backend().enqueue(doomed, [d](const gpu::launch_context& c) {
      return launched(kernels::iota(c.native_stream(), d, n, 0), "iota");  // after the hold
    }));
    doomed = gpu::stream{};  // destroyed while its work waits; then the buffer goes
  }
  auto other = make_stream(backend(), "other");
  auto fresh = backend().allocate(other, n * sizeof(int));
  BOOST_REQUIRE(fresh.ok());
  CUDACTOR_REQUIRE_OK(backend().fill(other, fresh.value().data(), 0xAB, n * sizeof(int)));
  CUDACTOR_REQUIRE_OK(backend().synchronize(other));
  held->release();
  held.reset();
  CUDACTOR_REQUIRE_OK(backend().synchronize());
  auto back = backend().allocate_pinned(n * sizeof(int));
  BOOST_REQUIRE(back.ok());
  CUDACTOR_REQUIRE_OK(backend().copy(other, back.value().data(), fresh.value().data(),
                                     n * sizeof(int), gpu::copy_kind::device_to_host));
  CUDACTOR_REQUIRE_OK(backend().synchronize(other));
  const auto* bytes = back.value().as<std::uint8_t>();
  std::size_t overwritten = 0;
  for (std::size_t i = 0; i < std::size_t{n} * sizeof(int); ++i) overwritten += bytes[i] != 0xAB;
  BOOST_TEST(overwritten == 0u);
  BOOST_TEST(backend().failed_releases() == 0u);
  BOOST_TEST(backend().health().ok());
}

BOOST_AUTO_TEST_SUITE_END()
