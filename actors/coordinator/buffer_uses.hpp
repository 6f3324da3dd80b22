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
// the work in flight. No CAF actor, no device: the coordinator owns one per buffer.
#pragma once

#include <caf/error.hpp>

#include <algorithm>
#include <cstdint>
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

  // What an operation using `range` with `access` must come after, appended to `out` (each
  // operation once; a data edge wins over an order-only one), and the cause of the first
  // poisoned byte it reads (empty if none). `waited(op)`: whether `op` is still to be waited
  // for (not ended, or still on the device); others are left out.
  template <class Waited>
  void infer(byte_range range, buffer_access access, Waited&& waited, std::vector<use_edge>& out,
             caf::error& poisoned) const {
    infer_from(holding(range.begin), range, access, waited, out, poisoned);
  }

  // Makes the use the newest: call it in submission order, after infer().
  void record(byte_range range, buffer_access access, op_id op) {
    record_from(holding(range.begin), range, access, op);
  }

  // infer(), then record(), with one search for where the range begins: for a use that no
  // other use of the same operation overlaps in this buffer (recording this one first could
  // hide, from that other use, a user it must come after).
  template <class Waited>
  void infer_and_record(byte_range range, buffer_access access, Waited&& waited, op_id op,
                        std::vector<use_edge>& out, caf::error& poisoned) {
    const std::size_t at = holding(range.begin);
    infer_from(at, range, access, waited, out, poisoned);
    record_from(at, range, access, op);
  }

  // `op` ended without writing what it declared to write in `range`: the bytes it is still the
  // last writer of are poisoned with `cause`.
  void poison(byte_range range, op_id op, const caf::error& cause);

  // Drops the users no longer to be waited for and merges neighbouring segments left alike.
  template <class Waited>
  void compact(Waited&& waited);

  // Calls f(op) for every user still in the history (some more than once): a release comes
  // after all of them.
  template <class F>
  void for_each_user(F&& f) const {
    for (const segment& seg : segments_) {
      if (!seg.writer.empty()) f(seg.writer);
      for (std::uint32_t k = 0; k < seg.readers; ++k) f(readers_[seg.first + k]);
    }
  }

  // Renames every user: f(op) gives its new id (a graph's users, registered under scratch ids
  // before their real ones were known).
  template <class F>
  void rename(F&& f) {
    for (segment& seg : segments_) {
      if (!seg.writer.empty()) seg.writer = f(seg.writer);
      for (std::uint32_t k = 0; k < seg.readers; ++k) {
        readers_[seg.first + k] = f(readers_[seg.first + k]);
      }
    }
  }

  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t segments() const noexcept { return segments_.size(); }
  // Writers and readers held, over all segments: what compaction keeps small.
  [[nodiscard]] std::size_t entries() const noexcept { return entries_; }
  // Whether compact() is due: after as many records as the history held after the last one
  // (at least 64), so that compaction costs O(1) per record, amortized.
  [[nodiscard]] bool compaction_due() const noexcept {
    return records_ >= std::max<std::size_t>(64, kept_);
  }

 private:
  // Bytes [begin, end): a buffer is cut into a few dozen of these in practice (a write merges
  // what it covers), so they live in one sorted vector, found by binary search. A segment is
  // plain data, so that cutting one or merging a few moves bytes and allocates nothing: its
  // readers are a block of readers_ and its poison an index into poisons_.
  struct segment {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    op_id writer;                // the last write of these bytes (empty: none to wait for)
    std::uint32_t first = 0;     // its block in readers_: the reads since that write...
    std::uint32_t readers = 0;   // ... how many ...
    std::uint32_t capacity = 0;  // ... and how many fit before the block moves
    std::uint32_t poison = 0;    // 1 + its index in poisons_; 0: not poisoned
  };

  // The index of the segment holding `at` (at < size_).
  [[nodiscard]] std::size_t holding(std::uint64_t at) const noexcept;
  // infer() and record() from the segment holding range.begin (`first`, `holder`).
  template <class Waited>
  void infer_from(std::size_t first, byte_range range, buffer_access access, Waited&& waited,
                  std::vector<use_edge>& out, caf::error& poisoned) const;
  void record_from(std::size_t holder, byte_range range, buffer_access access, op_id op);
  // Cuts segment `i`, the one holding `at`, so that a segment begins there; its index. Here
  // and in add_reader() the common case is inline and the rest out of line: a record makes
  // these calls for every use, and the calls cost more than the common cases did.
  std::size_t cut(std::size_t i, std::uint64_t at) {
    return segments_[i].begin == at ? i : cut_inside(i, at);
  }
  std::size_t cut_inside(std::size_t i, std::uint64_t at);
  void record_write(std::size_t first, byte_range range, op_id op);
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
  static void add_edge(std::vector<use_edge>& out, std::size_t from, op_id op, bool order_only);

  std::uint64_t size_;
  std::vector<segment> segments_;  // by begin; they tile [0, size_)
  std::vector<op_id> readers_;     // the segments' blocks of readers
  std::size_t unused_ = 0;         // room in readers_ no segment's block holds
  std::vector<caf::error> poisons_;
  std::size_t entries_ = 0;
  std::size_t records_ = 0;  // since the last compaction
  std::size_t kept_ = 0;     // entries and segments left by it
};

// --- templates -----------------------------------------------------------------------------

// Inline: it runs for every user infer() finds, and a call per candidate cost as much as the
// search it makes (a handful of edges per use).
inline void buffer_uses::add_edge(std::vector<use_edge>& out, std::size_t from, op_id op,
                                  bool order_only) {
  // Most often the one just found again: a segment's neighbour has the same writer.
  if (out.size() > from && out.back().op == op) {
    out.back().order_only = out.back().order_only && order_only;
    return;
  }
  for (std::size_t i = from; i < out.size(); ++i) {
    if (out[i].op == op) {
      out[i].order_only = out[i].order_only && order_only;  // a data edge wins
      return;
    }
  }
  out.push_back(use_edge{op, order_only});
}

template <class Waited>
void buffer_uses::infer_from(std::size_t first, byte_range range, buffer_access access,
                             Waited&& waited, std::vector<use_edge>& out,
                             caf::error& poisoned) const {
  const std::size_t from = out.size();
  // The readers of the segment before: neighbours share most of theirs (a read adds itself to
  // every segment it covers, a cut copies them), and one already seen needs no search among
  // those found. Both blocks are in submission order, so one pass over the two finds them
  // (a graph's renamed users may not be: then a few are searched for after all).
  const op_id* before = nullptr;
  std::uint32_t before_count = 0;
  for (std::size_t i = first; i < segments_.size(); ++i) {
    const segment& s = segments_[i];
    if (s.begin >= range.end) break;
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
}

template <class Waited>
void buffer_uses::compact(Waited&& waited) {
  std::size_t kept_segments = 0;  // segments_[0, kept_segments) are done
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    segment s = segments_[i];
    count(s, -1);
    if (!s.writer.empty() && !waited(s.writer)) s.writer = op_id{};
    std::uint32_t kept = 0;
    op_id* r = readers_.data() + s.first;
    for (std::uint32_t k = 0; k < s.readers; ++k) {
      if (waited(r[k])) r[kept++] = r[k];
    }
    s.readers = kept;
    if (kept_segments > 0 && alike(segments_[kept_segments - 1], s)) {
      segments_[kept_segments - 1].end = s.end;  // merged into the one before
      drop_block(s);
      continue;
    }
    count(s, +1);
    segments_[kept_segments++] = s;
  }
  segments_.resize(kept_segments);
  repack();
  records_ = 0;
  kept_ = entries_ + segments_.size();
}

}  // namespace cudactor::detail
