// actors/coordinator/buffer_table.hpp
//
// The coordinator's buffers: a slot per buffer with a generation (a handle of a released
// buffer never names the buffer that later takes its slot), the memory behind it (allocated
// by a stream actor in its stream's order, or adopted from the caller and never freed here),
// its use history (buffer_uses) and where it stands: live, or released and waiting for its
// last users, or kept back after a device loss. Checks every use an operation declares: the
// buffer is ours and live, the range lies inside it. No CAF actor, no device.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <optional>
#include <vector>

#include "cudactor/actors/coordinator/buffer_uses.hpp"
#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/types.hpp"

namespace cudactor::detail {

class buffer_table {
 public:
  enum class phase : std::uint8_t {
    live,       // takes uses
    releasing,  // released: its release operation waits for the last users
    kept,       // its release failed with the device: its memory is not reused until reset
  };

  struct entry {
    std::uint32_t generation = 0;
    bool used = false;  // the slot holds a buffer
    phase state = phase::live;
    buffer_handle handle;
    std::uint32_t home = 0;  // the pool index of the stream it was allocated on (allocated ones)
    buffer_ref memory;       // the stream actor's allocation; empty when adopted
    op_id release;           // its release operation, once released
    std::optional<buffer_uses> uses;
  };

  // `owner`: this coordinator's tag in every id it issues; `max_buffers`: how many may exist at
  // once (live or waiting for reclamation).
  buffer_table(std::uint32_t owner, std::size_t max_buffers);

  // A new buffer of `size` bytes at `address`; nothing when the table is full.
  [[nodiscard]] entry* add(std::uint64_t size, std::uint64_t address, bool adopted);

  // The entry `id` names, whatever its phase, or why there is none (never ours, or its slot
  // moved on).
  [[nodiscard]] entry* find(const buffer_id& id, caf::error& why);
  // The live entry `id` names, or why not (also: released).
  [[nodiscard]] entry* find_live(const buffer_id& id, caf::error& why);

  // A use an operation declares, checked against the table: the buffer is live and ours, the
  // range inside it. The range it covers in `out`, its entry in `found`. The error's text
  // follows the operation's name (": ..." or " uses bytes ..."), which the caller puts first.
  [[nodiscard]] caf::error check(const buffer_use& use, byte_range& out, entry*& found);
  // The same checks, for the common case that they pass: the entry and the range in `out`, or
  // nullptr, and check() says why. Inline and without an error to build or destroy: every
  // use of every operation comes through here, and check() cost more than inferring its
  // dependencies did.
  [[nodiscard]] entry* passing(const buffer_use& use, byte_range& out) noexcept {
    const buffer_id& id = use.buffer;
    if (id.empty() || id.owner != owner_ || id.slot >= entries_.size()) return nullptr;
    entry& e = entries_[id.slot];
    if (!e.used || e.generation != id.generation || e.state != phase::live) return nullptr;
    const std::uint64_t size = e.handle.size;
    if (use.offset >= size) return nullptr;
    const std::uint64_t bytes = use.bytes == 0 ? size - use.offset : use.bytes;
    if (bytes > size - use.offset) return nullptr;
    out = byte_range{use.offset, use.offset + bytes};
    return &e;
  }

  // The buffer in `slot` (a slot a checked id named).
  [[nodiscard]] entry* find_slot(std::uint32_t slot) { return &entries_[slot]; }

  // The slot is free again (its memory went back, or was the caller's).
  void remove(entry& e);

  // Calls f(entry&) for every buffer in the table.
  template <class F>
  void for_each(F&& f) {
    for (auto& e : entries_) {
      if (e.used) f(e);
    }
  }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& e : entries_) {
      if (e.used) f(e);
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::uint32_t owner() const noexcept { return owner_; }

 private:
  std::uint32_t owner_;
  std::size_t max_;
  std::vector<entry> entries_;
  std::vector<std::uint32_t> free_;  // slots to take again
  std::size_t count_ = 0;
};

}  // namespace cudactor::detail
