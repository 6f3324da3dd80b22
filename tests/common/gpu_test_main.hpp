// tests/common/gpu_test_main.hpp
//
// main() for tests that need a CUDA device. Without one the test reports itself skipped to
// CTest (exit code 77, SKIP_RETURN_CODE) and says why, so a run without a GPU shows "Not Run"
// rather than a pass that tested nothing. With CUDACTOR_REQUIRE_GPU=1 in the environment, as
// on GPU machines, a missing device is a failure instead.
//
// Include once, after defining BOOST_TEST_MODULE and BOOST_TEST_NO_MAIN.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cudactor/gpu/open_backend.hpp"

namespace cudactor::test {
constexpr int skip_exit_code = 77;
}

int main(int argc, char* argv[]) {
  const auto probe = cudactor::gpu::probe_cuda();
  if (!probe.available()) {
    const char* required = std::getenv("CUDACTOR_REQUIRE_GPU");
    const bool must_run = required != nullptr && std::strcmp(required, "1") == 0;
    std::fprintf(stderr, "%s: this test needs a CUDA device: %s\n",
                 must_run ? "FAILED (CUDACTOR_REQUIRE_GPU=1)" : "SKIPPED",
                 probe.error.to_string().c_str());
    return must_run ? EXIT_FAILURE : cudactor::test::skip_exit_code;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
