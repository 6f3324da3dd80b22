// messaging/barrier_types.hpp
//
// What a barrier actor answers: the crossing of one generation (where the barrier sat on each
// of its streams, when each was seen there, how long the crossing took) and the barrier's
// status. Plain data with inspect(), registered by add_message_types(), so that a control
// plane in another process can read them.
//
// Times are nanoseconds on the barrier's steady clock; 0 means "not seen".
#pragma once

#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/messaging/types.hpp"

namespace cudactor {

// One stream at the barrier.
struct barrier_arrival {
  std::uint32_t member = 0;  // its index among the barrier's streams
  std::string name;
  // Where the barrier sat on it: its mark, after everything the stream's actor accepted
  // before. Work submitted to the stream later is after the barrier.
  timeline_point point = 0;
  std::int64_t arrived_ns = 0;  // when the mark was seen reached (0: not yet)
  stream_id stream;             // the runtime's id of the stream (rt.stream(i))
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, barrier_arrival& x) {
  return f(caf::meta::type_name("cudactor::barrier_arrival"), x.member, x.name, x.point,
           x.arrived_ns, x.stream);
}

// One generation of the barrier, crossed.
struct barrier_crossing {
  std::uint64_t generation = 0;  // 1, 2, ...: one per synchronize, in the order they came
  barrier_mode mode = barrier_mode::host;
  // host: from the request to the last stream seen at the barrier. device: placing the waits
  // (the crossing itself then happens on the device, later).
  caf::timespan duration{0};
  std::int64_t began_ns = 0;
  std::vector<barrier_arrival> members;
  std::uint64_t device_waits = 0;  // device mode: stream-on-stream waits placed
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, barrier_crossing& x) {
  return f(caf::meta::type_name("cudactor::barrier_crossing"), x.generation, x.mode, x.duration,
           x.began_ns, x.members, x.device_waits);
}

// What a barrier actor hears of a generation it handed to the coordinator, which answered its
// caller directly: crossed (no error), or the error the caller got (cancelled: withdrawn).
// Told before the caller's answer, so that a status asked after the answer counts it.
struct barrier_outcome {
  std::uint64_t generation = 0;
  caf::error error;
  bool withdrawn = false;          // the error is its caller's withdrawal (not counted)
  std::uint64_t device_waits = 0;  // crossed in device mode: the waits placed
  std::int64_t wait_ns = 0;        // crossed: request -> answer
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, barrier_outcome& x) {
  return f(caf::meta::type_name("cudactor::barrier_outcome"), x.generation, x.error, x.withdrawn,
           x.device_waits, x.wait_ns);
}

struct barrier_status {
  std::string name;
  std::vector<std::string> members;
  barrier_mode mode = barrier_mode::host;  // what a plain synchronize does
  caf::timespan timeout{0};                // a plain synchronize's limit; 0: none
  std::uint64_t generations = 0;           // begun so far
  std::uint64_t crossed = 0;               // answered with a crossing
  std::uint64_t timed_out = 0;             // answered with errc::timeout
  std::uint64_t failed = 0;                // answered with any other error
  std::uint64_t pending = 0;               // begun, not answered yet
  std::uint64_t device_waits = 0;          // placed by device-mode generations, all told
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, barrier_status& x) {
  return f(caf::meta::type_name("cudactor::barrier_status"), x.name, x.members, x.mode, x.timeout,
           x.generations, x.crossed, x.timed_out, x.failed, x.pending, x.device_waits);
}

}  // namespace cudactor
