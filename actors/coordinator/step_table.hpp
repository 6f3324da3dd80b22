// actors/coordinator/step_table.hpp
//
// The coordinator's recorded steps: a slot per step with a generation, so that the handle of
// a released step never names the step that later takes its slot; bounded (a recorded step
// holds its operations' work and plan until released). A replay in flight holds its step
// itself, so releasing one never pulls it from under a replay. No CAF actor, no device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cudactor/actors/coordinator/recorded_step.hpp"
#include "cudactor/messaging/step_types.hpp"

namespace cudactor::detail {

class step_table {
 public:
  struct entry {
    std::uint32_t generation = 0;
    std::shared_ptr<recorded_step> step;  // empty: the slot is free
    // Why it may not be replayed any more (a buffer it uses was released), or empty.
    std::string invalid;
  };

  explicit step_table(std::size_t max_steps = 1024) : max_(max_steps) {}

  // The new step's handle; nothing when the table is full.
  [[nodiscard]] std::optional<step_handle> add(std::shared_ptr<recorded_step> step) {
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      if (entries_.size() >= max_) return std::nullopt;
      slot = static_cast<std::uint32_t>(entries_.size());
      entries_.emplace_back();
    }
    entry& e = entries_[slot];
    ++e.generation;
    if (e.generation == 0) ++e.generation;  // 0 names no step
    e.step = std::move(step);
    e.invalid.clear();
    ++count_;
    return step_handle{slot, e.generation};
  }
  // The step `h` names, or null (never recorded here, or released).
  [[nodiscard]] entry* find(const step_handle& h) noexcept {
    if (h.empty() || h.slot >= entries_.size()) return nullptr;
    entry& e = entries_[h.slot];
    return e.step && e.generation == h.generation ? &e : nullptr;
  }
  // Forgets the step; false when `h` names none.
  bool remove(const step_handle& h) {
    entry* e = find(h);
    if (e == nullptr) return false;
    e->step.reset();
    e->invalid.clear();
    free_.push_back(h.slot);
    --count_;
    return true;
  }
  // f(entry&) for each step recorded.
  template <class F>
  void for_each(F&& f) {
    for (entry& e : entries_) {
      if (e.step) f(e);
    }
  }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t max() const noexcept { return max_; }

 private:
  std::size_t max_;
  std::vector<entry> entries_;
  std::vector<std::uint32_t> free_;
  std::size_t count_ = 0;
};

}  // namespace cudactor::detail
