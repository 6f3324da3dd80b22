#include "cudactor/messaging/barrier_types.hpp"

namespace cudactor {

std::string_view to_string(barrier_mode x) noexcept {
  switch (x) {
    case barrier_mode::host: return "host";
    case barrier_mode::device: return "device";
  }
  return "unknown";
}

}  // namespace cudactor
