#include "cudactor/actors/coordinator.hpp"

#include <caf/all.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/actors/coordinator/coordinator_state.hpp"

namespace cudactor {

namespace {

using detail::coordinator_state;

coordinator_actor::behavior_type coordinator_behavior(
    coordinator_actor::stateful_pointer<coordinator_state> self, coordinator_context context,
    coordinator_options options) {
  self->state.init(self, context, std::move(options));
  self->set_down_handler([self](caf::down_msg& down) { self->state.unsubscribe(down.source); });
  auto& st = self->state;
  return {
      [&st](register_atom, op_spec& spec) { return st.register_op(spec, nullptr); },
      [&st](register_atom, op_spec& spec, const op_listener& listener) {
        return st.register_op(spec, &listener);
      },
      [&st](submit_atom, graph_spec& graph) { return st.submit_graph(graph, nullptr); },
      [&st](submit_atom, graph_spec& graph, const op_listener& listener) {
        return st.submit_graph(graph, &listener);
      },
      [&st](run_atom, op_spec& spec) { return st.run_op(spec); },
      [&st](run_atom, graph_spec& graph) { return st.run_graph(graph); },
      [&st](run_atom, op_spec& spec, op_callback& done) { st.run_op(spec, done); },
      [&st](run_atom, graph_spec& graph, graph_callback& done) { st.run_graph(graph, done); },
      [&st](record_atom, step_spec& spec) { return st.record_step(spec); },
      [&st](record_atom, step_spec& spec, step_record_callback& done) {
        st.record_step(spec, done);
      },
      [&st](replay_atom, replay_request& request) { return st.replay(request); },
      [&st](replay_atom, replay_request& request, step_callback& done) {
        st.replay(request, done);
      },
      [&st](release_atom, const step_handle& step) { return st.release_step(step); },
      [&st](depend_atom, op_id op, op_id dep) { return st.depend(op, dep); },
      [&st](alloc_atom, std::uint64_t bytes) { return st.allocate_buffer(std::nullopt, bytes); },
      [&st](alloc_atom, stream_id on, std::uint64_t bytes) {
        return st.allocate_buffer(on, bytes);
      },
      [&st](adopt_atom, std::uint64_t address, std::uint64_t bytes) {
        return st.adopt_buffer(address, bytes);
      },
      [&st](release_atom, const buffer_id& id) { return st.release_buffer(id); },
      [&st](begin_atom, op_id id) { return st.begin(id); },
      [&st](enqueued_atom, op_id id) { return st.complete(id); },
      [&st](enqueued_atom, op_id id, const caf::error& why) { return st.complete_failed(id, why); },
      [&st](subscribe_atom, const op_listener& listener) { st.subscribe_all(listener); },
      [&st](subscribe_atom, op_id id, const op_listener& listener) {
        return st.subscribe(id, listener);
      },
      [&st](unsubscribe_atom, const op_listener& listener) { st.unsubscribe(listener.address()); },
      [&st](await_atom, op_id id, const wait_limit& limit) { return st.await_end(id, limit); },
      [&st](synchronize_atom, op_spec& spec, const wait_limit& limit) {
        return st.synchronize(spec, limit);
      },
      [&st](synchronize_atom, op_spec& spec, const wait_limit& limit,
            const barrier_generation& generation) {
        return st.synchronize(spec, limit, &generation);
      },
      [&st](withdraw_atom, std::uint64_t key) { return st.withdraw(key); },
      [&st](describe_atom, op_id id) { return st.describe(id); },
      [&st](cancel_atom, op_id id) { return st.cancel(id); },
      [&st](cancel_atom, const std::vector<op_id>& ids) { st.cancel_all(ids); },
      [&st](cancel_atom, const std::vector<step_handle>& steps) { st.cancel_replays(steps); },
      [&st](deadlocks_atom) { return st.detect_deadlocks(st.options().stall_after); },
      [&st](deadlocks_atom, caf::timespan stall_after) { return st.detect_deadlocks(stall_after); },
      [&st](metrics_atom) { return st.metrics(); },
      [&st](report_atom) { return st.report(); },
      [&st](ready_streams_atom) { return st.has_ready_streams(); },
      [&st](choose_atom, op_priority priority, op_workload workload) {
        return st.choose_now(priority, workload);
      },
      [&st](wait_ready_atom, caf::timespan timeout) { return st.wait_for_any_ready(timeout); },
      [&st](reset_atom) { return st.reset(); },
      [&st](shutdown_atom) { st.shut_down(); },
      [&st](const completion_batch& batch) { st.on_progress(batch); },
      [&st](expire_atom, std::uint64_t token) { st.expire(token); },
      [&st](pump_atom) { st.on_pump(); },
      [&st](shrink_atom) { st.on_shed(); },
  };
}

}  // namespace

gpu::result<coordinator_actor> spawn_coordinator(caf::actor_system& system,
                                                 const coordinator_context& context,
                                                 coordinator_options options) {
  if (context.device == nullptr || context.streams.empty() || !context.directory) {
    return gpu::status{gpu::status_code::invalid_argument,
                       "coordinator: needs the backend, at least one stream actor and the stream "
                       "directory"};
  }
  for (const auto& s : context.streams) {
    if (!s.actor || context.directory->view(s.id).empty()) {
      return gpu::status{gpu::status_code::invalid_argument,
                         "coordinator: stream '" + s.name + "' has no actor or no stream"};
    }
  }
  return system.spawn(coordinator_behavior, context, std::move(options));
}

}  // namespace cudactor
