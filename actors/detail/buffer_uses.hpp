// actors/detail/buffer_uses.hpp
//
// One buffer's history of declared uses, in submission order, and what a new use must come
// after: StarPU's sequential consistency over byte ranges. A read comes after the last write
// of every byte it reads (a data dependency: if that write failed, the read is cancelled); a
// write comes after the last write and every read since (an order-only dependency: it
// replaces those bytes, whatever became of the earlier users). Uses of disjoint ranges order
// nothing. A writer that ended without writing (failed, cancelled) poisons the bytes it was
// the last writer of, until an operation writes them without reading them.
//
// The buffer is cut into segments, each with its last writer and the readers since; a write
// merges what it covers into one segment, and compact() drops users that no longer need to
// be waited for and merges neighbours that became alike, so the history stays as small as
// the work in flight. No CAF actor, no device: the coordinator owns one per buffer.
#pragma once

#include <caf/error.hpp>

#include <algorithm>
#include <cstdint>
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

  // What an operation using `range` with `access` must come after, appended to `out` (each
  // operation once; a data edge wins over an order-only one), and the cause of the first
  // poisoned byte it reads (empty if none). `waited(op)`: whether `op` is still to be waited
  // for (not ended, or still on the device); others are left out.
  template <class Waited>
  void infer(byte_range range, buffer_access access, Waited&& waited, std::vector<use_edge>& out,
             caf::error& poisoned) const;

  // Makes the use the newest: call it in submission order, after infer().
  void record(byte_range range, buffer_access access, op_id op);

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
    for (const auto& [begin, seg] : segments_) {
      if (!seg.writer.empty()) f(seg.writer);
      for (op_id r : seg.readers) f(r);
    }
  }

  // Renames every user: f(op) gives its new id (a graph's users, registered under scratch ids
  // before their real ones were known).
  template <class F>
  void rename(F&& f) {
    for (auto& [begin, seg] : segments_) {
      if (!seg.writer.empty()) seg.writer = f(seg.writer);
      for (op_id& r : seg.readers) r = f(r);
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
  struct segment {
    std::uint64_t end = 0;
    op_id writer;                // the last write of these bytes (empty: none to wait for)
    std::vector<op_id> readers;  // reads since that write
    caf::error poison;           // the failure that left these bytes unwritten
  };
  using map = std::map<std::uint64_t, segment>;

  // Splits the segment holding `at` so that a segment begins there (at < size_).
  map::iterator split(std::uint64_t at);
  void record_write(byte_range range, op_id op);
  void count(const segment& s, int sign) noexcept;
  [[nodiscard]] static bool alike(const segment& a, const segment& b);
  static void add_edge(std::vector<use_edge>& out, std::size_t from, op_id op, bool order_only);

  std::uint64_t size_;
  map segments_;  // by begin; they tile [0, size_)
  std::size_t entries_ = 0;
  std::size_t records_ = 0;  // since the last compaction
  std::size_t kept_ = 0;     // entries and segments left by it
};

// --- templates -----------------------------------------------------------------------------

template <class Waited>
void buffer_uses::infer(byte_range range, buffer_access access, Waited&& waited,
                        std::vector<use_edge>& out, caf::error& poisoned) const {
  const std::size_t from = out.size();
  auto it = segments_.upper_bound(range.begin);
  --it;  // the segment holding range.begin: segments tile the buffer from 0
  for (; it != segments_.end() && it->first < range.end; ++it) {
    const segment& s = it->second;
    if (reads(access)) {
      if (s.poison && !poisoned) poisoned = s.poison;
      if (!s.writer.empty() && waited(s.writer)) add_edge(out, from, s.writer, false);
    }
    if (writes(access)) {
      if (!s.writer.empty() && !reads(access) && waited(s.writer)) {
        add_edge(out, from, s.writer, true);
      }
      for (op_id r : s.readers) {
        if (waited(r)) add_edge(out, from, r, true);
      }
    }
  }
}

template <class Waited>
void buffer_uses::compact(Waited&& waited) {
  for (auto it = segments_.begin(); it != segments_.end();) {
    segment& s = it->second;
    count(s, -1);
    if (!s.writer.empty() && !waited(s.writer)) s.writer = op_id{};
    std::size_t kept = 0;
    for (op_id r : s.readers) {
      if (waited(r)) s.readers[kept++] = r;
    }
    s.readers.resize(kept);
    count(s, +1);
    if (it != segments_.begin()) {
      auto before = std::prev(it);
      if (alike(before->second, s)) {
        count(s, -1);
        before->second.end = s.end;
        it = segments_.erase(it);
        continue;
      }
    }
    ++it;
  }
  records_ = 0;
  kept_ = entries_ + segments_.size();
}

}  // namespace cudactor::detail
