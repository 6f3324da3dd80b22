#include "cudactor/gpu/open_backend.hpp"

#if CUDACTOR_WITH_CUDA
#include "cudactor/gpu/cuda_backend.hpp"
#endif

namespace cudactor::gpu {

cuda_probe probe_cuda() {
#if CUDACTOR_WITH_CUDA
  cuda_probe probe;
  probe.built = true;
  auto count = cuda_device_count();
  if (!count) {
    probe.error = count.error();
  } else {
    probe.devices = count.value();
    if (probe.devices == 0) probe.error = status{status_code::no_device, "no CUDA device"};
  }
  return probe;
#else
  return cuda_probe{false, 0,
                    status{status_code::not_supported,
                           "cudactor was built without the CUDA backend (CUDACTOR_CUDA=OFF or no "
                           "CUDA toolkit at configure time)"}};
#endif
}

result<backend_selection> open_backend(std::string_view which, const backend_options& options) {
  if (which != "auto" && which != "host" && which != "cuda") {
    return status{status_code::invalid_argument,
                  "unknown backend '" + std::string{which} + "' (expected auto, host or cuda)"};
  }
  if (which == "host") {
    return backend_selection{std::make_unique<host_backend>(options.host), "host: requested"};
  }
  const cuda_probe probe = probe_cuda();
  if (!probe.available()) {
    if (which == "cuda") return probe.error;
    return backend_selection{std::make_unique<host_backend>(options.host),
                             "host: no usable CUDA device (" + probe.error.to_string() + ")"};
  }
#if CUDACTOR_WITH_CUDA
  auto opened = cuda_backend::open(options.cuda_device, options.cuda_max_in_flight);
  if (!opened) {
    if (which == "cuda") return opened.error();
    return backend_selection{
        std::make_unique<host_backend>(options.host),
        "host: the CUDA device could not be opened (" + opened.error().to_string() + ")"};
  }
  std::string reason = std::string{which == "cuda" ? "cuda: requested" : "cuda: device found"} +
                       " (" + opened.value()->device().name + ")";
  return backend_selection{std::move(opened.value()), std::move(reason)};
#else
  return probe.error;  // unreachable: probe.available() is false without CUDA
#endif
}

}  // namespace cudactor::gpu
