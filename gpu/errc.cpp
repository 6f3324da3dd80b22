#include "cudactor/gpu/errc.hpp"

namespace cudactor::gpu {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::ok: return "ok";
    case errc::invalid_argument: return "invalid_argument";
    case errc::invalid_handle: return "invalid_handle";
    case errc::foreign_handle: return "foreign_handle";
    case errc::out_of_range: return "out_of_range";
    case errc::out_of_memory: return "out_of_memory";
    case errc::not_ready: return "not_ready";
    case errc::not_recorded: return "not_recorded";
    case errc::not_timing: return "not_timing";
    case errc::op_failed: return "op_failed";
    case errc::dependency_failed: return "dependency_failed";
    case errc::device_lost: return "device_lost";
    case errc::timeout: return "timeout";
    case errc::no_device: return "no_device";
    case errc::not_supported: return "not_supported";
    case errc::resource_exhausted: return "resource_exhausted";
    case errc::backend_error: return "backend_error";
    case errc::cancelled: return "cancelled";
  }
  return "unknown_errc";
}

}  // namespace cudactor::gpu
