// The coordinator's completions: the poller's per-tick report of a stream turned into ended
// operations, each told only once its dependencies have ended.
#include <array>
#include <utility>

#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/actors/detail/coordinator_state.hpp"
#include "cudactor/messaging/enum_range.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

void coordinator_state::on_progress(std::uint64_t epoch, const completion_batch& batch) {
  if (epoch != epoch_ || batch.stream.value >= pool_.size() || lost_) return;
  const std::uint32_t index = batch.stream.value;
  auto& s = pool_.at(index);
  for (const auto& f : batch.failures) {
    if (f.error.code() == static_cast<std::uint8_t>(errc::device_lost)) {
      lose(f.error);
      flush();
      return;
    }
  }
  std::array<std::uint32_t, stream_pool::workloads> ended_by_workload{};
  std::size_t next_failure = 0;
  std::uint64_t ended = 0;
  while (!s.in_flight.empty() && s.in_flight.front().first <= batch.reached) {
    const auto [point, id] = s.in_flight.front();
    s.in_flight.pop_front();
    if (id.empty()) continue;  // a seal (close_off): whatever failed there was its op's
    ++ended;
    while (next_failure < batch.failures.size() && batch.failures[next_failure].point < point) {
      ++next_failure;
    }
    if (auto r = records_.find(id); r != records_.end()) {
      assert(in_range(r->second.workload));  // checked where it entered
      ++ended_by_workload[static_cast<std::size_t>(r->second.workload)];
      if (batch.detected_ns != 0 && index < slot_metrics_.size()) {
        slot_metrics_[index].latency(batch.detected_ns - r->second.dispatched_ns);
      }
    }
    caf::error why;
    if (next_failure < batch.failures.size() && batch.failures[next_failure].point == point) {
      why = batch.failures[next_failure].error;
    } else {
      why = timing_failure(id);
    }
    if (why && index < slot_metrics_.size()) slot_metrics_[index].failed();
    if (deps_done(id)) {
      settle_and_wake(id, std::move(why));
    } else {
      // A dependency on another stream finished first on the device, but its stream's report
      // comes later: this op is told once that dependency has ended.
      deferred_.emplace(id, std::move(why));
    }
  }
  if (ended != 0 && index < slot_metrics_.size()) slot_metrics_[index].completed(ended);
  s.completed = std::max(s.completed, std::min(batch.reached, s.issued));
  pool_.record_completions(index, ended_by_workload,
                           batch.detected_ns != 0 ? batch.detected_ns : now_ns());
  pump();
  serve_ready_waiters();
  flush();
}

caf::error coordinator_state::timing_failure(op_id id) {
  auto found = records_.find(id);
  if (found == records_.end() || !found->second.timing) return {};
  // The host backend reports a failure once, at the first completion point after it: with
  // timing on that is the start event (a failed dependency) or the end event (failed work),
  // both reached before the operation's own point.
  for (const gpu::event* e : {&found->second.timing->start, &found->second.timing->end}) {
    const gpu::query_result q = context_.device->query(e->ref());
    if (q.failed() && q.error.code() != gpu::errc::device_lost) return to_error(q.error);
  }
  return {};
}

bool coordinator_state::deps_done(op_id id) const {
  const op_graph::node* n = graph_.find(id);
  if (n == nullptr) return true;
  for (op_id d : n->deps) {
    const op_graph::node* dep = graph_.find(d);
    if (dep != nullptr && dep->state != op_state::completed) return false;
  }
  return true;
}

void coordinator_state::settle_and_wake(op_id first, caf::error why) {
  if (deferred_.empty()) {
    settle(first, why);
    return;
  }
  // Only a completion can finish a deferred dependent (a failure cancels it); its dependents
  // are read before it is settled, since a settled op may be forgotten at once.
  auto collect = [this](op_id id) {
    if (const op_graph::node* n = graph_.find(id)) {
      for (op_id d : n->dependents) {
        if (deferred_.count(d) != 0) wake_.push_back(d);
      }
    }
  };
  wake_.clear();
  collect(first);
  settle(first, why);
  while (!wake_.empty()) {
    const op_id d = wake_.back();
    wake_.pop_back();
    auto it = deferred_.find(d);
    if (it == deferred_.end()) continue;
    const op_graph::node* n = graph_.find(d);
    if (n == nullptr || is_terminal(n->state)) {  // cancelled by a dependency's failure
      deferred_.erase(it);
      continue;
    }
    if (!deps_done(d)) continue;  // another dependency has not ended yet
    caf::error held = std::move(it->second);
    deferred_.erase(it);
    collect(d);
    settle(d, held);
  }
}

void coordinator_state::settle(op_id id, const caf::error& why) {
  if (!why) {
    if (graph_.complete(id)) ended_.push_back({id, op_state::completed, {}});
  } else if (why.code() == static_cast<std::uint8_t>(errc::dependency_failed)) {
    // The host reports a wait on a failed point as dependency_failed: the operation's
    // dependency failed, so it is cancelled, as the cascade would have done.
    graph_.cancel(id, why, ended_);
  } else {
    graph_.fail(id, why, ended_);
  }
}

}  // namespace cudactor::detail
