// tests/common/test_backend.hpp
//
// The backend a test runs its runtimes, nodes and programs on: CUDACTOR_TEST_BACKEND=host|cuda
// (host when unset). CTest starts every test that uses a backend through cudactor_test_gate
// (test_gate.cpp), which refuses any other value, reports a test that needs the host backend
// as "Not Run" on CUDA, and one that would run on CUDA as "Not Run" where there is no device
// (a failure with CUDACTOR_REQUIRE_GPU=1): by the time a test reads this, the backend is
// usable.
#pragma once

#include <cstdlib>
#include <string>

namespace cudactor::test {

// "host" or "cuda".
inline std::string test_backend() {
  const char* chosen = std::getenv("CUDACTOR_TEST_BACKEND");
  return chosen != nullptr && *chosen != '\0' ? std::string{chosen} : std::string{"host"};
}

inline bool on_cuda() { return test_backend() == "cuda"; }

// The "gpu" label of the series a runtime on that backend reports: the device's ordinal (the
// tests use device 0) on CUDA.
inline std::string gpu_label() { return on_cuda() ? "0" : "host"; }

// The option that gives a runtime, a node or an example that backend.
inline std::string backend_option() { return "--cudactor.backend=" + test_backend(); }

}  // namespace cudactor::test
