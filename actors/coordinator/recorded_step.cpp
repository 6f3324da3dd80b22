#include "cudactor/actors/coordinator/recorded_step.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace cudactor::detail {

namespace {

using ranges = std::vector<byte_range>;

// Sorted, overlapping and touching ranges merged.
ranges merged(ranges in) {
  std::sort(in.begin(), in.end(),
            [](const byte_range& a, const byte_range& b) { return a.begin < b.begin; });
  ranges out;
  for (const byte_range& r : in) {
    if (!out.empty() && r.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, r.end);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

// Calls f(range, in_a, in_b) for the pieces of the union of two merged lists, each piece
// wholly inside or outside each list.
template <class F>
void pieces(const ranges& a, const ranges& b, F&& f) {
  std::vector<std::uint64_t> cuts;
  for (const auto* list : {&a, &b}) {
    for (const byte_range& r : *list) {
      cuts.push_back(r.begin);
      cuts.push_back(r.end);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  const auto inside = [](const ranges& list, std::uint64_t at) {
    auto it = std::upper_bound(list.begin(), list.end(), at,
                               [](std::uint64_t x, const byte_range& r) { return x < r.begin; });
    return it != list.begin() && at < std::prev(it)->end;
  };
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const bool in_a = inside(a, cuts[k]), in_b = inside(b, cuts[k]);
    if (in_a || in_b) f(byte_range{cuts[k], cuts[k + 1]}, in_a, in_b);
  }
}

// Disjoint ranges that do not touch, by first byte (to its end): what a step wrote so far.
// A tree, so that adding one costs O(log n) plus what it merges; a sorted list merged anew
// after each write made a step of many small writes to one buffer quadratic.
using written_map = std::map<std::uint64_t, std::uint64_t>;

void add(written_map& done, byte_range r) {
  auto it = done.upper_bound(r.begin);
  if (it != done.begin() && std::prev(it)->second >= r.begin) --it;  // overlaps or touches
  while (it != done.end() && it->first <= r.end) {
    r.begin = std::min(r.begin, it->first);
    r.end = std::max(r.end, it->second);
    it = done.erase(it);
  }
  done.emplace_hint(it, r.begin, r.end);
}

// `r` less what `done` covers.
ranges minus(const byte_range& r, const written_map& done) {
  ranges out;
  std::uint64_t at = r.begin;
  auto it = done.upper_bound(r.begin);
  if (it != done.begin()) --it;
  for (; it != done.end() && it->first < r.end && at < r.end; ++it) {
    if (it->second <= at) continue;
    if (it->first > at) out.push_back(byte_range{at, it->first});
    at = std::max(at, it->second);
  }
  if (at < r.end) out.push_back(byte_range{at, r.end});
  return out;
}

}  // namespace

std::vector<buffer_use> union_of_uses(const std::vector<recorded_step::op>& ops) {
  // By buffer (buffer_id's order), in a stable order: the bytes the step reads before
  // writing them (reads from outside the step), and the bytes it writes. Operations in the
  // graph's order, which is the order inference used; an operation's reads before its writes.
  struct seen {
    buffer_id id;
    ranges outside_reads;
    written_map written;
  };
  std::map<buffer_id, seen> by_buffer;
  const auto at = [&](const buffer_id& id) -> seen& {
    seen& s = by_buffer[id];
    s.id = id;
    return s;
  };
  for (const auto& op : ops) {
    for (std::size_t u = 0; u < op.uses.size(); ++u) {
      if (!reads(op.uses[u].access)) continue;
      seen& s = at(op.uses[u].buffer);
      for (const byte_range& r : minus(op.ranges[u], s.written)) s.outside_reads.push_back(r);
    }
    for (std::size_t u = 0; u < op.uses.size(); ++u) {
      if (!writes(op.uses[u].access)) continue;
      add(at(op.uses[u].buffer).written, op.ranges[u]);
    }
  }
  std::vector<buffer_use> out;
  for (auto& [key, entry] : by_buffer) {
    const buffer_id id = entry.id;
    const ranges read = merged(std::move(entry.outside_reads));
    ranges written;
    written.reserve(entry.written.size());
    for (const auto& [begin, end] : entry.written) written.push_back(byte_range{begin, end});
    // Adjacent pieces of the same access are one use.
    std::vector<buffer_use> mine;
    pieces(read, written, [&](const byte_range& r, bool is_read, bool is_written) {
      const buffer_access access = is_read && is_written ? buffer_access::read_write
                                   : is_written          ? buffer_access::write
                                                         : buffer_access::read;
      if (!mine.empty() && mine.back().access == access &&
          mine.back().offset + mine.back().bytes == r.begin) {
        mine.back().bytes += r.end - r.begin;
      } else {
        mine.push_back(buffer_use{id, access, r.begin, r.end - r.begin});
      }
    });
    out.insert(out.end(), mine.begin(), mine.end());
  }
  return out;
}

}  // namespace cudactor::detail
