// messaging/buffer_types.hpp
//
// Buffers the coordinator orders work by: a buffer's id, how an operation declares that it
// uses one (read, write or both, over a byte range), the handle the coordinator gives for a
// buffer it allocated or adopted, and the dependencies it inferred from declared uses. Plain
// data with inspect(), registered by add_message_types(). The rules are in docs/buffers.md and
// actors/coordinator/buffer_uses.hpp.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/messaging/types.hpp"

namespace cudactor {

// A buffer of one coordinator: `owner` tells coordinators apart (a handle from another is
// refused, not mistaken for one of ours), `slot` is its place in the coordinator's table and
// `generation` counts the slot's uses (a handle of a released buffer is refused, even once
// its slot holds another). Generation 0 names no buffer.
struct buffer_id {
  std::uint32_t owner = 0;
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;

  [[nodiscard]] bool empty() const noexcept { return generation == 0; }
  friend bool operator==(const buffer_id& a, const buffer_id& b) noexcept {
    return a.owner == b.owner && a.slot == b.slot && a.generation == b.generation;
  }
  friend bool operator!=(const buffer_id& a, const buffer_id& b) noexcept { return !(a == b); }
  // By slot, then generation, then owner: the order sorted look-ups and a step's union of
  // uses go by.
  friend bool operator<(const buffer_id& a, const buffer_id& b) noexcept {
    if (a.slot != b.slot) return a.slot < b.slot;
    if (a.generation != b.generation) return a.generation < b.generation;
    return a.owner < b.owner;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, buffer_id& x) {
  return f(caf::meta::type_name("cudactor::buffer_id"), x.owner, x.slot, x.generation);
}

// "buffer 3.1" (slot 3, generation 1): how errors and reports name a buffer.
[[nodiscard]] std::string to_string(const buffer_id& id);

// How an operation uses a buffer. `none` is no access: a use that says nothing is refused.
enum class buffer_access : std::uint8_t { none, read, write, read_write };

[[nodiscard]] std::string_view to_string(buffer_access x) noexcept;
[[nodiscard]] constexpr bool reads(buffer_access a) noexcept {
  return a == buffer_access::read || a == buffer_access::read_write;
}
[[nodiscard]] constexpr bool writes(buffer_access a) noexcept {
  return a == buffer_access::write || a == buffer_access::read_write;
}

// One declared use: `bytes` bytes of `buffer` from `offset` (bytes 0: to the buffer's end).
struct buffer_use {
  buffer_id buffer;
  buffer_access access = buffer_access::none;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;

  [[nodiscard]] static buffer_use read(buffer_id b, std::uint64_t offset = 0,
                                       std::uint64_t bytes = 0) noexcept {
    return {b, buffer_access::read, offset, bytes};
  }
  [[nodiscard]] static buffer_use write(buffer_id b, std::uint64_t offset = 0,
                                        std::uint64_t bytes = 0) noexcept {
    return {b, buffer_access::write, offset, bytes};
  }
  [[nodiscard]] static buffer_use read_write(buffer_id b, std::uint64_t offset = 0,
                                             std::uint64_t bytes = 0) noexcept {
    return {b, buffer_access::read_write, offset, bytes};
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, buffer_use& x) {
  return f(caf::meta::type_name("cudactor::buffer_use"), x.buffer, x.access, x.offset, x.bytes);
}

// A buffer as the coordinator hands it out (allocate, adopt). `address` is the device address
// (host memory on the host backend) for kernels to use; `stream` is where it was allocated,
// whose order frees it; an adopted buffer is the caller's memory, never freed by cudactor.
struct buffer_handle {
  buffer_id id;
  stream_id stream;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  bool adopted = false;

  template <class T>
  [[nodiscard]] T* as() const noexcept {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(address));
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, buffer_handle& x) {
  return f(caf::meta::type_name("cudactor::buffer_handle"), x.id, x.stream, x.address, x.size,
           x.adopted);
}

// A dependency the coordinator inferred from declared uses: the operation comes after `dep`
// because of its `access` to `buffer`. `order_only`: it does not read what `dep` wrote (a
// write after a read, or after another write), so a failure of `dep` does not cancel it.
struct inferred_dep {
  op_id dep;
  buffer_id buffer;
  buffer_access access = buffer_access::none;
  bool order_only = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, inferred_dep& x) {
  return f(caf::meta::type_name("cudactor::inferred_dep"), x.dep, x.buffer, x.access, x.order_only);
}

}  // namespace cudactor
