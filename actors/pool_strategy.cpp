#include "cudactor/actors/pool_strategy.hpp"

namespace cudactor {

std::string_view to_string(pool_strategy x) noexcept {
  switch (x) {
    case pool_strategy::round_robin: return "round_robin";
    case pool_strategy::load_balanced: return "load_balanced";
    case pool_strategy::priority: return "priority";
    case pool_strategy::workload: return "workload";
    case pool_strategy::adaptive: return "adaptive";
  }
  return "unknown";
}

std::optional<pool_strategy> parse_pool_strategy(std::string_view text) noexcept {
  for (auto x : {pool_strategy::round_robin, pool_strategy::load_balanced, pool_strategy::priority,
                 pool_strategy::workload, pool_strategy::adaptive}) {
    if (to_string(x) == text) return x;
  }
  return std::nullopt;
}

}  // namespace cudactor
