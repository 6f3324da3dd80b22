// messaging/types.hpp
//
// The values cudactor's actors exchange: which stream, which operation (a ticket: a stream
// and a point on its timeline), how an operation ended and when, event refs with the
// generation of their lease, buffers, and the status reports of streams and the event pool.
// All are plain data with an inspect() so that they can cross a process boundary; each is
// registered by add_message_types() (message_types.hpp).
//
// Times are nanoseconds on the steady clock of the node that measured them.
#pragma once

#include <caf/error.hpp>
#include <caf/timespan.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cudactor/gpu/types.hpp"
#include "cudactor/messaging/operation_types.hpp"

namespace cudactor {

using gpu::timeline_point;

// A stream of one runtime: its index among the runtime's streams.
struct stream_id {
  std::uint32_t value = 0;

  friend bool operator==(stream_id a, stream_id b) noexcept { return a.value == b.value; }
  friend bool operator!=(stream_id a, stream_id b) noexcept { return a.value != b.value; }
  friend bool operator<(stream_id a, stream_id b) noexcept { return a.value < b.value; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_id& x) {
  return f(caf::meta::type_name("cudactor::stream_id"), x.value);
}

// Names one operation: the point its stream's timeline reaches when it has run. Points count
// from 1 and every operation a stream actor accepts takes the next one.
struct ticket {
  stream_id stream;
  timeline_point point = 0;

  friend bool operator==(const ticket& a, const ticket& b) noexcept {
    return a.stream == b.stream && a.point == b.point;
  }
  friend bool operator!=(const ticket& a, const ticket& b) noexcept { return !(a == b); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ticket& x) {
  return f(caf::meta::type_name("cudactor::ticket"), x.stream, x.point);
}

// How an operation that completed got there. started/ended come from timing events placed
// around the operation when its stream runs in timing mode, and are 0 otherwise.
struct completion {
  ticket op;
  std::int64_t issued_ns = 0;  // the stream actor handed it to the backend
  std::int64_t detected_ns = 0;   // the completion poller saw it done
  std::int64_t started_ns = 0;    // the device began it (timing mode)
  std::int64_t ended_ns = 0;      // the device finished it (timing mode)

  [[nodiscard]] bool timed() const noexcept { return ended_ns != 0; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, completion& x) {
  return f(caf::meta::type_name("cudactor::completion"), x.op, x.issued_ns, x.detected_ns,
           x.started_ns, x.ended_ns);
}

// An operation that failed, and why (a cudactor::errc error naming the stream).
struct op_failure {
  timeline_point point = 0;
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_failure& x) {
  return f(caf::meta::type_name("cudactor::op_failure"), x.point, x.error);
}

// A point the stream reached that was a coordinator's operation: which one.
struct reached_op {
  op_id op;
  timeline_point point = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reached_op& x) {
  return f(caf::meta::type_name("cudactor::reached_op"), x.op, x.point);
}

// What a stream's subscribers hear, at most once per completion-poller tick: the stream has
// passed every point up to `reached`; those in `failures` failed. In timing mode `timed`
// holds the timings of the operations this batch completed. `ops` names the coordinator's
// operations among the points reached, ascending: the coordinator learns its ends by
// operation, not by matching points against a copy of the stream's timeline.
struct completion_batch {
  stream_id stream;
  timeline_point reached = 0;
  std::vector<op_failure> failures;
  std::int64_t detected_ns = 0;
  std::vector<completion> timed;
  std::vector<reached_op> ops;
  // Set once the stream can go on no more (its device was lost, its timeline broke): nothing
  // beyond `reached` will be reached until the stream is reset.
  caf::error broken;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, completion_batch& x) {
  return f(caf::meta::type_name("cudactor::completion_batch"), x.stream, x.reached, x.failures,
           x.detected_ns, x.timed, x.ops, x.broken);
}

// An event leased from the event pool. The generation is the lease's: it changes each time
// the pool hands the event out, so a ref kept after its release is recognised as stale.
// Once recorded by a stream actor, `stream` is where, and `point` the newest timeline point
// that stream had handed out then (0: none): a record takes no point of its own, and every
// other operation does, so the event has completed exactly when `point` has.
struct event_lease {
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;  // 0 names no event
  gpu::event_kind kind = gpu::event_kind::regular;
  stream_id stream;
  timeline_point point = 0;
  bool on_stream = false;  // recorded by a stream actor

  [[nodiscard]] bool empty() const noexcept { return generation == 0; }
  [[nodiscard]] bool recorded() const noexcept { return on_stream; }
  // The same lease, wherever it was recorded.
  [[nodiscard]] bool same_lease(const event_lease& other) const noexcept {
    return slot == other.slot && generation == other.generation;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_lease& x) {
  return f(caf::meta::type_name("cudactor::event_lease"), x.slot, x.generation, x.kind, x.stream,
           x.point, x.on_stream);
}

// Memory a stream actor allocated in its stream's order. `address` is the device address
// (host memory on the host backend) for kernels to use; `id` names the allocation to its
// stream actor, which alone may free it.
struct buffer_ref {
  stream_id stream;
  std::uint64_t id = 0;  // 0 names no buffer
  std::uint64_t address = 0;
  std::uint64_t size = 0;

  [[nodiscard]] bool empty() const noexcept { return id == 0; }
  template <class T>
  [[nodiscard]] T* as() const noexcept {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(address));
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, buffer_ref& x) {
  return f(caf::meta::type_name("cudactor::buffer_ref"), x.stream, x.id, x.address, x.size);
}

// A stream actor's answer to status.
struct stream_status {
  stream_id id;
  std::string name;
  gpu::stream_priority priority = gpu::stream_priority::normal;
  timeline_point accepted = 0;   // newest point handed out (including queued work)
  timeline_point completed = 0;  // newest point the stream has passed
  std::uint64_t in_flight = 0;   // handed to the backend, not yet complete
  std::uint64_t queued = 0;      // held back by the in-flight cap
  std::uint64_t max_in_flight = 0;
  std::uint64_t failures = 0;  // operations that failed so far
  std::uint64_t awaiting = 0;  // await/synchronize requests not yet answered
  bool timing = false;
  std::uint64_t cached_events = 0;       // events in the actor's local cache
  std::uint64_t allocated_bytes = 0;     // live allocations
  std::uint64_t reusable_bytes = 0;      // freed, passed by the stream, ready for reuse
  std::uint64_t pending_free_bytes = 0;  // freed, the stream has not passed the free yet
  // Sent straight to this stream actor, not through the coordinator: work, and copies,
  // fills and prefetches (accepted so far).
  std::uint64_t direct_kernels = 0;
  std::uint64_t direct_transfers = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_status& x) {
  return f(caf::meta::type_name("cudactor::stream_status"), x.id, x.name, x.priority, x.accepted,
           x.completed, x.in_flight, x.queued, x.max_in_flight, x.failures, x.awaiting, x.timing,
           x.cached_events, x.allocated_bytes, x.reusable_bytes, x.pending_free_bytes, x.direct_kernels, x.direct_transfers);
}

// The event pool's answer to utilization.
struct pool_utilization {
  std::uint64_t available = 0;         // regular events ready to lease
  std::uint64_t timing_available = 0;  // timing events ready to lease
  std::uint64_t in_use = 0;            // leased, both kinds
  std::uint64_t capacity = 0;          // most events the pool may hold, both kinds
  std::uint64_t timing_lent = 0;       // timing events leased for regular requests, now
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pool_utilization& x) {
  return f(caf::meta::type_name("cudactor::pool_utilization"), x.available, x.timing_available,
           x.in_use, x.capacity, x.timing_lent);
}

// A wait with an end of the caller's choosing: answered with errc::timeout once `limit` has
// passed (zero: no limit; negative: refused), or with errc::cancelled when the caller
// withdraws it (withdraw_atom with `key`) first. Keys are the sender's own: a withdraw
// reaches only waits its sender made; key 0 cannot be withdrawn. However it ends, the actor
// keeps nothing of it afterwards.
struct wait_limit {
  caf::timespan limit{0};
  std::uint64_t key = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wait_limit& x) {
  return f(caf::meta::type_name("cudactor::wait_limit"), x.limit, x.key);
}

}  // namespace cudactor
