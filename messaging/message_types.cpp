#include "cudactor/messaging/message_types.hpp"

#include "cudactor/messaging/barrier_protocol.hpp"
#include "cudactor/messaging/cluster_protocol.hpp"
#include "cudactor/messaging/coordinator_protocol.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/event_pool_protocol.hpp"
#include "cudactor/messaging/front_door_protocol.hpp"
#include "cudactor/messaging/node_protocol.hpp"
#include "cudactor/messaging/stream_protocol.hpp"
#include "cudactor/messaging/types.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

void add_message_types(caf::actor_system_config& config) {
  add_error_category(config);
  config.add_message_type<gpu::event_kind>("cudactor::event_kind")
      .add_message_type<gpu::copy_kind>("cudactor::copy_kind")
      .add_message_type<gpu::prefetch_target>("cudactor::prefetch_target")
      .add_message_type<gpu::stream_priority>("cudactor::stream_priority")
      .add_message_type<stream_id>("cudactor::stream_id")
      .add_message_type<ticket>("cudactor::ticket")
      .add_message_type<completion>("cudactor::completion")
      .add_message_type<op_failure>("cudactor::op_failure")
      .add_message_type<completion_batch>("cudactor::completion_batch")
      .add_message_type<event_lease>("cudactor::event_lease")
      .add_message_type<buffer_ref>("cudactor::buffer_ref")
      .add_message_type<stream_status>("cudactor::stream_status")
      .add_message_type<wait_limit>("cudactor::wait_limit")
      .add_message_type<pool_utilization>("cudactor::pool_utilization")
      .add_message_type<work>("cudactor::work")
      .add_message_type<stream_callback>("cudactor::stream_callback")
      .add_message_type<stream_dispatch>("cudactor::stream_dispatch")
      .add_message_type<stream_hold>("cudactor::stream_hold")
      .add_message_type<completion_listener>("cudactor::completion_listener")
      .add_message_type<stream_actor>("cudactor::stream_actor")
      .add_message_type<event_pool_actor>("cudactor::event_pool_actor")
      // the coordinator
      .add_message_type<op_id>("cudactor::op_id")
      .add_message_type<std::vector<op_id>>("std::vector<cudactor::op_id>")
      .add_message_type<op_type>("cudactor::op_type")
      .add_message_type<op_priority>("cudactor::op_priority")
      .add_message_type<op_workload>("cudactor::op_workload")
      .add_message_type<op_state>("cudactor::op_state")
      .add_message_type<pool_strategy>("cudactor::pool_strategy")
      .add_message_type<op_spec>("cudactor::op_spec")
      .add_message_type<op_barrier>("cudactor::op_barrier")
      .add_message_type<op_placement>("cudactor::op_placement")
      .add_message_type<graph_op>("cudactor::graph_op")
      .add_message_type<graph_spec>("cudactor::graph_spec")
      .add_message_type<op_notice>("cudactor::op_notice")
      .add_message_type<std::vector<op_notice>>("std::vector<cudactor::op_notice>")
      .add_message_type<op_info>("cudactor::op_info")
      .add_message_type<op_lease>("cudactor::op_lease")
      .add_message_type<buffer_id>("cudactor::buffer_id")
      .add_message_type<buffer_access>("cudactor::buffer_access")
      .add_message_type<buffer_use>("cudactor::buffer_use")
      .add_message_type<buffer_handle>("cudactor::buffer_handle")
      .add_message_type<inferred_dep>("cudactor::inferred_dep")
      .add_message_type<coordinator_metrics>("cudactor::coordinator_metrics")
      .add_message_type<stream_report>("cudactor::stream_report")
      .add_message_type<op_name_report>("cudactor::op_name_report")
      .add_message_type<coordinator_report>("cudactor::coordinator_report")
      .add_message_type<op_stall>("cudactor::op_stall")
      .add_message_type<deadlock_report>("cudactor::deadlock_report")
      .add_message_type<op_listener>("cudactor::op_listener")
      .add_message_type<coordinator_actor>("cudactor::coordinator_actor")
      .add_message_type<op_callback>("cudactor::op_callback")
      .add_message_type<graph_callback>("cudactor::graph_callback")
      // steps
      .add_message_type<step_handle>("cudactor::step_handle")
      .add_message_type<step_spec>("cudactor::step_spec")
      .add_message_type<buffer_binding>("cudactor::buffer_binding")
      .add_message_type<step_notices>("cudactor::step_notices")
      .add_message_type<replay_request>("cudactor::replay_request")
      .add_message_type<step_op_end>("cudactor::step_op_end")
      .add_message_type<step_outcome>("cudactor::step_outcome")
      .add_message_type<step_record_callback>("cudactor::step_record_callback")
      .add_message_type<step_callback>("cudactor::step_callback")
      // nodes
      .add_message_type<node_info>("cudactor::node_info")
      .add_message_type<node_actor>("cudactor::node_actor")
      .add_message_type<barrier_call>("cudactor::barrier_call")
      .add_message_type<guest_call>("cudactor::guest_call")
      .add_message_type<node_arrival>("cudactor::node_arrival")
      .add_message_type<buffer_call>("cudactor::buffer_call")
      .add_message_type<std::vector<std::uint8_t>>("std::vector<std::uint8_t>")
      .add_message_type<cluster_crossing>("cudactor::cluster_crossing")
      .add_message_type<cluster_member>("cudactor::cluster_member")
      .add_message_type<cluster_status>("cudactor::cluster_status")
      .add_message_type<cluster_actor>("cudactor::cluster_actor")
      // communicators
      .add_message_type<communicator_call>("cudactor::communicator_call")
      .add_message_type<rendezvous_entry>("cudactor::rendezvous_entry")
      .add_message_type<communicator_ready>("cudactor::communicator_ready")
      .add_message_type<communicator_info>("cudactor::communicator_info")
      // barriers
      .add_message_type<barrier_mode>("cudactor::barrier_mode")
      .add_message_type<barrier_arrival>("cudactor::barrier_arrival")
      .add_message_type<barrier_crossing>("cudactor::barrier_crossing")
      .add_message_type<barrier_status>("cudactor::barrier_status")
      .add_message_type<barrier_outcome>("cudactor::barrier_outcome")
      .add_message_type<barrier_generation>("cudactor::barrier_generation")
      .add_message_type<barrier_actor>("cudactor::barrier_actor")
      // the front door's lanes
      .add_message_type<front_job>("cudactor::front_job");
}

}  // namespace cudactor
