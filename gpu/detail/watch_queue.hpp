// gpu/detail/watch_queue.hpp
//
// One stream's pending watches, in the order they were made. A stream reaches its points in
// order, so the poller only ever queries the front. Cancelled and timed-out watches stay in
// place as tombstones and are dropped when they reach the front: removal never shifts the
// queue, and a watch is found by binary search on its sequence number, which only grows.
//
// duration_learner remembers how long the stream's recent work took to complete, so that the
// poller can sleep through most of an operation it can predict instead of polling it.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "cudactor/gpu/watch.hpp"

namespace cudactor::gpu::detail {

struct watch_entry {
  std::uint64_t sequence = 0;
  bool is_event = false;
  timeline_point point = 0;  // when !is_event
  event_ref event;           // when is_event
  watch_callback callback;   // may be empty: a watch that only drives progress reports
  watch_clock::time_point added{};
  bool has_deadline = false;
  bool live = true;
};

class watch_queue {
 public:
  // Sequence numbers must grow from one push to the next.
  void push(watch_entry entry);

  // The oldest live watch, or nullptr; drops tombstones in front of it.
  [[nodiscard]] watch_entry* front() noexcept;
  // Removes the live front and hands it over. Precondition: front() != nullptr.
  [[nodiscard]] watch_entry pop_front();

  // The live watch with this sequence number, or nullptr (answered, or never here).
  [[nodiscard]] watch_entry* find(std::uint64_t sequence) noexcept;
  // Turns a live watch (from find) into a tombstone and hands its contents over.
  [[nodiscard]] watch_entry take(watch_entry& entry);

  // Hands over every live watch, oldest first, and leaves the queue empty.
  template <class Fn>
  void drain(Fn&& fn) {
    for (auto& entry : entries_) {
      if (entry.live) fn(std::move(entry));
    }
    entries_.clear();
    live_ = 0;
  }

  [[nodiscard]] std::size_t live() const noexcept { return live_; }
  [[nodiscard]] bool empty() const noexcept { return live_ == 0; }
  // Entries held, tombstones included.
  [[nodiscard]] std::size_t held() const noexcept { return entries_.size(); }

 private:
  std::deque<watch_entry> entries_;
  std::size_t live_ = 0;
};

class duration_learner {
 public:
  static constexpr std::size_t window = 16;
  // Fewer samples than this predict nothing: a guess from one or two ops is noise.
  static constexpr std::size_t min_samples = 4;

  void observe(std::chrono::nanoseconds sample) noexcept;

  // The shortest of the last `window` samples, once there are enough. The shortest, not the
  // mean: sleeping through it can only delay a completion that is faster than anything seen
  // lately, and then by little.
  [[nodiscard]] std::optional<std::chrono::nanoseconds> shortest() const noexcept;

 private:
  std::array<std::chrono::nanoseconds, window> samples_{};
  std::size_t count_ = 0;  // samples seen, saturating at window
  std::size_t next_ = 0;
};

}  // namespace cudactor::gpu::detail
