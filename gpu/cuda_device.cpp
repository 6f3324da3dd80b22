#include "cudactor/gpu/detail/cuda_device.hpp"

#include <cuda_runtime_api.h>

#include "cudactor/gpu/detail/cuda_status.hpp"

namespace cudactor::gpu::detail {

status select_device(int ordinal) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == ordinal) return {};
  const cudaError_t answer = cudaSetDevice(ordinal);
  if (answer != cudaSuccess) {
    return from_cuda(answer, "selecting CUDA device " + std::to_string(ordinal));
  }
  return {};
}

cuda_versions query_versions() noexcept {
  cuda_versions out;
  if (cudaDriverGetVersion(&out.driver) != cudaSuccess) out.driver = 0;
  if (cudaRuntimeGetVersion(&out.runtime) != cudaSuccess) out.runtime = CUDART_VERSION;
  (void)cudaGetLastError();  // neither probe may leave an error for a later call to find
  return out;
}

std::string format_cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

status explain_no_device(int answer_from_runtime, const cuda_versions& v) {
  const auto answer = static_cast<cudaError_t>(answer_from_runtime);
  const status said = from_cuda(answer, "counting CUDA devices");
  if (answer == cudaErrorInsufficientDriver || answer == cudaErrorSystemDriverMismatch ||
      answer == cudaErrorCompatNotSupportedOnDevice) {
    if (v.driver == 0) {
      return {status_code::no_device, "no CUDA driver is installed (" + said.message() + ")"};
    }
    if (v.driver < v.runtime) {  // a driver runs runtimes up to the CUDA it supports
      return {status_code::no_device, "the CUDA driver is too old: it supports CUDA " +
                                   format_cuda_version(v.driver) + ", cudactor was built with CUDA " +
                                   format_cuda_version(v.runtime) + " (" + said.message() + ")"};
    }
  }
  if (answer == cudaErrorNoDevice) return {status_code::no_device, said.message()};
  return {said.code(), said.message() + " (the driver supports CUDA " +
                          format_cuda_version(v.driver) + ", cudactor was built with CUDA " +
                          format_cuda_version(v.runtime) + ")"};
}

}  // namespace cudactor::gpu::detail
