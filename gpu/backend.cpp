#include "cudactor/gpu/backend.hpp"

#include <cstdio>

namespace cudactor::gpu {
namespace {

std::uint32_t next_instance() noexcept {
  static std::atomic<std::uint32_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

backend::backend() : instance_(next_instance()) {}

void backend::count_failed_release(const status& why) noexcept {
  if (why.ok() || why.code() == status_code::invalid_handle) return;
  failed_releases_.fetch_add(1, std::memory_order_relaxed);
  // Destructors cannot report upwards; stderr is the last place this is visible.
  std::fprintf(stderr, "cudactor: release in a destructor failed: %s\n", why.to_string().c_str());
}

status backend::check_handle(const handle_id& id, const char* what) const {
  if (id.empty()) return {status_code::invalid_argument, std::string{"empty "} + what + " reference"};
  if (id.instance != instance_) {
    return {status_code::foreign_handle, std::string{what} + " " + to_string(id) +
                                      " belongs to backend instance " +
                                      std::to_string(id.instance) + ", not to this one (" +
                                      std::to_string(instance_) + ")"};
  }
  return {};
}

signalled_work backend::enqueue_signalled(stream_ref s, work_fn work) {
  status launched = enqueue(s, std::move(work));
  return signalled_work{std::move(launched), signal(s)};
}

std::string to_string(const handle_id& id) {
  return "#" + std::to_string(id.slot) + "." + std::to_string(id.generation);
}

}  // namespace cudactor::gpu
