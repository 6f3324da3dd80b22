// gpu/stream_allocator.hpp
//
// Stream-ordered allocation with deferred reclamation, for the owner of one stream. Freed
// memory is not returned at once: it waits until the stream has passed the point where it
// was freed (work enqueued before the free may still use it), then it is kept for reuse by
// later allocations of a similar size, up to reuse_limit bytes; beyond that it goes back to
// the backend. Allocation ids are never reused, so a double free or a free of a stranger's id
// is refused rather than freeing someone else's memory.
//
// Not thread-safe: one owner (a stream actor) drives it, telling it how far the stream got.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>

#include "cudactor/gpu/backend.hpp"

namespace cudactor::gpu {

struct stream_allocation {
  std::uint64_t id = 0;
  void* data = nullptr;
  std::size_t size = 0;  // as asked for; the block behind it may be larger
};

struct stream_allocator_stats {
  std::size_t allocated_bytes = 0;     // live allocations (block sizes)
  std::size_t pending_free_bytes = 0;  // freed; the stream has not passed the free yet
  std::size_t reusable_bytes = 0;      // freed and passed: ready for reuse
  std::uint64_t allocations = 0;
  std::uint64_t reuses = 0;        // allocations served from freed memory
  std::uint64_t failed_frees = 0;  // blocks the backend refused to take back
};

class stream_allocator {
 public:
  // Reuses a freed block for a request when the block is at most `slack` times the request.
  static constexpr std::size_t slack = 2;

  stream_allocator(backend& device, stream_ref s, std::size_t reuse_limit) noexcept
      : device_(&device), stream_(s), reuse_limit_(reuse_limit) {}
  stream_allocator(const stream_allocator&) = delete;
  stream_allocator& operator=(const stream_allocator&) = delete;
  ~stream_allocator() = default;  // buffers free themselves in the stream's order

  // A reusable block that fits, else new memory; out_of_memory after giving the reusable
  // blocks back and trying once more.
  [[nodiscard]] result<stream_allocation> allocate(std::size_t bytes);

  // The allocation becomes reusable once reached(at) is called with a point >= at.
  // invalid_argument for an id this allocator does not hold (never issued, or freed).
  [[nodiscard]] status free(std::uint64_t id, timeline_point at);

  // The stream has passed `point`: frees before it become reusable.
  void reached(timeline_point point);

  // Whether `id` is a live allocation.
  [[nodiscard]] bool contains(std::uint64_t id) const { return live_.count(id) != 0; }

  // Returns every reusable block to the backend (stream-ordered).
  void trim();

  [[nodiscard]] const stream_allocator_stats& stats() const noexcept { return stats_; }

 private:
  struct pending_free {
    timeline_point at;
    buffer block;
  };

  void keep_for_reuse(buffer block);
  void give_back(buffer& block) noexcept;

  backend* device_;
  stream_ref stream_;
  std::size_t reuse_limit_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, buffer> live_;
  std::deque<pending_free> pending_;             // ascending by point
  std::multimap<std::size_t, buffer> reusable_;  // by block size
  stream_allocator_stats stats_;
};

}  // namespace cudactor::gpu
