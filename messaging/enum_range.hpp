// messaging/enum_range.hpp
//
// The valid values of every enum that crosses a process boundary. CAF 0.17 deserializes an
// enum as its underlying integer and checks nothing, so a peer can send op_priority 200; the
// input check (messaging/input_check.hpp) refuses any value past `last` before anything
// indexes with it. An enum without a specialisation here does not compile in a checked type,
// so a new enum field cannot be forgotten.
#pragma once

#include <type_traits>

#include "cudactor/gpu/collective_types.hpp"
#include "cudactor/gpu/types.hpp"
#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/messaging/step_types.hpp"

namespace cudactor {

// Specialise with `static constexpr E last` (values run from 0 to last without gaps) and
// `static constexpr const char* name`.
template <class E>
struct enum_range;

template <>
struct enum_range<op_type> {
  static constexpr op_type last = op_type::step;
  static constexpr const char* name = "op_type";
};
template <>
struct enum_range<buffer_access> {
  static constexpr buffer_access last = buffer_access::read_write;
  static constexpr const char* name = "buffer_access";
};
template <>
struct enum_range<step_notices> {
  static constexpr step_notices last = step_notices::all;
  static constexpr const char* name = "step_notices";
};
template <>
struct enum_range<op_priority> {
  static constexpr op_priority last = op_priority::cleanup;
  static constexpr const char* name = "op_priority";
};
template <>
struct enum_range<op_workload> {
  static constexpr op_workload last = op_workload::coordination;
  static constexpr const char* name = "op_workload";
};
template <>
struct enum_range<op_state> {
  static constexpr op_state last = op_state::cancelled;
  static constexpr const char* name = "op_state";
};
template <>
struct enum_range<barrier_mode> {
  static constexpr barrier_mode last = barrier_mode::device;
  static constexpr const char* name = "barrier_mode";
};
template <>
struct enum_range<pool_strategy> {
  static constexpr pool_strategy last = pool_strategy::adaptive;
  static constexpr const char* name = "pool_strategy";
};
template <>
struct enum_range<gpu::event_kind> {
  static constexpr gpu::event_kind last = gpu::event_kind::timing;
  static constexpr const char* name = "event_kind";
};
template <>
struct enum_range<gpu::stream_priority> {
  static constexpr gpu::stream_priority last = gpu::stream_priority::high;
  static constexpr const char* name = "stream_priority";
};
template <>
struct enum_range<gpu::copy_kind> {
  static constexpr gpu::copy_kind last = gpu::copy_kind::device_to_device;
  static constexpr const char* name = "copy_kind";
};
template <>
struct enum_range<gpu::prefetch_target> {
  static constexpr gpu::prefetch_target last = gpu::prefetch_target::host;
  static constexpr const char* name = "prefetch_target";
};

template <>
struct enum_range<gpu::collective_kind> {
  static constexpr gpu::collective_kind last = gpu::collective_kind::barrier;
  static constexpr const char* name = "collective_kind";
};
template <>
struct enum_range<gpu::reduce_op> {
  static constexpr gpu::reduce_op last = gpu::reduce_op::avg;
  static constexpr const char* name = "reduce_op";
};
template <>
struct enum_range<gpu::element_type> {
  static constexpr gpu::element_type last = gpu::element_type::u8;
  static constexpr const char* name = "element_type";
};

// The number of values of E: the size of an array indexed by it.
template <class E>
inline constexpr std::size_t enum_count = static_cast<std::size_t>(enum_range<E>::last) + 1;

// Whether `x` is one of E's values (a value read from a peer may not be).
template <class E>
[[nodiscard]] constexpr bool in_range(E x) noexcept {
  using U = std::underlying_type_t<E>;
  return static_cast<U>(x) <= static_cast<U>(enum_range<E>::last);
}

}  // namespace cudactor
