// gpu/collective_types.cpp
#include "cudactor/gpu/collective_types.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace cudactor::gpu {

std::string_view to_string(collective_kind x) noexcept {
  switch (x) {
    case collective_kind::all_reduce: return "all_reduce";
    case collective_kind::broadcast: return "broadcast";
    case collective_kind::reduce: return "reduce";
    case collective_kind::all_gather: return "all_gather";
    case collective_kind::reduce_scatter: return "reduce_scatter";
    case collective_kind::barrier: return "barrier";
  }
  return "unknown";
}

std::string_view to_string(reduce_op x) noexcept {
  switch (x) {
    case reduce_op::sum: return "sum";
    case reduce_op::prod: return "prod";
    case reduce_op::min: return "min";
    case reduce_op::max: return "max";
    case reduce_op::avg: return "avg";
  }
  return "unknown";
}

std::string_view to_string(element_type x) noexcept {
  switch (x) {
    case element_type::f32: return "f32";
    case element_type::f64: return "f64";
    case element_type::f16: return "f16";
    case element_type::bf16: return "bf16";
    case element_type::i32: return "i32";
    case element_type::i64: return "i64";
    case element_type::u8: return "u8";
  }
  return "unknown";
}

std::size_t element_size(element_type t) noexcept {
  switch (t) {
    case element_type::f64:
    case element_type::i64: return 8;
    case element_type::f32:
    case element_type::i32: return 4;
    case element_type::f16:
    case element_type::bf16: return 2;
    case element_type::u8: return 1;
  }
  return 0;
}

namespace {

// Elements a rank reads and writes, in units of `count`.
std::size_t send_parts(collective_kind k, int size) noexcept {
  switch (k) {
    case collective_kind::reduce_scatter: return static_cast<std::size_t>(size);
    case collective_kind::barrier: return 0;
    default: return 1;
  }
}

std::size_t recv_parts(collective_kind k, int size) noexcept {
  switch (k) {
    case collective_kind::all_gather: return static_cast<std::size_t>(size);
    case collective_kind::barrier: return 0;
    default: return 1;
  }
}

bool known(collective_kind k) noexcept { return to_string(k) != "unknown"; }
bool known(reduce_op o) noexcept { return to_string(o) != "unknown"; }

}  // namespace

std::size_t send_bytes(const collective_call& call, int size) noexcept {
  return send_parts(call.kind, size) * call.count * element_size(call.type);
}

std::size_t recv_bytes(const collective_call& call, int size) noexcept {
  return recv_parts(call.kind, size) * call.count * element_size(call.type);
}

status check(const collective_call& call, int size) {
  const std::string what = std::string{to_string(call.kind)};
  if (!known(call.kind)) return {status_code::invalid_argument, "a collective of unknown kind"};
  if (size < 1) return {status_code::invalid_argument, what + ": a communicator of no rank"};
  if (call.kind == collective_kind::barrier) return {};
  if (!known(call.op)) return {status_code::invalid_argument, what + ": an unknown reduction"};
  const std::size_t element = element_size(call.type);
  if (element == 0) return {status_code::invalid_argument, what + ": an unknown element type"};
  if (call.count == 0) return {status_code::invalid_argument, what + ": no element"};
  const std::size_t parts = std::max(send_parts(call.kind, size), recv_parts(call.kind, size));
  if (call.count > std::numeric_limits<std::size_t>::max() / element / parts) {
    return {status_code::invalid_argument,
            what + ": " + std::to_string(call.count) + " elements overflow a byte count"};
  }
  if (call.recv == nullptr || (call.send == nullptr && call.kind != collective_kind::broadcast)) {
    return {status_code::invalid_argument, what + ": a buffer is missing"};
  }
  if ((call.kind == collective_kind::broadcast || call.kind == collective_kind::reduce) &&
      (call.root < 0 || call.root >= size)) {
    return {status_code::invalid_argument, what + ": root " + std::to_string(call.root) +
                                        " is not a rank of " + std::to_string(size)};
  }
  if (call.send == call.recv && call.kind == collective_kind::all_gather && size > 1) {
    return {status_code::invalid_argument, what + ": in place needs a separate output of count x size"};
  }
  if (call.send == call.recv && call.kind == collective_kind::reduce_scatter && size > 1) {
    return {status_code::invalid_argument, what + ": in place needs a separate output of count"};
  }
  return {};
}

}  // namespace cudactor::gpu
