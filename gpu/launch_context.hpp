// gpu/launch_context.hpp
//
// What enqueued work is handed when it runs. On the CUDA backend work runs at enqueue time,
// on the calling thread, and launches kernels on native_stream(); on the host backend it runs
// when the stream reaches it, on a worker thread, and *is* the kernel. One callable can serve
// both by looking at kind().
#pragma once

#include <functional>

#include "cudactor/gpu/status.hpp"
#include "cudactor/gpu/stream.hpp"
#include "cudactor/gpu/types.hpp"

namespace cudactor::gpu {

class launch_context {
 public:
  launch_context(backend_kind kind, stream_ref stream, void* native_stream,
                 bool captured = false) noexcept
      : kind_(kind), stream_(stream), native_stream_(native_stream), captured_(captured) {}

  [[nodiscard]] backend_kind kind() const noexcept { return kind_; }
  [[nodiscard]] stream_ref stream() const noexcept { return stream_; }
  // The cudaStream_t to launch on (cast it back); nullptr on the host backend.
  [[nodiscard]] void* native_stream() const noexcept { return native_stream_; }
  // The work runs to be captured into a graph (gpu/work_graph.hpp): what it launches runs at
  // each launch of the graph, not now. Work that counts or times its own runs leaves that to
  // whoever launches the graph.
  [[nodiscard]] bool captured() const noexcept { return captured_; }

 private:
  backend_kind kind_;
  stream_ref stream_;
  void* native_stream_;
  bool captured_;
};

// Work returns a failed status to report that it failed (a rejected launch on CUDA, a failed
// computation on the host); exceptions are caught and reported the same way.
using work_fn = std::function<status(const launch_context&)>;

// Runs on the host when the stream reaches it, exactly once, with ok or the error that
// stopped the stream (device_lost). It must not call the backend: it runs on a thread the
// backend owns (CUDA forbids API calls there).
using host_callback = std::function<void(const status&)>;

}  // namespace cudactor::gpu
