// gpu/detail/allocation_table.hpp
//
// What a backend has allocated, so that copies, fills and frees can be checked before they
// are enqueued: a null or foreign pointer, a range that runs past its allocation, device
// memory passed where host memory belongs, memory already freed. The host backend is strict
// (device pointers must be its own); the CUDA backend also accepts pointers it did not make
// (interop) and checks only those it knows. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>

#include "cudactor/gpu/status.hpp"
#include "cudactor/gpu/stream.hpp"
#include "cudactor/gpu/types.hpp"

namespace cudactor::gpu::detail {

enum class memory_side : std::uint8_t { host, device };

struct allocation {
  std::size_t size = 0;
  memory_kind kind = memory_kind::device;
  stream_ref stream;     // device memory: the stream whose order frees it
  bool freeing = false;  // a stream-ordered free is enqueued
};

class allocation_table {
 public:
  explicit allocation_table(bool strict) : strict_(strict) {}

  void add(const void* data, allocation record);

  // ok when [data, data + bytes) may be used as `side` memory; `role` names it in errors
  // ("destination", "source").
  [[nodiscard]] status check(const void* data, std::size_t bytes, memory_side side,
                             std::string_view role) const;

  // Both ends of a copy in `direction`, and that they do not overlap.
  [[nodiscard]] status check_copy(void* dst, const void* src, std::size_t bytes,
                                  copy_kind direction) const;

  // Marks an allocation as being freed in stream order and returns it; errors for a pointer
  // that is not the start of a live allocation, or one already being freed.
  [[nodiscard]] result<allocation> begin_free(const void* data);
  // A free that failed to be enqueued: the allocation is live again, untouched.
  void cancel_free(const void* data);
  // Forgets an allocation (its memory is gone).
  void remove(const void* data);
  // Forgets an allocation whose stream-ordered free was enqueued where the backend cannot tell
  // when it runs (CUDA), but keeps its range as freed: a copy or fill on it is refused ("being
  // freed"), as on the host backend, where the allocation stays until its stream frees it.
  // The range is dropped when memory there is allocated again (add) or once `retired_kept`
  // newer frees pushed it out; a reset forgets them all.
  void retire(const void* data);
  [[nodiscard]] std::optional<allocation> find(const void* data) const;
  // The allocation whose range contains `data`, if any.
  [[nodiscard]] std::optional<allocation> containing(const void* data) const;

  // Would `bytes` more fit under `limit`? Reserves them if so.
  [[nodiscard]] bool try_reserve(std::size_t bytes, std::size_t limit);
  void unreserve(std::size_t bytes);
  [[nodiscard]] std::size_t bytes_in_use() const;
  [[nodiscard]] std::size_t count() const;

  // Takes every allocation out (reset), and their bytes from the reserved ones; the caller
  // frees them.
  [[nodiscard]] std::map<std::uintptr_t, allocation> take_all();

 private:
  struct retired_range {
    std::size_t size = 0;
    memory_kind kind = memory_kind::device;
    std::uint64_t sequence = 0;  // which retire() put it there (an address comes back)
  };
  static constexpr std::size_t retired_kept = 4096;

  // The retired range containing `address`, if any. Called with the lock held.
  [[nodiscard]] const std::pair<const std::uintptr_t, retired_range>* retired_at(
      std::uintptr_t address) const;
  void drop_retired_overlapping(std::uintptr_t start, std::size_t size);

  bool strict_;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, allocation> live_;  // keyed by start address
  std::map<std::uintptr_t, retired_range> retired_;
  std::deque<std::pair<std::uintptr_t, std::uint64_t>> retired_order_;  // oldest first
  std::uint64_t retired_sequence_ = 0;
  std::size_t reserved_ = 0;
};

// "0x7f12..." for messages.
[[nodiscard]] std::string format_address(const void* data);

}  // namespace cudactor::gpu::detail
