// cudactor_gpu_info: what the GPU bundle's runner reports first, and whether there is a device
// to run on at all. Prints the device's name, compute capability and memory and the CUDA
// versions of the driver and of the runtime cudactor was built with, one "key: value" per
// line; exits 0 with a device, 2 without one (saying why: no driver, a driver too old, no
// device), so the runner stops there instead of reporting a suite of skipped tests.
#include <cstdio>
#include <string>

#include "cudactor/gpu/cuda_backend.hpp"
#include "cudactor/gpu/detail/cuda_device.hpp"

int main() {
  using namespace cudactor::gpu;
  const detail::cuda_versions versions = detail::query_versions();
  std::printf("driver: %s\n", versions.driver == 0
                                  ? "none"
                                  : ("CUDA " + detail::format_cuda_version(versions.driver)).c_str());
  std::printf("runtime: CUDA %s\n", detail::format_cuda_version(versions.runtime).c_str());
  auto count = cuda_device_count();
  if (!count || count.value() == 0) {
    std::printf("device: none (%s)\n",
                count ? "the runtime reports no CUDA device" : count.error().to_string().c_str());
    return 2;
  }
  auto opened = cuda_backend::open(0);
  if (!opened) {
    std::printf("device: unusable (%s)\n", opened.error().to_string().c_str());
    return 2;
  }
  const device_info& info = opened.value()->device();
  std::printf("device: %s\n", info.name.c_str());
  std::printf("devices: %d\n", count.value());
  std::printf("compute capability: %d.%d\n", info.compute_capability_major,
              info.compute_capability_minor);
  std::printf("memory: %.1f GiB\n", static_cast<double>(info.total_memory) / (1ULL << 30));
  return 0;
}
