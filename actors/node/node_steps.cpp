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

void node_steps::settle(const step_handle& made) {
  if (reserved_ > 0) --reserved_;
  if (!made.empty()) live_.push_back(made);
}

bool node_steps::has(const step_handle& step) const noexcept {
  return !step.empty() && std::find(live_.begin(), live_.end(), step) != live_.end();
}

bool node_steps::remove(const step_handle& step) {
  auto it = std::find(live_.begin(), live_.end(), step);
  if (step.empty() || it == live_.end()) return false;
  live_.erase(it);
  return true;
}

std::vector<step_handle> node_steps::take_all() {
  std::vector<step_handle> out;
  out.swap(live_);
  return out;
}

caf::error node_steps::check_bindings(const replay_request& request, const node_buffers& buffers) {
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
