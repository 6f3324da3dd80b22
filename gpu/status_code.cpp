#include "cudactor/gpu/status_code.hpp"

namespace cudactor::gpu {

std::string_view to_string(status_code code) noexcept {
  switch (code) {
    case status_code::ok: return "ok";
    case status_code::invalid_argument: return "invalid_argument";
    case status_code::invalid_handle: return "invalid_handle";
    case status_code::foreign_handle: return "foreign_handle";
    case status_code::out_of_range: return "out_of_range";
    case status_code::out_of_memory: return "out_of_memory";
    case status_code::not_ready: return "not_ready";
    case status_code::not_recorded: return "not_recorded";
    case status_code::not_timing: return "not_timing";
    case status_code::op_failed: return "op_failed";
    case status_code::dependency_failed: return "dependency_failed";
    case status_code::device_lost: return "device_lost";
    case status_code::timeout: return "timeout";
    case status_code::no_device: return "no_device";
    case status_code::not_supported: return "not_supported";
    case status_code::resource_exhausted: return "resource_exhausted";
    case status_code::backend_error: return "backend_error";
    case status_code::cancelled: return "cancelled";
  }
  return "unknown_status_code";
}

}  // namespace cudactor::gpu
