// Choosing a backend at run time. These run everywhere and check whichever answer fits the
// machine: on one without a GPU "auto" must pick the host and say why; with one, CUDA.
#define BOOST_TEST_MODULE open_backend
#include <boost/test/unit_test.hpp>

#include "common/printing.hpp"
#include "cudactor/gpu/open_backend.hpp"

using namespace cudactor::gpu;

BOOST_AUTO_TEST_CASE(host_is_always_available) {
  auto opened = open_backend("host");
  BOOST_REQUIRE(opened.ok());
  BOOST_TEST(opened.value().chosen->kind() == backend_kind::host);
  BOOST_TEST(opened.value().reason == "host: requested");
}

BOOST_AUTO_TEST_CASE(auto_picks_cuda_exactly_when_a_device_is_present) {
  const cuda_probe probe = probe_cuda();
  auto opened = open_backend("auto");
  BOOST_REQUIRE(opened.ok());
  BOOST_TEST_MESSAGE("auto chose: " << opened.value().reason);
  if (probe.available()) {
    BOOST_TEST(opened.value().chosen->kind() == backend_kind::cuda);
  } else {
    BOOST_TEST(opened.value().chosen->kind() == backend_kind::host);
    BOOST_TEST(opened.value().reason.find("no usable CUDA device") != std::string::npos);
    BOOST_TEST(opened.value().reason.find(probe.error.message()) != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(cuda_without_a_device_is_a_clear_error) {
  const cuda_probe probe = probe_cuda();
  auto opened = open_backend("cuda");
  if (probe.available()) {
    BOOST_REQUIRE(opened.ok());
    BOOST_TEST(opened.value().chosen->kind() == backend_kind::cuda);
    return;
  }
  BOOST_REQUIRE(!opened.ok());
  if (probe.built) {
    // No driver answers cudaErrorInsufficientDriver, no GPU cudaErrorNoDevice: both no_device.
    BOOST_TEST(opened.code() == status_code::no_device);
    BOOST_TEST(probe.devices == 0);
  } else {
    BOOST_TEST(opened.code() == status_code::not_supported);
  }
  BOOST_TEST(!opened.error().message().empty());
}

BOOST_AUTO_TEST_CASE(an_unknown_name_is_refused) {
  auto opened = open_backend("opencl");
  BOOST_TEST(opened.code() == status_code::invalid_argument);
  BOOST_TEST(opened.error().message().find("opencl") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(host_options_are_passed_through) {
  backend_options options;
  options.host.workers = 3;
  options.host.name = "custom";
  auto opened = open_backend("host", options);
  BOOST_REQUIRE(opened.ok());
  BOOST_TEST(opened.value().chosen->device().name == "custom (3 workers)");
}
