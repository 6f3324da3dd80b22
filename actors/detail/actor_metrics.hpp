// actors/detail/actor_metrics.hpp
//
// What each actor reports to Prometheus, as members of the actor's state: every family is
// asked for once, when the actor starts, and each label set is resolved then (or on the first
// operation of a type and priority, for the coordinator), so the hot path only touches
// atomics through references. docs/metrics.md lists every family these make.
//
// Labels are of bounded cardinality only: gpu (DCGM's name: the CUDA ordinal, "host" on the
// host backend), stream, barrier, kind, type, priority, outcome. Never an operation id.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/completion_poller.hpp"
#include "cudactor/messaging/enum_range.hpp"
#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor::detail {

// The value of the gpu label for `device`'s series.
[[nodiscard]] std::string gpu_label(const gpu::backend& device);

// `given`, or a registry of the actor's own (no exposer) when the actor was spawned without
// one, so that the hot path never tests for "no metrics".
[[nodiscard]] std::shared_ptr<metrics::registry> registry_or_own(
    std::shared_ptr<metrics::registry> given);

// One stream's operations: a stream actor's, or one of the coordinator's streams'.
class stream_metrics {
 public:
  stream_metrics(metrics::registry& registry, const std::string& gpu, const std::string& stream);

  // Accepted ops and latencies are kept here until publish(): a stream accepts a message's
  // worth of ops, and completes a poller batch's worth, at once, so the shared cells see one
  // add per burst, and one per run of equal latencies, instead of three per op.
  void accepted() noexcept { ++pending_accepted_; }
  void completed(std::uint64_t n) noexcept { completed_.add(n); }
  void failed() noexcept { failed_.add(); }
  void latency(std::int64_t ns) noexcept {
    if (run_length_ != 0 && ns == run_ns_) {
      ++run_length_;
      return;
    }
    flush_latency();
    run_ns_ = ns;
    run_length_ = 1;
  }
  void gpu_time(std::int64_t ns) noexcept { gpu_time_.observe(std::chrono::nanoseconds{ns}); }
  // Flushes what is pending and sets the occupancy gauges; the stream calls it at the end of
  // every burst and every completion batch.
  void publish(std::uint64_t in_flight, std::uint64_t queued) noexcept {
    if (pending_accepted_ != 0) {
      accepted_.add(pending_accepted_);
      pending_accepted_ = 0;
    }
    flush_latency();
    in_flight_.set(static_cast<std::int64_t>(in_flight));
    queued_.set(static_cast<std::int64_t>(queued));
  }

 private:
  metrics::counter& accepted_;
  metrics::counter& completed_;
  metrics::counter& failed_;
  metrics::gauge& in_flight_;
  metrics::gauge& queued_;
  metrics::duration_histogram& latency_;
  metrics::duration_histogram& gpu_time_;
  std::uint64_t pending_accepted_ = 0;
  std::int64_t run_ns_ = 0;
  std::uint64_t run_length_ = 0;

  void flush_latency() noexcept {
    if (run_length_ == 0) return;
    latency_.observe(std::chrono::nanoseconds{run_ns_}, run_length_);
    run_length_ = 0;
  }
};

// The coordinator's operations by type and priority, and its own state.
// The coordinator's buffers on one stream (where they were allocated; adopted ones count on
// no stream): bytes in use, bytes released and waiting for their last users, bytes reclaimed.
class buffer_metrics {
 public:
  buffer_metrics(metrics::registry& registry, const std::string& gpu, const std::string& stream);
  void allocated(std::uint64_t bytes) noexcept { in_use_.add(static_cast<std::int64_t>(bytes)); }
  void released(std::uint64_t bytes) noexcept {
    in_use_.add(-static_cast<std::int64_t>(bytes));
    releasing_.add(static_cast<std::int64_t>(bytes));
  }
  void reclaimed(std::uint64_t bytes) noexcept {
    releasing_.add(-static_cast<std::int64_t>(bytes));
    reclaimed_.add(bytes);
  }
  // Kept back by a device loss, then dropped at reset: no longer waiting, never reclaimed.
  void dropped(std::uint64_t bytes) noexcept { releasing_.add(-static_cast<std::int64_t>(bytes)); }

 private:
  metrics::gauge& in_use_;
  metrics::gauge& releasing_;
  metrics::counter& reclaimed_;
};

class op_metrics {
 public:
  op_metrics(metrics::registry& registry, std::string gpu);

  void registered(op_type t, op_priority p) { cells(t, p).registered.add(); }
  void dispatched(op_type t, op_priority p) { cells(t, p).dispatched.add(); }
  // registered -> ended, for every end (completed, failed, cancelled).
  void ended(op_type t, op_priority p, op_state how, std::int64_t latency_ns);
  void device_waits(std::uint64_t n) noexcept { device_waits_.add(n); }
  void deadlock_detected() noexcept { deadlocks_.add(); }
  void stalled(std::size_t n) noexcept { stalled_.set(static_cast<std::int64_t>(n)); }
  void live(std::size_t live, std::size_t on_streams) noexcept {
    live_.set(static_cast<std::int64_t>(live));
    queued_.set(static_cast<std::int64_t>(live > on_streams ? live - on_streams : 0));
  }

 private:
  struct op_cells {
    metrics::counter& registered;
    metrics::counter& dispatched;
    metrics::counter& completed;
    metrics::counter& failed;
    metrics::counter& cancelled;
    metrics::duration_histogram& latency;
  };
  static constexpr std::size_t types = enum_count<op_type>;
  static constexpr std::size_t priorities = enum_count<op_priority>;

  op_cells& cells(op_type t, op_priority p) {
    auto& found =
        cells_[static_cast<std::size_t>(t) % types][static_cast<std::size_t>(p) % priorities];
    if (!found) found = make(t, p);
    return *found;
  }
  [[nodiscard]] std::unique_ptr<op_cells> make(op_type t, op_priority p);

  metrics::registry& registry_;
  std::string gpu_;
  std::array<std::array<std::unique_ptr<op_cells>, priorities>, types> cells_;
  metrics::counter& device_waits_;
  metrics::counter& deadlocks_;
  metrics::gauge& stalled_;
  metrics::gauge& live_;
  metrics::gauge& queued_;
};

// Steps by name (docs/replay.md): replays by how they ended and their time from registration
// to end, what recording took, and the operations a replay's bindings resolved anew. Names
// past the first max_names share the label "other", so that the label set stays bounded.
class step_metrics {
 public:
  static constexpr std::size_t max_names = 256;

  step_metrics(metrics::registry& registry, std::string gpu)
      : registry_(registry), gpu_(std::move(gpu)) {}

  void recorded(const std::string& step, std::int64_t ns) {
    of(step).record.observe(std::chrono::nanoseconds{ns});
  }
  void replayed(const std::string& step, op_state how, std::int64_t ns);
  void rebound(const std::string& step, std::uint64_t ops) { of(step).rebound.add(ops); }
  // A step's backend graph (docs/replay.md): what building it took, and since the last call
  // the times it was instantiated, the nodes updated in place for bindings, and the change in
  // the scratch its work holds (negative when a step is released).
  void built(const std::string& step, std::int64_t ns) {
    of(step).instantiate.observe(std::chrono::nanoseconds{ns});
  }
  void graph_changes(const std::string& step, std::uint64_t instantiations, std::uint64_t updates,
                     std::int64_t scratch_bytes) {
    if (instantiations == 0 && updates == 0 && scratch_bytes == 0) return;
    step_cells& c = of(step);
    c.instantiations.add(instantiations);
    c.updates.add(updates);
    c.scratch.add(scratch_bytes);
  }

 private:
  struct step_cells {
    metrics::counter& completed;
    metrics::counter& failed;
    metrics::counter& cancelled;
    metrics::duration_histogram& time;
    metrics::duration_histogram& record;
    metrics::counter& rebound;
    metrics::duration_histogram& instantiate;
    metrics::counter& instantiations;
    metrics::counter& updates;
    metrics::gauge& scratch;
  };
  step_cells& of(const std::string& step);

  metrics::registry& registry_;
  std::string gpu_;
  std::unordered_map<std::string, std::unique_ptr<step_cells>> cells_;
};

// The event pool's events by kind (regular, timing).
class event_pool_metrics {
 public:
  event_pool_metrics(metrics::registry& registry, const std::string& gpu, std::uint32_t capacity);

  void levels(std::size_t kind, std::uint64_t available, std::uint64_t in_use) noexcept {
    available_[kind % 2]->set(static_cast<std::int64_t>(available));
    in_use_[kind % 2]->set(static_cast<std::int64_t>(in_use));
  }
  void exhausted(std::size_t kind) noexcept { exhausted_[kind % 2]->add(); }
  void lent(std::uint64_t n) noexcept { lent_->add(n); }

 private:
  metrics::counter* lent_ = nullptr;
  std::array<metrics::gauge*, 2> available_{};
  std::array<metrics::gauge*, 2> in_use_{};
  std::array<metrics::counter*, 2> exhausted_{};
};

// One barrier's generations.
class barrier_metrics {
 public:
  barrier_metrics(metrics::registry& registry, const std::string& gpu, const std::string& barrier);

  void crossed(std::int64_t wait_ns) noexcept {
    crossed_.add();
    wait_.observe(std::chrono::nanoseconds{wait_ns});
  }
  void timed_out() noexcept { timeouts_.add(); }
  void failed() noexcept { failed_.add(); }

 private:
  metrics::counter& crossed_;
  metrics::counter& timeouts_;
  metrics::counter& failed_;
  metrics::duration_histogram& wait_;
};

// The completion poller's counters, read from its stats() at scrape time, and its detection
// delay, which the poller reports through poller_options::on_detected (detection_observer()).
// Owned by the runtime; must go before the poller does.
class poller_metrics {
 public:
  poller_metrics(metrics::registry& registry, std::string gpu);
  // What poller_options::on_detected should call. The histogram lives in the registry, so the
  // function stays valid as long as the registry does.
  [[nodiscard]] std::function<void(std::chrono::nanoseconds)> detection_observer() const;
  // Starts reading `poller`'s stats() at scrape time, until detach() or destruction.
  void attach(const gpu::completion_poller& poller);
  void detach() noexcept { series_.clear(); }

 private:
  metrics::registry& registry_;
  std::string gpu_;
  metrics::duration_histogram& detection_;
  std::vector<metrics::callback_series> series_;
};

}  // namespace cudactor::detail
