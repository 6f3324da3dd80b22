// actors/coordinator/stream_pool.hpp
//
// The streams the coordinator schedules onto and how it picks one for an operation. Each entry
// stands for one of the runtime's stream actors (the actor owns the backend stream) with its
// priority class, at an index: the coordinator's name for the stream (the runtime's is its
// stream_id, index_of maps one to the other). How busy a stream is, its
// cap and how far it got are the stream actor's, read from the ledger it publishes
// (stream_ledger.hpp): the pool keeps no count of its own. What is the coordinator's own is
// kept here: whether a caller-launched operation holds the stream, per other stream the newest
// point it already waits for on the device, so that a wait covered by an earlier one is
// skipped, and the newest point a barrier put there with the work before it (what a barrier's
// member reached it with).
//
// Strategies (pool_strategy):
//  - round_robin: the next available stream after the last one chosen;
//  - load_balanced: the fewest operations in flight;
//  - priority: critical and high operations on high-priority streams, low and cleanup on
//    low-priority ones, normal on normal ones; the fewest in flight within the class; another
//    class only when none of its own is available;
//  - workload: each stream has a role (compute, memory, coordination; mixed goes anywhere),
//    the fewest in flight among the role's streams, any stream when none is available;
//  - adaptive: the smallest expected wait, (in flight + 1) x the mean completion interval
//    measured on that stream for that workload; a stream with no measurement yet is tried first.
// An operation may bring its own strategy, and a strict one keeps every strategy (fallbacks
// included) to the streams of its priority class and role (matches()).
// No CAF and no poller here: the coordinator drives it, tests drive it directly.
// Index i is the coordinator's i-th stream; `id` is the stream's runtime-wide id.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cudactor/actors/detail/stream_ledger.hpp"
#include "cudactor/gpu/stream.hpp"
#include "cudactor/gpu/types.hpp"
#include "cudactor/messaging/enum_range.hpp"
#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/messaging/types.hpp"

namespace cudactor::detail {

// Tests and older code name these through detail.
using cudactor::parse_pool_strategy;
using cudactor::pool_strategy;
using cudactor::to_string;

class stream_pool {
 public:
  static constexpr std::size_t workloads = enum_count<op_workload>;

  struct entry {
    stream_id id;
    gpu::stream_priority priority = gpu::stream_priority::normal;
    std::shared_ptr<stream_ledger> ledger;  // the stream actor's: cap, load, completed
    op_workload role = op_workload::mixed;
    op_id reserved_by;  // a caller-launched operation (begun, or its hold on the way)
    // Operations staged for the stream in this pass and not yet published in its ledger: one
    // atomic add per stream per pass (publish), not one per operation on a cache line the
    // stream actor's thread writes.
    std::uint64_t staged = 0;
    std::vector<gpu::timeline_point> waited;           // by index: data waits
    std::vector<gpu::timeline_point> ordered;          // by index: any waits
    std::array<double, workloads> mean_interval_ns{};  // adaptive
    std::array<std::uint64_t, workloads> samples{};
    std::int64_t busy_since_ns = 0;  // the later of: went busy, last report
    // The newest point a barrier put on the stream (a mark or a crossing), and the newest
    // work before it: what a barrier's member reached it with.
    gpu::timeline_point barrier_point = 0, before_barrier = 0;
  };

  explicit stream_pool(pool_strategy strategy);

  // Adds an entry for stream `id`, read through its stream actor's ledger; roles are
  // reassigned over all entries.
  void add(stream_id id, gpu::stream_priority priority, std::shared_ptr<stream_ledger> ledger);
  // Forgets the holds and waits of every stream: the device was lost, and the streams start
  // anew on reset.
  void clear_work();

  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] entry& at(std::uint32_t index) { return entries_.at(index); }
  [[nodiscard]] const entry& at(std::uint32_t index) const { return entries_.at(index); }
  [[nodiscard]] pool_strategy strategy() const noexcept { return strategy_; }

  // Can take another operation: not reserved and below the in-flight cap.
  [[nodiscard]] bool available(std::uint32_t index) const;
  [[nodiscard]] bool any_available() const;
  // Points on the stream not yet reached, whoever sent them (the ledger's load).
  [[nodiscard]] std::uint64_t load_of(std::uint32_t index) const;
  // Takes one of the stream's cap for an operation the coordinator is about to send it; counted
  // here until publish(), which must come before the message carrying it is sent.
  void reserve(std::uint32_t index) { ++entries_[index].staged; }
  // The stream's staged reservations into its ledger, where the stream actor gives them back.
  void publish(std::uint32_t index) {
    entry& s = entries_[index];
    if (s.staged != 0) s.ledger->reserve(std::exchange(s.staged, 0));
  }
  // Staged reservations whose pass will never be sent (the device was lost).
  void drop_staged() noexcept {
    for (auto& s : entries_) s.staged = 0;
  }
  // Nothing in flight and not reserved.
  [[nodiscard]] bool idle(std::uint32_t index) const;
  [[nodiscard]] std::optional<std::uint32_t> any_idle() const;

  // The stream for an operation of this priority and workload, among the available ones;
  // nothing when none is available. With the pool's strategy, or `strategy`; `strict` keeps to
  // the streams that match() the operation.
  [[nodiscard]] std::optional<std::uint32_t> choose(op_priority priority, op_workload workload);
  [[nodiscard]] std::optional<std::uint32_t> choose(op_priority priority, op_workload workload,
                                                    pool_strategy strategy, bool strict);
  // The stream class an operation's priority asks for: critical and high -> high, low and
  // cleanup -> low, normal -> normal.
  [[nodiscard]] static gpu::stream_priority class_of(op_priority priority) noexcept;
  // Whether the stream is of that class and (unless the workload is mixed) of that role.
  [[nodiscard]] bool matches(std::uint32_t index, op_priority priority, op_workload workload) const;
  // The index of a runtime stream id, if the coordinator schedules onto it.
  [[nodiscard]] std::optional<std::uint32_t> index_of(stream_id id) const noexcept;

  // Whether an operation on `waiter` that depends on point `point` of `other` needs a device
  // wait, and if so remembers it as placed. Same stream, points already reached and points
  // covered by a newer wait need none (the last are counted as skipped). An order-only wait
  // is covered by a newer wait of either kind; a data wait (it carries a failure) only by a
  // newer data wait.
  [[nodiscard]] bool needs_wait(std::uint32_t waiter, std::uint32_t other,
                                gpu::timeline_point point, bool order_only = false);
  [[nodiscard]] std::uint64_t waits_skipped() const noexcept { return skipped_; }

  // Adaptive's measurement. note_dispatch before an operation goes on an idle stream; then, per
  // poller report, how many operations of each workload it ended: the time since the stream
  // was last busy-and-reported is shared out among them.
  void note_dispatch(std::uint32_t index, std::int64_t now_ns);
  void record_completions(std::uint32_t index, const std::array<std::uint32_t, workloads>& ended,
                          std::int64_t now_ns);

 private:
  void assign_roles();
  template <class Accept>
  [[nodiscard]] std::optional<std::uint32_t> least_loaded(Accept&& accept) const;

  pool_strategy strategy_;
  std::vector<entry> entries_;
  std::uint32_t next_ = 0;  // round robin
  std::uint64_t skipped_ = 0;
};

}  // namespace cudactor::detail
