#include "cudactor/actors/coordinator/recorded_step.hpp"

#include <algorithm>
#include <map>
#include <tuple>
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

}  // namespace

std::vector<buffer_use> union_of_uses(const std::vector<recorded_step::op>& ops) {
  // By buffer (slot, generation, owner), in a stable order: reads and writes.
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>,
           std::pair<buffer_id, std::pair<ranges, ranges>>>
      by_buffer;
  for (const auto& op : ops) {
    for (std::size_t u = 0; u < op.uses.size(); ++u) {
      const buffer_use& use = op.uses[u];
      auto& [id, both] = by_buffer[{use.buffer.slot, use.buffer.generation, use.buffer.owner}];
      id = use.buffer;
      if (reads(use.access)) both.first.push_back(op.ranges[u]);
      if (writes(use.access)) both.second.push_back(op.ranges[u]);
    }
  }
  std::vector<buffer_use> out;
  for (auto& [key, entry] : by_buffer) {
    const buffer_id id = entry.first;
    const ranges read = merged(std::move(entry.second.first));
    const ranges written = merged(std::move(entry.second.second));
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
