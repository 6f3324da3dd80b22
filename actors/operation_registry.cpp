#include "cudactor/actors/operation_registry.hpp"

#include <utility>

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

}  // namespace cudactor
