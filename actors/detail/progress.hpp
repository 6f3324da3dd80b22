// actors/detail/progress.hpp
//
// The completion poller's per-tick report of one stream, as the message an actor gets: the
// poller calls back on its own thread, the actor hears of it in its mailbox.
#pragma once

#include <chrono>

#include "cudactor/gpu/watch.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/types.hpp"

namespace cudactor::detail {

[[nodiscard]] inline completion_batch to_batch(stream_id id, const gpu::stream_progress& progress) {
  completion_batch batch;
  batch.stream = id;
  batch.reached = progress.reached;
  batch.detected_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(progress.detected.time_since_epoch())
          .count();
  batch.failures.reserve(progress.failures.size());
  for (const auto& [point, why] : progress.failures)
    batch.failures.push_back({point, to_error(why)});
  return batch;
}

}  // namespace cudactor::detail
