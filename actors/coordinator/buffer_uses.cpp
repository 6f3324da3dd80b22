#include "cudactor/actors/coordinator/buffer_uses.hpp"

#include <algorithm>
#include <cassert>
#include <limits>

namespace cudactor::detail {

namespace {

// A block's room when it is made or must grow: reads of the same bytes come a few at a time
// between writes, so four fit before the first move.
constexpr std::uint32_t first_capacity = 4;

// Spare nodes kept for the next cuts: a write that merges many segments gives back more than
// the next few uses take, and the rest go back to the allocator.
constexpr std::size_t spare_nodes = 64;

}  // namespace

buffer_uses::buffer_uses(std::uint64_t size) : size_(size) {
  segment whole;
  whole.end = size;
  segments_.emplace(0, whole);
}

buffer_uses::buffer_uses(const buffer_uses& other)
    : size_(other.size_),
      segments_(other.segments_),
      readers_(other.readers_),
      unused_(other.unused_),
      poisons_(other.poisons_),
      entries_(other.entries_),
      records_(other.records_),
      kept_(other.kept_),
      compacted_at_(other.compacted_at_) {}

buffer_uses& buffer_uses::operator=(const buffer_uses& other) {
  if (this != &other) {
    buffer_uses copy{other};
    copy.spare_ = std::move(spare_);
    *this = std::move(copy);
  }
  return *this;
}

buffer_uses::position buffer_uses::insert_segment(const_position next, std::uint64_t begin,
                                                  const segment& s) {
  if (spare_.empty()) return segments_.emplace_hint(next, begin, s);
  segment_map::node_type node = std::move(spare_.back());
  spare_.pop_back();
  node.key() = begin;
  node.mapped() = s;
  return segments_.insert(next, std::move(node));
}

buffer_uses::position buffer_uses::erase_segment(position i) {
  const position next = std::next(i);
  if (spare_.size() < spare_nodes) {
    spare_.push_back(segments_.extract(i));
  } else {
    segments_.erase(i);
  }
  return next;
}

buffer_uses::position buffer_uses::move_begin(position i, std::uint64_t begin) {
  // Re-keyed in place of itself: the node goes out and back in next to its old neighbour,
  // with no allocation and no search.
  const position next = std::next(i);
  segment_map::node_type node = segments_.extract(i);
  node.key() = begin;
  return segments_.insert(next, std::move(node));
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
  for (auto& [begin, s] : segments_) {
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

buffer_uses::position buffer_uses::cut_inside(position i, std::uint64_t at) {
  // [begin, at) stays, [at, end) is a copy of it with the same users.
  segment tail = i->second;
  tail.capacity = 0;
  if (tail.readers > 0) {
    new_block(tail, std::max(first_capacity, tail.readers), readers_.data() + i->second.first,
              tail.readers);
  } else {
    tail.first = 0;
  }
  i->second.end = at;
  count(tail, +1);
  return insert_segment(std::next(i), at, tail);
}

void buffer_uses::record_from(position holder, byte_range range, buffer_access access, op_id op) {
  assert(range.begin < range.end && range.end <= size_);
  assert(holder == holding(range.begin));
  ++records_;
  if (writes(access)) {
    record_write(holder, range, op);
  } else {
    const position first = cut(holder, range.begin);
    // Cutting at the end inserts after `first`, which stays where it is. The segment holding
    // the end is found by walking on from `first`, not by a second search: the walk passes
    // the segments the read covers, which the loop below visits anyway.
    position last = segments_.end();
    if (range.end < size_) {
      position j = first;
      while (j->second.end <= range.end) ++j;  // ends before size_: a segment holds it
      last = cut(j, range.end);
    }
    for (position i = first; i != last; ++i) {
      segment& s = i->second;
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
void buffer_uses::record_write(position first, byte_range range, op_id op) {
  position i = first;
  segment written;
  written.end = range.end;
  written.writer = op;
  if (i->first < range.begin && i->second.end > range.end) {
    const position tail = cut(i, range.end);  // [range.end, old end) keeps the users
    i->second.end = range.begin;
    count(written, +1);
    insert_segment(tail, range.begin, written);
    return;
  }
  if (i->first < range.begin) {
    i->second.end = range.begin;  // the part before the write keeps its users
    ++i;
  }
  // Every segment from `i` on that begins inside the range: all of it covered but the last,
  // which may reach past the range's end.
  position j = i;
  bool reaches_past = false;
  for (; j != segments_.end() && j->first < range.end; ++j) {
    if (j->second.end > range.end) {
      reaches_past = true;
      break;
    }
    count(j->second, -1);
  }
  count(written, +1);
  if (j == i) {
    if (reaches_past) j = move_begin(j, range.end);  // keeps its users
    insert_segment(j, range.begin, written);
    return;
  }
  written.first = i->second.first;
  written.capacity = i->second.capacity;
  for (position k = std::next(i); k != j;) {
    drop_block(k->second);
    k = erase_segment(k);
  }
  if (reaches_past) j = move_begin(j, range.end);  // keeps its users
  if (i->first != range.begin) i = move_begin(i, range.begin);
  i->second = written;
}

void buffer_uses::merge_repeats(std::vector<use_edge>& out, std::size_t from) {
  const auto first = out.begin() + static_cast<std::ptrdiff_t>(from);
  std::sort(first, out.end(), [](const use_edge& a, const use_edge& b) {
    return a.op != b.op ? a.op < b.op : !a.order_only && b.order_only;  // a data edge first
  });
  out.erase(std::unique(first, out.end(),
                        [](const use_edge& a, const use_edge& b) { return a.op == b.op; }),
            out.end());
}

void buffer_uses::poison(byte_range range, op_id op, const caf::error& cause) {
  compacted_at_ = never_compacted;  // its segments changed without a record
  for (position i = holding(range.begin); i != segments_.end(); ++i) {
    if (i->first >= range.end) break;
    segment& s = i->second;
    if (s.writer != op) continue;
    // A new entry even where it has one: a cut's two halves share theirs.
    poisons_.push_back(cause);
    s.poison = static_cast<std::uint32_t>(poisons_.size());
  }
}

}  // namespace cudactor::detail
