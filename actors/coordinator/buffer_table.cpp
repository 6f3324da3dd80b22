#include "cudactor/actors/coordinator/buffer_table.hpp"

#include <string>

#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

buffer_table::buffer_table(std::uint32_t owner, std::size_t max_buffers)
    : owner_(owner), max_(max_buffers) {}

buffer_table::entry* buffer_table::add(std::uint64_t size, std::uint64_t address, bool adopted) {
  if (count_ >= max_) return nullptr;
  std::uint32_t slot = 0;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(entries_.size());
    entries_.emplace_back();
  }
  entry& e = entries_[slot];
  const std::uint32_t generation = e.generation + 1;
  e = entry{};
  e.generation = generation;
  e.used = true;
  e.handle.id = buffer_id{owner_, slot, generation};
  e.handle.address = address;
  e.handle.size = size;
  e.handle.adopted = adopted;
  e.uses.emplace(size);
  ++count_;
  return &e;
}

buffer_table::entry* buffer_table::find(const buffer_id& id, caf::error& why) {
  if (id.empty()) {
    why = make_error(errc::invalid_argument, "no buffer named (an empty buffer id)");
    return nullptr;
  }
  if (id.owner != owner_) {
    why = make_error(errc::foreign_handle,
                     to_string(id) + " is not this coordinator's (a handle from another one)");
    return nullptr;
  }
  if (id.slot >= entries_.size() || id.generation > entries_[id.slot].generation) {
    why = make_error(errc::invalid_argument, to_string(id) + " was never allocated here");
    return nullptr;
  }
  entry& e = entries_[id.slot];
  if (!e.used || e.generation != id.generation) {
    why = make_error(errc::invalid_state, to_string(id) + " was released and its memory reclaimed");
    return nullptr;
  }
  return &e;
}

buffer_table::entry* buffer_table::find_live(const buffer_id& id, caf::error& why) {
  entry* e = find(id, why);
  if (e == nullptr) return nullptr;
  if (e->state != phase::live) {
    why = make_error(errc::invalid_state, to_string(id) + " was released (by " +
                                              to_string(e->release) + "): it takes no new use");
    return nullptr;
  }
  return e;
}

caf::error buffer_table::check(const buffer_use& use, byte_range& out, entry*& found) {
  caf::error why;
  entry* e = find_live(use.buffer, why);
  if (e == nullptr) return make_error(static_cast<errc>(why.code()), ": " + error_context(why));
  const std::uint64_t size = e->handle.size;
  const std::uint64_t bytes = use.bytes == 0 && use.offset < size ? size - use.offset : use.bytes;
  if (use.offset >= size || bytes > size - use.offset) {
    return make_error(errc::out_of_range,
                      " uses bytes " + std::to_string(use.offset) + " to " +
                          std::to_string(use.offset) + " + " + std::to_string(use.bytes) + " of " +
                          to_string(use.buffer) + ", which has " + std::to_string(size) + " bytes");
  }
  out = byte_range{use.offset, use.offset + bytes};
  found = e;
  return {};
}

void buffer_table::remove(entry& e) {
  if (!e.used) return;
  const std::uint32_t slot = e.handle.id.slot;
  const std::uint32_t generation = e.generation;
  e = entry{};
  e.generation = generation;  // the next buffer here takes the one after
  free_.push_back(slot);
  --count_;
}

}  // namespace cudactor::detail
