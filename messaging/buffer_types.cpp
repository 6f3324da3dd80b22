#include "cudactor/messaging/buffer_types.hpp"

namespace cudactor {

std::string to_string(const buffer_id& id) {
  return "buffer " + std::to_string(id.slot) + "." + std::to_string(id.generation);
}

std::string_view to_string(buffer_access x) noexcept {
  switch (x) {
    case buffer_access::none: return "none";
    case buffer_access::read: return "read";
    case buffer_access::write: return "write";
    case buffer_access::read_write: return "read_write";
  }
  return "unknown";
}

}  // namespace cudactor
