// gpu/communicator.hpp
//
// One rank's handle on a group of ranks that run collectives together (gpu/collective_types.hpp),
// behind one interface whatever the engine: Gloo over TCP for the host backend
// (gpu/gloo_communicator.hpp), NCCL for CUDA. A collective is a stream's work like any other
// (collective_work): it runs in the stream's order, and its completion is the stream's next
// point. Every rank calls the same collectives in the same order. A call that fails (a peer
// gone, the engine's timeout passed, an abort) breaks the communicator: every later call fails
// at once with the same cause, until a new one is made. The actors never see an engine.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "cudactor/gpu/collective_types.hpp"
#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu {

class communicator {
 public:
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;
  virtual ~communicator() = default;

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  // The group's name and generation, as the rendezvous keys carry them.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
  // Collectives started on this rank so far: ranks that agree are in step (a hang's
  // diagnosis compares them).
  [[nodiscard]] std::uint64_t sequence() const noexcept {
    return sequence_.load(std::memory_order_acquire);
  }

  // Runs `call` on this rank as the work of the stream `on` names. A host engine runs it on
  // the calling thread (the host stream's worker, never an actor's) and returns when this
  // rank's part is done, failed, or its timeout passed; a device engine enqueues it on
  // on.native_stream() and returns once it is launched. not_supported for a stream of a
  // backend the engine does not serve.
  [[nodiscard]] virtual status run(const collective_call& call, const launch_context& on) = 0;

  // A graph holding calls of this communicator captured at record (a replayed step's,
  // gpu/work_graph.hpp) was just launched on the stream `on` names: its completion is watched
  // as a call's is, from now, so that a rank dead or hung inside the launch breaks the
  // communicator at its timeout (aborting what is queued on it) instead of holding the
  // stream forever. A host engine's calls run on the calling thread and end by their own
  // timeout: there is nothing to watch. The communicator's broken status when it is broken.
  [[nodiscard]] virtual status watch_launch(const launch_context& on) = 0;

  // Why the communicator can run nothing more (ok while it can).
  [[nodiscard]] virtual status broken() const = 0;
  // Breaks it now with `why`: later calls fail at once; a call in progress on another thread
  // ends as soon as the engine lets it (at the latest at its timeout); a device engine's
  // calls still running on their streams fail their points with `why` (gpu/late_failure.hpp).
  virtual void abort(const std::string& why) = 0;

 protected:
  communicator(std::string name, std::uint64_t generation, int rank, int size)
      : name_(std::move(name)), generation_(generation), rank_(rank), size_(size) {}
  // A call starts: its number in the sequence, from 1.
  [[nodiscard]] std::uint64_t next_sequence() noexcept {
    return sequence_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }
  // What each call's errors begin with: "rank 0 of 'grads': all_reduce #3".
  [[nodiscard]] std::string call_name(collective_kind kind, std::uint64_t seq) const {
    return "rank " + std::to_string(rank_) + " of '" + name_ +
           "': " + std::string{to_string(kind)} + " #" + std::to_string(seq);
  }
  // "communicator 'grads' (generation 2)".
  [[nodiscard]] std::string label() const {
    return "communicator '" + name_ + "' (generation " + std::to_string(generation_) + ")";
  }

 private:
  const std::string name_;
  const std::uint64_t generation_;
  const int rank_;
  const int size_;
  std::atomic<std::uint64_t> sequence_{0};
};

// The work that runs `call` on `c` when a stream reaches it (backend::enqueue). The
// communicator is shared: the work keeps it alive until it has run.
[[nodiscard]] inline work_fn collective_work(std::shared_ptr<communicator> c,
                                             collective_call call) {
  return [c = std::move(c), call](const launch_context& on) { return c->run(call, on); };
}

}  // namespace cudactor::gpu
