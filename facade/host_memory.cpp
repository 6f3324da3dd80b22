#include "cudactor/facade/host_memory.hpp"

#include <limits>
#include <string>
#include <utility>

#include "cudactor/actors/runtime.hpp"
#include "cudactor/facade/failure.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace {

template <class Allocate>
gpu::buffer made_or_thrown(std::uint64_t bytes, const char* what, Allocate allocate) {
  if (bytes > std::numeric_limits<std::size_t>::max()) {
    throw failure{errc::invalid_argument,
                  std::string{what} + ": " + std::to_string(bytes) + " bytes is beyond this host"};
  }
  auto made = allocate(static_cast<std::size_t>(bytes));
  if (!made) throw failure{to_error(made.error())};
  return std::move(made.value());
}

}  // namespace

gpu::buffer allocate_pinned(runtime& rt, std::uint64_t bytes) {
  return made_or_thrown(bytes, "allocate_pinned",
                        [&](std::size_t n) { return rt.device().allocate_pinned(n); });
}

gpu::buffer allocate_managed(runtime& rt, std::uint64_t bytes) {
  return made_or_thrown(bytes, "allocate_managed",
                        [&](std::size_t n) { return rt.device().allocate_managed(n); });
}

}  // namespace cudactor
