// actors/detail/ring_queue.hpp
//
// A first-in first-out queue in one ring of room that doubles when full and is kept when
// emptied: the per-operation queues of the coordinator and the stream actors (the points in
// flight on a stream, the records of a stream's points, the ready operations). A std::deque
// allocates a block each time its back crosses into a new one and frees one each time its
// front leaves one, so a queue that operations stream through cost a malloc and a free every
// few operations, for ever; this one allocates only while it grows past its largest size.
// Its size is a field: a deque's is computed from its block map, and placement reads every
// stream's in-flight count for every operation it places (a tenth of placement's instructions
// went to deque sizes).
#pragma once

#include <cassert>
#include <cstddef>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>

namespace cudactor::detail {

template <class T>
class ring_queue {
 public:
  ring_queue() noexcept = default;
  ring_queue(const ring_queue&) = delete;
  ring_queue& operator=(const ring_queue&) = delete;
  ring_queue(ring_queue&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        capacity_(std::exchange(other.capacity_, 0)),
        head_(std::exchange(other.head_, 0)),
        size_(std::exchange(other.size_, 0)) {}
  ring_queue& operator=(ring_queue&& other) noexcept {
    if (this != &other) {
      clear();
      release();
      data_ = std::exchange(other.data_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
      head_ = std::exchange(other.head_, 0);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~ring_queue() {
    clear();
    release();
  }

  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) grow();
    T* at = ::new (slot(size_)) T(std::forward<Args>(args)...);
    ++size_;
    return *at;
  }
  void push_back(T value) { emplace_back(std::move(value)); }

  void pop_front() noexcept {
    assert(size_ > 0);
    slot(0)->~T();
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
  }

  [[nodiscard]] T& front() noexcept { return (*this)[0]; }
  [[nodiscard]] const T& front() const noexcept { return (*this)[0]; }
  [[nodiscard]] T& back() noexcept { return (*this)[size_ - 1]; }
  [[nodiscard]] const T& back() const noexcept { return (*this)[size_ - 1]; }
  [[nodiscard]] T& operator[](std::size_t i) noexcept {
    assert(i < size_);
    return *slot(i);
  }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept {
    assert(i < size_);
    return *slot(i);
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

  // Empties the queue; its room stays.
  void clear() noexcept {
    while (size_ > 0) pop_front();
    head_ = 0;
  }

  // Oldest first.
  template <class Q, class V>
  class basic_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = V*;
    using reference = V&;
    basic_iterator(Q* q, std::size_t i) noexcept : q_(q), i_(i) {}
    reference operator*() const noexcept { return (*q_)[i_]; }
    pointer operator->() const noexcept { return &(*q_)[i_]; }
    basic_iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    friend bool operator==(const basic_iterator& a, const basic_iterator& b) noexcept {
      return a.i_ == b.i_;
    }
    friend bool operator!=(const basic_iterator& a, const basic_iterator& b) noexcept {
      return a.i_ != b.i_;
    }

   private:
    Q* q_;
    std::size_t i_;
  };
  using iterator = basic_iterator<ring_queue, T>;
  using const_iterator = basic_iterator<const ring_queue, const T>;
  [[nodiscard]] iterator begin() noexcept { return {this, 0}; }
  [[nodiscard]] iterator end() noexcept { return {this, size_}; }
  [[nodiscard]] const_iterator begin() const noexcept { return {this, 0}; }
  [[nodiscard]] const_iterator end() const noexcept { return {this, size_}; }

 private:
  // Index i from the front; capacity_ is a power of two (so a slot is a mask).
  [[nodiscard]] T* slot(std::size_t i) const noexcept {
    return data_ + ((head_ + i) & (capacity_ - 1));
  }

  void grow() {
    static_assert(std::is_nothrow_move_constructible_v<T>, "moved when the ring grows");
    const std::size_t bigger = capacity_ == 0 ? 16 : 2 * capacity_;
    T* room = static_cast<T*>(::operator new (bigger * sizeof(T), std::align_val_t{alignof(T)}));
    for (std::size_t i = 0; i < size_; ++i) {
      ::new (room + i) T(std::move(*slot(i)));
      slot(i)->~T();
    }
    release();
    data_ = room;
    capacity_ = bigger;
    head_ = 0;
  }

  void release() noexcept {
    if (data_ != nullptr) ::operator delete (data_, std::align_val_t{alignof(T)});
  }

  T* data_ = nullptr;
  std::size_t capacity_ = 0;  // 0 or a power of two
  std::size_t head_ = 0;      // the slot of the front
  std::size_t size_ = 0;
};

}  // namespace cudactor::detail
