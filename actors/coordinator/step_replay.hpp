// actors/coordinator/step_replay.hpp
//
// One replay of a recorded step while it runs: the step it runs (held, so that a release does
// not pull it away), the launch functions its bindings resolved anew, and what each operation
// did. Every operation's work goes to its stream wrapped (wrap()): the wrapper runs the
// operation's function and notes how it went, on whatever thread the backend runs it, so that
// the step's outcome names the operation that failed without a timeline point or an end of
// its own per operation. Shared between the coordinator and the wrapped work, which may still
// run after the replay has ended (it was cancelled on its way). No CAF actor.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "cudactor/actors/coordinator/recorded_step.hpp"
#include "cudactor/gpu/status.hpp"
#include "cudactor/messaging/step_types.hpp"

namespace cudactor::detail {

class step_replay : public std::enable_shared_from_this<step_replay> {
 public:
  static constexpr std::uint32_t none = ~std::uint32_t{0};

  step_replay(std::shared_ptr<const recorded_step> step, step_handle handle, step_notices notices);

  [[nodiscard]] const recorded_step& step() const noexcept { return *step_; }
  [[nodiscard]] step_handle handle() const noexcept { return handle_; }
  [[nodiscard]] step_notices notices() const noexcept { return notices_; }

  // Operation `op` runs `fn` in this replay instead of its recorded function (rebound).
  void rebind(std::uint32_t op, gpu::work_fn fn) { bound_[op] = std::move(fn); }
  // The work that goes to the stream for segment `segment` of part `part` of the plan: each of
  // its operations in turn (all of them, as a stream runs work after a failure), each noted;
  // the first failure is the segment's.
  [[nodiscard]] gpu::work_fn wrap(std::uint32_t part, std::uint32_t segment);

  // The first operation that failed (none: none did) and its status.
  [[nodiscard]] std::uint32_t first_failed() const;
  [[nodiscard]] gpu::status first_failure() const;
  // What operation `op` did: 0 never ran, 1 completed, 2 failed.
  [[nodiscard]] std::uint8_t outcome_of(std::uint32_t op) const noexcept {
    return ran_[op].load(std::memory_order_acquire);
  }
  // The per-operation ends `notices` asks for: those that did not complete, or all. `ended`:
  // the replay's own end (an operation that never ran is cancelled with it, or with the
  // failure it waited for).
  [[nodiscard]] std::vector<step_op_end> ends(op_state ended, const caf::error& cause) const;

  // The coordinator's operation the replay is (known before it is registered).
  op_id op;

 private:
  void ran(std::uint32_t op, const gpu::status& s);

  std::shared_ptr<const recorded_step> step_;
  step_handle handle_;
  step_notices notices_;
  std::vector<gpu::work_fn> bound_;  // per op: empty unless rebound
  std::unique_ptr<std::atomic<std::uint8_t>[]> ran_;
  mutable std::mutex mutex_;  // guards the failures
  // Each operation that failed, in the order they were seen (rare: kept with a lock).
  std::vector<std::pair<std::uint32_t, gpu::status>> failures_;
};

}  // namespace cudactor::detail
