#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu {

std::string status::to_string() const {
  std::string out{gpu::to_string(code_)};
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

}  // namespace cudactor::gpu
