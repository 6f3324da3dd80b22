// demo/kernels.hpp
//
// The numeric work of the demo and the examples: element-wise float kernels that run as CUDA
// kernels on the stream handed to the work (kernels.cu, built when the CUDA toolkit is found)
// or as host loops on the host backend. Both compute the same values bit for bit: plain
// IEEE float operations in the same order, with no fused multiply-add (nvcc is told
// -fmad=false), so a result checked on one backend is checked on both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/gpu/status.hpp"

namespace cudactor::demo {

// The most inputs mean_of() averages.
inline constexpr std::size_t max_inputs = 8;

// dst <- src, `bytes` bytes, either way between host and device memory.
[[nodiscard]] gpu::status copy(const gpu::launch_context& ctx, void* dst, const void* src,
                               std::size_t bytes);
// out[i] = w[i] * in[i]
[[nodiscard]] gpu::status multiply(const gpu::launch_context& ctx, float* out, const float* w,
                                   const float* in, std::size_t n);
// out[i] = in[i] * s
[[nodiscard]] gpu::status scale(const gpu::launch_context& ctx, float* out, const float* in,
                                float s, std::size_t n);
// out[i] = (inputs[0][i] + ... + inputs[count-1][i]) / count, summed in that order
[[nodiscard]] gpu::status mean_of(const gpu::launch_context& ctx, float* out,
                                  const float* const* inputs, std::size_t count, std::size_t n);
// y[i] = y[i] + a * x[i]
[[nodiscard]] gpu::status axpy(const gpu::launch_context& ctx, float* y, float a, const float* x,
                               std::size_t n);

// Keeps the stream busy for `microseconds` (one thread spinning on the device's clock; on the
// host, the worker spins): work of a known length, for tests, benchmarks and cudactor-node.
[[nodiscard]] gpu::status busy(const gpu::launch_context& ctx, std::uint64_t microseconds);

// Whether this build can launch on a CUDA device.
[[nodiscard]] bool built_with_cuda() noexcept;

}  // namespace cudactor::demo
