// actors/node/node_steps.hpp
//
// The steps the owner of a node recorded on it (node_actor's record, replay and release;
// docs/replay.md): which handles are the owner's, so that a peer may replay or release only
// those (never another process's step of the same coordinator), the bound on how many there
// are (recorded and being recorded: cudactor.node.max-steps), and the check that a replay's
// bindings name only the owner's buffers. The node's core owns one; it forgets them all when
// the owner goes, releasing each.
#pragma once

#include <caf/error.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "cudactor/actors/node/node_buffers.hpp"
#include "cudactor/messaging/step_types.hpp"

namespace cudactor::detail {

class node_steps {
 public:
  explicit node_steps(std::size_t max_steps) noexcept : max_(max_steps) {}

  // Room for one more step; reserves it when there is (settle() ends the reservation).
  [[nodiscard]] caf::error reserve();
  // A recording reserved for ended: `made` is the step of `ops` operations (empty when it
  // failed).
  void settle(const step_handle& made, std::size_t ops = 0);

  [[nodiscard]] bool has(const step_handle& step) const noexcept;
  // What a replay of `step` costs the node's bound on open operations (max-pending-ops): its
  // operations, each of which the coordinator keeps state for while it runs, and its
  // bindings, which the node holds while a barrier holds the replay. 0 when not one of these.
  [[nodiscard]] std::size_t cost_of(const step_handle& step,
                                    const replay_request& request) const noexcept;
  // Forgets the step; false when it was not one of these.
  bool remove(const step_handle& step);
  // Forgets them all, returning them (the owner is gone: each is released).
  [[nodiscard]] std::vector<step_handle> take_all();

  // Whether every buffer `request` binds (both sides) is one of `buffers`, and no more are
  // bound than the owner has.
  [[nodiscard]] static caf::error check_bindings(const replay_request& request,
                                                 const node_buffers& buffers);

  [[nodiscard]] std::size_t size() const noexcept { return live_.size(); }

 private:
  std::size_t max_;
  struct recorded {
    step_handle handle;
    std::size_t ops = 0;
  };
  std::vector<recorded> live_;
  std::size_t reserved_ = 0;  // recordings under way
};

}  // namespace cudactor::detail
