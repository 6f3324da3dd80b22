// gpu/open_backend.hpp
//
// Choosing a backend at run time. "auto" takes CUDA when the CUDA backend was built and a
// device is present, the host backend otherwise, and says which and why; "cuda" without a
// device is a clear error, not a silent fallback. Without a GPU driver the CUDA runtime
// answers cudaErrorInsufficientDriver rather than cudaErrorNoDevice: both mean "no GPU here".
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/host_backend.hpp"

namespace cudactor::gpu {

struct cuda_probe {
  bool built = false;  // the CUDA backend is compiled in
  int devices = 0;     // devices the runtime reports
  status error;        // why there are none (no_device or not_supported), ok otherwise
  [[nodiscard]] bool available() const noexcept { return built && devices > 0; }
};

// Asks the CUDA runtime how many devices there are. Cheap after the first call.
[[nodiscard]] cuda_probe probe_cuda();

struct backend_options {
  host_backend_options host;
  int cuda_device = 0;
  // Signalled values in flight per CUDA stream (cuda_backend::open says why it is bounded).
  std::size_t cuda_max_in_flight = cuda_default_max_in_flight;
};

struct backend_selection {
  std::unique_ptr<backend> chosen;
  std::string reason;  // e.g. "host: no CUDA device (cudaErrorInsufficientDriver: ...)"
};

// which: "auto", "host" or "cuda".
[[nodiscard]] result<backend_selection> open_backend(std::string_view which,
                                                     const backend_options& options = {});

}  // namespace cudactor::gpu
