#include "cudactor/gpu/detail/watch_queue.hpp"

#include <algorithm>
#include <cassert>

namespace cudactor::gpu::detail {

void watch_queue::push(watch_entry entry) {
  assert(entries_.empty() || entries_.back().sequence < entry.sequence);
  entry.live = true;
  entries_.push_back(std::move(entry));
  ++live_;
}

watch_entry* watch_queue::front() noexcept {
  while (!entries_.empty() && !entries_.front().live) entries_.pop_front();
  return entries_.empty() ? nullptr : &entries_.front();
}

watch_entry watch_queue::pop_front() {
  assert(!entries_.empty() && entries_.front().live);
  watch_entry entry = std::move(entries_.front());
  entries_.pop_front();
  --live_;
  if (live_ == 0) entries_.clear();  // only tombstones are left
  return entry;
}

watch_entry* watch_queue::find(std::uint64_t sequence) noexcept {
  auto it = std::lower_bound(
      entries_.begin(), entries_.end(), sequence,
      [](const watch_entry& entry, std::uint64_t wanted) { return entry.sequence < wanted; });
  if (it == entries_.end() || it->sequence != sequence || !it->live) return nullptr;
  return &*it;
}

watch_entry watch_queue::take(watch_entry& entry) {
  assert(entry.live);
  watch_entry taken = std::move(entry);
  entry.callback = nullptr;  // a moved-from function is not guaranteed empty
  entry.live = false;
  --live_;
  if (live_ == 0) entries_.clear();
  return taken;
}

void duration_learner::observe(std::chrono::nanoseconds sample) noexcept {
  samples_[next_] = sample;
  next_ = (next_ + 1) % window;
  if (count_ < window) ++count_;
}

std::optional<std::chrono::nanoseconds> duration_learner::shortest() const noexcept {
  if (count_ < min_samples) return std::nullopt;
  return *std::min_element(samples_.begin(), samples_.begin() + count_);
}

}  // namespace cudactor::gpu::detail
