#include "cudactor/gpu/detail/cuda_status.hpp"

#include <string>

namespace cudactor::gpu::detail {

bool is_sticky(cudaError_t error) noexcept {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorContained:
    case cudaErrorTensorMemoryLeak: return true;
    default: return false;
  }
}

status_code classify(cudaError_t error) noexcept {
  if (error == cudaSuccess) return status_code::ok;
  if (is_sticky(error)) return status_code::device_lost;
  switch (error) {
    case cudaErrorNotReady: return status_code::not_ready;
    case cudaErrorMemoryAllocation: return status_code::out_of_memory;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
    case cudaErrorInvalidDevice: return status_code::invalid_argument;
    case cudaErrorInvalidResourceHandle:
    case cudaErrorContextIsDestroyed: return status_code::invalid_handle;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorDevicesUnavailable: return status_code::no_device;
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorMissingConfiguration:
    case cudaErrorInvalidPtx:
    case cudaErrorUnsupportedPtxVersion: return status_code::op_failed;
    case cudaErrorNotSupported: return status_code::not_supported;
    default: return status_code::backend_error;
  }
}

status from_cuda(cudaError_t error, std::string_view doing) {
  if (error == cudaSuccess) return {};
  std::string message = cudaGetErrorName(error);
  message += ": ";
  message += cudaGetErrorString(error);
  if (!doing.empty()) {
    message += " (";
    message += doing;
    message += ")";
  }
  return {classify(error), std::move(message)};
}

status from_cuda_code(cudaError_t error, std::string_view doing) {
  if (error == cudaSuccess) return {};
  std::string message = "CUDA error " + std::to_string(static_cast<int>(error));
  if (!doing.empty()) {
    message += " (";
    message += doing;
    message += ")";
  }
  return {classify(error), std::move(message)};
}

void clear_not_ready() noexcept {
  if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
}

}  // namespace cudactor::gpu::detail
