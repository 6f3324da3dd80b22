// A kernel fault on a real device: a sticky error that poisons the whole context. Its own
// executable, because nothing else in the process can use the device until the reset.
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

BOOST_FIXTURE_TEST_CASE(a_kernel_fault_loses_the_device_until_reset, cuda_target) {
  auto faulty = make_stream(backend(), "faulty");
  auto bystander = make_stream(backend(), "bystander");
  auto after = make_event(backend());
  std::atomic<int> callback_code{-1};
  CUDACTOR_REQUIRE_OK(backend().enqueue(faulty, [](const gpu::launch_context& c) {
    return launched(kernels::fault(c.native_stream()), "fault");  // the launch itself is fine
  }));
  CUDACTOR_REQUIRE_OK(backend().add_callback(
      faulty, [&](const gpu::status& why) { callback_code = static_cast<int>(why.code()); }));
  const auto synced = backend().synchronize(faulty);
  BOOST_TEST(synced.code() == gpu::errc::device_lost);
  BOOST_TEST(synced.message().find("cudaErrorIllegalAddress") != std::string::npos);
  BOOST_TEST(backend().health().code() == gpu::errc::device_lost);
  // Every stream is affected, and nothing new is accepted.
  BOOST_TEST(backend().record(after, bystander).code() == gpu::errc::device_lost);
  BOOST_TEST(backend().create_stream({}).code() == gpu::errc::device_lost);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (callback_code.load() < 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  // The callback ran exactly once and was told the device failed.
  BOOST_TEST(callback_code.load() == static_cast<int>(gpu::errc::device_lost));

  CUDACTOR_REQUIRE_OK(backend().reset());
  BOOST_TEST(backend().health().ok());
  BOOST_TEST(backend().stream_name(faulty).code() == gpu::errc::invalid_handle);
  faulty = gpu::stream{};
  bystander = gpu::stream{};
  after = gpu::event{};
  BOOST_TEST(backend().failed_releases() == 0u);
  auto fresh = make_stream(backend(), "fresh");
  CUDACTOR_REQUIRE_OK(busy(fresh, 1ms));
  CUDACTOR_REQUIRE_OK(backend().synchronize(fresh));
}
