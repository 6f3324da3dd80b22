#include "cudactor/actors/coordinator/step_graph.hpp"

#include <algorithm>
#include <utility>

#include "cudactor/actors/coordinator/step_replay.hpp"
#include "cudactor/actors/detail/clock.hpp"

namespace cudactor::detail {

step_graph::step_graph(std::unique_ptr<gpu::work_graph> graph,
                       std::vector<std::uint32_t> op_of_node)
    : graph_(std::move(graph)),
      op_of_node_(std::move(op_of_node)),
      node_of_op_(op_of_node_.size()),
      held_(op_of_node_.size()) {
  for (std::uint32_t k = 0; k < op_of_node_.size(); ++k) node_of_op_[op_of_node_[k]] = k;
}

void step_graph::add_communicator(std::uint32_t op, std::shared_ptr<gpu::communicator> comm,
                                  std::function<void(const gpu::status&)> counted) {
  communicators_.push_back(collective{op, std::move(comm), std::move(counted)});
}

gpu::status step_graph::launch(const gpu::launch_context& on, step_replay& replay) {
  std::lock_guard<std::mutex> lock{mutex_};
  const recorded_step& step = replay.step();
  for (const collective& c : communicators_) {
    if (auto broken = c.comm->broken(); !broken.ok()) {
      replay.ran(c.op, broken);
      return broken;
    }
  }
  // A node whose work this replay changes is given it; one a binding changed before and this
  // replay does not bind gets its recorded work back. A node that cannot take its work fails
  // the replay, named, before anything is launched.
  const auto give = [&](std::uint32_t op, const gpu::work_fn& fn, std::vector<buffer_id> to) {
    if (auto bad = graph_->set_work(node_of_op_[op], fn); !bad.ok()) {
      replay.ran(op, bad);
      return bad;
    }
    held_[op] = std::move(to);
    return gpu::status{};
  };
  for (const std::uint32_t op : rebound_) {
    if (replay.bound_work(op)) continue;
    if (auto bad = give(op, step.ops[op].fn, {}); !bad.ok()) return bad;
  }
  rebound_.erase(std::remove_if(rebound_.begin(), rebound_.end(),
                                [&](std::uint32_t op) { return held_[op].empty(); }),
                 rebound_.end());
  for (const std::uint32_t op : replay.rebound()) {
    const std::vector<buffer_id>& to = replay.bound_buffers(op);
    if (held_[op] == to) continue;
    const bool was_recorded = held_[op].empty();
    if (auto bad = give(op, replay.bound_work(op), to); !bad.ok()) return bad;
    if (was_recorded) rebound_.push_back(op);
  }
  // The host runs the nodes one after the other, each told as it ends: one began where the
  // one before it ended.
  const bool timed = replay.traced() && on.kind() == gpu::backend_kind::host;
  std::int64_t since = timed ? now_ns() : 0;
  const std::uint32_t home = step.plan.home();
  const gpu::node_observer observer = [&](std::uint32_t node, const gpu::status& outcome) {
    // The outcome first: a time seen by the trace comes with its outcome.
    replay.ran(op_of_node_[node], outcome);
    if (timed) {
      const std::int64_t ended = now_ns();
      replay.ran_at(op_of_node_[node], since, ended, home);
      since = ended;
    }
  };
  gpu::status launched = graph_->launch(on, &observer);
  if (graph_->captured()) {
    if (launched.ok()) launched = watch_collectives(on, replay);
    for (const collective& c : communicators_) {
      if (c.counted) c.counted(launched);
    }
  }
  return launched;
}

gpu::status step_graph::watch_collectives(const gpu::launch_context& on, step_replay& replay) {
  // The launch runs the captured calls without their communicators, whose watchdogs would
  // not see a rank that hangs inside it: each communicator watches the launch instead, once,
  // every one of them even after one could not (the graph is on the stream already).
  std::vector<const gpu::communicator*> watched;
  gpu::status first;
  for (const collective& c : communicators_) {
    if (std::find(watched.begin(), watched.end(), c.comm.get()) != watched.end()) continue;
    watched.push_back(c.comm.get());
    if (auto bad = c.comm->watch_launch(on); !bad.ok() && first.ok()) {
      replay.ran(c.op, bad);
      first = std::move(bad);
    }
  }
  return first;
}

step_graph::changes step_graph::take_changes() {
  const changes now{graph_->instantiations(), graph_->updates(),
                    forgotten_ ? 0 : static_cast<std::int64_t>(graph_->scratch_bytes())};
  const changes delta{now.instantiations - reported_.instantiations,
                      now.updates - reported_.updates, now.scratch_bytes - reported_.scratch_bytes};
  reported_ = now;
  return delta;
}

std::int64_t step_graph::forget_scratch() {
  forgotten_ = true;
  return -std::exchange(reported_.scratch_bytes, 0);
}

}  // namespace cudactor::detail
