// gpu/late_failure.hpp
//
// How something a work started that ends after the work has returned fails the point the
// work's run ends at: an engine's watchdog that aborts a call still running past its timeout
// (gpu/nccl_communicator.hpp). The aborted kernels return as if they were done, so without
// it the point would read as reached and the operation as completed, its results garbage.
// A work asks its launch_context for one (launch_context::fail_later) while it runs; the
// CUDA backend hands them out, bound to the next value its stream's timeline signals. The
// host backend hands none: its work has ended by its point.
#pragma once

#include <memory>

#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu {

class late_failure {
 public:
  late_failure() = default;
  late_failure(const late_failure&) = delete;
  late_failure& operator=(const late_failure&) = delete;
  virtual ~late_failure() = default;

  // The point fails with `why`, unless the device has been seen to reach it already (then
  // it stays reached: its outcome may have been told). The first call counts. Callable from
  // any thread; never waits for the device.
  virtual void fail(status why) noexcept = 0;
};

// Where a run of a work gets its late_failure from: the backend's, one per run.
class late_failure_source {
 public:
  late_failure_source() = default;
  late_failure_source(const late_failure_source&) = delete;
  late_failure_source& operator=(const late_failure_source&) = delete;
  virtual ~late_failure_source() = default;

  [[nodiscard]] virtual std::shared_ptr<late_failure> make_late_failure() = 0;
};

}  // namespace cudactor::gpu
