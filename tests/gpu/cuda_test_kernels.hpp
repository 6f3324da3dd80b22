// tests/gpu/cuda_test_kernels.hpp
//
// Kernels for the CUDA backend's tests, callable from plain C++: each takes the
// launch_context's native stream and returns the launch's cudaError_t as an int.
#pragma once

namespace cudactor::test::kernels {

// Spins until *flag != 0 (pinned, mapped host memory) or `timeout_ns` pass.
int hold(void* stream, volatile int* flag, long long timeout_ns);
// `count` ints of pinned host memory the device reads and writes, zeroed, in *out. Never
// freed by the tests: a kernel may still read it after a failed test, and freeing memory a
// kernel reads is a sticky fault; the process's end frees it.
int alloc_pinned_ints(int count, int** out);
// *word = value, on the device (a one-thread kernel).
int store(void* stream, volatile int* word, int value);
// *to = *from, on the device (a one-thread kernel).
int copy_word(void* stream, volatile int* from, volatile int* to);
// Spins for `ns` nanoseconds of GPU time.
int busy(void* stream, long long ns);
// *started = GPU time (ns), *rank = (*order)++ (a system-wide atomic, so ranks give the order
// kernels on any stream began in), spins for `busy_ns`, then *ended = GPU time.
int stamp(void* stream, volatile long long* started, volatile long long* ended, volatile int* rank,
          int* order, long long busy_ns);
// data[i] = i + offset, for i < n.
int iota(void* stream, int* data, int n, int offset);
// data[i] += value.
int add(void* stream, int* data, int n, int value);
// Writes through a null pointer: a sticky illegal-address fault.
int fault(void* stream);
// A launch the runtime rejects (too many threads per block).
int rejected(void* stream);

}  // namespace cudactor::test::kernels
