// The completion poller on a real device, in both delivery modes (cudaStreamAddCallback and
// event/timeline queries). Skipped, and reported as such, without a device.
#define BOOST_TEST_MODULE completion_poller_cuda
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include "common/gpu_test_main.hpp"
#include "common/poller_conformance.hpp"
#include "cuda_target.hpp"

BOOST_AUTO_TEST_SUITE(poller_on_cuda)
CUDACTOR_POLLER_CASES(cudactor::test::cuda_target)
BOOST_AUTO_TEST_SUITE_END()
