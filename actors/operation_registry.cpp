#include "cudactor/actors/operation_registry.hpp"

#include <utility>

#include "cudactor/messaging/errc.hpp"

namespace cudactor {

gpu::status operation_registry::add(std::string name, named_launch launch) {
  if (name.empty() || name.size() > max_name_length) {
    return {gpu::errc::invalid_argument,
            "operation names have 1 to " + std::to_string(max_name_length) + " characters"};
  }
  if (!launch) return {gpu::errc::invalid_argument, "operation '" + name + "' has no function"};
  launches_[std::move(name)] = std::move(launch);
  return {};
}

const named_launch* operation_registry::find(const std::string& name) const {
  auto i = launches_.find(name);
  return i == launches_.end() ? nullptr : &i->second;
}

caf::error resolve_work(const work& w, const operation_registry* registry, const std::string& where,
                        gpu::work_fn& out) {
  if (w.is_local()) {
    out = w.closure();
    return {};
  }
  if (w.name().empty()) return make_error(errc::invalid_argument, "empty work");
  const named_launch* launch = registry != nullptr ? registry->find(w.name()) : nullptr;
  if (launch == nullptr) {
    std::string shown = w.name().substr(0, operation_registry::max_name_length);
    return make_error(errc::unknown_operation,
                      "no operation named '" + shown + "' is registered on " + where);
  }
  out = [launch, args = w.args()](const gpu::launch_context& ctx) { return (*launch)(ctx, args); };
  return {};
}

}  // namespace cudactor
