// tests/common/test_gate.cpp
//
// cudactor_test_gate: CTest starts every test that uses a backend through this program, which
// decides whether the test can run on the backend CUDACTOR_TEST_BACKEND names (host|cuda,
// host when unset) and then becomes the test (exec), so the test's exit code is CTest's.
//
//   cudactor_test_gate any  -- PROGRAM [ARGS...]         runs on either backend
//   cudactor_test_gate host REASON -- PROGRAM [ARGS...]  needs the host backend (REASON says why)
//
// Exit codes of its own: 77 (SKIP_RETURN_CODE, "Not Run") for a host-only test on CUDA, or on
// CUDA without a device; 1 on CUDA without a device when CUDACTOR_REQUIRE_GPU=1 (a GPU machine
// must not skip); 2 for a backend name it does not know or bad arguments. Never a pass that
// ran nothing.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cudactor/gpu/open_backend.hpp"

namespace {

constexpr int skip_exit_code = 77;

int usage() {
  std::fprintf(stderr,
               "usage: cudactor_test_gate any -- PROGRAM [ARGS...]\n"
               "       cudactor_test_gate host REASON -- PROGRAM [ARGS...]\n");
  return 2;
}

bool gpu_required() {
  const char* required = std::getenv("CUDACTOR_REQUIRE_GPU");
  return required != nullptr && std::strcmp(required, "1") == 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc < 4) return usage();
  const std::string needs = argv[1];
  int next = 2;
  std::string reason;
  if (needs == "host") {
    reason = argv[next++];
  } else if (needs != "any") {
    return usage();
  }
  if (next >= argc || std::strcmp(argv[next], "--") != 0 || next + 1 >= argc) return usage();
  char** program = argv + next + 1;

  const char* chosen = std::getenv("CUDACTOR_TEST_BACKEND");
  const std::string backend = chosen != nullptr && *chosen != '\0' ? chosen : "host";
  if (backend != "host" && backend != "cuda") {
    std::fprintf(stderr, "FAILED: CUDACTOR_TEST_BACKEND=%s: expected host or cuda\n",
                 backend.c_str());
    return 2;
  }
  if (backend == "cuda") {
    if (needs == "host") {
      std::fprintf(stderr, "SKIPPED on the CUDA backend: this test needs the host backend: %s\n",
                   reason.c_str());
      return skip_exit_code;
    }
    const auto probe = cudactor::gpu::probe_cuda();
    if (!probe.available()) {
      const bool must_run = gpu_required();
      std::fprintf(stderr, "%s: CUDACTOR_TEST_BACKEND=cuda and no CUDA device: %s\n",
                   must_run ? "FAILED (CUDACTOR_REQUIRE_GPU=1)" : "SKIPPED",
                   probe.error.to_string().c_str());
      return must_run ? EXIT_FAILURE : skip_exit_code;
    }
  }
  std::fflush(nullptr);
  execvp(program[0], program);
  std::fprintf(stderr, "cudactor_test_gate: cannot start %s: %s\n", program[0],
               std::strerror(errno));
  return 2;
}
