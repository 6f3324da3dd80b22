// facade/address.hpp
//
// A memory address as the facade's calls take it: an integer, a pointer, or a buffer the
// stream allocated (its start). The typed protocol carries addresses as integers; this is
// where the caller's form is turned into one, once.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cudactor/messaging/types.hpp"

namespace cudactor {

class address {
 public:
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  address(I value) noexcept : value_(static_cast<std::uint64_t>(value)) {}  // NOLINT: implicit
  address(const void* p) noexcept                                           // NOLINT: implicit
      : value_(reinterpret_cast<std::uintptr_t>(p)) {}
  address(const buffer_ref& b) noexcept : value_(b.address) {}  // NOLINT: implicit

  [[nodiscard]] std::uint64_t value() const noexcept { return value_; }

 private:
  std::uint64_t value_;
};

}  // namespace cudactor
