// A kernel fault on a real device: a sticky error that poisons the whole context. Its own
// executable, because nothing else in the process can use the device afterwards: a lost CUDA
// device is lost until the process restarts (CUDA 13), and reset() says so.
#define BOOST_TEST_MODULE cuda_backend_faults
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>

#include "common/gpu_test_main.hpp"
#include "cuda_target.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;
using conformance::make_event;
using conformance::make_stream;

BOOST_FIXTURE_TEST_CASE(a_kernel_fault_loses_the_device_for_the_process, cuda_target) {
  auto faulty = make_stream(backend(), "faulty");
  auto bystander = make_stream(backend(), "bystander");
  auto after = make_event(backend());
  auto line = backend().timeline_of(bystander).value();
  const auto pending = backend().signal(bystander);
  BOOST_REQUIRE(pending.ok());
  CUDACTOR_REQUIRE_OK(line->wait(pending.value(), 5000ms));  // reached before the fault
  std::atomic<int> callback_code{-1};
  // Held first, so the fault cannot strike before the callback is in place behind it.
  auto held = hold(faulty);
  CUDACTOR_REQUIRE_OK(backend().enqueue(faulty, [](const gpu::launch_context& c) {
    return launched(kernels::fault(c.native_stream()), "fault");  // the launch itself is fine
  }));
  CUDACTOR_REQUIRE_OK(backend().add_callback(
      faulty, [&](const gpu::status& why) { callback_code = static_cast<int>(why.code()); }));
  held->release();
  const auto synced = backend().synchronize(faulty);
  BOOST_TEST(synced.code() == gpu::status_code::device_lost);
  BOOST_TEST(synced.message().find("cudaErrorIllegalAddress") != std::string::npos);
  BOOST_TEST(backend().health().code() == gpu::status_code::device_lost);
  // Every stream is affected, and nothing new is accepted.
  BOOST_TEST(backend().record(after, bystander).code() == gpu::status_code::device_lost);
  BOOST_TEST(backend().create_stream({}).code() == gpu::status_code::device_lost);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (callback_code.load() < 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  // The callback ran exactly once and was told the device failed.
  BOOST_TEST(callback_code.load() == static_cast<int>(gpu::status_code::device_lost));

  // A timeline whose value was reached stays reached; nothing later is reported done.
  BOOST_TEST(line->query(pending.value()).ready());
  const auto beyond = line->query(pending.value() + 1);
  BOOST_TEST(!beyond.ready());

  // No recovery in this process: reset() says so, and the device stays lost.
  const auto reset = backend().reset();
  BOOST_TEST(reset.code() == gpu::status_code::device_lost);
  BOOST_TEST(reset.message().find("restart the process") != std::string::npos, reset.to_string());
  BOOST_TEST(backend().health().code() == gpu::status_code::device_lost);
  BOOST_TEST(backend().signal(bystander).code() == gpu::status_code::device_lost);
  held.reset();  // its stream is lost: the hold's cleanup must not hang
}
