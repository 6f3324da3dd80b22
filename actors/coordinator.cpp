#include "cudactor/actors/coordinator.hpp"

#include <caf/all.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/actors/detail/coordinator_state.hpp"

namespace cudactor {

namespace {

using detail::coordinator_state;

coordinator_actor::behavior_type coordinator_behavior(
    coordinator_actor::stateful_pointer<coordinator_state> self, coordinator_context context,
    coordinator_options options, std::shared_ptr<std::vector<gpu::stream>> streams) {
  self->state.init(self, context, std::move(options), std::move(*streams));
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
      [&st](depend_atom, op_id op, op_id dep) { return st.depend(op, dep); },
      [&st](begin_atom, op_id id) { return st.begin(id); },
      [&st](complete_atom, op_id id) { return st.complete(id); },
      [&st](complete_atom, op_id id, const caf::error& why) { return st.complete_failed(id, why); },
      [&st](subscribe_atom, const op_listener& listener) { st.subscribe_all(listener); },
      [&st](subscribe_atom, op_id id, const op_listener& listener) {
        return st.subscribe(id, listener);
      },
      [&st](unsubscribe_atom, const op_listener& listener) { st.unsubscribe(listener.address()); },
      [&st](describe_atom, op_id id) { return st.describe(id); },
      [&st](cancel_atom, op_id id) { return st.cancel(id); },
      [&st](deadlocks_atom) { return st.detect_deadlocks(st.options().stall_after); },
      [&st](deadlocks_atom, caf::timespan stall_after) { return st.detect_deadlocks(stall_after); },
      [&st](metrics_atom) { return st.metrics(); },
      [&st](report_atom) { return st.report(); },
      [&st](ready_streams_atom) { return st.has_ready_streams(); },
      [&st](wait_ready_atom, caf::timespan timeout) { return st.wait_for_any_ready(timeout); },
      [&st](reset_atom) { return st.reset(); },
      [&st](shutdown_atom) { st.shut_down(); },
      [&st](progress_atom, std::uint64_t epoch, const completion_batch& batch) {
        st.on_progress(epoch, batch);
      },
      [&st](expire_atom, std::uint64_t token) { st.expire(token); },
  };
}

}  // namespace

gpu::result<coordinator_actor> spawn_coordinator(caf::actor_system& system,
                                                 const coordinator_context& context,
                                                 coordinator_options options) {
  if (context.device == nullptr || context.poller == nullptr) {
    return gpu::status{gpu::errc::invalid_argument, "coordinator: incomplete context"};
  }
  if (options.streams == 0 ||
      options.high_priority_streams + options.low_priority_streams > options.streams) {
    return gpu::status{gpu::errc::invalid_argument,
                       "coordinator: needs at least one stream, and no more high- and "
                       "low-priority streams than streams"};
  }
  auto streams = std::make_shared<std::vector<gpu::stream>>();
  for (std::size_t i = 0; i < options.streams; ++i) {
    auto made =
        context.device->create_stream({"coordinator-" + std::to_string(i), options.priority_of(i)});
    if (!made) return made.error();
    streams->push_back(std::move(made.value()));
  }
  return system.spawn(coordinator_behavior, context, std::move(options), std::move(streams));
}

}  // namespace cudactor
