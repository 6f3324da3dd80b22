#include "cudactor/actors/coordinator/stream_pool.hpp"

#include <cassert>

#include "cudactor/messaging/enum_range.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cudactor::detail {

namespace {

constexpr double ewma_weight = 0.2;

// Workloads are checked where they enter (messaging/input_check.hpp).
std::size_t workload_index(op_workload w) {
  assert(in_range(w));
  return static_cast<std::size_t>(w);
}

}  // namespace

stream_pool::stream_pool(pool_strategy strategy) : strategy_(strategy) {}

void stream_pool::add(stream_id id, gpu::stream_priority priority,
                      std::shared_ptr<stream_ledger> ledger) {
  entry added;
  added.id = id;
  added.priority = priority;
  added.ledger = ledger ? std::move(ledger) : std::make_shared<stream_ledger>(1);
  entries_.push_back(std::move(added));
  for (auto& each : entries_) {
    each.waited.resize(entries_.size(), 0);
    each.ordered.resize(entries_.size(), 0);
  }
  assign_roles();
}

// One stream: it does everything. Two: compute / memory and coordination. More: the last one
// coordinates, the rest split into compute (first half, rounded up) and memory.
void stream_pool::assign_roles() {
  const std::size_t n = entries_.size();
  for (std::size_t i = 0; i < n; ++i) {
    op_workload role = op_workload::mixed;
    if (n == 2) {
      role = i == 0 ? op_workload::compute : op_workload::memory;
    } else if (n > 2) {
      const std::size_t compute = n / 2;  // half of the n - 1 others, rounded up
      role = i == n - 1 ? op_workload::coordination
                        : (i < compute ? op_workload::compute : op_workload::memory);
    }
    entries_[i].role = role;
  }
}

void stream_pool::clear_work() {
  for (auto& s : entries_) {
    s.reserved_by = op_id{};
    s.barrier_point = s.before_barrier = 0;
    std::fill(s.waited.begin(), s.waited.end(), 0);
    std::fill(s.ordered.begin(), s.ordered.end(), 0);
  }
}

bool stream_pool::available(std::uint32_t index) const {
  const entry& s = entries_[index];
  return s.reserved_by.empty() && s.ledger->load() + s.staged < s.ledger->cap();
}

bool stream_pool::any_available() const {
  for (std::uint32_t i = 0; i < entries_.size(); ++i) {
    if (available(i)) return true;
  }
  return false;
}

bool stream_pool::idle(std::uint32_t index) const {
  const entry& s = entries_[index];
  return s.reserved_by.empty() && s.ledger->load() + s.staged == 0;
}

std::optional<std::uint32_t> stream_pool::any_idle() const {
  for (std::uint32_t i = 0; i < entries_.size(); ++i) {
    if (idle(i)) return i;
  }
  return std::nullopt;
}

std::uint64_t stream_pool::load_of(std::uint32_t index) const {
  return entries_[index].ledger->load() + entries_[index].staged;
}

template <class Accept>
std::optional<std::uint32_t> stream_pool::least_loaded(Accept&& accept) const {
  // Each stream's load once (available() and the comparison each took it anew, three times a
  // stream): every placement of every operation comes through here.
  std::optional<std::uint32_t> best;
  std::uint64_t best_load = 0;
  for (std::uint32_t i = 0; i < entries_.size(); ++i) {
    const entry& s = entries_[i];
    if (!s.reserved_by.empty()) continue;
    const std::uint64_t load = s.ledger->load() + s.staged;
    if (load >= s.ledger->cap() || !accept(i)) continue;  // not available()
    if (!best || load < best_load) {
      best = i;
      best_load = load;
    }
  }
  return best;
}

gpu::stream_priority stream_pool::class_of(op_priority priority) noexcept {
  if (priority == op_priority::critical || priority == op_priority::high) {
    return gpu::stream_priority::high;
  }
  if (priority == op_priority::low || priority == op_priority::cleanup) {
    return gpu::stream_priority::low;
  }
  return gpu::stream_priority::normal;
}

bool stream_pool::matches(std::uint32_t index, op_priority priority, op_workload workload) const {
  const entry& s = entries_.at(index);
  return s.priority == class_of(priority) &&
         (workload == op_workload::mixed || s.role == op_workload::mixed || s.role == workload);
}

std::optional<std::uint32_t> stream_pool::choose(op_priority priority, op_workload workload) {
  return choose(priority, workload, strategy_, false);
}

std::optional<std::uint32_t> stream_pool::choose(op_priority priority, op_workload workload,
                                                 pool_strategy strategy, bool strict) {
  // Strict: only the streams of the operation's class and role; the fallbacks below stay among
  // them too.
  auto any = [&](std::uint32_t i) { return !strict || matches(i, priority, workload); };
  switch (strategy) {
    case pool_strategy::round_robin: {
      const auto n = static_cast<std::uint32_t>(entries_.size());
      for (std::uint32_t k = 0; k < n; ++k) {
        const std::uint32_t i = (next_ + k) % n;
        if (available(i) && any(i)) {
          next_ = (i + 1) % n;
          return i;
        }
      }
      return std::nullopt;
    }
    case pool_strategy::load_balanced: return least_loaded(any);
    case pool_strategy::priority: {
      const gpu::stream_priority wanted = class_of(priority);
      if (auto own = least_loaded(
              [&](std::uint32_t i) { return entries_[i].priority == wanted && any(i); })) {
        return own;
      }
      // Another class: normal first, so urgent work does not land behind low-priority work
      // and background work does not take the high-priority streams while others are free.
      if (auto normal = least_loaded([&](std::uint32_t i) {
            return entries_[i].priority == gpu::stream_priority::normal && any(i);
          })) {
        return normal;
      }
      return least_loaded(any);
    }
    case pool_strategy::workload: {
      if (workload != op_workload::mixed) {
        if (auto own = least_loaded(
                [&](std::uint32_t i) { return entries_[i].role == workload && any(i); })) {
          return own;
        }
      }
      return least_loaded(any);
    }
    case pool_strategy::adaptive: {
      const std::size_t w = workload_index(workload);
      std::optional<std::uint32_t> best;
      double best_cost = std::numeric_limits<double>::infinity();
      for (std::uint32_t i = 0; i < entries_.size(); ++i) {
        if (!available(i) || !any(i)) continue;
        const entry& s = entries_[i];
        // Unmeasured: cost 0, so each stream gets tried for each workload.
        const double cost =
            s.samples[w] == 0 ? 0.0 : static_cast<double>(load_of(i) + 1) * s.mean_interval_ns[w];
        if (!best || cost < best_cost || (cost == best_cost && load_of(i) < load_of(*best))) {
          best = i;
          best_cost = cost;
        }
      }
      return best;
    }
  }
  return std::nullopt;
}

std::optional<std::uint32_t> stream_pool::index_of(stream_id id) const noexcept {
  for (std::uint32_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].id == id) return i;
  }
  return std::nullopt;
}

bool stream_pool::needs_wait(std::uint32_t waiter, std::uint32_t other, gpu::timeline_point point,
                             bool order_only) {
  if (waiter == other || point <= entries_[other].ledger->completed()) return false;
  auto& data = entries_[waiter].waited[other];
  auto& any = entries_[waiter].ordered[other];
  if (point <= (order_only ? any : data)) {
    ++skipped_;
    return false;
  }
  if (!order_only) data = point;
  any = std::max(any, point);
  return true;
}

void stream_pool::note_dispatch(std::uint32_t index, std::int64_t now_ns) {
  entry& s = entries_[index];
  if (s.ledger->load() + s.staged == 0) s.busy_since_ns = now_ns;
}

void stream_pool::record_completions(std::uint32_t index,
                                     const std::array<std::uint32_t, workloads>& ended,
                                     std::int64_t now_ns) {
  entry& s = entries_[index];
  std::uint32_t total = 0;
  for (auto n : ended) total += n;
  if (total == 0) return;
  const double per_op =
      static_cast<double>(std::max<std::int64_t>(now_ns - s.busy_since_ns, 0)) / total;
  for (std::size_t w = 0; w < workloads; ++w) {
    if (ended[w] == 0) continue;
    // ended[w] samples of per_op at once: the weight they would have had one by one.
    const double weight = s.samples[w] == 0 ? 1.0 : 1.0 - std::pow(1.0 - ewma_weight, ended[w]);
    s.mean_interval_ns[w] += weight * (per_op - s.mean_interval_ns[w]);
    s.samples[w] += ended[w];
  }
  s.busy_since_ns = now_ns;
}

}  // namespace cudactor::detail
