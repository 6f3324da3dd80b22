#include "cudactor/gpu/watch.hpp"

namespace cudactor::gpu {

std::string_view to_string(watch_outcome value) noexcept {
  switch (value) {
    case watch_outcome::completed: return "completed";
    case watch_outcome::failed: return "failed";
    case watch_outcome::timed_out: return "timed_out";
    case watch_outcome::cancelled: return "cancelled";
  }
  return "unknown";
}

}  // namespace cudactor::gpu
