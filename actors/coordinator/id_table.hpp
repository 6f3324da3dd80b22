// actors/coordinator/id_table.hpp
//
// Values keyed by operation id, for the coordinator's per-operation state (its dependency
// graph's nodes, its records). Ids are issued in increasing order and mostly retired in about
// that order, so the table is a window of slots from the oldest id it holds to the newest:
// finding one is an index into a ring, not a hash and a walk down a bucket, and the coordinator
// looks ids up several times per operation.
//
// An id held far longer than those after it (a caller-launched operation never begun, one
// stuck on a stream) would keep the window wide while everything after it is retired; once
// the window is both past a floor and more than twice what it holds, its oldest values move to
// a map of stragglers, so memory stays in proportion to what is held, not to the span of ids.
//
// Values never move: a reference or pointer stays valid until its id is erased, whatever is
// added or erased meanwhile. They are made in chunks (value_chunks.hpp), one after another,
// so that ids issued one after another lie side by side: the coordinator walks a graph's
// operations in about the order they were registered.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cudactor/actors/coordinator/value_chunks.hpp"

namespace cudactor::detail {

template <class T>
class id_table {
 public:
  id_table() = default;
  id_table(const id_table&) = delete;
  id_table& operator=(const id_table&) = delete;
  // The chunks move with the values (they are on the heap, where the values' chunks point).
  id_table(id_table&&) noexcept = default;
  id_table& operator=(id_table&& other) noexcept {
    if (this != &other) {
      clear();  // the values go before the chunks that hold them
      chunks_ = std::move(other.chunks_);
      ring_ = std::move(other.ring_);
      head_ = other.head_;
      base_ = other.base_;
      length_ = other.length_;
      newest_ = other.newest_;
      size_ = other.size_;
      in_window_ = other.in_window_;
      stragglers_ = std::move(other.stragglers_);
    }
    return *this;
  }

  [[nodiscard]] T* find(std::uint64_t id) noexcept {
    return const_cast<T*>(static_cast<const id_table&>(*this).find(id));
  }
  [[nodiscard]] const T* find(std::uint64_t id) const noexcept {
    if (id >= base_) {
      const std::uint64_t at = id - base_;
      return at < length_ ? ring_[slot(at)].get() : nullptr;
    }
    if (stragglers_.empty()) return nullptr;
    auto found = stragglers_.find(id);
    return found == stragglers_.end() ? nullptr : found->second.get();
  }
  [[nodiscard]] bool contains(std::uint64_t id) const noexcept { return find(id) != nullptr; }
  // The value of an id known to be held.
  [[nodiscard]] T& at(std::uint64_t id) noexcept {
    T* found = find(id);
    assert(found != nullptr);
    return *found;
  }

  // A default value under `id`, which must be greater than every id added before.
  T& add(std::uint64_t id) {
    assert(size_ == 0 || id > newest_);
    // A jump far past the window (ids skipped): what the window holds moves out, rather than
    // the window spanning the gap.
    if (length_ > 0 && id - base_ >= window_floor && id - base_ + 1 > 2 * (in_window_ + 1)) {
      empty_window();
    }
    if (length_ == 0) {
      base_ = id;
      head_ = 0;
    }
    const std::uint64_t length = id - base_ + 1;
    grow_to(length);
    length_ = length;  // slots between the old end and `id` are empty already
    auto& cell = ring_[slot(length_ - 1)];
    if (!chunks_) chunks_ = std::make_unique<value_chunks<T>>();
    cell = chunks_->make();
    newest_ = id;
    ++size_;
    ++in_window_;
    shed_stragglers();
    return *cell;
  }

  // Forgets `id` and its value; false if it is not held.
  bool erase(std::uint64_t id) {
    owned gone;
    if (id >= base_) {
      const std::uint64_t at = id - base_;
      if (at >= length_ || !ring_[slot(at)]) return false;
      gone = std::move(ring_[slot(at)]);
      --in_window_;
      trim_front();
    } else {
      auto found = stragglers_.find(id);
      if (found == stragglers_.end()) return false;
      gone = std::move(found->second);
      stragglers_.erase(found);
    }
    --size_;
    return true;  // `gone` is destroyed here
  }

  // Calls f(id, value) for every value held: stragglers first, then the window, oldest first.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [id, value] : stragglers_) f(id, static_cast<const T&>(*value));
    for (std::uint64_t i = 0; i < length_; ++i) {
      if (const auto& cell = ring_[slot(i)]) f(base_ + i, static_cast<const T&>(*cell));
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  // The chunks of values (value_chunks.hpp): held, in use or spare; values made ever; the
  // spare ones freed (an idle owner's).
  [[nodiscard]] std::size_t chunks() const noexcept { return chunks_ ? chunks_->chunks() : 0; }
  [[nodiscard]] std::uint64_t made() const noexcept { return chunks_ ? chunks_->made() : 0; }
  std::size_t shed_spares() noexcept { return chunks_ ? chunks_->shed() : 0; }
  // How many are held apart from the window (for tests and the coordinator's metrics).
  [[nodiscard]] std::size_t stragglers() const noexcept { return stragglers_.size(); }

  void clear() {
    ring_.clear();
    stragglers_.clear();
    head_ = length_ = 0;
    size_ = in_window_ = 0;
    base_ = newest_;
  }

 private:
  // Below this many slots the window is never thinned: it costs 8 bytes a slot.
  static constexpr std::uint64_t window_floor = 4096;
  using owned = typename value_chunks<T>::pointer;

  [[nodiscard]] std::size_t slot(std::uint64_t at) const noexcept {
    return static_cast<std::size_t>((head_ + at) & (ring_.size() - 1));
  }

  // Room for `length` slots: the ring doubles (a power of two, so a slot is a mask).
  void grow_to(std::uint64_t length) {
    if (length <= ring_.size()) return;
    std::size_t capacity = ring_.empty() ? 64 : ring_.size();
    while (capacity < length) capacity *= 2;
    std::vector<owned> bigger(capacity);
    for (std::uint64_t i = 0; i < length_; ++i) bigger[i] = std::move(ring_[slot(i)]);
    ring_ = std::move(bigger);
    head_ = 0;
  }

  // Empty slots at the front go: the window starts at the oldest id held in it.
  void trim_front() noexcept {
    while (length_ > 0 && !ring_[head_]) {
      head_ = (head_ + 1) & (ring_.size() - 1);
      ++base_;
      --length_;
    }
    if (length_ == 0) {
      head_ = 0;
      base_ = newest_ + 1;
    }
  }

  // Everything in the window moves out to the stragglers; the window is empty.
  void empty_window() {
    for (std::uint64_t i = 0; i < length_; ++i) {
      if (auto& cell = ring_[slot(i)]) stragglers_.emplace(base_ + i, std::move(cell));
    }
    in_window_ = 0;
    length_ = 0;
    head_ = 0;
  }

  // The oldest values move out while the window is wide and mostly empty.
  void shed_stragglers() {
    while (length_ > window_floor && length_ > 2 * in_window_) {
      auto& front = ring_[head_];
      assert(front);  // trim_front keeps an occupied slot at the front
      stragglers_.emplace(base_, std::move(front));
      --in_window_;
      head_ = (head_ + 1) & (ring_.size() - 1);
      ++base_;
      --length_;
      trim_front();
    }
  }

  // Declared first, so destroyed last: the values below live in its chunks.
  std::unique_ptr<value_chunks<T>> chunks_;
  std::vector<owned> ring_;                              // a power of two slots, or none
  std::size_t head_ = 0;                                 // the ring slot of id base_
  std::uint64_t base_ = 0;                               // the id of the window's first slot
  std::uint64_t length_ = 0;                             // slots in the window, held or not
  std::uint64_t newest_ = 0;                             // the greatest id added
  std::size_t size_ = 0;                                 // values held, window and stragglers
  std::size_t in_window_ = 0;                            // values held in the window
  std::unordered_map<std::uint64_t, owned> stragglers_;  // ids below base_
};

}  // namespace cudactor::detail
