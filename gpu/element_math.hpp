// gpu/element_math.hpp
//
// Element-wise arithmetic on a collective's buffers when the host does it: the reduction
// of two buffers of any element_type (f16 and bf16 computed in float and rounded to nearest
// even, as NCCL does on the device), the division that makes a sum an average, and the
// 16-bit float conversions they need (the host has no native half types).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "cudactor/gpu/collective_types.hpp"

namespace cudactor::gpu {

// out[i] = a[i] op b[i] for n elements; `out` may be `a` or `b`.
using element_reducer = std::function<void(void* out, const void* a, const void* b, std::size_t n)>;

// The reducer of `op` on elements of type `t`; avg reduces as sum (divide() finishes it).
[[nodiscard]] element_reducer reducer(element_type t, reduce_op op);

// data[i] /= ranks, for n elements of type `t` (integers: truncated toward zero).
void divide(element_type t, void* data, std::size_t n, int ranks);

[[nodiscard]] float half_to_float(std::uint16_t h) noexcept;
[[nodiscard]] std::uint16_t float_to_half(float f) noexcept;
[[nodiscard]] float bf16_to_float(std::uint16_t b) noexcept;
[[nodiscard]] std::uint16_t float_to_bf16(float f) noexcept;

}  // namespace cudactor::gpu
