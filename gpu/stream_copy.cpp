#include "cudactor/gpu/stream_copy.hpp"

#include <cstring>
#include <string>

#if CUDACTOR_WITH_CUDA
#include <cuda_runtime.h>

#include "cudactor/gpu/detail/cuda_status.hpp"
#endif

namespace cudactor::gpu {

status copy_in_stream(const launch_context& ctx, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return {};
  if (dst == nullptr || src == nullptr) {
    return {status_code::invalid_argument,
            "a copy of " + std::to_string(bytes) + " bytes to or from null"};
  }
#if CUDACTOR_WITH_CUDA
  if (ctx.kind() == backend_kind::cuda) {
    return detail::from_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                             static_cast<cudaStream_t>(ctx.native_stream())),
                             "cudaMemcpyAsync");
  }
#endif
  std::memcpy(dst, src, bytes);
  return {};
}

}  // namespace cudactor::gpu
