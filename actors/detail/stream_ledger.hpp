// actors/detail/stream_ledger.hpp
//
// The published face of one stream's ledger. The stream actor keeps its stream's timeline
// (points handed out, issued, reached) and nobody else does; what others in the process must
// read of it to decide, it publishes here: its in-flight cap, how much of the cap is taken,
// and how far the stream has got. The coordinator chooses and fills streams by it without a
// copy of its own, so that no second count has to be reconciled with the first.
//
// The load is every point accepted or promised to the stream and not yet reached, whoever
// sent it. Two parties raise it: the stream actor for what is sent to it directly, the
// coordinator for each operation it stages for the stream (a reservation: the operation is
// in its pass, or in the stream's mailbox, and takes a point once accepted). Only the stream
// actor lowers it: as points are reached, and for a pass it refuses. Relaxed atomics: the
// load is advice for choosing a stream and keeping the cap; the stream actor's own issue
// check is what keeps the backend's bound.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "cudactor/gpu/types.hpp"

namespace cudactor::detail {

class stream_ledger {
 public:
  explicit stream_ledger(std::uint64_t cap) noexcept : cap_(std::max<std::uint64_t>(cap, 1)) {}
  stream_ledger(const stream_ledger&) = delete;
  stream_ledger& operator=(const stream_ledger&) = delete;

  // The stream actor's cap on points in flight (at most the backend's bound).
  [[nodiscard]] std::uint64_t cap() const noexcept { return cap_; }
  // Points accepted or reserved and not yet reached.
  [[nodiscard]] std::uint64_t load() const noexcept {
    return load_.load(std::memory_order_relaxed);
  }
  // Whether another operation may be sent now without waiting behind the cap.
  [[nodiscard]] bool has_room() const noexcept { return load() < cap_; }
  // Takes `n` of the cap: points sent or about to be sent.
  void reserve(std::uint64_t n = 1) noexcept { load_.fetch_add(n, std::memory_order_relaxed); }
  // Gives `n` back: points reached, or a pass refused before it took any. Never below zero.
  void release(std::uint64_t n) noexcept {
    std::uint64_t now = load_.load(std::memory_order_relaxed);
    while (!load_.compare_exchange_weak(now, now - std::min(now, n), std::memory_order_relaxed)) {
    }
  }
  // The newest point the stream actor knows reached (a wait on it or below is needless).
  [[nodiscard]] gpu::timeline_point completed() const noexcept {
    return completed_.load(std::memory_order_acquire);
  }
  void publish_completed(gpu::timeline_point point) noexcept {
    completed_.store(point, std::memory_order_release);
  }
  // A new stream in place of a broken one: nothing of the old one is in flight any more.
  void restart(gpu::timeline_point completed) noexcept {
    load_.store(0, std::memory_order_relaxed);
    completed_.store(completed, std::memory_order_release);
  }

 private:
  const std::uint64_t cap_;
  std::atomic<std::uint64_t> load_{0};
  std::atomic<gpu::timeline_point> completed_{0};
};

}  // namespace cudactor::detail
