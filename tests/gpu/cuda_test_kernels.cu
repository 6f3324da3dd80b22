#include "cuda_test_kernels.hpp"

#include <cuda_runtime.h>

#include <cstddef>

namespace cudactor::test::kernels {
namespace {

__device__ long long now_ns() {
  long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(volatile int* flag, long long timeout_ns) {
  const long long start = now_ns();
  while (*flag == 0 && now_ns() - start < timeout_ns) {
  }
}

__global__ void store_kernel(volatile int* word, int value) {
  *word = value;
  __threadfence_system();
}

__global__ void copy_word_kernel(volatile int* from, volatile int* to) {
  *to = *from;
  __threadfence_system();
}

__global__ void busy_kernel(long long ns) {
  const long long start = now_ns();
  while (now_ns() - start < ns) {
  }
}

__global__ void stamp_kernel(volatile long long* started, volatile long long* ended,
                             volatile int* rank, int* order, long long busy_ns) {
  const long long start = now_ns();
  *started = start;
  *rank = atomicAdd_system(order, 1);
  while (now_ns() - start < busy_ns) {
  }
  *ended = now_ns();
  __threadfence_system();
}

__global__ void iota_kernel(int* data, int n, int offset) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = i + offset;
}

__global__ void add_kernel(int* data, int n, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += value;
}

__global__ void fault_kernel(int* nowhere) { *nowhere = 42; }

int blocks_for(int n) { return (n + 255) / 256; }

}  // namespace

int hold(void* stream, volatile int* flag, long long timeout_ns) {
  hold_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag, timeout_ns);
  return static_cast<int>(cudaPeekAtLastError());
}

int alloc_pinned_ints(int count, int** out) {
  void* memory = nullptr;
  const cudaError_t e =
      cudaHostAlloc(&memory, sizeof(int) * static_cast<std::size_t>(count), cudaHostAllocMapped);
  if (e != cudaSuccess) return static_cast<int>(e);
  *out = static_cast<int*>(memory);
  for (int i = 0; i < count; ++i) (*out)[i] = 0;
  return 0;
}

int store(void* stream, volatile int* word, int value) {
  store_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(word, value);
  return static_cast<int>(cudaPeekAtLastError());
}

int copy_word(void* stream, volatile int* from, volatile int* to) {
  copy_word_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(from, to);
  return static_cast<int>(cudaPeekAtLastError());
}

int stamp(void* stream, volatile long long* started, volatile long long* ended, volatile int* rank,
          int* order, long long busy_ns) {
  stamp_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(started, ended, rank, order,
                                                               busy_ns);
  return static_cast<int>(cudaPeekAtLastError());
}

int busy(void* stream, long long ns) {
  busy_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(ns);
  return static_cast<int>(cudaPeekAtLastError());
}

int iota(void* stream, int* data, int n, int offset) {
  iota_kernel<<<blocks_for(n), 256, 0, static_cast<cudaStream_t>(stream)>>>(data, n, offset);
  return static_cast<int>(cudaPeekAtLastError());
}

int add(void* stream, int* data, int n, int value) {
  add_kernel<<<blocks_for(n), 256, 0, static_cast<cudaStream_t>(stream)>>>(data, n, value);
  return static_cast<int>(cudaPeekAtLastError());
}

int fault(void* stream) {
  fault_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(nullptr);
  return static_cast<int>(cudaPeekAtLastError());
}

int rejected(void* stream) {
  add_kernel<<<1, 4096, 0, static_cast<cudaStream_t>(stream)>>>(nullptr, 0, 0);
  return static_cast<int>(cudaPeekAtLastError());
}

}  // namespace cudactor::test::kernels
