// gpu/gloo_communicator.hpp
//
// The host backend's collective engine: Gloo (Debian's libgloo), over TCP between the ranks,
// 127.0.0.1 unless told otherwise. The ranks rendezvous through a rendezvous_store under
// "<name>/<generation>/", so a rebuilt communicator never meets the keys of the one before.
// Every collective kind, reduction and element type of collective_types.hpp runs: Gloo moves
// the bytes, the element-wise reductions are cudactor's (f16 and bf16 reduce in float, as
// NCCL does); avg is a sum divided by the number of ranks; reduce_scatter is an all-reduce
// of which each rank keeps its part (Gloo 0.5 has no reduce-scatter of this shape). A call
// that fails or passes its timeout breaks the communicator (gpu/communicator.hpp) and ends its
// connections, so the other ranks' calls fail at once too, not at their timeout. abort() ends
// the connections likewise, which fails a call in progress on this rank at once as well
// (Gloo's own close would leave it to its timeout; how, in gloo_communicator.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "cudactor/gpu/communicator.hpp"
#include "cudactor/gpu/rendezvous_store.hpp"

namespace cudactor::gpu {

struct gloo_options {
  std::string name;  // the group's; part of every rendezvous key
  std::uint64_t generation = 1;
  int rank = 0;
  int size = 1;
  std::string host = "127.0.0.1";  // the address this rank listens on
  // Each collective, end to end; a peer that does not take part within it fails the call.
  std::chrono::milliseconds timeout{30000};
  // Finding the other ranks.
  std::chrono::milliseconds rendezvous_timeout{30000};
  // After a call fails by itself (a peer gone, the timeout), how long it waits for an
  // abort() that says why (a cluster naming the peer it lost) before it fails with Gloo's own
  // words. 0: it does not wait.
  std::chrono::milliseconds failure_grace{0};
};

// Connects this rank to every other (each must call it with the same name, generation and
// size, and its own rank). The first call makes the process ignore SIGPIPE unless it handles
// it already: a peer that goes away mid-write must fail the call, not kill the process.
// invalid_argument for options out of range; timeout when a rank does not show up within
// rendezvous_timeout; op_failed when the transport fails.
[[nodiscard]] result<std::unique_ptr<communicator>> make_gloo_communicator(
    const gloo_options& options, rendezvous_store& store);

}  // namespace cudactor::gpu
