// gpu/handle_id.hpp
//
// The identity inside every stream and event reference: which backend instance issued it,
// which slot of that backend's table it names, and the slot's generation when it was issued.
// A slot is reused after a destroy with a new generation, so a stale reference is detected,
// not confused with the new occupant; a reference from another backend is detected by the
// instance. Generation 0 never names anything: a default-constructed reference is empty.
#pragma once

#include <cstdint>
#include <string>

namespace cudactor::gpu {

struct handle_id {
  std::uint32_t instance = 0;
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;

  [[nodiscard]] bool empty() const noexcept { return generation == 0; }
  // Unique within one backend instance for its whole life: "slot.generation" packed.
  [[nodiscard]] std::uint64_t value() const noexcept {
    return (std::uint64_t{slot} << 32) | generation;
  }
  friend bool operator==(const handle_id& a, const handle_id& b) noexcept {
    return a.instance == b.instance && a.slot == b.slot && a.generation == b.generation;
  }
  friend bool operator!=(const handle_id& a, const handle_id& b) noexcept { return !(a == b); }
};

// "#3.1" (slot 3, generation 1), for messages.
[[nodiscard]] std::string to_string(const handle_id& id);

}  // namespace cudactor::gpu
