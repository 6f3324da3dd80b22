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

errc classify(cudaError_t error) noexcept {
  if (error == cudaSuccess) return errc::ok;
  if (is_sticky(error)) return errc::device_lost;
  switch (error) {
    case cudaErrorNotReady: return errc::not_ready;
    case cudaErrorMemoryAllocation: return errc::out_of_memory;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
    case cudaErrorInvalidDevice: return errc::invalid_argument;
    case cudaErrorInvalidResourceHandle:
    case cudaErrorContextIsDestroyed: return errc::invalid_handle;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorDevicesUnavailable: return errc::no_device;
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorMissingConfiguration:
    case cudaErrorInvalidPtx:
    case cudaErrorUnsupportedPtxVersion: return errc::op_failed;
    case cudaErrorNotSupported: return errc::not_supported;
    default: return errc::backend_error;
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
