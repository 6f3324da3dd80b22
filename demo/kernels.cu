// demo/kernels.cu
//
// The CUDA side of demo/kernels.hpp: one thread per element, launched on the stream the
// work was handed. Built with -fmad=false so that results equal the host loops'.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "cudactor/gpu/status.hpp"
#include "kernels.hpp"

namespace cudactor::demo::cuda {

namespace {

constexpr unsigned threads = 256;

unsigned blocks_for(std::size_t n) { return static_cast<unsigned>((n + threads - 1) / threads); }

gpu::status launched(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return {};
  return gpu::status{gpu::status_code::op_failed,
                     std::string{what} + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)};
}

struct inputs_t {
  const float* p[max_inputs];
};

__global__ void multiply_kernel(float* out, const float* w, const float* in, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = w[i] * in[i];
}

__global__ void scale_kernel(float* out, const float* in, float s, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] * s;
}

__global__ void mean_kernel(float* out, inputs_t inputs, std::size_t count, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float sum = 0.0f;
  for (std::size_t k = 0; k < count; ++k) sum = sum + inputs.p[k][i];
  out[i] = sum / static_cast<float>(count);
}

__global__ void axpy_kernel(float* y, float a, const float* x, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float ax = a * x[i];
    y[i] = y[i] + ax;
  }
}

}  // namespace

gpu::status multiply(void* stream, float* out, const float* w, const float* in, std::size_t n) {
  multiply_kernel<<<blocks_for(n), threads, 0, static_cast<cudaStream_t>(stream)>>>(out, w, in, n);
  return launched("multiply");
}

gpu::status scale(void* stream, float* out, const float* in, float s, std::size_t n) {
  scale_kernel<<<blocks_for(n), threads, 0, static_cast<cudaStream_t>(stream)>>>(out, in, s, n);
  return launched("scale");
}

gpu::status mean_of(void* stream, float* out, const float* const* inputs, std::size_t count,
                    std::size_t n) {
  inputs_t in{};
  for (std::size_t k = 0; k < count; ++k) in.p[k] = inputs[k];
  mean_kernel<<<blocks_for(n), threads, 0, static_cast<cudaStream_t>(stream)>>>(out, in, count, n);
  return launched("mean_of");
}

gpu::status axpy(void* stream, float* y, float a, const float* x, std::size_t n) {
  axpy_kernel<<<blocks_for(n), threads, 0, static_cast<cudaStream_t>(stream)>>>(y, a, x, n);
  return launched("axpy");
}

namespace {

__global__ void busy_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  now = start;
  while (now - start < ns) {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
}

}  // namespace

gpu::status busy(void* stream, std::uint64_t microseconds) {
  busy_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<unsigned long long>(microseconds) * 1000ull);
  return launched("busy");
}

}  // namespace cudactor::demo::cuda
