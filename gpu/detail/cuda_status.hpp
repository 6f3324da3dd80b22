// gpu/detail/cuda_status.hpp
//
// CUDA runtime errors as device-layer statuses: the CUDA name and text plus what was being
// done, classified into gpu::status_code. Sticky errors (a kernel fault that poisons the context)
// become device_lost; cudaErrorNotReady is cleared from the thread's last error so that it
// never resurfaces as a false launch failure. Internal to gpu/: needs cuda_runtime.h.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu::detail {

// A kernel fault that leaves the context unusable until the device is reset.
[[nodiscard]] bool is_sticky(cudaError_t error) noexcept;

[[nodiscard]] status_code classify(cudaError_t error) noexcept;

// "cudaErrorIllegalAddress: an illegal memory access was encountered (recording event #2.1
// on stream 'copy')". ok for cudaSuccess.
[[nodiscard]] status from_cuda(cudaError_t error, std::string_view doing);

// For host callbacks, which must not call the CUDA API: the code and its class only.
[[nodiscard]] status from_cuda_code(cudaError_t error, std::string_view doing);

// Clears a pending cudaErrorNotReady from the thread's last error, and nothing else: any
// other pending error is left for the call that reports it.
void clear_not_ready() noexcept;

}  // namespace cudactor::gpu::detail
