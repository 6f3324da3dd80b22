// actors/detail/wait_keys.hpp
//
// The bookkeeping every actor with bounded waits shares (stream, barrier, coordinator): each
// such wait gets an id of the actor's own, under which its timer fires and by which the
// sender's withdraw key finds it. The actor keeps its waits where it always did (by point,
// by generation, by operation) and tags them with the id; whichever end comes first (the
// answer, the limit, the withdraw) forgets the id, so the others find nothing.
#pragma once

#include <caf/actor_addr.hpp>
#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "cudactor/messaging/types.hpp"

namespace cudactor::detail {

// "2 s", "150 ms", "20 us", "7 ns": a limit in the words of an error message.
[[nodiscard]] std::string readable(caf::timespan t);

// The longest a wait is kept: a longer limit (std::chrono::nanoseconds::max() for one) waits
// this long, no end in practice, where now + limit would overflow the clock and the wait
// would end at once. 100 years past the clock's epoch still fits in 64-bit nanoseconds.
inline constexpr caf::timespan longest_limit{std::chrono::hours{24 * 365 * 100}};

// `limit` held to longest_limit: what every timer and deadline of a wait is computed from.
[[nodiscard]] inline caf::timespan held_limit(caf::timespan limit) noexcept {
  return limit < longest_limit ? limit : longest_limit;
}

// invalid_argument naming `what` for a negative limit; empty otherwise.
[[nodiscard]] caf::error check_limit(const wait_limit& limit, const std::string& what);

class wait_keys {
 public:
  // Whether a wait needs an id at all (a limit or a key).
  [[nodiscard]] static bool bounded(const wait_limit& limit) noexcept {
    return limit.limit.count() > 0 || limit.key != 0;
  }
  // A new wait's id (never 0), with `where` (a point, a generation, an op id: the actor's
  // own index of the wait) and the sender's key (0: cannot be withdrawn).
  std::uint64_t add(const caf::actor_addr& owner, std::uint64_t key, std::uint64_t where);
  // An id no wait will take: for another timer of the actor's that shares its expire message.
  std::uint64_t reserve() noexcept { return next_++; }
  // The wait's `where`, when it is still open.
  [[nodiscard]] const std::uint64_t* find(std::uint64_t id) const;
  // The wait `owner` made under `key`, forgotten; id 0 when there is none open.
  struct taken {
    std::uint64_t id = 0;
    std::uint64_t where = 0;
  };
  taken take(const caf::actor_addr& owner, std::uint64_t key);
  // The wait ended another way (answered, timed out).
  void forget(std::uint64_t id);
  void clear() noexcept;
  [[nodiscard]] std::size_t size() const noexcept { return open_.size(); }

 private:
  struct open_wait {
    std::uint64_t where = 0;
    caf::actor_addr owner;
    std::uint64_t key = 0;
  };
  std::uint64_t next_ = 1;
  std::unordered_map<std::uint64_t, open_wait> open_;
  std::map<std::pair<caf::actor_addr, std::uint64_t>, std::uint64_t> by_key_;
};

}  // namespace cudactor::detail
