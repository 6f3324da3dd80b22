// gpu/detail/cuda_device.hpp
//
// Which device a CUDA call is about, and which driver and runtime answer it. The runtime's
// current device is per thread, and cudactor calls CUDA from many (actor threads, the poller,
// the host threads that run callbacks); a call made on a thread that never selected the
// device would create a context on device 0. Internal to gpu/: needs cuda_runtime.h.
#pragma once

#include <string>

#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu::detail {

// Makes `ordinal` the calling thread's current device unless it already is. Asks the runtime
// each time (cudaGetDevice reads the thread's state: no driver round trip) instead of keeping
// a cache of its own, which user code calling cudaSetDevice inside its work would make wrong.
[[nodiscard]] status select_device(int ordinal);

struct cuda_versions {
  int driver = 0;   // the newest CUDA the installed driver supports, e.g. 12020; 0 when none
  int runtime = 0;  // the runtime cudactor was built with, e.g. 13000
};

[[nodiscard]] cuda_versions query_versions() noexcept;

// 12020 -> "12.2".
[[nodiscard]] std::string format_cuda_version(int version);

// Why the runtime found no usable device (its answer to cudaGetDeviceCount, a cudaError_t),
// in words a user can act on: "no CUDA driver is installed", "the CUDA driver is too old: it
// supports CUDA 12.2, cudactor was built with CUDA 13.0", or the runtime's own answer with
// both versions. Always no_device for a missing or old driver.
[[nodiscard]] status explain_no_device(int answer_from_runtime, const cuda_versions& versions);

}  // namespace cudactor::gpu::detail
