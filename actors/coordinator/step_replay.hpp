// actors/coordinator/step_replay.hpp
//
// One replay of a recorded step while it runs: the step it runs (held, so that a release does
// not pull it away), the launch functions its bindings resolved anew, and what each operation
// did. On the plan's streams every operation's work goes to its stream wrapped (wrap()): the
// wrapper runs the operation's function and notes how it went, on whatever thread the backend runs
// it, so that the step's outcome names the operation that failed without a timeline point or an end
// of its own per operation. Shared between the coordinator and the wrapped work, which may still
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

  // Operation `op` runs `fn` in this replay instead of its recorded function (rebound);
  // `buffers` are those `fn` was resolved against, the buffers of its uses in order (a step's
  // graph keeps a node's work while they stay the same).
  void rebind(std::uint32_t op, gpu::work_fn fn, std::vector<buffer_id> buffers);
  // The operations rebound, in the order rebound; their work and buffers.
  [[nodiscard]] const std::vector<std::uint32_t>& rebound() const noexcept { return rebound_; }
  [[nodiscard]] const gpu::work_fn& bound_work(std::uint32_t op) const noexcept {
    return bound_[op].fn;
  }
  [[nodiscard]] const std::vector<buffer_id>& bound_buffers(std::uint32_t op) const noexcept {
    return bound_[op].buffers;
  }
  // The work that goes to the stream for segment `segment` of part `part` of the plan: each of
  // its operations in turn (all of them, as a stream runs work after a failure), each noted;
  // the first failure is the segment's.
  [[nodiscard]] gpu::work_fn wrap(std::uint32_t part, std::uint32_t segment);

  // Notes how operation `op` went (the wrapped work, and a step's graph, call it).
  void ran(std::uint32_t op, const gpu::status& s);
  // The replay runs as a graph that tells only its own outcome (CUDA): an operation no one
  // noted ended as the replay did.
  void outcome_is_whole() noexcept { whole_ = true; }

  // When each operation ran, for the trace: asked for with trace_times() before the replay is
  // dispatched, noted where the backend runs the work on the host (its started and finished
  // times there are the device's), never on CUDA (work there is a launch, not the run).
  // Written on the backend's threads, read by the coordinator's once the replay ended: a
  // replay that ended early (shutdown) may still have work running, hence atomics; finished_ns
  // is written last.
  struct op_time {
    std::atomic<std::int64_t> started_ns{0};
    std::atomic<std::int64_t> finished_ns{0};
    std::atomic<std::uint32_t> part{none};  // of the plan: the stream it ran on
  };
  void trace_times();
  [[nodiscard]] bool traced() const noexcept { return times_ != nullptr; }
  void ran_at(std::uint32_t op, std::int64_t started, std::int64_t finished,
              std::uint32_t part) noexcept {
    times_[op].part.store(part, std::memory_order_relaxed);
    times_[op].started_ns.store(started, std::memory_order_relaxed);
    times_[op].finished_ns.store(finished, std::memory_order_release);
  }
  // Read once the replay ended (its work has run, or never will); nullptr when not traced.
  [[nodiscard]] const op_time* times() const noexcept { return times_.get(); }

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
  struct binding {
    gpu::work_fn fn;  // empty unless rebound
    std::vector<buffer_id> buffers;
  };

  std::shared_ptr<const recorded_step> step_;
  step_handle handle_;
  step_notices notices_;
  bool whole_ = false;
  std::vector<binding> bound_;  // per op
  std::vector<std::uint32_t> rebound_;
  std::unique_ptr<op_time[]> times_;
  std::unique_ptr<std::atomic<std::uint8_t>[]> ran_;
  mutable std::mutex mutex_;  // guards the failures
  // Each operation that failed, in the order they were seen (rare: kept with a lock).
  std::vector<std::pair<std::uint32_t, gpu::status>> failures_;
};

}  // namespace cudactor::detail
