// actors/coordinator/recorded_step.hpp
//
// A step as the coordinator keeps it between replays (docs/replay.md): each operation's work
// (kept to be resolved anew against bound buffers), its declared uses and the launch function
// resolved against the buffers it was recorded with; the plan (where each operation goes and
// what it waits for, actors/coordinator/step_plan.hpp); and the union of its uses, which a
// replay declares as one operation so that it is ordered against other work. Immutable once
// recorded (its graph changes only its nodes' work, under its own lock), shared by the replays in
// flight; only `invalid` is set later, by the coordinator's thread. No CAF actor, no device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cudactor/actors/coordinator/buffer_uses.hpp"
#include "cudactor/actors/coordinator/step_plan.hpp"
#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor::detail {

class step_graph;  // actors/coordinator/step_graph.hpp

struct recorded_step {
  struct op {
    work body;
    op_collective collective;  // a collective's call (its buffers by id); empty otherwise
    std::vector<buffer_use> uses;
    std::vector<byte_range> ranges;  // of `uses`, as checked at record
    gpu::work_fn fn;                 // resolved against the recorded buffers
    std::string description;
  };
  std::vector<op> ops;  // in the graph's order
  step_plan plan;
  // The backend graph it replays as, when it does (coordinator_options::step_graphs): then a
  // replay is one operation on the plan's home stream that launches it.
  std::shared_ptr<step_graph> graph;
  std::vector<buffer_use> union_uses;  // over the recorded buffers
  std::vector<buffer_id> buffers;      // each buffer it uses, once, in buffer_id's order
  std::string name;  // what its replays go by (the operation's description, the metrics)
  op_priority priority = op_priority::normal;
  std::int64_t recorded_ns = 0;  // what recording took
};

// The uses of one operation that stands for all of `ops` (in the graph's order): per buffer,
// the bytes the step reads before it writes them (what it reads from outside) and then writes
// as read_write, the bytes it writes without reading from outside as write, those it only
// reads as read; merged ranges, each buffer's together. A byte the step writes before reading
// it is a write: a failed replay's poison on it does not cancel the next replay, which writes
// it anew. O(uses log uses): the bytes written so far are kept merged in a tree.
[[nodiscard]] std::vector<buffer_use> union_of_uses(const std::vector<recorded_step::op>& ops);

}  // namespace cudactor::detail
