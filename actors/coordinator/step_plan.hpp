// actors/coordinator/step_plan.hpp
//
// Where a recorded step's operations go and what each waits for, decided once at record
// (docs/replay.md): each operation on a stream (a part of the plan), in a dependency order,
// runs of work kept on one stream while the streams stay within a slack of each other;
// on its stream it comes after everything before it there, and on other streams it waits for
// the newest operation it depends on of each (one wait per stream, plus the newest data one
// when the newest is an order only). A replay makes a point cell for each operation another
// stream waits for (messaging/point_cell.hpp) and sends each part in one message. The home
// part ends with the join: the replay's own point, after every other part's last operation.
// Parts keep the step's dependency order, so every wait points back in that order and no two
// parts can wait for each other. No CAF, no device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cudactor::detail {

class step_plan {
 public:
  static constexpr std::uint32_t none = ~std::uint32_t{0};

  // One dependency of an operation on another of the step (by graph index).
  struct edge {
    std::uint32_t dep = 0;
    bool order_only = false;  // it only has to come after (no data read from it)
  };
  // What the plan is made from. `order`: the operations in a dependency order; `after` (op
  // i's at [after_first[i], after_first[i + 1])): its dependencies in the step; `stream`: the
  // stream an operation is pinned to (none: any of `allowed`); `allowed[i]`: the streams op i
  // may go to (empty: all).
  struct input {
    std::size_t streams = 0;
    std::vector<std::uint32_t> order;
    std::vector<edge> after;
    std::vector<std::uint32_t> after_first;
    std::vector<std::uint32_t> pinned;
    std::vector<std::vector<std::uint32_t>> allowed;
  };

  // A wait of an entry for an entry of another part.
  struct wait {
    std::uint32_t part = 0;
    std::uint32_t entry = 0;
    bool order_only = false;
  };
  struct entry {
    std::uint32_t op = 0;          // graph index
    std::uint32_t cell = none;     // its point cell in a replay, when another part waits for it
    std::uint32_t first_wait = 0;  // its waits: [first_wait, first_wait + waits) of all
    std::uint32_t waits = 0;
  };
  // Entries [first, last] of a part that go to the stream as one piece of work: only the first
  // waits on other parts, only the last is waited for by them (or by the join). One timeline
  // point for the lot instead of one per operation.
  struct segment {
    std::uint32_t first = 0;
    std::uint32_t last = 0;
  };
  struct part {
    std::uint32_t stream = 0;  // the coordinator's stream index
    std::vector<entry> entries;
    std::vector<segment> segments;
  };

  // How much busier (in operations of the step) than the least busy allowed stream the stream
  // an operation would follow (its dependencies', or the operation before it's) may be for it
  // to go there: stream order instead of a wait on another stream, one timeline point for a
  // run of work. The slack is this or a quarter of the step's share per stream, the larger.
  static constexpr std::uint32_t follow_slack = 16;

  step_plan() = default;
  explicit step_plan(const input& in);

  [[nodiscard]] const std::vector<part>& parts() const noexcept { return parts_; }
  // The part that ends with the join (the step's last operation's).
  [[nodiscard]] std::uint32_t home() const noexcept { return home_; }
  [[nodiscard]] std::size_t cells() const noexcept { return cells_; }
  // An entry's waits.
  [[nodiscard]] const wait* waits_begin(const entry& e) const noexcept {
    return waits_.data() + e.first_wait;
  }
  [[nodiscard]] const wait* waits_end(const entry& e) const noexcept {
    return waits_.data() + e.first_wait + e.waits;
  }
  // The join's waits: each other part's last entry (a data wait: its failure fails the join).
  [[nodiscard]] const std::vector<wait>& join_waits() const noexcept { return join_; }
  // Where op `op` (graph index) went.
  [[nodiscard]] std::uint32_t part_of(std::uint32_t op) const noexcept { return where_[op].part; }
  [[nodiscard]] std::uint32_t entry_of(std::uint32_t op) const noexcept { return where_[op].entry; }
  // Waits on other parts, over all entries (what a replay costs in crossings).
  [[nodiscard]] std::size_t crossings() const noexcept { return waits_.size(); }
  // Segments over all parts (the timeline points a replay takes, the join's aside).
  [[nodiscard]] std::size_t segments() const noexcept { return segments_; }

 private:
  struct place {
    std::uint32_t part = none;
    std::uint32_t entry = 0;
  };
  std::vector<part> parts_;
  std::vector<wait> waits_;
  std::vector<wait> join_;
  std::vector<place> where_;
  std::uint32_t home_ = 0;
  std::size_t cells_ = 0;
  std::size_t segments_ = 0;
};

}  // namespace cudactor::detail
