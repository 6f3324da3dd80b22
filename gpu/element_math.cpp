// gpu/element_math.cpp
#include "cudactor/gpu/element_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace cudactor::gpu {
namespace {

// The bits of `x` as a `To` of the same size (std::bit_cast is C++20).
template <class To, class From>
To reinterpret(From x) noexcept {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(&out, &x, sizeof out);
  return out;
}

// How an element of each type is read and written, as the arithmetic type it is computed in.
template <class T>
struct plain {
  using stored = T;
  static T load(T x) noexcept { return x; }
  static T store(T x) noexcept { return x; }
};
struct half {
  using stored = std::uint16_t;
  static float load(std::uint16_t x) noexcept { return half_to_float(x); }
  static std::uint16_t store(float x) noexcept { return float_to_half(x); }
};
struct brain {
  using stored = std::uint16_t;
  static float load(std::uint16_t x) noexcept { return bf16_to_float(x); }
  static std::uint16_t store(float x) noexcept { return float_to_bf16(x); }
};

template <class E, class Op>
element_reducer make(Op op) {
  return [op](void* out, const void* a, const void* b, std::size_t n) {
    using S = typename E::stored;
    auto* o = static_cast<S*>(out);
    const auto* x = static_cast<const S*>(a);
    const auto* y = static_cast<const S*>(b);
    for (std::size_t i = 0; i < n; ++i) o[i] = E::store(op(E::load(x[i]), E::load(y[i])));
  };
}

template <class E>
element_reducer of(reduce_op op) {
  switch (op) {
    case reduce_op::sum:
    case reduce_op::avg: return make<E>([](auto a, auto b) { return decltype(a)(a + b); });
    case reduce_op::prod: return make<E>([](auto a, auto b) { return decltype(a)(a * b); });
    case reduce_op::min: return make<E>([](auto a, auto b) { return std::min(a, b); });
    case reduce_op::max: return make<E>([](auto a, auto b) { return std::max(a, b); });
  }
  return {};
}

template <class E>
void divide_as(void* data, std::size_t n, int ranks) {
  using S = typename E::stored;
  auto* d = static_cast<S*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = E::load(d[i]);
    d[i] = E::store(static_cast<decltype(v)>(v / static_cast<decltype(v)>(ranks)));
  }
}

}  // namespace

element_reducer reducer(element_type t, reduce_op op) {
  switch (t) {
    case element_type::f32: return of<plain<float>>(op);
    case element_type::f64: return of<plain<double>>(op);
    case element_type::f16: return of<half>(op);
    case element_type::bf16: return of<brain>(op);
    case element_type::i32: return of<plain<std::int32_t>>(op);
    case element_type::i64: return of<plain<std::int64_t>>(op);
    case element_type::u8: return of<plain<std::uint8_t>>(op);
  }
  return {};
}

void divide(element_type t, void* data, std::size_t n, int ranks) {
  switch (t) {
    case element_type::f32: divide_as<plain<float>>(data, n, ranks); break;
    case element_type::f64: divide_as<plain<double>>(data, n, ranks); break;
    case element_type::f16: divide_as<half>(data, n, ranks); break;
    case element_type::bf16: divide_as<brain>(data, n, ranks); break;
    case element_type::i32: divide_as<plain<std::int32_t>>(data, n, ranks); break;
    case element_type::i64: divide_as<plain<std::int64_t>>(data, n, ranks); break;
    case element_type::u8: divide_as<plain<std::uint8_t>>(data, n, ranks); break;
  }
}

float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits = sign;
  if (exponent == 31) {
    bits |= 0x7f800000u | (mantissa << 13);  // infinity, NaN
  } else if (exponent != 0) {
    bits |= ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa != 0) {  // subnormal: normalise it
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits |= (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return reinterpret<float>(bits);
}

std::uint16_t float_to_half(float f) noexcept {
  const auto x = reinterpret<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520
  if (magnitude < 0x38800000u) {
    // Below the smallest normal half (2^-14): a multiple of 2^-24, rounded to nearest even
    // (nearbyint in the default rounding mode).
    const float m = reinterpret<float>(magnitude);
    return static_cast<std::uint16_t>(sign |
                                      static_cast<std::uint16_t>(std::nearbyint(m * 16777216.0f)));
  }
  std::uint32_t h = (magnitude >> 13) - (112u << 10);
  const std::uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;  // nearest, ties to even
  return static_cast<std::uint16_t>(sign | h);
}

float bf16_to_float(std::uint16_t b) noexcept {
  return reinterpret<float>(static_cast<std::uint32_t>(b) << 16);
}

std::uint16_t float_to_bf16(float f) noexcept {
  auto x = reinterpret<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);  // nearest, ties to even
  return static_cast<std::uint16_t>(x >> 16);
}

}  // namespace cudactor::gpu
