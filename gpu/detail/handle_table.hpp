// gpu/detail/handle_table.hpp
//
// Slots with generations: the storage behind stream and event references. Lookups are O(1);
// a destroyed slot is reused with a bumped generation, so an old reference finds nothing
// instead of the new occupant. Not thread-safe: the owning backend locks around it.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace cudactor::gpu::detail {

template <class T>
class handle_table {
 public:
  struct key {
    std::uint32_t slot = 0;
    std::uint32_t generation = 0;
  };

  key insert(T value) {
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(entries_.size());
      entries_.emplace_back();
    }
    auto& entry = entries_[slot];
    entry.value.emplace(std::move(value));
    ++size_;
    return {slot, entry.generation};
  }

  // nullptr when the slot is free or was reused since the key was issued.
  T* find(std::uint32_t slot, std::uint32_t generation) {
    if (slot >= entries_.size()) return nullptr;
    auto& entry = entries_[slot];
    if (entry.generation != generation || !entry.value) return nullptr;
    return &*entry.value;
  }
  const T* find(std::uint32_t slot, std::uint32_t generation) const {
    return const_cast<handle_table*>(this)->find(slot, generation);
  }

  std::optional<T> erase(std::uint32_t slot, std::uint32_t generation) {
    T* found = find(slot, generation);
    if (found == nullptr) return std::nullopt;
    auto& entry = entries_[slot];
    std::optional<T> out{std::move(*found)};
    entry.value.reset();
    // Generation 0 means "empty reference": skip it when the counter wraps.
    if (++entry.generation == 0) entry.generation = 1;
    free_.push_back(slot);
    --size_;
    return out;
  }

  template <class F>
  void for_each(F&& f) {
    for (auto& entry : entries_)
      if (entry.value) f(*entry.value);
  }

  // Empties the table; every key issued so far becomes stale.
  template <class F>
  void clear(F&& on_each) {
    for (std::uint32_t slot = 0; slot < entries_.size(); ++slot) {
      auto& entry = entries_[slot];
      if (!entry.value) continue;
      on_each(*entry.value);
      entry.value.reset();
      if (++entry.generation == 0) entry.generation = 1;
      free_.push_back(slot);
    }
    size_ = 0;
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  struct entry {
    std::uint32_t generation = 1;
    std::optional<T> value;
  };
  std::vector<entry> entries_;
  std::vector<std::uint32_t> free_;
  std::size_t size_ = 0;
};

}  // namespace cudactor::gpu::detail
