// gpu/status_code.hpp
//
// The error vocabulary of the device layer: the code of a gpu::status. Every expected failure
// in gpu/ is one of these codes plus a message that names the stream, event or allocation
// involved; the actor layer maps them onto cudactor::errc (messaging/errc.hpp), its own
// vocabulary, which has codes the device layer never needs (a node's, a peer's). The two fault
// classes CUDA has are kept apart: op_failed (one operation failed, the stream goes on) and
// device_lost (a sticky error poisoned the context; nothing works until the backend is reset).
#pragma once

#include <cstdint>
#include <string_view>

namespace cudactor::gpu {

enum class status_code : std::uint8_t {
  ok = 0,
  invalid_argument,    // null pointer, zero size, unknown enum value, bad option
  invalid_handle,      // a stream or event that was destroyed (stale handle)
  foreign_handle,      // a handle that belongs to another backend instance
  out_of_range,        // a size or offset beyond the allocation it refers to
  out_of_memory,       // the device (or the host backend's budget) has no room
  not_ready,           // asked for a result of work that has not finished
  not_recorded,        // elapsed time of an event that was never recorded
  not_timing,          // elapsed time of an event created without timing
  op_failed,           // one operation failed; its stream goes on
  dependency_failed,   // work that waited on a failed event
  device_lost,         // sticky error: every stream fails until reset
  timeout,             // a bounded wait ran out
  no_device,           // no GPU (no device, or no driver)
  not_supported,       // the backend or build cannot do this
  resource_exhausted,  // a bounded internal resource (e.g. a timeline ring) is full
  backend_error,       // any other error reported by the CUDA runtime
  cancelled,           // withdrawn before it finished (a cancelled watch, a stopped poller)
};

// The enumerator's name, e.g. "device_lost".
[[nodiscard]] std::string_view to_string(status_code code) noexcept;

}  // namespace cudactor::gpu
