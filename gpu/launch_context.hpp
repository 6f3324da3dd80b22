// gpu/launch_context.hpp
//
// What enqueued work is handed when it runs. On the CUDA backend work runs at enqueue time,
// on the calling thread, and launches kernels on native_stream(); on the host backend it runs
// when the stream reaches it, on a worker thread, and *is* the kernel. One callable can serve
// both by looking at kind().
//
// Scratch: a work that needs temporary memory for what it launches (a reduction's temporary
// storage, a library's workspace) asks its context, not the device, so that the memory is
// ordered on its stream like its launches and, inside a recorded step, comes from the step's
// own pool and stays put across replays (docs/replay.md, "Scratch").
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "cudactor/gpu/late_failure.hpp"
#include "cudactor/gpu/status.hpp"
#include "cudactor/gpu/stream.hpp"
#include "cudactor/gpu/types.hpp"

namespace cudactor::gpu {

// Where a run of a work gets its scratch memory from: the backend's, one per run (or per graph
// node). Not thread-safe: the work that was handed it calls it, from the thread it runs on.
class scratch_source {
 public:
  scratch_source() = default;
  scratch_source(const scratch_source&) = delete;
  scratch_source& operator=(const scratch_source&) = delete;
  virtual ~scratch_source() = default;

  // `bytes` is more than 0.
  [[nodiscard]] virtual result<void*> take(std::size_t bytes) = 0;
};

class launch_context {
 public:
  // Scratch memory is aligned to this many bytes (what CUDA's allocators promise).
  static constexpr std::size_t scratch_alignment = 256;

  launch_context(backend_kind kind, stream_ref stream, void* native_stream, bool captured = false,
                 scratch_source* scratch = nullptr, late_failure_source* late = nullptr) noexcept
      : kind_(kind),
        stream_(stream),
        native_stream_(native_stream),
        captured_(captured),
        scratch_(scratch),
        late_(late) {}

  [[nodiscard]] backend_kind kind() const noexcept { return kind_; }
  [[nodiscard]] stream_ref stream() const noexcept { return stream_; }
  // The cudaStream_t to launch on (cast it back); nullptr on the host backend.
  [[nodiscard]] void* native_stream() const noexcept { return native_stream_; }
  // The work runs to be captured into a graph (gpu/work_graph.hpp): what it launches runs at
  // each launch of the graph, not now. Work that counts or times its own runs leaves that to
  // whoever launches the graph.
  [[nodiscard]] bool captured() const noexcept { return captured_; }

  // `bytes` of memory for what this run of the work launches, aligned to scratch_alignment:
  // device memory on CUDA (stream-ordered on native_stream(): use it there only), host memory
  // on the host backend; each call a block of its own. It is for the work's own launches,
  // not one of the backend's buffers (the host backend's copy and fill refuse it). A lone
  // run's scratch is given back in stream order once the work returns: what it launched
  // before finishes with it first, so a work never frees it. Inside a graph (gpu/work_graph.hpp:
  // a recorded step) it is the graph's, held until the graph is gone: a node whose work asks
  // for the same sizes in the same order gets the same blocks at every launch and every
  // capture anew (gpu/detail/graph_scratch.hpp), so what a launch left in them is there at
  // the next. invalid_argument for 0 bytes or a context made without a source (by hand,
  // outside a backend); out_of_memory when the device has none.
  [[nodiscard]] result<void*> scratch(std::size_t bytes) const {
    if (bytes == 0) return status{status_code::invalid_argument, "scratch of 0 bytes"};
    if (scratch_ == nullptr) {
      return status{status_code::invalid_argument,
                    "no scratch here: this work was not handed its context by a backend"};
    }
    return scratch_->take(bytes);
  }

  // A handle by which what this run started, and what ends after it returns, fails the point
  // the run ends at (gpu/late_failure.hpp): on CUDA, for a run not captured; null where there
  // is none (the host backend, whose work has ended by its point; a capture; a context made
  // by hand).
  [[nodiscard]] std::shared_ptr<late_failure> fail_later() const {
    return late_ != nullptr ? late_->make_late_failure() : nullptr;
  }

 private:
  backend_kind kind_;
  stream_ref stream_;
  void* native_stream_;
  bool captured_;
  scratch_source* scratch_;
  late_failure_source* late_;
};

// Work returns a failed status to report that it failed (a rejected launch on CUDA, a failed
// computation on the host); exceptions are caught and reported the same way.
using work_fn = std::function<status(const launch_context&)>;

// Runs on the host when the stream reaches it, exactly once, with ok or the error that
// stopped the stream (device_lost). It must not call the backend: it runs on a thread the
// backend owns (CUDA forbids API calls there).
using host_callback = std::function<void(const status&)>;

}  // namespace cudactor::gpu
