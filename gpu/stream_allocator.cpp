#include "cudactor/gpu/stream_allocator.hpp"

#include <string>
#include <utility>

namespace cudactor::gpu {

result<stream_allocation> stream_allocator::allocate(std::size_t bytes) {
  if (bytes == 0) return status{status_code::invalid_argument, "allocate: zero bytes"};
  buffer block;
  auto fit = reusable_.lower_bound(bytes);
  if (fit != reusable_.end() && fit->first / slack <= bytes) {
    block = std::move(fit->second);
    stats_.reusable_bytes -= fit->first;
    reusable_.erase(fit);
    ++stats_.reuses;
  } else {
    auto fresh = device_->allocate(stream_, bytes);
    if (!fresh && fresh.code() == status_code::out_of_memory && !reusable_.empty()) {
      trim();
      fresh = device_->allocate(stream_, bytes);
    }
    if (!fresh) return fresh.error();
    block = std::move(fresh.value());
  }
  const std::uint64_t id = next_id_++;
  stream_allocation out{id, block.data(), bytes};
  stats_.allocated_bytes += block.size();
  ++stats_.allocations;
  live_.emplace(id, std::move(block));
  return out;
}

status stream_allocator::free(std::uint64_t id, timeline_point at) {
  auto i = live_.find(id);
  if (i == live_.end()) {
    return {status_code::invalid_argument,
            "free: allocation " + std::to_string(id) +
                (id != 0 && id < next_id_ ? " was already freed" : " was never made here")};
  }
  stats_.allocated_bytes -= i->second.size();
  stats_.pending_free_bytes += i->second.size();
  pending_.push_back({at, std::move(i->second)});
  live_.erase(i);
  return {};
}

void stream_allocator::reached(timeline_point point) {
  while (!pending_.empty() && pending_.front().at <= point) {
    stats_.pending_free_bytes -= pending_.front().block.size();
    keep_for_reuse(std::move(pending_.front().block));
    pending_.pop_front();
  }
}

void stream_allocator::keep_for_reuse(buffer block) {
  if (stats_.reusable_bytes + block.size() > reuse_limit_) {
    give_back(block);
    return;
  }
  stats_.reusable_bytes += block.size();
  const std::size_t size = block.size();
  // First among the blocks of its size, so that allocate() takes the newest: the memory last
  // used (warm in caches) comes back first, and a block freed after others of its size is the
  // one the next request of that size gets, not whichever was freed longest ago.
  reusable_.emplace_hint(reusable_.lower_bound(size), size, std::move(block));
}

void stream_allocator::give_back(buffer& block) noexcept {
  if (!block.reset().ok()) ++stats_.failed_frees;
}

void stream_allocator::trim() {
  for (auto& entry : reusable_) give_back(entry.second);
  reusable_.clear();
  stats_.reusable_bytes = 0;
}

}  // namespace cudactor::gpu
