// actors/coordinator/deadline_queue.hpp
//
// Limits kept by deadline, with one timer armed for the earliest rather than one per limit: a
// barrier generation crossed in microseconds used to set a timer of seconds each time, a
// thread woken per crossing. Each limit is an operation and the wait it belongs to. The owner
// arms the timer this asks for (to_arm, armed) and hands its firing back (fired), then takes
// the limits that are due. No CAF here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "cudactor/messaging/operation_types.hpp"

namespace cudactor::detail {

class deadline_queue {
 public:
  using key = std::pair<op_id, std::uint64_t>;  // an operation and its wait
  using handle = std::multimap<std::int64_t, key>::iterator;

  // What a limit not in the queue holds (a handle remove() leaves too).
  [[nodiscard]] handle none() noexcept { return by_time_.end(); }
  [[nodiscard]] handle add(std::int64_t at, key k) { return by_time_.emplace(at, k); }
  // Takes the limit out (none() is left alone) and leaves `h` none().
  void remove(handle& h) noexcept {
    if (h == by_time_.end()) return;
    by_time_.erase(h);
    h = by_time_.end();
  }
  [[nodiscard]] bool empty() const noexcept { return by_time_.empty(); }

  // The deadline a timer must be armed for now: the earliest, unless the timer armed already
  // fires no later than it.
  [[nodiscard]] std::optional<std::int64_t> to_arm() const noexcept {
    if (by_time_.empty()) return std::nullopt;
    const std::int64_t first = by_time_.begin()->first;
    if (armed_at_ != 0 && armed_at_ <= first) return std::nullopt;
    return first;
  }
  // The owner armed a timer for `at`, whose firing carries `token`.
  void armed(std::int64_t at, std::uint64_t token) noexcept {
    armed_at_ = at;
    token_ = token;
  }
  // Whether `token` is the armed timer's; nothing is armed any more then.
  [[nodiscard]] bool fired(std::uint64_t token) noexcept {
    if (armed_at_ == 0 || token != token_) return false;
    armed_at_ = 0;
    return true;
  }
  // The earliest limit due at `now`, taken out of the queue (its handle no longer valid);
  // none when none is due.
  [[nodiscard]] std::optional<key> take_due(std::int64_t now) {
    if (by_time_.empty() || by_time_.begin()->first > now) return std::nullopt;
    const key due = by_time_.begin()->second;
    by_time_.erase(by_time_.begin());
    return due;
  }

 private:
  std::multimap<std::int64_t, key> by_time_;
  std::int64_t armed_at_ = 0;  // the deadline the armed timer is for; 0: none armed
  std::uint64_t token_ = 0;
};

}  // namespace cudactor::detail
