#include "cudactor/messaging/step_types.hpp"

namespace cudactor {

std::string to_string(const step_handle& step) {
  return "step " + std::to_string(step.slot) + "." + std::to_string(step.generation);
}

std::string_view to_string(step_notices x) noexcept {
  switch (x) {
    case step_notices::none: return "none";
    case step_notices::failures: return "failures";
    case step_notices::all: return "all";
  }
  return "unknown";
}

}  // namespace cudactor
