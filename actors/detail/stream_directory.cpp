// actors/detail/stream_directory.cpp
#include "cudactor/actors/detail/stream_directory.hpp"

namespace cudactor::detail {

stream_directory::stream_directory(std::size_t streams)
    : entries_(std::make_unique<entry[]>(streams)), size_(streams) {}

void stream_directory::publish(stream_id id, gpu::stream_ref view) noexcept {
  if (id.value >= size_) return;
  entry& e = entries_[id.value];
  const std::uint32_t s = e.sequence.load(std::memory_order_relaxed);
  e.sequence.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  const gpu::handle_id& h = view.id();
  e.instance.store(h.instance, std::memory_order_relaxed);
  e.slot.store(h.slot, std::memory_order_relaxed);
  e.generation.store(h.generation, std::memory_order_relaxed);
  e.sequence.store(s + 2, std::memory_order_release);
}

gpu::stream_ref stream_directory::view(stream_id id) const noexcept {
  if (id.value >= size_) return {};
  const entry& e = entries_[id.value];
  for (;;) {
    const std::uint32_t before = e.sequence.load(std::memory_order_acquire);
    gpu::handle_id h;
    h.instance = e.instance.load(std::memory_order_relaxed);
    h.slot = e.slot.load(std::memory_order_relaxed);
    h.generation = e.generation.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((before & 1U) == 0 && e.sequence.load(std::memory_order_relaxed) == before) {
      return gpu::stream_ref{h};
    }
  }
}

}  // namespace cudactor::detail
