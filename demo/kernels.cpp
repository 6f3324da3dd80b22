// demo/kernels.cpp
//
// Host loops, and the dispatch to the CUDA kernels of kernels.cu when the work runs on a
// CUDA stream.
#include "kernels.hpp"

#include <chrono>

#include "cudactor/gpu/stream_copy.hpp"

namespace cudactor::demo {

#ifdef CUDACTOR_DEMO_CUDA
namespace cuda {
gpu::status multiply(void* stream, float* out, const float* w, const float* in, std::size_t n);
gpu::status scale(void* stream, float* out, const float* in, float s, std::size_t n);
gpu::status mean_of(void* stream, float* out, const float* const* inputs, std::size_t count,
                    std::size_t n);
gpu::status axpy(void* stream, float* y, float a, const float* x, std::size_t n);
gpu::status busy(void* stream, std::uint64_t microseconds);
}  // namespace cuda
#define CUDACTOR_ON_CUDA(call) \
  if (ctx.kind() == gpu::backend_kind::cuda) return cuda::call;
#else
#define CUDACTOR_ON_CUDA(call)                                    \
  if (ctx.kind() == gpu::backend_kind::cuda) {                    \
    return gpu::status{gpu::status_code::not_supported,                  \
                       "this build has no CUDA kernels (toolkit " \
                       "not found when it was configured)"};      \
  }
#endif

bool built_with_cuda() noexcept {
#ifdef CUDACTOR_DEMO_CUDA
  return true;
#else
  return false;
#endif
}

gpu::status copy(const gpu::launch_context& ctx, void* dst, const void* src, std::size_t bytes) {
  return gpu::copy_in_stream(ctx, dst, src, bytes);  // the device layer's stream-ordered copy
}

gpu::status multiply(const gpu::launch_context& ctx, float* out, const float* w, const float* in,
                     std::size_t n) {
  CUDACTOR_ON_CUDA(multiply(ctx.native_stream(), out, w, in, n))
  for (std::size_t i = 0; i < n; ++i) out[i] = w[i] * in[i];
  return {};
}

gpu::status scale(const gpu::launch_context& ctx, float* out, const float* in, float s,
                  std::size_t n) {
  CUDACTOR_ON_CUDA(scale(ctx.native_stream(), out, in, s, n))
  for (std::size_t i = 0; i < n; ++i) out[i] = in[i] * s;
  return {};
}

gpu::status mean_of(const gpu::launch_context& ctx, float* out, const float* const* inputs,
                    std::size_t count, std::size_t n) {
  if (count == 0 || count > max_inputs) {
    return gpu::status{gpu::status_code::invalid_argument, "mean_of: 1 to 8 inputs"};
  }
  CUDACTOR_ON_CUDA(mean_of(ctx.native_stream(), out, inputs, count, n))
  const float c = static_cast<float>(count);
  for (std::size_t i = 0; i < n; ++i) {
    float sum = 0.0f;
    for (std::size_t k = 0; k < count; ++k) sum = sum + inputs[k][i];
    out[i] = sum / c;
  }
  return {};
}

gpu::status axpy(const gpu::launch_context& ctx, float* y, float a, const float* x, std::size_t n) {
  CUDACTOR_ON_CUDA(axpy(ctx.native_stream(), y, a, x, n))
  for (std::size_t i = 0; i < n; ++i) {
    const float ax = a * x[i];
    y[i] = y[i] + ax;
  }
  return {};
}

gpu::status busy(const gpu::launch_context& ctx, std::uint64_t microseconds) {
  CUDACTOR_ON_CUDA(busy(ctx.native_stream(), microseconds))
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds{microseconds};
  while (std::chrono::steady_clock::now() < until) {
  }
  return {};
}

}  // namespace cudactor::demo
