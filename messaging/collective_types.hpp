// messaging/collective_types.hpp
//
// A collective as an operation: which communicator of the node runs it (by name: the node's
// communicator table, actors/communicator_table.hpp), its kind, reduction and element type
// (gpu/collective_types.hpp), and the coordinator's buffers it reads and writes. Plain data
// with inspect(); it crosses process boundaries inside an op_spec, so a control plane can
// give the same collective to every node of a communicator. The coordinator turns it into
// the stream's work and into the buffer uses that order it (docs/collectives.md).
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

#include "cudactor/gpu/collective_types.hpp"
#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/operation_types.hpp"

namespace cudactor {

// Bounds a peer's collective is held to (messaging/input_check.hpp): a rank past any
// communicator, and 2^40 elements, far past any buffer and small enough that a byte count
// (count x ranks x 8) cannot overflow.
inline constexpr std::uint32_t max_collective_root = 65535;
inline constexpr std::uint64_t max_collective_count = std::uint64_t{1} << 40;

struct op_collective {
  std::string communicator;  // empty: the operation is no collective
  gpu::collective_kind kind = gpu::collective_kind::all_reduce;
  gpu::reduce_op op = gpu::reduce_op::sum;
  gpu::element_type type = gpu::element_type::f32;
  // Elements per rank, as gpu::collective_call counts them.
  std::uint64_t count = 0;
  std::uint32_t root = 0;  // broadcast and reduce
  // What it reads, from `send_offset` bytes into `send`, and writes, from `recv_offset` into
  // `recv`; the byte counts follow from the kind, count and the communicator's size. A
  // barrier names neither; a broadcast's non-root ranks read nothing but may name `send`.
  buffer_id send;
  std::uint64_t send_offset = 0;
  buffer_id recv;
  std::uint64_t recv_offset = 0;

  [[nodiscard]] bool empty() const noexcept { return communicator.empty(); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_collective& x) {
  return f(caf::meta::type_name("cudactor::op_collective"), x.communicator, x.kind, x.op, x.type,
           x.count, x.root, x.send, x.send_offset, x.recv, x.recv_offset);
}

// The operation type a collective of `kind` is registered as (all_reduce, broadcast,
// reduction, all_gather, reduce_scatter, collective_barrier).
[[nodiscard]] constexpr op_type op_type_of(gpu::collective_kind kind) noexcept {
  switch (kind) {
    case gpu::collective_kind::all_reduce: return op_type::all_reduce;
    case gpu::collective_kind::broadcast: return op_type::broadcast;
    case gpu::collective_kind::reduce: return op_type::reduction;
    case gpu::collective_kind::all_gather: return op_type::all_gather;
    case gpu::collective_kind::reduce_scatter: return op_type::reduce_scatter;
    case gpu::collective_kind::barrier: return op_type::collective_barrier;
  }
  return op_type::all_reduce;
}

}  // namespace cudactor
