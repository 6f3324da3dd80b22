#include "bench_kernels.hpp"

#include <cuda_runtime.h>

#include <chrono>

namespace cudactor::bench::kernels {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stamped_kernel(long long ns, unsigned long long* stamp) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < static_cast<unsigned long long>(ns)) {
  }
  // Straight to host memory, visible to a host thread spinning on it.
  *reinterpret_cast<volatile unsigned long long*>(stamp) = global_ns();
  __threadfence_system();
}

__global__ void spin_kernel(long long ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < static_cast<unsigned long long>(ns)) {
  }
}

long long wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int stamped(void* stream, long long ns, unsigned long long* stamp) {
  stamped_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(ns, stamp);
  return static_cast<int>(cudaGetLastError());
}

int spin(void* stream, long long ns) {
  spin_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(ns);
  return static_cast<int>(cudaGetLastError());
}

std::string error_name(int code) { return cudaGetErrorName(static_cast<cudaError_t>(code)); }

long long raw_dag_run(const dag& graph, int streams, int* error) {
  const auto n = graph.after.size();
  std::vector<cudaStream_t> s(static_cast<std::size_t>(streams));
  std::vector<cudaEvent_t> done(n);
  cudaError_t status = cudaSuccess;
  auto check = [&](cudaError_t e) {
    if (status == cudaSuccess && e != cudaSuccess) status = e;
    return status == cudaSuccess;
  };
  for (auto& x : s) check(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  // Created before the clock starts, as a programmer who knows the graph's size would.
  for (auto& e : done) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const long long start = wall_ns();
  for (std::size_t i = 0; i < n && status == cudaSuccess; ++i) {
    const auto on = static_cast<int>(i % static_cast<std::size_t>(streams));
    for (std::uint32_t d : graph.after[i]) {
      if (static_cast<int>(d % static_cast<std::uint32_t>(streams)) != on) {
        check(cudaStreamWaitEvent(s[on], done[d], 0));
      }
    }
    spin_kernel<<<1, 1, 0, s[on]>>>(graph.kernel_ns);
    check(cudaGetLastError());
    check(cudaEventRecord(done[i], s[on]));
  }
  check(cudaDeviceSynchronize());
  const long long took = wall_ns() - start;
  for (auto& e : done) cudaEventDestroy(e);
  for (auto& x : s) cudaStreamDestroy(x);
  *error = static_cast<int>(status);
  return status == cudaSuccess ? took : -1;
}

long long raw_event_churn(void* stream, int uses, int* error) {
  auto on = static_cast<cudaStream_t>(stream);
  cudaError_t status = cudaSuccess;
  const long long start = wall_ns();
  for (int i = 0; i < uses && status == cudaSuccess; ++i) {
    cudaEvent_t e;
    status = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (status != cudaSuccess) break;
    status = cudaEventRecord(e, on);
    const cudaError_t destroyed = cudaEventDestroy(e);
    if (status == cudaSuccess) status = destroyed;
  }
  const long long took = wall_ns() - start;
  *error = static_cast<int>(status);
  return status == cudaSuccess ? took : -1;
}

}  // namespace cudactor::bench::kernels
