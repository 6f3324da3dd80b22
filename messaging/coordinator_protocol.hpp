// messaging/coordinator_protocol.hpp
//
// What may be said to the coordinator, and what it answers. register and graph submission
// answer with ids at once; the operations then run on the runtime's stream actors as their
// dependencies are submitted, and subscribers hear of each one's end exactly once, in batches
// (one message per listener per completion-poller tick). A subscriber may ride on register
// and on graph submission so that no end can be missed.
//
// run registers an operation or a graph like register and submit, and answers only when every
// operation of it has ended, with each one's op_notice (a graph's in the graph's order): one
// request, one answer, nothing to reconcile (the node hears ends this way).
//
// begin answers when the operation is ready and a stream is free: the stream is reserved for
// the caller until complete, which answers with the ticket the operation's end is tracked by.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <functional>
#include <vector>

#include "cudactor/messaging/atoms.hpp"
#include "cudactor/messaging/barrier_protocol.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/report_types.hpp"
#include "cudactor/messaging/step_types.hpp"
#include "cudactor/messaging/types.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

// Called once with the operation's end: completed, failed or cancelled with its cause. An
// operation the coordinator refused to register ends failed, with an empty id. Local-only:
// how code that is not an actor (actors/client.hpp) hears a run request's end, without an
// actor of its own in between.
using op_callback = local_only<std::function<void(op_notice)>>;
// Called once with the end of every operation of the graph, in the graph's order.
using graph_callback = local_only<std::function<void(std::vector<op_notice>)>>;

// Hears the ends of the operations it subscribed to.
using op_listener = caf::typed_actor<caf::reacts_to<std::vector<op_notice>>>;

using coordinator_actor = caf::typed_actor<
    // registering: one operation, or a whole graph validated as a whole (ids by local index)
    caf::replies_to<register_atom, op_spec>::with<op_id>,
    caf::replies_to<register_atom, op_spec, op_listener>::with<op_id>,
    caf::replies_to<submit_atom, graph_spec>::with<std::vector<op_id>>,
    caf::replies_to<submit_atom, graph_spec, op_listener>::with<std::vector<op_id>>,
    // registering, answered when everything registered has ended
    caf::replies_to<run_atom, op_spec>::with<op_notice>,
    caf::replies_to<run_atom, graph_spec>::with<std::vector<op_notice>>,
    // the same, the end told to a local function (op_callback, graph_callback) instead
    caf::reacts_to<run_atom, op_spec, op_callback>,
    caf::reacts_to<run_atom, graph_spec, graph_callback>,
    // steps (messaging/step_types.hpp): a graph recorded once (checked, inferred, placed),
    // replayed as one operation answered once with the step's outcome, released
    caf::replies_to<record_atom, step_spec>::with<step_handle>,
    caf::reacts_to<record_atom, step_spec, step_record_callback>,
    caf::replies_to<replay_atom, replay_request>::with<step_outcome>,
    caf::reacts_to<replay_atom, replay_request, step_callback>,
    caf::replies_to<release_atom, step_handle>::with<bool>,
    // makes the first also depend on the second
    caf::replies_to<depend_atom, op_id, op_id>::with<op_state>,
    // buffers (messaging/buffer_types.hpp): allocated in the order of a stream (named, or
    // picked by the coordinator), the caller's memory adopted, and released (answered with the
    // release operation: after every use on every stream, then the memory goes back)
    caf::replies_to<alloc_atom, std::uint64_t>::with<buffer_handle>,
    caf::replies_to<alloc_atom, stream_id, std::uint64_t>::with<buffer_handle>,
    caf::replies_to<adopt_atom, std::uint64_t, std::uint64_t>::with<buffer_handle>,
    caf::replies_to<release_atom, buffer_id>::with<op_id>,
    // caller-launched work
    caf::replies_to<begin_atom, op_id>::with<op_lease>,
    caf::replies_to<enqueued_atom, op_id>::with<ticket>,
    caf::replies_to<enqueued_atom, op_id, caf::error>::with<op_state>,
    // following and inspecting
    caf::reacts_to<subscribe_atom, op_listener>,
    caf::replies_to<subscribe_atom, op_id, op_listener>::with<op_state>,
    caf::reacts_to<unsubscribe_atom, op_listener>,
    // the end of an operation registered before (at once if it has ended), or timeout /
    // cancelled first (withdraw: true when a wait of the sender's under the key was open)
    caf::replies_to<await_atom, op_id, wait_limit>::with<op_notice>,
    // a barrier operation registered and answered with its crossing: once every stream has
    // arrived (host), once every stream waits for the others on the device (device); timeout
    // naming the streams that did not arrive; withdraw by the key (a barrier actor's
    // generation: actors/barrier_actor.hpp)
    caf::replies_to<synchronize_atom, op_spec, wait_limit>::with<barrier_crossing>,
    // the same for a barrier actor's generation, delegated to here: the answer carries the
    // generation and the barrier's words, and the barrier actor hears the outcome first
    caf::replies_to<synchronize_atom, op_spec, wait_limit,
                    barrier_generation>::with<barrier_crossing>,
    caf::replies_to<withdraw_atom, std::uint64_t>::with<bool>,
    caf::replies_to<describe_atom, op_id>::with<op_info>,
    caf::replies_to<cancel_atom, op_id>::with<op_state>,
    // many at once, unanswered (each end is told to its listeners): those still pending or
    // ready are cancelled, the rest are left (a node cancelling a departed peer's work)
    caf::reacts_to<cancel_atom, std::vector<op_id>>,
    // the replays of these steps not yet handed to a stream, unanswered (each replay's own
    // answer says it was cancelled): a node cancelling a departed owner's queued replays
    caf::reacts_to<cancel_atom, std::vector<step_handle>>,
    caf::replies_to<deadlocks_atom>::with<deadlock_report>,
    caf::replies_to<deadlocks_atom, caf::timespan>::with<deadlock_report>,
    caf::replies_to<metrics_atom>::with<coordinator_metrics>,
    // the profile: per stream and per operation name (messaging/report_types.hpp)
    caf::replies_to<report_atom>::with<coordinator_report>,
    // the stream pool
    caf::replies_to<ready_streams_atom>::with<bool>,
    caf::replies_to<choose_atom, op_priority, op_workload>::with<stream_id>,
    caf::replies_to<wait_ready_atom, caf::timespan>::with<stream_id>,
    caf::replies_to<reset_atom>::with<bool>,
    // the runtime, and the stream actors it schedules onto (their completion batches)
    caf::reacts_to<shutdown_atom>, caf::reacts_to<completion_batch>,
    caf::reacts_to<expire_atom, std::uint64_t>, caf::reacts_to<pump_atom>,
    caf::reacts_to<shrink_atom>>;

}  // namespace cudactor
