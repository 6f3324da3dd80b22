// actors/pool_strategy.hpp
//
// How the coordinator picks a stream for an operation (coordinator_options::strategy); the
// strategies themselves are described in detail/stream_pool.hpp, which applies them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cudactor {

enum class pool_strategy : std::uint8_t {
  round_robin,
  load_balanced,
  priority,
  workload,
  adaptive
};

[[nodiscard]] std::string_view to_string(pool_strategy x) noexcept;
// round_robin, load_balanced, priority, workload or adaptive.
[[nodiscard]] std::optional<pool_strategy> parse_pool_strategy(std::string_view text) noexcept;

}  // namespace cudactor
