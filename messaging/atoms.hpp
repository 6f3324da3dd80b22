// messaging/atoms.hpp
//
// The verbs of cudactor's protocol. CAF 0.17 atoms are at most ten characters of
// [0-9A-Za-z_ ]; the constant names say what each one asks for. CAF's predefined atoms
// (get_atom, ok_atom, ...) are not reused, so that a message's meaning never depends on which
// actor receives it.
#pragma once

#include <caf/atom.hpp>

namespace cudactor {

// Stream actor: work and memory.
using submit_atom = caf::atom_constant<caf::atom("submit")>;
using copy_atom = caf::atom_constant<caf::atom("copy")>;
using fill_atom = caf::atom_constant<caf::atom("fill")>;
using prefetch_atom = caf::atom_constant<caf::atom("prefetch")>;
using alloc_atom = caf::atom_constant<caf::atom("alloc")>;
using free_atom = caf::atom_constant<caf::atom("free")>;
// The coordinator takes memory of the caller's as a buffer (never freed by it).
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;
// a node's buffers, from its control plane: bytes written, bytes read back
using store_atom = caf::atom_constant<caf::atom("store")>;
using fetch_atom = caf::atom_constant<caf::atom("fetch")>;

// Stream actor: ordering, completion and inspection.
using await_atom = caf::atom_constant<caf::atom("await")>;
using synchronize_atom = caf::atom_constant<caf::atom("sync")>;
using record_atom = caf::atom_constant<caf::atom("record")>;
using wait_atom = caf::atom_constant<caf::atom("wait")>;
using callback_atom = caf::atom_constant<caf::atom("callback")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using unsubscribe_atom = caf::atom_constant<caf::atom("unsubscr")>;

// Event pool actor.
using acquire_atom = caf::atom_constant<caf::atom("acquire")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using utilization_atom = caf::atom_constant<caf::atom("util")>;
using elapsed_atom = caf::atom_constant<caf::atom("elapsed")>;

// Coordinator.
using register_atom = caf::atom_constant<caf::atom("register")>;
// Registers an operation or a graph and answers once every operation of it has ended.
using run_atom = caf::atom_constant<caf::atom("run")>;
// A recorded step run again (messaging/step_types.hpp); record_atom records one.
using replay_atom = caf::atom_constant<caf::atom("replay")>;
using depend_atom = caf::atom_constant<caf::atom("depend")>;
using begin_atom = caf::atom_constant<caf::atom("begin")>;
// The caller of a begun operation has enqueued its work on the leased stream.
using enqueued_atom = caf::atom_constant<caf::atom("enqueued")>;
using describe_atom = caf::atom_constant<caf::atom("describe")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
// withdraws a wait made with a wait_limit key (stream, barrier, coordinator)
using withdraw_atom = caf::atom_constant<caf::atom("withdraw")>;
using deadlocks_atom = caf::atom_constant<caf::atom("deadlocks")>;
using metrics_atom = caf::atom_constant<caf::atom("metrics")>;
using report_atom = caf::atom_constant<caf::atom("report")>;

// Node: what it is and what it runs.
using info_atom = caf::atom_constant<caf::atom("info")>;
// communicators made by a cluster (messaging/communicator_types.hpp)
using communicator_atom = caf::atom_constant<caf::atom("comm")>;
using rendezvous_atom = caf::atom_constant<caf::atom("rendezvous")>;
using lost_atom = caf::atom_constant<caf::atom("lost")>;
using ready_streams_atom = caf::atom_constant<caf::atom("readystrms")>;
using wait_ready_atom = caf::atom_constant<caf::atom("waitready")>;
using reset_atom = caf::atom_constant<caf::atom("reset")>;

// Sent by the runtime to begin an orderly stop: every outstanding request is answered
// before the actor exits.
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;

// Internal: the completion poller's per-tick report to a stream actor, a stream actor's
// event-cache refill, and the pool's idle check.
using progress_atom = caf::atom_constant<caf::atom("progress")>;
using refill_atom = caf::atom_constant<caf::atom("refill")>;
using shrink_atom = caf::atom_constant<caf::atom("shrink")>;
// Internal: the coordinator's scheduling pass onto a stream actor, and the hold a
// caller-launched operation takes on a stream from begin until its caller says it is done.
using dispatch_atom = caf::atom_constant<caf::atom("dispatch")>;
// Internal: a stream actor issued an operation another stream actor waits for (point_cell).
using issued_atom = caf::atom_constant<caf::atom("issued")>;
// The stream the coordinator would choose now for a priority and workload.
using choose_atom = caf::atom_constant<caf::atom("choose")>;
using hold_atom = caf::atom_constant<caf::atom("hold")>;
using hold_end_atom = caf::atom_constant<caf::atom("holdend")>;
using launch_atom = caf::atom_constant<caf::atom("launch")>;
// A node claimed by a control plane: it takes work, barriers, communicators and buffers only
// from that control plane's process, until it is gone (messaging/node_protocol.hpp).
using claim_atom = caf::atom_constant<caf::atom("claim")>;
// The owner of a node admitting (or revoking) a guest control plane (messaging/node_types.hpp,
// guest_call).
using admit_atom = caf::atom_constant<caf::atom("admit")>;
// Internal: the coordinator's scheduling pass, sent to itself so that everything already in
// its mailbox (registrations, tickets, completions) joins one pass.
using pump_atom = caf::atom_constant<caf::atom("pump")>;
// Internal: a bounded wait of the coordinator's ran out.
using expire_atom = caf::atom_constant<caf::atom("expire")>;

}  // namespace cudactor
