// messaging/stream_protocol.hpp
//
// What may be said to a stream actor, and what it answers. Every operation that enters the
// stream but a record takes the next point of its timeline and is answered with a ticket at
// once (a record is answered with its event once recorded, after what came before it; work
// held back by the in-flight cap keeps its ticket and waits inside the actor); await and
// synchronize are answered when the device gets there. Addresses are device addresses as
// integers (buffer_ref::address); the backend checks device ranges it knows.
//
// The coordinator schedules onto stream actors (messaging/stream_dispatch.hpp): dispatch puts
// one pass's operations on the stream, each with its device-side waits, and answers their
// tickets; hold keeps the stream for a caller-launched operation (answered once the stream is
// held, with the point the operation takes when the hold ends); launch puts the holding
// operation's work on the stream inside the hold (the caller's launch call on its lease);
// hold_end ends it, the error charged to that point. Anything else sent to a held stream
// waits in the actor and goes on after the hold's point, as after any operation before it. Work
// submitted here directly and work the coordinator dispatches share the one timeline. reset makes
// the stream anew after the backend was reset (a lost host device), publishes it in the stream
// directory and answers whether it made it anew (false: the stream it had goes on).
//
// The last entries are the runtime's and the completion poller's: shutdown begins an orderly
// stop, progress carries the poller's per-tick report.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <vector>

#include "cudactor/gpu/types.hpp"
#include "cudactor/messaging/atoms.hpp"
#include "cudactor/messaging/stream_dispatch.hpp"
#include "cudactor/messaging/types.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

// The most events one record message may ask for.
inline constexpr std::uint32_t max_records_per_message = 1024;

// Hears a stream's completions, one batch per completion-poller tick.
using completion_listener = caf::typed_actor<caf::reacts_to<completion_batch>>;

using stream_actor = caf::typed_actor<
    // work: one per message, or many in one message (one ticket each, in order)
    caf::replies_to<submit_atom, work>::with<ticket>,
    caf::replies_to<submit_atom, std::vector<work>>::with<std::vector<ticket>>,
    // memory: dst, src, bytes, direction / dst, value, bytes / data, bytes, target
    caf::replies_to<copy_atom, std::uint64_t, std::uint64_t, std::uint64_t,
                    gpu::copy_kind>::with<ticket>,
    caf::replies_to<fill_atom, std::uint64_t, std::uint8_t, std::uint64_t>::with<ticket>,
    caf::replies_to<prefetch_atom, std::uint64_t, std::uint64_t,
                    gpu::prefetch_target>::with<ticket>,
    caf::replies_to<alloc_atom, std::uint64_t>::with<buffer_ref>,
    caf::replies_to<free_atom, buffer_ref>::with<ticket>,
    // completion and ordering
    caf::replies_to<await_atom, timeline_point>::with<completion>,
    caf::replies_to<synchronize_atom>::with<completion>,
    // the same, ending at the limit (timeout) or at the sender's withdraw (cancelled)
    caf::replies_to<await_atom, timeline_point, wait_limit>::with<completion>,
    caf::replies_to<synchronize_atom, wait_limit>::with<completion>,
    // true when a wait of the sender's under this key was open (it is answered cancelled)
    caf::replies_to<withdraw_atom, std::uint64_t>::with<bool>,
    // an event recorded after everything accepted before (no timeline point of its own); or
    // `n` of them at once (1 to max_records_per_message)
    caf::replies_to<record_atom, gpu::event_kind>::with<event_lease>,
    caf::replies_to<record_atom, gpu::event_kind, std::uint32_t>::with<std::vector<event_lease>>,
    // an event of the caller's (leased from the pool) recorded anew here, the same way
    caf::replies_to<record_atom, event_lease>::with<event_lease>,
    caf::replies_to<wait_atom, event_lease>::with<ticket>,
    caf::replies_to<callback_atom, stream_callback>::with<ticket>,
    caf::replies_to<status_atom>::with<stream_status>,
    caf::reacts_to<subscribe_atom, completion_listener>,
    caf::reacts_to<unsubscribe_atom, completion_listener>,
    // the coordinator
    caf::replies_to<dispatch_atom, stream_dispatch>::with<std::vector<ticket>>,
    caf::replies_to<hold_atom, stream_hold>::with<ticket>,
    caf::replies_to<hold_end_atom, timeline_point, caf::error>::with<ticket>,
    // work of the caller-launched operation holding the stream, inside its hold (before its
    // point); answered with the hold's ticket, refused when the stream is not held for it
    caf::replies_to<launch_atom, op_id, work>::with<ticket>,
    caf::replies_to<reset_atom>::with<bool>,
    // another stream actor issued an operation this one waits for (point_cell)
    caf::reacts_to<issued_atom>,
    // runtime and poller
    caf::reacts_to<shutdown_atom>, caf::reacts_to<progress_atom, completion_batch, std::uint64_t>,
    // the actor's own timers for bounded waits
    caf::reacts_to<expire_atom, std::uint64_t>>;

}  // namespace cudactor
