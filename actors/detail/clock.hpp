// actors/detail/clock.hpp
//
// The actors' timestamps: nanoseconds on the steady clock, as carried in messages.
#pragma once

#include <chrono>
#include <cstdint>

namespace cudactor::detail {

[[nodiscard]] inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace cudactor::detail
