// bench/gpu/bench_kernels.hpp
//
// The GPU benchmarks' kernels and their raw-CUDA baselines, callable from plain C++ (no CUDA
// header outside this folder's .cu file). Launchers take a cudaStream_t as void* (a
// launch_context's native_stream()) and return the launch's cudaError_t as an int, 0 on
// success; what times the device is %globaltimer, in nanoseconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cudactor::bench::kernels {

// Spins `ns` nanoseconds of GPU time (one thread), then writes %globaltimer into *stamp, a
// word of pinned host memory: the moment the kernel's work ended, as the device saw it.
int stamped(void* stream, long long ns, unsigned long long* stamp);
// Spins `ns` nanoseconds of GPU time (one thread): a small kernel of known length.
int spin(void* stream, long long ns);
// The CUDA runtime's name for an error code.
std::string error_name(int code);

// A DAG of `spin` kernels, each after its dependencies.
struct dag {
  std::vector<std::vector<std::uint32_t>> after;  // after[i]: ops i waits for, all < i
  long long kernel_ns = 0;
};

// The DAG written directly with CUDA streams and events, as a careful programmer would: op i
// on stream i % streams, one event recorded after each op, cudaStreamWaitEvent for each
// dependency on another stream, then one cudaDeviceSynchronize. Wall nanoseconds from the
// first launch to the synchronize's return, or -1 and *error set.
long long raw_dag_run(const dag& graph, int streams, int* error);

// Event handling per use, the baseline of the event pool: cudaEventCreateWithFlags (timing
// off), cudaEventRecord on a stream, cudaEventDestroy, `uses` times. Wall nanoseconds, or -1
// and *error set.
long long raw_event_churn(void* stream, int uses, int* error);

}  // namespace cudactor::bench::kernels
