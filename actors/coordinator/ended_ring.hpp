// actors/coordinator/ended_ring.hpp
//
// The newest ended operations, kept so that describe and await still answer for an operation
// whose record has gone: a ring of at most `capacity` entries, each end overwriting the oldest
// in place. An entry keeps the room its lists had, so that a busy coordinator refills them
// rather than allocates (a deque allocated and freed a block every other operation). No CAF
// here.
#pragma once

#include <cstddef>
#include <vector>

#include "cudactor/messaging/coordinator_types.hpp"

namespace cudactor::detail {

class ended_ring {
 public:
  explicit ended_ring(std::size_t capacity = 0) : capacity_(capacity) {}

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

  // The entry the next end goes to: a new one until the ring is full, then the oldest, whose
  // fields the caller overwrites. None with a capacity of 0.
  [[nodiscard]] op_info* next() {
    if (capacity_ == 0) return nullptr;
    if (entries_.size() < capacity_) return &entries_.emplace_back();
    op_info* oldest = &entries_[next_];
    next_ = (next_ + 1) % entries_.size();
    return oldest;
  }
  // The entry the end after the next one will overwrite, once the ring is full (for asking
  // for its lists ahead); none before.
  [[nodiscard]] const op_info* after_next() const noexcept {
    if (entries_.size() < capacity_ || entries_.empty()) return nullptr;
    return &entries_[(next_ + 1) % entries_.size()];
  }
  // The newest entry of operation `id`, or none.
  [[nodiscard]] const op_info* find(op_id id) const noexcept {
    // Newest first: the entry before next_, back round the ring (it fills from 0, next_
    // staying 0 until it is full).
    const std::size_t n = entries_.size();
    for (std::size_t k = 1; k <= n; ++k) {
      const op_info& info = entries_[(next_ + n - k) % n];
      if (info.id == id) return &info;
    }
    return nullptr;
  }

 private:
  std::size_t capacity_;
  std::vector<op_info> entries_;
  std::size_t next_ = 0;  // the entry the next end overwrites once the ring is full
};

}  // namespace cudactor::detail
