#include "cudactor/actors/coordinator/buffer_uses.hpp"

#include <algorithm>
#include <cassert>
#include <limits>

namespace cudactor::detail {

namespace {

// A block's room when it is made or must grow: reads of the same bytes come a few at a time
// between writes, so four fit before the first move.
constexpr std::uint32_t first_capacity = 4;

}  // namespace

buffer_uses::buffer_uses(std::uint64_t size) : size_(size) {
  segment whole;
  whole.end = size;
  segments_.push_back(whole);
}

std::size_t buffer_uses::holding(std::uint64_t at) const noexcept {
  // The last segment beginning at or before `at`: segments tile the buffer from 0. A search
  // without branches on the comparisons (each step keeps one half by arithmetic, not by a
  // jump): which half holds `at` is a coin toss to the branch predictor, and the search with
  // branches was a quarter of the time of inferring and recording a use.
  const segment* base = segments_.data();
  std::size_t n = segments_.size();
  while (n > 1) {
    const std::size_t half = n / 2;
    base = base[half].begin <= at ? base + half : base;
    n -= half;
  }
  return static_cast<std::size_t>(base - segments_.data());
}

void buffer_uses::count(const segment& s, int sign) noexcept {
  const std::size_t n = (s.writer.empty() ? 0 : 1) + s.readers;
  if (sign > 0) {
    entries_ += n;
  } else {
    entries_ -= std::min(entries_, n);
  }
}

bool buffer_uses::alike(const segment& a, const segment& b) const {
  if (a.writer != b.writer || a.readers != b.readers) return false;
  const caf::error* pa = poison_of(a);
  const caf::error* pb = poison_of(b);
  if ((pa == nullptr) != (pb == nullptr) || (pa != nullptr && *pa != *pb)) return false;
  return std::equal(readers_.begin() + a.first, readers_.begin() + a.first + a.readers,
                    readers_.begin() + b.first);
}

void buffer_uses::new_block(segment& s, std::uint32_t capacity, const op_id* from,
                            std::uint32_t count) {
  // `from` may lie in readers_, which the resize may move: copied by index.
  const std::size_t source = from == nullptr ? 0 : static_cast<std::size_t>(from - readers_.data());
  const std::size_t at = readers_.size();
  // Offsets are 32-bit. A history holds about the readers of the work in flight (compaction
  // and packing see to that), and a graph's scratch history at most its own uses, bounded by
  // input_limits: far below 4G readers.
  assert(at + capacity <= std::numeric_limits<std::uint32_t>::max());
  readers_.resize(at + capacity);
  if (count > 0) {
    std::copy(readers_.begin() + static_cast<std::ptrdiff_t>(source),
              readers_.begin() + static_cast<std::ptrdiff_t>(source + count),
              readers_.begin() + static_cast<std::ptrdiff_t>(at));
  }
  s.first = static_cast<std::uint32_t>(at);
  s.capacity = capacity;
}

void buffer_uses::drop_block(segment& s) noexcept {
  unused_ += s.capacity;
  s.first = 0;
  s.readers = 0;
  s.capacity = 0;
}

void buffer_uses::grow_block(segment& s) {
  const std::uint32_t grown = std::max(first_capacity, 2 * s.capacity);
  const std::uint32_t old = s.capacity;
  new_block(s, grown, s.readers == 0 ? nullptr : readers_.data() + s.first, s.readers);
  unused_ += old;
}

void buffer_uses::repack() {
  std::vector<op_id> packed;
  std::vector<caf::error> poisons;
  packed.reserve(entries_ + first_capacity * segments_.size());
  for (segment& s : segments_) {
    const std::uint32_t at = static_cast<std::uint32_t>(packed.size());
    const std::uint32_t room = s.readers == 0 ? 0 : std::max(first_capacity, s.readers);
    packed.insert(packed.end(), readers_.begin() + s.first, readers_.begin() + s.first + s.readers);
    packed.resize(at + room);
    s.first = room == 0 ? 0 : at;
    s.capacity = room;
    if (s.poison != 0) {
      poisons.push_back(poisons_[s.poison - 1]);
      s.poison = static_cast<std::uint32_t>(poisons.size());
    }
  }
  readers_ = std::move(packed);
  poisons_ = std::move(poisons);
  unused_ = 0;
}

std::size_t buffer_uses::cut_inside(std::size_t i, std::uint64_t at) {
  // [begin, at) stays, [at, end) is a copy of it with the same users.
  segment tail = segments_[i];
  tail.begin = at;
  tail.capacity = 0;
  if (tail.readers > 0) {
    new_block(tail, std::max(first_capacity, tail.readers), readers_.data() + segments_[i].first,
              tail.readers);
  } else {
    tail.first = 0;
  }
  segments_[i].end = at;
  count(tail, +1);
  segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(i) + 1, tail);
  return i + 1;
}

void buffer_uses::record_from(std::size_t holder, byte_range range, buffer_access access,
                              op_id op) {
  assert(range.begin < range.end && range.end <= size_);
  assert(holder == holding(range.begin));
  ++records_;
  if (writes(access)) {
    record_write(holder, range, op);
  } else {
    const std::size_t first = cut(holder, range.begin);
    // Cutting at the end inserts after `first`, so `first` still names the same segment. The
    // segment holding the end is found by walking on from `first`, not by a second search:
    // the walk passes the segments the read covers, which the loop below visits anyway.
    std::size_t last = segments_.size();
    if (range.end < size_) {
      std::size_t j = first;
      while (segments_[j].end <= range.end) ++j;  // ends before size_: a segment holds it
      last = cut(j, range.end);
    }
    for (std::size_t i = first; i < last; ++i) {
      segment& s = segments_[i];
      if (s.readers == 0 || readers_[s.first + s.readers - 1] != op) add_reader(s, op);
    }
  }
  repack_if_sparse();
}

// One segment for the whole range, written by `op`, nothing read since, nothing poisoned.
// The segments it covers go (the first of them is reused for it, its block kept for the
// next reads of these bytes), the one that reaches into it from the left is cut short, the
// one that reaches out of it on the right now begins at its end. Only a write strictly inside
// one segment copies that segment's users, for the part after it.
void buffer_uses::record_write(std::size_t first, byte_range range, op_id op) {
  std::size_t i = first;
  segment written;
  written.begin = range.begin;
  written.end = range.end;
  written.writer = op;
  if (segments_[i].begin < range.begin && segments_[i].end > range.end) {
    const std::size_t tail = cut(i, range.end);  // [range.end, old end) keeps the users
    segments_[i].end = range.begin;
    count(written, +1);
    segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(tail), written);
    return;
  }
  if (segments_[i].begin < range.begin) {
    segments_[i].end = range.begin;  // the part before the write keeps its users
    ++i;
  }
  // Every segment from `i` on that begins inside the range: all of it covered but the last,
  // which may reach past the range's end.
  std::size_t j = i;
  for (; j < segments_.size() && segments_[j].begin < range.end; ++j) {
    if (segments_[j].end > range.end) {
      segments_[j].begin = range.end;  // keeps its users
      break;
    }
    count(segments_[j], -1);
  }
  count(written, +1);
  if (j == i) {
    segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(i), written);
    return;
  }
  written.first = segments_[i].first;
  written.capacity = segments_[i].capacity;
  for (std::size_t k = i + 1; k < j; ++k) drop_block(segments_[k]);
  segments_[i] = written;
  segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  segments_.begin() + static_cast<std::ptrdiff_t>(j));
}

void buffer_uses::poison(byte_range range, op_id op, const caf::error& cause) {
  for (std::size_t i = holding(range.begin); i < segments_.size(); ++i) {
    segment& s = segments_[i];
    if (s.begin >= range.end) break;
    if (s.writer != op) continue;
    // A new entry even where it has one: a cut's two halves share theirs.
    poisons_.push_back(cause);
    s.poison = static_cast<std::uint32_t>(poisons_.size());
  }
}

}  // namespace cudactor::detail
