// actors/coordinator/value_chunks.hpp
//
// Room for values of one type, carved from chunks in the order the values are made, for the
// coordinator's per-operation state (id_table's values). A value made right after another
// sits right after it, so a graph's operations, registered in order and walked in about that
// order, lie side by side in memory: the walk streams through chunks the processor fetches
// ahead, where values from malloc lay among every other allocation of their time (a node's
// dependency lists, the graph message's parts) and each was a cache miss of its own. It also
// spares malloc's slow paths: a large graph's values, freed in bulk, filled its bins, and the
// next graph paid to take them apart again.
//
// A chunk is reused once every value in it is gone. Emptied chunks are kept for the next
// burst: freed, a burst's chunks went back to the system and the next burst faulted its pages
// in again (a 50k-op graph ran a fifth slower so). What stays spare through a while of use
// (trim_every chunks taken) was not needed: half of it is freed then, so after a burst memory
// comes back down to what is held as work goes on; spares_cap bounds what an idle table keeps,
// and its owner sheds them all once it has been idle a while (shed()).
// A value that outlives its neighbours keeps its chunk (at most chunk_bytes for it): id_table
// moves such long-held values out of its window, not out of their chunks, since values never
// move.
//
// One thread at a time, like the table that owns it. Chunks find their owner through a header
// at their start (they are aligned to their size), so an owning pointer's deleter is empty.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace cudactor::detail {

template <class T>
class value_chunks {
 public:
  static constexpr std::size_t chunk_bytes = 16384;

  // Destroys a value and gives its room back: the deleter of the pointers make() hands out.
  struct release {
    void operator()(T* value) const noexcept {
      value->~T();
      header& h = header_of(value);
      assert(h.live > 0);
      if (--h.live == 0) h.owner->emptied(&h);
    }
  };
  using pointer = std::unique_ptr<T, release>;

  value_chunks() = default;
  value_chunks(const value_chunks&) = delete;
  value_chunks& operator=(const value_chunks&) = delete;
  ~value_chunks() {
    // Every value is gone by now (their owner goes first): every chunk is current or spare.
    assert(current_ == nullptr || current_->live == 0);
    if (current_ != nullptr) std::free(current_);
    for (header* h : spare_) std::free(h);
  }

  // A default value in the next room.
  [[nodiscard]] pointer make() {
    if (current_ == nullptr || used_ == per_chunk) next_chunk();
    void* room = reinterpret_cast<char*>(current_) + values_at + stride * used_;
    T* value = new (room) T();  // may throw: nothing was taken yet
    ++used_;
    ++made_;
    ++current_->live;
    return pointer{value};
  }

  // Every empty chunk kept goes back to the system (an idle owner's); how many went.
  std::size_t shed() noexcept {
    const std::size_t n = spare_.size();
    for (header* h : spare_) std::free(h);
    spare_.clear();
    held_ -= n;
    least_spare_ = 0;
    return n;
  }
  // Values made so far, ever: whether any were made between two looks.
  [[nodiscard]] std::uint64_t made() const noexcept { return made_; }
  // Chunks held, in use or kept empty (for tests and memory accounting).
  [[nodiscard]] std::size_t chunks() const noexcept { return held_; }
  [[nodiscard]] std::size_t spare_chunks() const noexcept { return spare_.size(); }
  // The most empty chunks kept (32 MiB), and how many chunks are taken between looks at what
  // stayed spare.
  static constexpr std::size_t spares_cap = 2048;
  static constexpr std::size_t trim_every = 256;
  static constexpr std::size_t per_chunk_count() noexcept { return per_chunk; }

 private:
  struct header {
    value_chunks* owner;
    std::size_t live;  // values made in it and not yet released
  };
  static constexpr std::size_t align = alignof(T) > alignof(header) ? alignof(T) : alignof(header);
  static constexpr std::size_t round_up(std::size_t n) { return (n + align - 1) / align * align; }
  static constexpr std::size_t values_at = round_up(sizeof(header));
  static constexpr std::size_t stride = round_up(sizeof(T));
  static constexpr std::size_t per_chunk = (chunk_bytes - values_at) / stride;
  static_assert(per_chunk >= 8, "value_chunks: values this large want their own allocations");
  static_assert((chunk_bytes & (chunk_bytes - 1)) == 0, "a chunk is found by masking an address");

  static header& header_of(T* value) noexcept {
    const auto at = reinterpret_cast<std::uintptr_t>(value) & ~(std::uintptr_t{chunk_bytes} - 1);
    return *reinterpret_cast<header*>(at);
  }

  void next_chunk() {
    header* h = nullptr;
    if (!spare_.empty()) {
      h = spare_.back();
      spare_.pop_back();
      least_spare_ = std::min(least_spare_, spare_.size());
    } else {
      least_spare_ = 0;
      h = static_cast<header*>(std::aligned_alloc(chunk_bytes, chunk_bytes));
      if (h == nullptr) throw std::bad_alloc{};
      ++held_;
    }
    h->owner = this;
    h->live = 0;
    header* full = std::exchange(current_, h);
    used_ = 0;
    if (full != nullptr && full->live == 0) emptied(full);  // its values went while it filled
    if (++taken_ == trim_every) trim();
  }

  // Half of what stayed spare since the last look goes.
  void trim() noexcept {
    for (std::size_t n = least_spare_ / 2; n > 0 && !spare_.empty(); --n) {
      std::free(spare_.back());
      spare_.pop_back();
      --held_;
    }
    taken_ = 0;
    least_spare_ = spare_.size();
  }

  // The last value of `h` was released. The chunk being filled stays; it is reused from its
  // start only once it is full (its room is not tracked value by value).
  void emptied(header* h) noexcept {
    if (h == current_) return;
    if (spare_.size() < spares_cap) {
      spare_.push_back(h);  // room reserved at construction: never throws
    } else {
      std::free(h);
      --held_;
    }
  }

  header* current_ = nullptr;
  std::size_t used_ = 0;         // rooms of current_ handed out
  std::size_t held_ = 0;         // chunks allocated and not freed
  std::size_t taken_ = 0;        // chunks taken since the last look
  std::size_t least_spare_ = 0;  // the fewest spare since then
  std::uint64_t made_ = 0;       // values made, ever
  std::vector<header*> spare_ = [] {
    std::vector<header*> v;
    v.reserve(spares_cap);
    return v;
  }();
};

}  // namespace cudactor::detail
