// The coordinator's completions: the poller's per-tick report of a stream turned into ended
// operations, each told only once its dependencies have ended.
#include <caf/all.hpp>

#include <algorithm>
#include <array>
#include <utility>

#include "cudactor/actors/coordinator/coordinator_state.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/messaging/enum_range.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

void coordinator_state::on_progress(const completion_batch& batch) {
  const auto found = index_of(batch.stream);
  // Only a stream actor of ours speaks for its stream.
  if (!found || lost_ || closing_ ||
      self_->current_sender() != caf::actor_cast<caf::strong_actor_ptr>(actors_[*found])) {
    return;
  }
  const std::uint32_t index = *found;
  auto& s = pool_.at(index);
  if (batch.broken) {
    lose(batch.broken.code() == static_cast<std::uint8_t>(errc::device_lost)
             ? batch.broken
             : make_error(errc::device_lost, "stream " + std::to_string(s.id.value) +
                                                 " broke: " + to_string(batch.broken)));
    return;
  }
  for (const auto& f : batch.failures) {
    if (f.error.code() == static_cast<std::uint8_t>(errc::device_lost)) {
      lose(f.error);
      return;
    }
  }
  retire(index, batch);
  // Room on the stream, and deferred ends settled: the next pass, with whatever else the
  // mailbox holds.
  finish();
  pass_or_later();
  if (records_.empty() && graph_.size() == 0) arm_shed();
}

void coordinator_state::arm_shed() {
  if (shed_armed_ || options_.keep_memory_for.count() <= 0) return;
  shed_armed_ = true;
  made_at_arm_ = records_.made() + graph_.made();
  self_->delayed_send(self_, options_.keep_memory_for, shrink_atom::value);
}

void coordinator_state::on_shed() {
  shed_armed_ = false;
  if (!records_.empty() || graph_.size() != 0) return;  // armed again once it holds nothing
  if (records_.made() + graph_.made() != made_at_arm_) {
    arm_shed();  // busy meanwhile: idle only from now on
    return;
  }
  (void)records_.shed_spares();
  (void)graph_.shed_spares();
}

void coordinator_state::retire(std::uint32_t index, const completion_batch& batch) {
  if (!tails_.empty()) {  // ended buffer users this stream has now passed
    for (auto it = tails_.begin(); it != tails_.end();) {
      const op_position& at = it->second;
      if (at.stream == index && at.point != 0 && at.point <= batch.reached) {
        it = tails_.erase(it);
        ++let_go_;
      } else {
        ++it;
      }
    }
  }
  const std::int64_t when = batch.detected_ns != 0 ? batch.detected_ns : now_ns();
  std::array<std::uint32_t, stream_pool::workloads> ended_by_workload{};
  std::size_t next_failure = 0, next_timed = 0;
  const auto& ops = batch.ops;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    // Two ahead, as in pump(): out of id order, each record and node is a cache miss.
    if (k + 2 < ops.size() && ops[k + 2].op.value != ops[k].op.value + 2) {
      __builtin_prefetch(records_.find(ops[k + 2].op.value));
      graph_.prefetch(ops[k + 2].op);
    }
    const op_id id = ops[k].op;
    const timeline_point point = ops[k].point;
    while (next_failure < batch.failures.size() && batch.failures[next_failure].point < point) {
      ++next_failure;
    }
    while (next_timed < batch.timed.size() && batch.timed[next_timed].op.point < point) {
      ++next_timed;
    }
    caf::error why;
    if (next_failure < batch.failures.size() && batch.failures[next_failure].point == point) {
      why = batch.failures[next_failure].error;
    }
    if (!barriers_.empty() && barriers_.find(id) != nullptr) {
      barrier_reached(id, index, point, std::move(why), when);
      continue;
    }
    op_record* r = records_.find(id.value);
    if (r != nullptr) {
      if (r->point == 0) {
        // Reached before its ticket came back: the report says where it sat.
        on_stream(*r, index, point);
        graph_.placed(id, point);
      }
      assert(in_range(r->workload));  // checked where it entered
      ++ended_by_workload[static_cast<std::size_t>(r->workload)];
      if (next_timed < batch.timed.size() && batch.timed[next_timed].op.point == point) {
        r->started_ns = batch.timed[next_timed].started_ns;
        r->finished_ns = batch.timed[next_timed].ended_ns;
      }
    }
    if (r != nullptr && r->type == op_type::step) why = replay_cause(id, std::move(why));
    if (r == nullptr || graph_.deps_ended(id)) {
      settle_and_wake(id, std::move(why));
    } else {
      // A dependency on another stream finished first on the device, but its stream's report
      // comes later: this op is told once that dependency has ended.
      defer(id, *r, std::move(why));
    }
  }
  pool_.record_completions(index, ended_by_workload, when);
}

void coordinator_state::defer(op_id id, op_record& r, caf::error why) {
  assert(!r.deferred);
  r.deferred = true;
  r.report = std::move(why);
  ++deferred_count_;
  // Ids settled since are stale here: dropped once they are most of the list.
  if (deferred_.size() >= 64 && deferred_.size() >= 2 * deferred_count_) {
    deferred_.erase(std::remove_if(deferred_.begin(), deferred_.end(),
                                   [this](op_id d) { return !is_deferred(d); }),
                    deferred_.end());
  }
  deferred_.push_back(id);
}

caf::error coordinator_state::undefer(op_record& r) {
  assert(r.deferred && deferred_count_ > 0);
  r.deferred = false;
  --deferred_count_;
  return std::move(r.report);
}

void coordinator_state::settle_and_wake(op_id first, caf::error why) {
  if (deferred_count_ == 0) {
    settle(first, why);
    return;
  }
  // A completion finishes a deferred dependent, and so does any end of an order-only
  // dependency (a failure cancels the others); its dependents are read before it is settled,
  // since a settled op may be forgotten at once.
  auto collect = [this](op_id id) {
    if (const op_graph::node* n = graph_.find(id)) {
      for (op_id d : n->dependents) {
        if (is_deferred(d)) wake_.push_back(d);
      }
    }
  };
  wake_.clear();
  collect(first);
  settle(first, why);
  while (!wake_.empty()) {
    const op_id d = wake_.back();
    wake_.pop_back();
    op_record* r = records_.find(d.value);
    if (r == nullptr || !r->deferred) continue;
    const op_graph::node* n = graph_.find(d);
    if (n == nullptr || is_terminal(n->state)) {  // cancelled by a dependency's failure
      (void)undefer(*r);
      continue;
    }
    if (!graph_.deps_ended(d)) continue;  // another dependency has not ended yet
    caf::error held = undefer(*r);
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

void coordinator_state::wake_deferred() {
  // An operation the device finished waits (deferred) for its dependencies to end. A
  // completion wakes it (settle_and_wake); a failure cancels it, unless the dependency was
  // only an order one: then the failure's end is what it waited for.
  std::vector<op_id> due;
  deferred_.erase(std::remove_if(deferred_.begin(), deferred_.end(),
                                 [this](op_id d) { return !is_deferred(d); }),
                  deferred_.end());
  for (op_id id : deferred_) {
    if (graph_.deps_ended(id)) due.push_back(id);
  }
  std::sort(due.begin(), due.end());
  for (op_id id : due) {
    op_record* r = records_.find(id.value);
    if (r == nullptr || !r->deferred) continue;  // settled by an earlier one's wake
    caf::error why = undefer(*r);
    settle_and_wake(id, std::move(why));
  }
  finish();
}

}  // namespace cudactor::detail
