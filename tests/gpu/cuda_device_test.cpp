// What the CUDA backend says when there is no usable device, from the CUDA versions alone:
// no driver, a driver too old for the runtime cudactor was built with, no device. Needs the
// CUDA toolkit to build, no device to run (it runs everywhere the CUDA backend is built).
#define BOOST_TEST_MODULE cuda_device
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include "cudactor/gpu/cuda_backend.hpp"
#include "cudactor/gpu/detail/cuda_device.hpp"

using namespace cudactor::gpu;

BOOST_AUTO_TEST_CASE(versions_are_written_as_cuda_writes_them) {
  BOOST_TEST(detail::format_cuda_version(13000) == "13.0");
  BOOST_TEST(detail::format_cuda_version(12040) == "12.4");
  BOOST_TEST(detail::format_cuda_version(12090) == "12.9");
}

BOOST_AUTO_TEST_CASE(a_driver_too_old_is_named_with_both_versions) {
  const status why = detail::explain_no_device(cudaErrorInsufficientDriver, {12020, 13000});
  BOOST_TEST((why.code() == status_code::no_device));
  BOOST_TEST(why.message().find("driver is too old") != std::string::npos, why.message());
  BOOST_TEST(why.message().find("CUDA 12.2") != std::string::npos, why.message());
  BOOST_TEST(why.message().find("CUDA 13.0") != std::string::npos, why.message());
}

BOOST_AUTO_TEST_CASE(no_driver_at_all_is_said_so) {
  const status why = detail::explain_no_device(cudaErrorInsufficientDriver, {0, 13000});
  BOOST_TEST((why.code() == status_code::no_device));
  BOOST_TEST(why.message().find("no CUDA driver is installed") != std::string::npos,
             why.message());
}

BOOST_AUTO_TEST_CASE(no_device_with_a_good_driver_is_no_device) {
  const status why = detail::explain_no_device(cudaErrorNoDevice, {13000, 13000});
  BOOST_TEST((why.code() == status_code::no_device));
  BOOST_TEST(why.message().find("cudaErrorNoDevice") != std::string::npos, why.message());
}

BOOST_AUTO_TEST_CASE(any_other_answer_keeps_its_class_and_names_the_versions) {
  const status why = detail::explain_no_device(cudaErrorUnknown, {13000, 13000});
  BOOST_TEST((why.code() == status_code::backend_error));
  BOOST_TEST(why.message().find("the driver supports CUDA 13.0") != std::string::npos,
             why.message());
}

// On this machine, whatever it has: the answer is a count, or an error a user can act on.
BOOST_AUTO_TEST_CASE(the_device_count_here_is_a_number_or_a_reason) {
  auto count = cuda_device_count();
  if (count) {
    BOOST_TEST(count.value() >= 0);
    return;
  }
  BOOST_TEST((count.code() == status_code::no_device));
  const std::string said = count.error().message();
  const bool explained = said.find("no CUDA driver") != std::string::npos ||
                         said.find("too old") != std::string::npos ||
                         said.find("cudaErrorNoDevice") != std::string::npos;
  BOOST_TEST(explained, said);
}
