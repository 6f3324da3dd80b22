#include "cudactor/actors/detail/buffer_uses.hpp"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace cudactor::detail {

buffer_uses::buffer_uses(std::uint64_t size) : size_(size) {
  segment whole;
  whole.end = size;
  segments_.emplace(0, std::move(whole));
}

void buffer_uses::count(const segment& s, int sign) noexcept {
  const std::size_t n = (s.writer.empty() ? 0 : 1) + s.readers.size();
  if (sign > 0) {
    entries_ += n;
  } else {
    entries_ -= std::min(entries_, n);
  }
}

bool buffer_uses::alike(const segment& a, const segment& b) {
  return a.writer == b.writer && a.readers == b.readers && a.poison == b.poison;
}

void buffer_uses::add_edge(std::vector<use_edge>& out, std::size_t from, op_id op,
                           bool order_only) {
  for (std::size_t i = from; i < out.size(); ++i) {
    if (out[i].op == op) {
      out[i].order_only = out[i].order_only && order_only;  // a data edge wins
      return;
    }
  }
  out.push_back(use_edge{op, order_only});
}

buffer_uses::map::iterator buffer_uses::split(std::uint64_t at) {
  auto it = segments_.upper_bound(at);
  --it;
  if (it->first == at) return it;
  // [it->first, at) stays, [at, end) is a copy of it with the same users.
  segment tail = it->second;
  it->second.end = at;
  count(tail, +1);
  return segments_.emplace_hint(std::next(it), at, std::move(tail));
}

void buffer_uses::record(byte_range range, buffer_access access, op_id op) {
  assert(range.begin < range.end && range.end <= size_);
  ++records_;
  if (writes(access)) {
    record_write(range, op);
    return;
  }
  auto first = split(range.begin);
  if (range.end < size_) split(range.end);
  first = segments_.find(range.begin);
  for (auto it = first; it != segments_.end() && it->first < range.end; ++it) {
    auto& readers = it->second.readers;
    if (readers.empty() || readers.back() != op) {
      readers.push_back(op);
      ++entries_;
    }
  }
}

// One segment for the whole range, written by `op`, nothing read since, nothing poisoned.
// Written without copying what it replaces: the segments it covers go, the one that
// reaches into it from the left is cut short, the one that reaches out of it on the right
// is moved to begin at its end (its node re-keyed, not reallocated). Only a write strictly
// inside one segment copies that segment's users, for the part after it.
void buffer_uses::record_write(byte_range range, op_id op) {
  auto it = segments_.upper_bound(range.begin);
  --it;  // the segment holding range.begin
  if (it->first < range.begin && it->second.end > range.end) {
    segment tail = it->second;  // [range.end, old end) keeps the users
    count(tail, +1);
    it->second.end = range.begin;
    segment written;
    written.end = range.end;
    written.writer = op;
    count(written, +1);
    auto at = segments_.emplace_hint(std::next(it), range.begin, std::move(written));
    segments_.emplace_hint(std::next(at), range.end, std::move(tail));
    return;
  }
  if (it->first < range.begin) {
    it->second.end = range.begin;  // the part before the write keeps its users
    ++it;
  }
  // Every segment from `it` on that begins inside the range: all of it covered but the last,
  // which may reach past the range's end.
  map::node_type reused;
  while (it != segments_.end() && it->first < range.end) {
    segment& s = it->second;
    if (s.end > range.end) {
      // Re-keyed to begin at the range's end, with its users.
      auto node = segments_.extract(it);
      node.key() = range.end;
      it = segments_.insert(std::move(node)).position;
      break;
    }
    count(s, -1);
    auto next = std::next(it);
    if (reused.empty()) {
      reused = segments_.extract(it);
    } else {
      segments_.erase(it);
    }
    it = next;
  }
  if (reused.empty()) {
    segment written;
    written.end = range.end;
    segments_.emplace(range.begin, std::move(written));
    reused = segments_.extract(range.begin);
  }
  // The readers' storage is kept for the next reads of these bytes.
  segment& w = reused.mapped();
  w.end = range.end;
  w.writer = op;
  w.readers.clear();
  w.poison = caf::error{};
  count(w, +1);
  reused.key() = range.begin;
  segments_.insert(std::move(reused));
}

void buffer_uses::poison(byte_range range, op_id op, const caf::error& cause) {
  auto it = segments_.upper_bound(range.begin);
  --it;
  for (; it != segments_.end() && it->first < range.end; ++it) {
    if (it->second.writer == op) it->second.poison = cause;
  }
}

}  // namespace cudactor::detail
