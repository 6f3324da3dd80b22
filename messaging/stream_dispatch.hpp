// messaging/stream_dispatch.hpp
//
// What the coordinator hands a stream actor: every operation one scheduling pass puts on that
// stream, in order, each with the device-side waits it needs (a point on another stream's
// timeline), and the hold a caller-launched operation takes on a stream between begin and
// complete. Local only (messaging/work.hpp): the payloads carry closures, so they never leave their
// process. Streams are named by their runtime id; the stream actor looks up the backend stream
// behind it (actors/detail/stream_directory.hpp).
#pragma once

#include <memory>
#include <vector>

#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/messaging/point_cell.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

// The stream that takes it waits, on the device, until `stream` has passed `point`. A data
// wait carries a failure of the work before `point` (the waiting operation is cancelled); an
// order-only one does not (gpu::backend::order_after): the operation only has to come after.
// With `pending` the point is not known yet: it is the one that cell gets once the operation
// waited for is issued on `stream` (the stream actor holds the waiting operation until then).
struct point_wait {
  stream_id stream;
  gpu::timeline_point point = 0;
  bool order_only = false;
  std::shared_ptr<point_cell> pending;
};

// One operation of a dispatch: its waits go on the stream first, then its work, then it takes
// the stream's next point. `timed`: timing events around the work (its device start and end
// come back with its completion), whatever the stream actor's own timing option says.
struct dispatched_op {
  op_id op;  // the coordinator's operation (empty for a barrier actor's marks): named when reached
  gpu::work_fn fn;
  std::vector<point_wait> waits;
  bool timed = false;
  // Where its point is published once issued, for dependents on other streams (or empty).
  std::shared_ptr<point_cell> cell;
};

// The work of a point that only marks a place on the stream (a barrier's mark or crossing):
// nothing runs, its waits and its point order the stream.
[[nodiscard]] inline gpu::status no_work(const gpu::launch_context&) { return {}; }

// The operations of one pass for one stream: one ticket each, in this order.
using stream_dispatch = local_only<std::vector<dispatched_op>>;

// A caller-launched operation's hold: once its waits are on the stream and everything
// accepted before is on the backend, the stream is held for the caller (nothing else goes on
// it) until the hold ends. The point the hold ends with is the operation's when it ends well.
struct hold_request {
  op_id op;
  std::vector<point_wait> waits;
};
using stream_hold = local_only<hold_request>;

}  // namespace cudactor
