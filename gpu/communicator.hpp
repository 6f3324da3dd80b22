// gpu/communicator.hpp
//
// One rank's handle on a group of ranks that run collectives together (gpu/collective_types.hpp),
// behind one interface whatever the engine: Gloo over TCP for the host backend
// (gpu/gloo_communicator.hpp), NCCL for CUDA. Every rank calls the same collectives in the same
// order; a call returns when this rank's part is done. A call that fails (a peer gone, the
// engine's timeout passed, an abort) breaks the communicator: every later call fails at once
// with the same cause, until a new one is made. The actors never see an engine, only this.
#pragma once

#include <cstdint>
#include <string>

#include "cudactor/gpu/collective_types.hpp"
#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu {

class communicator {
 public:
  virtual ~communicator() = default;

  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  // The group's name and generation, as the rendezvous keys carry them.
  [[nodiscard]] virtual const std::string& name() const noexcept = 0;
  [[nodiscard]] virtual std::uint64_t generation() const noexcept = 0;
  // Collectives started on this rank so far: ranks that agree are in step (a hang's
  // diagnosis compares them).
  [[nodiscard]] virtual std::uint64_t sequence() const noexcept = 0;

  // Runs `call` on this rank; blocks the calling thread (a host stream's worker, never an
  // actor) until this rank's part is done, failed, or the engine's timeout passed.
  [[nodiscard]] virtual status run(const collective_call& call) = 0;

  // Why the communicator can run nothing more (ok while it can).
  [[nodiscard]] virtual status broken() const = 0;
  // Breaks it now with `why`: later calls fail at once; a call in progress on another thread
  // ends as soon as the engine lets it (at the latest at its timeout).
  virtual void abort(const std::string& why) = 0;
};

}  // namespace cudactor::gpu
