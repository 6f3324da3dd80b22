#include "cudactor/messaging/errc.hpp"

#include <caf/exit_reason.hpp>
#include <caf/message.hpp>
#include <caf/pec.hpp>
#include <caf/sec.hpp>

namespace cudactor {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::none: return "none";
    case errc::invalid_argument: return "invalid_argument";
    case errc::unknown_stream: return "unknown_stream";
    case errc::foreign_handle: return "foreign_handle";
    case errc::out_of_range: return "out_of_range";
    case errc::out_of_memory: return "out_of_memory";
    case errc::not_ready: return "not_ready";
    case errc::not_timing: return "not_timing";
    case errc::op_failed: return "op_failed";
    case errc::dependency_failed: return "dependency_failed";
    case errc::device_lost: return "device_lost";
    case errc::timeout: return "timeout";
    case errc::no_device: return "no_device";
    case errc::not_supported: return "not_supported";
    case errc::resource_exhausted: return "resource_exhausted";
    case errc::backend_error: return "backend_error";
    case errc::shutting_down: return "shutting_down";
    case errc::cancelled: return "cancelled";
    case errc::local_only: return "local_only";
    case errc::unknown_operation: return "unknown_operation";
    case errc::pool_exhausted: return "pool_exhausted";
    case errc::stale_event: return "stale_event";
    case errc::unknown_op: return "unknown_op";
    case errc::dependency_cycle: return "dependency_cycle";
    case errc::invalid_state: return "invalid_state";
    case errc::node_unreachable: return "node_unreachable";
    case errc::node_mismatch: return "node_mismatch";
    case errc::node_lost: return "node_lost";
    case errc::permission_denied: return "permission_denied";
    case errc::unknown_communicator: return "unknown_communicator";
  }
  return "unknown";
}

caf::error make_error(errc code) {
  return caf::error{static_cast<std::uint8_t>(code), error_category};
}

caf::error make_error(errc code, std::string context) {
  return caf::error{static_cast<std::uint8_t>(code), error_category,
                    caf::make_message(std::move(context))};
}

errc to_errc(gpu::status_code code) noexcept {
  switch (code) {
    case gpu::status_code::ok: return errc::none;
    case gpu::status_code::invalid_argument: return errc::invalid_argument;
    case gpu::status_code::invalid_handle: return errc::unknown_stream;
    case gpu::status_code::foreign_handle: return errc::foreign_handle;
    case gpu::status_code::out_of_range: return errc::out_of_range;
    case gpu::status_code::out_of_memory: return errc::out_of_memory;
    case gpu::status_code::not_ready: return errc::not_ready;
    case gpu::status_code::not_recorded: return errc::not_ready;
    case gpu::status_code::not_timing: return errc::not_timing;
    case gpu::status_code::op_failed: return errc::op_failed;
    case gpu::status_code::dependency_failed: return errc::dependency_failed;
    case gpu::status_code::device_lost: return errc::device_lost;
    case gpu::status_code::timeout: return errc::timeout;
    case gpu::status_code::no_device: return errc::no_device;
    case gpu::status_code::not_supported: return errc::not_supported;
    case gpu::status_code::resource_exhausted: return errc::resource_exhausted;
    case gpu::status_code::backend_error: return errc::backend_error;
    case gpu::status_code::cancelled: return errc::cancelled;
  }
  return errc::backend_error;
}

caf::error to_error(const gpu::status& failure) {
  if (failure.ok()) return caf::error{};
  // Keep the device layer's own code name when it is finer than ours (not_recorded).
  std::string context = failure.message();
  if (to_string(to_errc(failure.code())) != gpu::to_string(failure.code())) {
    context = std::string{gpu::to_string(failure.code())} + ": " + context;
  }
  return make_error(to_errc(failure.code()), std::move(context));
}

std::string error_context(const caf::error& err) {
  if (err.category() != error_category) return {};
  const caf::message& context = err.context();
  if (context.size() == 1 && context.match_element<std::string>(0)) {
    return context.get_as<std::string>(0);
  }
  return {};
}

namespace {

// A context in words: strings as they are, errors described (that is how a cause nests),
// anything else as CAF prints it.
std::string describe_context(const caf::message& context) {
  std::string out;
  for (std::size_t i = 0; i < context.size(); ++i) {
    if (i > 0) out += context.match_element<caf::error>(i) ? ": because " : ", ";
    if (context.match_element<std::string>(i)) {
      out += context.get_as<std::string>(i);
    } else if (context.match_element<caf::error>(i)) {
      out += describe(context.get_as<caf::error>(i));
    } else {
      out += caf::to_string(context.take(i + 1).drop(i));
    }
  }
  return out;
}

std::string describe(std::uint8_t code, caf::atom_value category, const caf::message& context) {
  std::string out;
  if (category == error_category) {
    out = "cudactor::";
    out += to_string(static_cast<errc>(code));
  } else if (category == caf::atom("system")) {
    out = "caf::" + caf::to_string(static_cast<caf::sec>(code));
  } else if (category == caf::atom("exit")) {
    out = "caf::exit_reason::" + caf::to_string(static_cast<caf::exit_reason>(code));
  } else if (category == caf::atom("parser")) {
    out = "caf::pec::" + caf::to_string(static_cast<caf::pec>(code));
  } else {
    out = caf::to_string(category) + "::" + std::to_string(code);
  }
  if (!context.empty()) out += ": " + describe_context(context);
  return out;
}

}  // namespace

std::string describe(const caf::error& err) {
  if (!err) return "no error";
  return describe(err.code(), err.category(), err.context());
}

void add_error_category(caf::actor_system_config& config) {
  config.add_error_category(
      error_category, [](std::uint8_t code, caf::atom_value category, const caf::message& context) {
        return describe(code, category, context);
      });
}

}  // namespace cudactor
