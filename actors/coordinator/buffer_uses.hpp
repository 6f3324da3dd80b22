// actors/coordinator/buffer_uses.hpp
//
// One buffer's history of declared uses, in submission order, and what a new use must come
// after: StarPU's sequential consistency over byte ranges. A read comes after the last write
// of every byte it reads (a data dependency: if that write failed, the read is cancelled); a
// write comes after the last write and every read since (an order-only dependency: it
// replaces those bytes, whatever became of the earlier users). Uses of disjoint ranges order
// nothing. A writer that ended without writing (failed, cancelled) poisons the bytes it was
// the last writer of, until an operation writes them without reading them.
//
// The buffer is cut into segments, each with its last writer and the readers since (kept in
// one arena of blocks, so that the history allocates only as it grows); a write merges what
// it covers into one segment, and compact() drops users that no longer need to
// be waited for and merges neighbours that became alike, so the history stays as small as
// the work in flight. Segments live in an ordered tree, not a sorted vector: cutting one
// costs the same whatever the history holds (a vector shifted every segment after the cut,
// and a graph of 8192 operations each writing 64 interleaved bytes took 55 s to register).
// The coordinator bounds how many segments a history may hold (coordinator_options::
// max_buffer_segments). No CAF actor, no device: the coordinator owns one per buffer.
#pragma once

#include <caf/error.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/operation_types.hpp"

namespace cudactor::detail {

// A byte range [begin, end).
struct byte_range {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// What a new use must come after.
struct use_edge {
  op_id op;
  bool order_only = false;
};

class buffer_uses {
 public:
  explicit buffer_uses(std::uint64_t size);
  // A copy holds the same history (a graph infers from copies); the spare tree nodes stay.
  buffer_uses(const buffer_uses& other);
  buffer_uses& operator=(const buffer_uses& other);
  buffer_uses(buffer_uses&&) noexcept = default;
  buffer_uses& operator=(buffer_uses&&) noexcept = default;
  ~buffer_uses() = default;

  // What an operation using `range` with `access` must come after, appended to `out` (each
  // operation once; a data edge wins over an order-only one), and the cause of the first
  // poisoned byte it reads (empty if none). `waited(op)`: whether `op` is still to be waited
  // for (not ended, or still on the device); others are left out. Returns how many segments
  // the range covers: the work it took, which the coordinator bounds per graph.
  template <class Waited>
  std::size_t infer(byte_range range, buffer_access access, Waited&& waited,
                    std::vector<use_edge>& out, caf::error& poisoned) const {
    return infer_from(holding(range.begin), range, access, waited, out, poisoned);
  }

  // Makes the use the newest: call it in submission order, after infer().
  void record(byte_range range, buffer_access access, op_id op) {
    record_from(holding(range.begin), range, access, op);
  }

  // infer(), then record(), with one search for where the range begins: for a use that no
  // other use of the same operation overlaps in this buffer (recording this one first could
  // hide, from that other use, a user it must come after).
  template <class Waited>
  std::size_t infer_and_record(byte_range range, buffer_access access, Waited&& waited, op_id op,
                               std::vector<use_edge>& out, caf::error& poisoned) {
    const position at = holding(range.begin);
    const std::size_t covered = infer_from(at, range, access, waited, out, poisoned);
    record_from(at, range, access, op);
    return covered;
  }

  // `op` ended without writing what it declared to write in `range`: the bytes it is still the
  // last writer of are poisoned with `cause`.
  void poison(byte_range range, op_id op, const caf::error& cause);

  // Drops the users no longer to be waited for and merges neighbouring segments left alike.
  // `let_go`: how many users the caller has stopped waiting for so far, a count that only
  // grows. Compacting again at the same count with nothing recorded, poisoned or renamed since
  // would drop nothing, so it does nothing: a caller that compacts before each refusal of a
  // full history (every one of its users still waited for) does not go through it each time.
  template <class Waited>
  void compact(Waited&& waited, std::uint64_t let_go);
  // Whether compact(waited, let_go) would go through the history.
  [[nodiscard]] bool compaction_may_drop(std::uint64_t let_go) const noexcept {
    return records_ != 0 || let_go != compacted_at_;
  }

  // Calls f(op) for every user still in the history (some more than once): a release comes
  // after all of them.
  template <class F>
  void for_each_user(F&& f) const {
    for (const auto& [begin, seg] : segments_) {
      if (!seg.writer.empty()) f(seg.writer);
      for (std::uint32_t k = 0; k < seg.readers; ++k) f(readers_[seg.first + k]);
    }
  }

  // Renames every user: f(op) gives its new id (a graph's users, registered under scratch ids
  // before their real ones were known).
  template <class F>
  void rename(F&& f) {
    compacted_at_ = never_compacted;
    for (auto& [begin, seg] : segments_) {
      if (!seg.writer.empty()) seg.writer = f(seg.writer);
      for (std::uint32_t k = 0; k < seg.readers; ++k) {
        readers_[seg.first + k] = f(readers_[seg.first + k]);
      }
    }
  }

  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  // Segments held: each use adds at most two (the cuts at its ends).
  [[nodiscard]] std::size_t segments() const noexcept { return segments_.size(); }
  // Writers and readers held, over all segments: what compaction keeps small.
  [[nodiscard]] std::size_t entries() const noexcept { return entries_; }
  // Whether compact() is due: after as many records as the history held after the last one
  // (at least 64), so that compaction costs O(1) per record, amortized.
  [[nodiscard]] bool compaction_due() const noexcept {
    return records_ >= std::max<std::size_t>(64, kept_);
  }

 private:
  // Bytes [begin, end), begin being its key in segments_. A segment is plain data, so that
  // cutting one or merging a few allocates nothing but (now and then) a tree node: its
  // readers are a block of readers_ and its poison an index into poisons_.
  struct segment {
    std::uint64_t end = 0;
    op_id writer;                // the last write of these bytes (empty: none to wait for)
    std::uint32_t first = 0;     // its block in readers_: the reads since that write...
    std::uint32_t readers = 0;   // ... how many ...
    std::uint32_t capacity = 0;  // ... and how many fit before the block moves
    std::uint32_t poison = 0;    // 1 + its index in poisons_; 0: not poisoned
  };
  using segment_map = std::map<std::uint64_t, segment>;  // by begin; they tile [0, size_)
  using position = segment_map::iterator;
  using const_position = segment_map::const_iterator;

  // The segment holding `at` (at < size_).
  [[nodiscard]] position holding(std::uint64_t at) noexcept {
    return std::prev(segments_.upper_bound(at));  // the first begins at 0
  }
  [[nodiscard]] const_position holding(std::uint64_t at) const noexcept {
    return std::prev(segments_.upper_bound(at));
  }
  // infer() and record() from the segment holding range.begin (`first`, `holder`).
  template <class Waited>
  std::size_t infer_from(const_position first, byte_range range, buffer_access access,
                         Waited&& waited, std::vector<use_edge>& out, caf::error& poisoned) const;
  void record_from(position holder, byte_range range, buffer_access access, op_id op);
  // Cuts segment `i`, the one holding `at`, so that a segment begins there; that segment.
  // Here and in add_reader() the common case is inline and the rest out of line: a record
  // makes these calls for every use, and the calls cost more than the common cases did.
  position cut(position i, std::uint64_t at) { return i->first == at ? i : cut_inside(i, at); }
  position cut_inside(position i, std::uint64_t at);
  void record_write(position first, byte_range range, op_id op);
  // A segment beginning at `begin`, placed before `next` (its neighbour on the right), in a
  // spare node when there is one.
  position insert_segment(const_position next, std::uint64_t begin, const segment& s);
  // Segment `i` erased, its node kept as a spare (a few dozen at most); the one after it.
  position erase_segment(position i);
  // Segment `i` begins at `begin` now (its neighbours allow it); where it is.
  position move_begin(position i, std::uint64_t begin);
  // A new block of `capacity` readers at the arena's end (holding `count` copied from `from`).
  void new_block(segment& s, std::uint32_t capacity, const op_id* from, std::uint32_t count);
  void add_reader(segment& s, op_id op) {
    if (s.readers == s.capacity) grow_block(s);
    readers_[s.first + s.readers++] = op;
    ++entries_;
  }
  // The segment's block moved to the arena's end with twice the room.
  void grow_block(segment& s);
  void drop_block(segment& s) noexcept;
  // Blocks that moved or went leave their old room unused, and poisons written over stay: once
  // that is most of the arena, the live blocks and poisons are packed anew (each user kept).
  void repack_if_sparse() {
    if ((unused_ > 1024 && unused_ > readers_.size() / 2) ||
        poisons_.size() > 64 + 2 * segments_.size()) {
      repack();
    }
  }
  void repack();
  [[nodiscard]] bool alike(const segment& a, const segment& b) const;
  [[nodiscard]] const caf::error* poison_of(const segment& s) const noexcept {
    return s.poison == 0 ? nullptr : &poisons_[s.poison - 1];
  }
  void count(const segment& s, int sign) noexcept;
  static constexpr std::size_t edge_window = 8;
  static void add_edge(std::vector<use_edge>& out, std::size_t from, op_id op, bool order_only);
  // Each operation once among out[from, end) (a data edge winning): sorted by id and merged.
  static void merge_repeats(std::vector<use_edge>& out, std::size_t from);

  std::uint64_t size_;
  segment_map segments_;
  std::vector<segment_map::node_type> spare_;  // nodes of erased segments, for the next cuts
  std::vector<op_id> readers_;                 // the segments' blocks of readers
  std::size_t unused_ = 0;                     // room in readers_ no segment's block holds
  std::vector<caf::error> poisons_;
  std::size_t entries_ = 0;
  std::size_t records_ = 0;  // since the last compaction
  std::size_t kept_ = 0;     // entries and segments left by it
  static constexpr std::uint64_t never_compacted = ~std::uint64_t{0};
  std::uint64_t compacted_at_ = never_compacted;  // the caller's let_go count at the last one
};

// --- templates -----------------------------------------------------------------------------

// Inline: it runs for every user infer() finds, and a call per candidate cost as much as the
// search it makes (a handful of edges per use). Only the last `edge_window` edges found are
// searched: a use covering many segments whose writers interleave finds each writer many
// times, and a search among all found made that quadratic. What repeats past the window is
// merged once the use's edges are all found (merge_repeats).
inline void buffer_uses::add_edge(std::vector<use_edge>& out, std::size_t from, op_id op,
                                  bool order_only) {
  const std::size_t stop = out.size() - std::min(out.size() - from, edge_window);
  for (std::size_t i = out.size(); i > stop; --i) {
    if (out[i - 1].op == op) {
      out[i - 1].order_only = out[i - 1].order_only && order_only;  // a data edge wins
      return;
    }
  }
  out.push_back(use_edge{op, order_only});
}

template <class Waited>
std::size_t buffer_uses::infer_from(const_position first, byte_range range, buffer_access access,
                                    Waited&& waited, std::vector<use_edge>& out,
                                    caf::error& poisoned) const {
  const std::size_t from = out.size();
  // The readers of the segment before: neighbours share most of theirs (a read adds itself to
  // every segment it covers, a cut copies them), and one already seen needs no search among
  // those found. Both blocks are in submission order, so one pass over the two finds them
  // (a graph's renamed users may not be: then a few are searched for after all).
  const op_id* before = nullptr;
  std::uint32_t before_count = 0;
  std::size_t covered = 0;
  for (const_position i = first; i != segments_.end(); ++i) {
    if (i->first >= range.end) break;
    ++covered;
    const segment& s = i->second;
    if (reads(access)) {
      if (s.poison != 0 && !poisoned) poisoned = *poison_of(s);
      if (!s.writer.empty() && waited(s.writer)) add_edge(out, from, s.writer, false);
    }
    if (writes(access)) {
      if (!s.writer.empty() && !reads(access) && waited(s.writer)) {
        add_edge(out, from, s.writer, true);
      }
      const op_id* r = readers_.data() + s.first;
      std::uint32_t p = 0;
      for (std::uint32_t k = 0; k < s.readers; ++k) {
        while (p < before_count && before[p] < r[k]) ++p;
        if (p < before_count && before[p] == r[k]) continue;  // handled with the one before
        if (waited(r[k])) add_edge(out, from, r[k], true);
      }
      before = r;
      before_count = s.readers;
    }
  }
  if (out.size() - from > edge_window) merge_repeats(out, from);
  return covered;
}

template <class Waited>
void buffer_uses::compact(Waited&& waited, std::uint64_t let_go) {
  if (!compaction_may_drop(let_go)) return;
  position kept = segments_.end();  // the last segment kept so far
  for (position i = segments_.begin(); i != segments_.end();) {
    segment& s = i->second;
    count(s, -1);
    if (!s.writer.empty() && !waited(s.writer)) s.writer = op_id{};
    std::uint32_t left = 0;
    op_id* r = readers_.data() + s.first;
    for (std::uint32_t k = 0; k < s.readers; ++k) {
      if (waited(r[k])) r[left++] = r[k];
    }
    s.readers = left;
    if (kept != segments_.end() && alike(kept->second, s)) {
      kept->second.end = s.end;  // merged into the one before
      drop_block(s);
      i = erase_segment(i);
      continue;
    }
    count(s, +1);
    kept = i++;
  }
  repack();
  records_ = 0;
  kept_ = entries_ + segments_.size();
  compacted_at_ = let_go;
}

}  // namespace cudactor::detail
