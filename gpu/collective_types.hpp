// gpu/collective_types.hpp
//
// What a collective operation is, for the engines that run them (gpu/communicator.hpp):
// its kind, the reduction it applies, the element type of its buffers, and one call's
// arguments. Plain data; the engines (Gloo on the host backend, NCCL on CUDA) say which
// combinations they run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu {

enum class collective_kind : std::uint8_t {
  all_reduce,      // every rank gets the reduction of every rank's buffer
  broadcast,       // every rank gets the root's buffer
  reduce,          // the root gets the reduction of every rank's buffer
  all_gather,      // every rank gets every rank's buffer, in rank order
  reduce_scatter,  // rank r gets the r-th part of the reduction of every rank's buffer
  barrier,         // no data: every rank has arrived
};

enum class reduce_op : std::uint8_t { sum, prod, min, max, avg };

enum class element_type : std::uint8_t { f32, f64, f16, bf16, i32, i64, u8 };

[[nodiscard]] std::string_view to_string(collective_kind x) noexcept;
[[nodiscard]] std::string_view to_string(reduce_op x) noexcept;
[[nodiscard]] std::string_view to_string(element_type x) noexcept;

// Bytes per element; 0 for a value outside the enumeration.
[[nodiscard]] std::size_t element_size(element_type t) noexcept;

// One collective call on one rank. `count` is elements per rank: all_reduce, broadcast and
// reduce read and write `count` elements; all_gather reads `count` and writes count x size
// (rank r's at r x count); reduce_scatter reads count x size and writes `count` (this rank's
// part). `send` may equal `recv` (in place) where the kind reads and writes the same amount.
// A barrier uses neither buffer.
struct collective_call {
  collective_kind kind = collective_kind::all_reduce;
  reduce_op op = reduce_op::sum;
  element_type type = element_type::f32;
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  int root = 0;  // broadcast and reduce
};

// Whether `call` is well formed for a communicator of `size` ranks: a known kind, op and
// type, buffers where the kind needs them, a root among the ranks, a byte count that does
// not overflow. invalid_argument naming what is wrong otherwise.
[[nodiscard]] status check(const collective_call& call, int size);

// The bytes a call reads from `send` and writes to `recv` on one rank of `size`.
[[nodiscard]] std::size_t send_bytes(const collective_call& call, int size) noexcept;
[[nodiscard]] std::size_t recv_bytes(const collective_call& call, int size) noexcept;

}  // namespace cudactor::gpu
