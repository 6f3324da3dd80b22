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
  auto first = split(range.begin);
  if (range.end < size_) split(range.end);
  first = segments_.find(range.begin);
  if (writes(access)) {
    // One segment for the whole range, written by `op`, nothing read since, nothing poisoned.
    auto last = first;
    for (; last != segments_.end() && last->first < range.end; ++last) count(last->second, -1);
    segments_.erase(std::next(first), last);
    segment& s = first->second;
    s.end = range.end;
    s.writer = op;
    s.readers.clear();
    s.poison = caf::error{};
    count(s, +1);
    return;
  }
  for (auto it = first; it != segments_.end() && it->first < range.end; ++it) {
    auto& readers = it->second.readers;
    if (readers.empty() || readers.back() != op) {
      readers.push_back(op);
      ++entries_;
    }
  }
}

void buffer_uses::poison(byte_range range, op_id op, const caf::error& cause) {
  auto it = segments_.upper_bound(range.begin);
  --it;
  for (; it != segments_.end() && it->first < range.end; ++it) {
    if (it->second.writer == op) it->second.poison = cause;
  }
}

}  // namespace cudactor::detail
