// messaging/report_types.hpp
//
// The coordinator's profile, answered to report_atom: per stream of its pool, what ran there
// (operations, kernels, transfers, failures) and how long the stream was busy; per operation
// name (its description, or its type when it has none), how many ran and where their time
// went. Times are nanoseconds. "Run" times come from host callbacks the coordinator puts
// around each operation on its stream when timing is on (cudactor.coordinator.timing, or a
// trace file); without timing they are 0 and only the times the coordinator itself sees
// (registered, dispatched, end seen) are reported.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cudactor/messaging/types.hpp"

namespace cudactor {

struct stream_report {
  stream_id stream;
  std::uint64_t ops = 0;        // ended after being dispatched to this stream
  std::uint64_t kernels = 0;    // op_type::kernel
  std::uint64_t transfers = 0;  // op_type::memory_transfer
  std::uint64_t failed = 0;
  // Time with at least one operation outstanding (dispatched, its end not yet seen): the
  // union of those spans.
  std::int64_t busy_ns = 0;
  // Timing on: the sum of the operations' run times on the stream (started -> finished).
  std::int64_t run_ns = 0;
  // Sent straight to the stream actor, not through the coordinator (stream_status's counts):
  // the report covers all the work on every stream, not only the coordinator's.
  std::uint64_t direct_kernels = 0;
  std::uint64_t direct_transfers = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_report& x) {
  return f(caf::meta::type_name("cudactor::stream_report"), x.stream, x.ops, x.kernels, x.transfers,
           x.failed, x.busy_ns, x.run_ns, x.direct_kernels, x.direct_transfers);
}

struct op_name_report {
  std::string name;
  std::uint64_t count = 0;        // ended
  std::uint64_t failed = 0;       // failed or cancelled
  std::int64_t queued_ns = 0;     // sum of registered -> dispatched
  std::int64_t on_stream_ns = 0;  // sum of dispatched -> end seen
  std::int64_t run_ns = 0;        // timing on: sum of started -> finished
  std::int64_t max_run_ns = 0;    // timing on: the longest run
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_name_report& x) {
  return f(caf::meta::type_name("cudactor::op_name_report"), x.name, x.count, x.failed, x.queued_ns,
           x.on_stream_ns, x.run_ns, x.max_run_ns);
}

struct coordinator_report {
  std::int64_t since_ns = 0;  // the coordinator started (steady clock)
  std::int64_t now_ns = 0;    // the report was made
  bool timed = false;         // run times were measured
  std::vector<stream_report> streams;
  // The most time on stream first. Past the coordinator's limit of names (report_names),
  // the rest are counted under "(other names)".
  std::vector<op_name_report> operations;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coordinator_report& x) {
  return f(caf::meta::type_name("cudactor::coordinator_report"), x.since_ns, x.now_ns, x.timed,
           x.streams, x.operations);
}

}  // namespace cudactor
