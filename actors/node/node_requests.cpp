// actors/node/node_requests.cpp
#include "cudactor/actors/node/node_requests.hpp"

#include <algorithm>

#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

caf::error node_requests::named(errc code, const std::string& what) const {
  return make_error(code, "node '" + node_ + "': " + what);
}

caf::error node_requests::refusal(std::size_t ops, std::uint64_t bytes) const {
  if (pending_.size() >= max_pending_) {
    return named(errc::resource_exhausted, std::to_string(pending_.size()) +
                                               " requests are open (limit max-pending); retry "
                                               "later");
  }
  if (ops_ + ops > max_pending_ops_) {
    return named(errc::resource_exhausted,
                 std::to_string(ops_) + " operations of open requests and " + std::to_string(ops) +
                     " more exceed " + std::to_string(max_pending_ops_) +
                     " (limit max-pending-ops); retry later");
  }
  if (bytes > max_transfer_bytes_ - std::min(bytes_, max_transfer_bytes_)) {
    return named(errc::resource_exhausted,
                 std::to_string(bytes_) + " bytes of open stores and fetches and " +
                     std::to_string(bytes) + " more exceed " + std::to_string(max_transfer_bytes_) +
                     " (limit max-transfer-bytes); retry later");
  }
  return {};
}

std::uint64_t node_requests::open(pending_request::answer kind, std::size_t ops,
                                  const caf::node_id& from, std::uint64_t admission,
                                  std::uint64_t bytes) {
  const std::uint64_t key = next_key_++;
  pending_request& p = pending_[key];
  p.kind = kind;
  p.ops = ops;
  p.from = from;
  p.admission = admission;
  p.bytes = bytes;
  ops_ += ops;
  bytes_ += bytes;
  if (admission == 0) ++owners_;
  return key;
}

pending_request* node_requests::find(std::uint64_t key) {
  auto it = pending_.find(key);
  return it == pending_.end() ? nullptr : &it->second;
}

void node_requests::registered(std::uint64_t key, const std::vector<op_id>& ids) {
  auto it = pending_.find(key);
  if (it == pending_.end()) {  // answered already (shutting down): its ends go nowhere
    for (op_id id : ids) early_.erase(id.value);
    return;
  }
  pending_request& p = it->second;
  p.ids = ids;
  p.ends.resize(ids.size());
  std::vector<op_id> cancelling;
  for (std::uint32_t i = 0; i < ids.size(); ++i) {
    auto e = early_.find(ids[i].value);
    if (e != early_.end()) {
      if (on_ended) on_ended(p, e->second);
      p.ends[i] = std::move(e->second);
      early_.erase(e);
      ++p.told;
    } else {
      by_op_.emplace(ids[i].value, std::make_pair(key, i));
      if (p.cancelled) cancelling.push_back(ids[i]);
    }
  }
  if (!cancelling.empty()) cancel_ops(std::move(cancelling));
  if (p.told == p.ids.size()) answer(key, p.ends);
}

void node_requests::told(std::vector<op_notice>& notices, bool keep_early) {
  for (op_notice& n : notices) {
    auto it = by_op_.find(n.id.value);
    if (it == by_op_.end()) {
      if (keep_early) early_.emplace(n.id.value, std::move(n));
      continue;
    }
    const auto [key, index] = it->second;
    by_op_.erase(it);
    auto p = pending_.find(key);
    if (p == pending_.end()) continue;
    if (on_ended) on_ended(p->second, n);
    p->second.ends[index] = std::move(n);
    if (++p->second.told == p->second.ids.size()) answer(key, p->second.ends);
  }
}

void node_requests::answer(std::uint64_t key, std::vector<op_notice>& ends) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return;  // answered shutting_down already
  if (ends.size() != it->second.ops) {
    fail(key, named(errc::backend_error, "the coordinator answered " + std::to_string(ends.size()) +
                                             " ends for " + std::to_string(it->second.ops) +
                                             " operations"));
    return;
  }
  pending_request& p = it->second;
  switch (p.kind) {
    case pending_request::answer::graph: p.graph.deliver(std::move(ends)); break;
    case pending_request::answer::single: p.single.deliver(std::move(ends.front())); break;
    case pending_request::answer::replay:  // answered with its outcome, never with ends
      p.replayed.deliver(named(errc::backend_error, "a replay answered with ends"));
      break;
    case pending_request::answer::fetch:
      if (ends.front().state == op_state::completed) {
        p.fetched.deliver(std::move(*p.into));
      } else {
        p.fetched.deliver(named(errc::op_failed, "fetch: " + error_context(ends.front().cause)));
      }
      break;
  }
  finished(it);
}

void node_requests::fail(std::uint64_t key, const caf::error& why) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return;
  pending_request& p = it->second;
  switch (p.kind) {
    case pending_request::answer::graph: p.graph.deliver(why); break;
    case pending_request::answer::single: p.single.deliver(why); break;
    case pending_request::answer::fetch: p.fetched.deliver(why); break;
    case pending_request::answer::replay: p.replayed.deliver(why); break;
  }
  finished(it);
}

void node_requests::answer(std::uint64_t key, step_outcome& outcome) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return;  // answered shutting_down already
  if (it->second.kind != pending_request::answer::replay) {
    fail(key, named(errc::backend_error, "a request answered with a step's outcome"));
    return;
  }
  it->second.replayed.deliver(std::move(outcome));
  finished(it);
}

void node_requests::cancel_from(const caf::node_id& gone) {
  std::vector<op_id> cancelling;
  for (auto& [key, p] : pending_) {
    if (p.from != gone || p.cancelled) continue;
    p.cancelled = true;
    for (op_id id : p.ids) {
      if (by_op_.count(id.value) != 0) cancelling.push_back(id);
    }
  }
  if (!cancelling.empty()) cancel_ops(std::move(cancelling));
}

std::vector<step_handle> node_requests::replays_from(const caf::node_id& from) const {
  std::vector<step_handle> out;
  for (const auto& [key, p] : pending_) {
    if (p.kind == pending_request::answer::replay && p.from == from) out.push_back(p.step);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void node_requests::close(const caf::error& why) {
  std::vector<std::uint64_t> keys;
  keys.reserve(pending_.size());
  for (const auto& [key, unused] : pending_) keys.push_back(key);
  for (auto key : keys) fail(key, why);
  by_op_.clear();
  early_.clear();
}

void node_requests::finished(std::unordered_map<std::uint64_t, pending_request>::iterator it) {
  const std::uint64_t key = it->first;
  ops_ -= it->second.ops;
  bytes_ -= it->second.bytes;
  if (it->second.admission == 0) --owners_;
  const pending_request done = std::move(it->second);
  pending_.erase(it);
  if (on_closed) on_closed(key, done);
}

}  // namespace cudactor::detail
