#include "cudactor/actors/node/node_steps.hpp"

#include <algorithm>

#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

caf::error node_steps::reserve() {
  if (live_.size() + reserved_ >= max_) {
    return make_error(errc::resource_exhausted,
                      "record: " + std::to_string(live_.size() + reserved_) +
                          " steps are recorded or being recorded, the most this node keeps for "
                          "its owner (limit max-steps): release one first");
  }
  ++reserved_;
  return {};
}

void node_steps::settle(const step_handle& made, std::size_t ops) {
  if (reserved_ > 0) --reserved_;
  if (!made.empty()) live_.push_back(recorded{made, ops});
}

bool node_steps::has(const step_handle& step) const noexcept {
  return !step.empty() && std::any_of(live_.begin(), live_.end(),
                                      [&](const recorded& r) { return r.handle == step; });
}

std::size_t node_steps::cost_of(const step_handle& step,
                                const replay_request& request) const noexcept {
  for (const recorded& r : live_) {
    if (r.handle == step) return r.ops + request.bindings.size();
  }
  return 0;
}

bool node_steps::remove(const step_handle& step) {
  auto it =
      std::find_if(live_.begin(), live_.end(), [&](const recorded& r) { return r.handle == step; });
  if (step.empty() || it == live_.end()) return false;
  live_.erase(it);
  return true;
}

std::vector<step_handle> node_steps::take_all() {
  std::vector<step_handle> out;
  out.reserve(live_.size());
  for (const recorded& r : live_) out.push_back(r.handle);
  live_.clear();
  return out;
}

caf::error node_steps::check_bindings(const replay_request& request, const node_buffers& buffers) {
  if (request.bindings.size() > buffers.size()) {
    return make_error(errc::invalid_argument, "replay: " + std::to_string(request.bindings.size()) +
                                                  " bindings, more than the owner's " +
                                                  std::to_string(buffers.size()) + " buffers here");
  }
  // As the uses of one operation each binding names, so that the buffers' own check says
  // which are not the owner's.
  for (std::size_t i = 0; i < request.bindings.size(); ++i) {
    op_spec named;
    named.uses = {buffer_use::read(request.bindings[i].from),
                  buffer_use::read(request.bindings[i].to)};
    if (auto bad = buffers.check_names(named, "replay: binding " + std::to_string(i))) return bad;
  }
  return {};
}

}  // namespace cudactor::detail
