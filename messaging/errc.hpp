// messaging/errc.hpp
//
// The errors actors answer with: cudactor::errc, registered with CAF as the error category
// "cudactor" so that system().render(err) reads "cudactor::device_lost: <what failed>". The
// device layer's gpu::status becomes a caf::error here and nowhere else, keeping its message
// (which names the stream, event or allocation) as the error's context.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "cudactor/gpu/status.hpp"

namespace cudactor {

enum class errc : std::uint8_t {
  none = 0,              // CAF reserves 0 for "no error"
  invalid_argument,      // malformed request: null, zero or out-of-range sizes, bad options
  unknown_stream,        // a stream the runtime never had or already destroyed
  foreign_handle,        // a handle issued by another backend or runtime
  out_of_range,          // a range beyond the allocation it refers to
  out_of_memory,         // the device has no room
  not_ready,             // asked for a result of work that has not finished
  not_timing,            // timing asked of an event without timing
  op_failed,             // one operation failed; its stream goes on
  dependency_failed,     // cancelled or failed because something it waited for failed
  device_lost,           // sticky device error: nothing runs until the backend is reset
  timeout,               // a bounded wait ran out
  no_device,             // no GPU where one was required
  not_supported,         // this backend or build cannot do it
  resource_exhausted,    // a bounded resource is full; retry later
  backend_error,         // any other failure reported by the device runtime
  shutting_down,         // the runtime stopped before this could be served
  cancelled,             // withdrawn by its requester before it finished
  local_only,            // a local closure addressed to an actor in another process
  unknown_operation,     // a named operation no registry on the receiving node knows
  pool_exhausted,        // the event pool is at its configured maximum
  stale_event,           // an event ref whose lease was released (or released twice)
  unknown_op,            // an op id the coordinator never issued, or whose outcome it let go
  dependency_cycle,      // a dependency that would close a cycle (the cycle is in the message)
  invalid_state,         // the operation is not in a state the request applies to
  node_unreachable,      // a node that refused the connection or did not answer in time
  node_mismatch,         // the peer is not a cudactor node of this protocol
  node_lost,             // a connected node died or stopped answering (heartbeat)
  permission_denied,     // the sender may not ask this (another control plane owns the node)
  unknown_communicator,  // a communicator the node does not hold (never made, or removed)
};

// CAF's category for cudactor::errc.
inline constexpr caf::atom_value error_category = caf::atom("cudactor");

[[nodiscard]] std::string_view to_string(errc code) noexcept;

// Found by ADL: lets handlers return an errc and callers compare `err == errc::x`.
[[nodiscard]] caf::error make_error(errc code);
[[nodiscard]] caf::error make_error(errc code, std::string context);

// The actor-boundary form of a device-layer failure. An ok status gives an empty error.
[[nodiscard]] errc to_errc(gpu::status_code code) noexcept;
[[nodiscard]] caf::error to_error(const gpu::status& failure);

// The context message of a cudactor error (what failed), or "" for other errors.
[[nodiscard]] std::string error_context(const caf::error& err);

// Any error in words, without an actor system: "cudactor::timeout: <what failed>", CAF's own
// by name ("caf::request_receiver_down"), and an error carried inside another's context
// rendered the same way ("...: because cudactor::op_failed: ..."), never as CAF's
// error(17, 'cudactor', ...) tuple. "no error" for an empty one.
[[nodiscard]] std::string describe(const caf::error& err);

// Registers the "cudactor" category's renderer. Call once per actor_system_config.
void add_error_category(caf::actor_system_config& config);

}  // namespace cudactor
