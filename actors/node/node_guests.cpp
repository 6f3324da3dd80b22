// actors/node/node_guests.cpp
#include "cudactor/actors/node/node_guests.hpp"

#include <algorithm>

namespace cudactor::detail {

std::vector<caf::node_id> node_guests::admit(const std::string& token, quota q) {
  auto it = by_token_.find(token);
  if (q.max_open_ops == 0) {
    if (it == by_token_.end()) return {};
    std::vector<caf::node_id> gone = std::move(it->second.guests);
    for (const auto& g : gone) by_node_.erase(g);
    token_of_.erase(it->second.id);
    by_token_.erase(it);
    return gone;
  }
  if (it == by_token_.end()) {
    it = by_token_.emplace(token, admission{}).first;
    it->second.id = next_id_++;
    token_of_.emplace(it->second.id, token);
  }
  it->second.limits = q;
  it->second.used = std::chrono::nanoseconds{0};
  return {};
}

bool node_guests::claim(const std::string& token, const caf::node_id& guest) {
  auto it = by_token_.find(token);
  if (it == by_token_.end()) return false;
  auto known = by_node_.find(guest);
  if (known != by_node_.end()) return known->second == it->second.id;
  it->second.guests.push_back(guest);
  by_node_.emplace(guest, it->second.id);
  return true;
}

std::uint64_t node_guests::admission_of(const caf::node_id& node) const {
  auto it = by_node_.find(node);
  return it == by_node_.end() ? 0 : it->second;
}

std::string node_guests::refusal(std::uint64_t id, std::uint64_t ops) const {
  const admission* a = find(id);
  if (a == nullptr) return "its admission was revoked";
  if (a->open_ops + ops > a->limits.max_open_ops) {
    return "a guest's quota: " + std::to_string(a->open_ops) + " operations open and " +
           std::to_string(ops) + " more exceed the " + std::to_string(a->limits.max_open_ops) +
           " its owner admitted; retry later";
  }
  if (a->used >= a->limits.stream_time) {
    using ms = std::chrono::milliseconds;
    return "a guest's quota: it used " +
           std::to_string(std::chrono::duration_cast<ms>(a->used).count()) +
           " ms of stream time, of the " +
           std::to_string(std::chrono::duration_cast<ms>(a->limits.stream_time).count()) +
           " ms its owner admitted";
  }
  return {};
}

void node_guests::opened(std::uint64_t id, std::uint64_t ops) {
  if (admission* a = find(id)) a->open_ops += ops;
}

void node_guests::closed(std::uint64_t id, std::uint64_t ops) {
  if (admission* a = find(id)) a->open_ops -= std::min(a->open_ops, ops);
}

void node_guests::charge(std::uint64_t id, std::chrono::nanoseconds used) {
  if (admission* a = find(id); a != nullptr && used.count() > 0) a->used += used;
}

void node_guests::forget(const caf::node_id& guest) {
  auto it = by_node_.find(guest);
  if (it == by_node_.end()) return;
  if (admission* a = find(it->second)) {
    a->guests.erase(std::remove(a->guests.begin(), a->guests.end(), guest), a->guests.end());
  }
  by_node_.erase(it);
}

std::vector<caf::node_id> node_guests::clear() {
  std::vector<caf::node_id> all;
  for (const auto& [node, id] : by_node_) all.push_back(node);
  by_node_.clear();
  by_token_.clear();
  token_of_.clear();
  return all;
}

std::uint64_t node_guests::open_ops(const std::string& token) const {
  auto it = by_token_.find(token);
  return it == by_token_.end() ? 0 : it->second.open_ops;
}

std::chrono::nanoseconds node_guests::used(const std::string& token) const {
  auto it = by_token_.find(token);
  return it == by_token_.end() ? std::chrono::nanoseconds{0} : it->second.used;
}

node_guests::admission* node_guests::find(std::uint64_t id) {
  return const_cast<admission*>(static_cast<const node_guests*>(this)->find(id));
}

const node_guests::admission* node_guests::find(std::uint64_t id) const {
  auto t = token_of_.find(id);
  if (t == token_of_.end()) return nullptr;
  auto a = by_token_.find(t->second);
  return a == by_token_.end() ? nullptr : &a->second;
}

}  // namespace cudactor::detail
