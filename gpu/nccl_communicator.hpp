// gpu/nccl_communicator.hpp
//
// The CUDA backend's collective engine: NCCL, which comes with the CUDA toolkit. Loaded when
// first needed (libnccl.so.2 is 200 MiB: the build links nothing of it, and a machine
// without it runs everything else), so nccl_available() says whether this machine can.
// Rank 0 makes NCCL's unique id and writes it to the rendezvous store under
// "<name>/<generation>/nccl-id"; the other ranks read it. The communicator is non-blocking:
// every call returns once enqueued on the stream's CUDA stream, and a watchdog thread polls
// ncclCommGetAsyncError and the event recorded after each collective, or after each launch of
// a graph that captured some (watch_launch). An asynchronous error, or a collective (a
// launch) still running past the timeout (a peer dead or hung), breaks the communicator
// (gpu/communicator.hpp) until a new generation is made: the points of the calls still
// running fail with the cause (gpu/late_failure.hpp), and the watchdog aborts it in NCCL
// (ncclCommAbort), which ends what is queued on it instead of hanging the process.
// Every kind, reduction and element type of collective_types.hpp maps to NCCL's own; a
// barrier is an all-reduce of one float on the communicator's scratch.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "cudactor/gpu/communicator.hpp"
#include "cudactor/gpu/rendezvous_store.hpp"

namespace cudactor::gpu {

struct nccl_options {
  std::string name;  // the group's; part of the rendezvous key
  std::uint64_t generation = 1;
  int rank = 0;
  int size = 1;
  int device = 0;  // the CUDA device ordinal of this rank's backend
  // A collective not complete within it aborts the communicator.
  std::chrono::milliseconds timeout{30000};
  // Reading the unique id, and NCCL's own connecting.
  std::chrono::milliseconds rendezvous_timeout{30000};
};

// Whether NCCL can run here: not_supported naming why not (a build without CUDA, or no
// libnccl.so.2 to load).
[[nodiscard]] status nccl_available();

// This rank's communicator (each rank calls it with the same name, generation and size).
// invalid_argument for options out of range; timeout when the id or a rank does not come
// within rendezvous_timeout; backend_error with NCCL's words when it fails.
[[nodiscard]] result<std::unique_ptr<communicator>> make_nccl_communicator(
    const nccl_options& options, rendezvous_store& store);

}  // namespace cudactor::gpu
