#include "cudactor/gpu/types.hpp"

namespace cudactor::gpu {

std::string_view to_string(backend_kind value) noexcept {
  switch (value) {
    case backend_kind::host: return "host";
    case backend_kind::cuda: return "cuda";
  }
  return "unknown";
}

std::string_view to_string(stream_priority value) noexcept {
  switch (value) {
    case stream_priority::low: return "low";
    case stream_priority::normal: return "normal";
    case stream_priority::high: return "high";
  }
  return "unknown";
}

std::string_view to_string(event_kind value) noexcept {
  switch (value) {
    case event_kind::regular: return "regular";
    case event_kind::timing: return "timing";
  }
  return "unknown";
}

std::string_view to_string(copy_kind value) noexcept {
  switch (value) {
    case copy_kind::host_to_device: return "host_to_device";
    case copy_kind::device_to_host: return "device_to_host";
    case copy_kind::device_to_device: return "device_to_device";
  }
  return "unknown";
}

std::string_view to_string(memory_kind value) noexcept {
  switch (value) {
    case memory_kind::device: return "device";
    case memory_kind::managed: return "managed";
    case memory_kind::pinned_host: return "pinned_host";
  }
  return "unknown";
}

std::string_view to_string(event_state value) noexcept {
  switch (value) {
    case event_state::not_ready: return "not_ready";
    case event_state::ready: return "ready";
    case event_state::failed: return "failed";
  }
  return "unknown";
}

}  // namespace cudactor::gpu
