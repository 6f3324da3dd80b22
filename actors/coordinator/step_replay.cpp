#include "cudactor/actors/coordinator/step_replay.hpp"

#include <exception>
#include <string>
#include <utility>

#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

step_replay::step_replay(std::shared_ptr<const recorded_step> step, step_handle handle,
                         step_notices notices)
    : step_(std::move(step)),
      handle_(handle),
      notices_(notices),
      bound_(step_->ops.size()),
      ran_(new std::atomic<std::uint8_t>[step_->ops.size()]) {
  for (std::size_t i = 0; i < step_->ops.size(); ++i) ran_[i].store(0, std::memory_order_relaxed);
}

void step_replay::trace_times() { times_.reset(new op_time[step_->ops.size()]); }

void step_replay::rebind(std::uint32_t op, gpu::work_fn fn, std::vector<buffer_id> buffers) {
  if (!bound_[op].fn) rebound_.push_back(op);
  bound_[op] = binding{std::move(fn), std::move(buffers)};
}

gpu::work_fn step_replay::wrap(std::uint32_t part, std::uint32_t segment) {
  return [self = shared_from_this(), part, segment](const gpu::launch_context& context) {
    const step_plan::part& p = self->step_->plan.parts()[part];
    const step_plan::segment seg = p.segments[segment];
    gpu::status first;
    const bool timed = self->traced() && context.kind() == gpu::backend_kind::host;
    for (std::uint32_t e = seg.first; e <= seg.last; ++e) {
      const std::uint32_t op = p.entries[e].op;
      const std::int64_t started = timed ? now_ns() : 0;
      const gpu::work_fn& fn = self->bound_[op].fn ? self->bound_[op].fn : self->step_->ops[op].fn;
      gpu::status s;
      try {  // as the host engine does for a lone work: a throw is that work's failure
        s = fn(context);
      } catch (const std::exception& e) {
        s = gpu::status{gpu::status_code::op_failed, std::string{"work threw: "} + e.what()};
      } catch (...) {
        s = gpu::status{gpu::status_code::op_failed, "work threw"};
      }
      const std::int64_t finished = timed ? now_ns() : 0;
      self->ran(op, s);  // the outcome first: a time seen by the trace comes with its outcome
      if (timed) self->ran_at(op, started, finished, part);
      if (!s.ok() && first.ok()) first = std::move(s);
    }
    return first;
  };
}

void step_replay::ran(std::uint32_t op, const gpu::status& s) {
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock{mutex_};
    failures_.emplace_back(op, s);
  }
  ran_[op].store(s.ok() ? 1 : 2, std::memory_order_release);
}

std::uint32_t step_replay::first_failed() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return failures_.empty() ? none : failures_.front().first;
}

gpu::status step_replay::first_failure() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return failures_.empty() ? gpu::status{} : failures_.front().second;
}

std::vector<step_op_end> step_replay::ends(op_state ended, const caf::error& cause) const {
  std::vector<step_op_end> out;
  if (notices_ == step_notices::none) return out;
  const auto n = static_cast<std::uint32_t>(step_->ops.size());
  // Each failed operation's cause by index, found once: a look through every failure per
  // failed operation was quadratic in a step whose operations all fail.
  std::vector<const gpu::status*> why(n, nullptr);
  std::lock_guard<std::mutex> lock{mutex_};
  for (const auto& [op, s] : failures_) why[op] = &s;
  for (std::uint32_t i = 0; i < n; ++i) {
    step_op_end e;
    e.index = i;
    switch (outcome_of(i)) {
      case 1: e.state = op_state::completed; break;
      case 2:
        e.state = op_state::failed;
        if (why[i] != nullptr) e.cause = to_error(*why[i]);
        break;
      default:
        if (whole_ && ended == op_state::completed) {
          e.state = op_state::completed;  // the graph it is part of completed
          break;
        }
        // It never ran: the step ended first, or what it waited for failed; in a graph that
        // tells only its own outcome, it is not known to have run.
        e.state = op_state::cancelled;
        e.cause = ended == op_state::completed
                      ? make_error(errc::dependency_failed,
                                   "step op " + std::to_string(i) + " did not run")
                      : cause;
        break;
    }
    if (notices_ == step_notices::all || e.state != op_state::completed)
      out.push_back(std::move(e));
  }
  return out;
}

}  // namespace cudactor::detail
