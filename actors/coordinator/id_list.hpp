// actors/coordinator/id_list.hpp
//
// A short list of operation ids held in place: a graph node's dependencies and dependents,
// an operation record's dependencies.
// Most operations have a few of each, so the first `inline_ids` live inside the node and
// only a longer list takes an allocation. As vectors of their own, the two lists were two
// allocations per operation with dependencies, each a cache miss away from its node when the
// coordinator walked them, and their varied sizes sent malloc down its slow paths.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "cudactor/messaging/operation_types.hpp"

namespace cudactor::detail {

class id_list {
 public:
  static constexpr std::uint32_t inline_ids = 4;
  static_assert(std::is_trivially_copyable_v<op_id>, "ids are copied as bytes");

  id_list() noexcept = default;
  id_list(const id_list& other) { assign(other.begin(), other.end()); }
  id_list(id_list&& other) noexcept { take(other); }
  id_list& operator=(const id_list& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  id_list& operator=(id_list&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~id_list() { release(); }

  [[nodiscard]] const op_id* data() const noexcept { return heap() ? heap_ : inline_; }
  [[nodiscard]] op_id* data() noexcept { return heap() ? heap_ : inline_; }
  [[nodiscard]] const op_id* begin() const noexcept { return data(); }
  [[nodiscard]] const op_id* end() const noexcept { return data() + size_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] op_id operator[](std::size_t i) const noexcept {
    assert(i < size_);
    return data()[i];
  }

  // The list becomes [first, last).
  void assign(const op_id* first, const op_id* last) {
    const auto n = static_cast<std::size_t>(last - first);
    if (n > capacity_) grow(n, false);
    std::copy(first, last, data());
    size_ = static_cast<std::uint32_t>(n);
  }

  void push_back(op_id id) {
    if (size_ == capacity_) grow(std::size_t{capacity_} * 2, true);
    data()[size_++] = id;
  }

  // [first, last) after what is held (not from this list).
  void append(const op_id* first, const op_id* last) {
    const std::size_t n = size_ + static_cast<std::size_t>(last - first);
    if (n > capacity_) grow(std::max(n, std::size_t{capacity_} * 2), true);
    std::copy(first, last, data() + size_);
    size_ = static_cast<std::uint32_t>(n);
  }

  // `id` before position `at` (at <= size()).
  void insert(std::size_t at, op_id id) {
    assert(at <= size_);
    if (size_ == capacity_) grow(std::size_t{capacity_} * 2, true);
    op_id* d = data();
    std::copy_backward(d + at, d + size_, d + size_ + 1);
    d[at] = id;
    ++size_;
  }

  void clear() noexcept { size_ = 0; }

 private:
  [[nodiscard]] bool heap() const noexcept { return capacity_ > inline_ids; }

  // Room for `n` ids (more than now), keeping what is held if `keep`.
  void grow(std::size_t n, bool keep) {
    if (n > std::numeric_limits<std::uint32_t>::max()) throw std::length_error{"id_list"};
    auto* bigger = static_cast<op_id*>(::operator new(n * sizeof(op_id)));
    if (keep) std::memcpy(static_cast<void*>(bigger), data(), size_ * sizeof(op_id));
    release();
    heap_ = bigger;
    capacity_ = static_cast<std::uint32_t>(n);
  }

  void release() noexcept {
    if (heap()) ::operator delete(heap_);
    heap_ = nullptr;
    capacity_ = inline_ids;
  }

  // Leaves `other` empty, inline.
  void take(id_list& other) noexcept {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (other.heap()) {
      heap_ = other.heap_;
    } else {
      std::memcpy(static_cast<void*>(inline_), other.inline_, size_ * sizeof(op_id));
    }
    other.heap_ = nullptr;
    other.size_ = 0;
    other.capacity_ = inline_ids;
  }

  op_id inline_[inline_ids];
  op_id* heap_ = nullptr;  // while heap()
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = inline_ids;
};

}  // namespace cudactor::detail
