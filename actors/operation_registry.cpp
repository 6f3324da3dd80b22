#include "cudactor/actors/operation_registry.hpp"

#include <algorithm>
#include <utility>

#include "cudactor/messaging/errc.hpp"

namespace cudactor {

gpu::status operation_registry::add(std::string name, named_launch launch) {
  if (!launch) return {gpu::status_code::invalid_argument, "operation '" + name + "' has no function"};
  return add_on_buffers(
      std::move(name), 0,
      [launch = std::move(launch)](const gpu::launch_context& ctx, const buffer_spans&,
                                   const caf::message& args) { return launch(ctx, args); });
}

gpu::status operation_registry::add_on_buffers(std::string name, std::size_t buffers,
                                               buffer_launch launch) {
  if (name.empty() || name.size() > max_name_length) {
    return {gpu::status_code::invalid_argument,
            "operation names have 1 to " + std::to_string(max_name_length) + " characters"};
  }
  if (!launch) return {gpu::status_code::invalid_argument, "operation '" + name + "' has no function"};
  checks_.erase(name);
  launches_[std::move(name)] = entry{std::move(launch), buffers};
  return {};
}

bool operation_registry::contains(const std::string& name) const {
  return launches_.count(name) != 0;
}

caf::error operation_registry::check(const std::string& name, const caf::message& args,
                                     std::size_t buffers) const {
  auto e = launches_.find(name);
  if (e != launches_.end() && buffers < e->second.buffers) {
    return make_error(errc::invalid_argument,
                      "operation '" + name + "' works on " + std::to_string(e->second.buffers) +
                          " buffers (declared uses), not " + std::to_string(buffers));
  }
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

const buffer_launch* operation_registry::find(const std::string& name) const {
  auto i = launches_.find(name);
  return i == launches_.end() ? nullptr : &i->second.launch;
}

caf::error resolve_work(const work& w, const operation_registry* registry, const std::string& where,
                        buffer_spans spans, gpu::work_fn& out) {
  if (w.is_local()) {
    out = w.closure();
    return {};
  }
  if (w.name().empty()) return make_error(errc::invalid_argument, "empty work");
  const buffer_launch* launch = registry != nullptr ? registry->find(w.name()) : nullptr;
  if (launch == nullptr) {
    std::string shown = w.name().substr(0, operation_registry::max_name_length);
    return make_error(errc::unknown_operation,
                      "no operation named '" + shown + "' is registered on " + where);
  }
  if (auto bad = registry->check(w.name(), w.args(), spans.size())) return bad;
  out = [launch, args = w.args(), spans = std::move(spans)](const gpu::launch_context& ctx) {
    return (*launch)(ctx, spans, args);
  };
  return {};
}

}  // namespace cudactor
