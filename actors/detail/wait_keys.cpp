#include "cudactor/actors/detail/wait_keys.hpp"

#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

std::string readable(caf::timespan t) {
  const auto ns = t.count();
  if (ns % 1000000000 == 0) return std::to_string(ns / 1000000000) + " s";
  if (ns % 1000000 == 0) return std::to_string(ns / 1000000) + " ms";
  if (ns % 1000 == 0) return std::to_string(ns / 1000) + " us";
  return std::to_string(ns) + " ns";
}

caf::error check_limit(const wait_limit& limit, const std::string& what) {
  if (limit.limit.count() >= 0) return {};
  return make_error(errc::invalid_argument, what + ": a negative time limit (" +
                                                std::to_string(limit.limit.count()) +
                                                " ns): a deadline already past");
}

std::uint64_t wait_keys::add(const caf::actor_addr& owner, std::uint64_t key, std::uint64_t where) {
  const std::uint64_t id = next_++;
  open_.emplace(id, open_wait{where, owner, key});
  // A key used again while its first wait is open now names the newer one.
  if (key != 0) by_key_[{owner, key}] = id;
  return id;
}

const std::uint64_t* wait_keys::find(std::uint64_t id) const {
  auto found = open_.find(id);
  return found == open_.end() ? nullptr : &found->second.where;
}

wait_keys::taken wait_keys::take(const caf::actor_addr& owner, std::uint64_t key) {
  auto found = by_key_.find({owner, key});
  if (found == by_key_.end()) return {};
  const std::uint64_t id = found->second;
  by_key_.erase(found);
  auto open = open_.find(id);
  const std::uint64_t where = open->second.where;
  open_.erase(open);
  return {id, where};
}

void wait_keys::forget(std::uint64_t id) {
  auto found = open_.find(id);
  if (found == open_.end()) return;
  if (found->second.key != 0) {
    auto k = by_key_.find({found->second.owner, found->second.key});
    if (k != by_key_.end() && k->second == id) by_key_.erase(k);
  }
  open_.erase(found);
}

void wait_keys::clear() noexcept {
  open_.clear();
  by_key_.clear();
}

}  // namespace cudactor::detail
