#include "cudactor/actors/operation_registry.hpp"

#include <algorithm>
#include <utility>

#include "cudactor/messaging/errc.hpp"

namespace cudactor {

gpu::status operation_registry::add(std::string name, named_launch launch) {
  if (name.empty() || name.size() > max_name_length) {
    return {gpu::errc::invalid_argument,
            "operation names have 1 to " + std::to_string(max_name_length) + " characters"};
  }
  if (!launch) return {gpu::errc::invalid_argument, "operation '" + name + "' has no function"};
  checks_.erase(name);
  launches_[std::move(name)] = std::move(launch);
  return {};
}

caf::error operation_registry::check(const std::string& name, const caf::message& args) const {
  auto i = checks_.find(name);
  return i == checks_.end() ? caf::error{} : i->second(args);
}

std::vector<std::string> operation_registry::names() const {
  std::vector<std::string> out;
  out.reserve(launches_.size());
  for (const auto& [name, launch] : launches_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
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
  if (auto bad = registry->check(w.name(), w.args())) return bad;
  out = [launch, args = w.args()](const gpu::launch_context& ctx) { return (*launch)(ctx, args); };
  return {};
}

}  // namespace cudactor
