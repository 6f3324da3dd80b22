#include "cudactor/messaging/operation_types.hpp"

namespace cudactor {

std::string to_string(op_id id) { return "op " + std::to_string(id.value); }

std::string_view to_string(op_type x) noexcept {
  switch (x) {
    case op_type::kernel: return "kernel";
    case op_type::memory_transfer: return "memory_transfer";
    case op_type::synchronization: return "synchronization";
    case op_type::reduction: return "reduction";
    case op_type::broadcast: return "broadcast";
    case op_type::all_reduce: return "all_reduce";
    case op_type::barrier: return "barrier";
    case op_type::release: return "release";
    case op_type::all_gather: return "all_gather";
    case op_type::reduce_scatter: return "reduce_scatter";
    case op_type::collective_barrier: return "collective_barrier";
    case op_type::step: return "step";
  }
  return "unknown";
}

std::string_view to_string(op_priority x) noexcept {
  switch (x) {
    case op_priority::critical: return "critical";
    case op_priority::high: return "high";
    case op_priority::normal: return "normal";
    case op_priority::low: return "low";
    case op_priority::cleanup: return "cleanup";
  }
  return "unknown";
}

std::string_view to_string(op_workload x) noexcept {
  switch (x) {
    case op_workload::compute: return "compute";
    case op_workload::memory: return "memory";
    case op_workload::mixed: return "mixed";
    case op_workload::coordination: return "coordination";
  }
  return "unknown";
}

std::string_view to_string(op_state x) noexcept {
  switch (x) {
    case op_state::pending: return "pending";
    case op_state::ready: return "ready";
    case op_state::running: return "running";
    case op_state::submitted: return "submitted";
    case op_state::completed: return "completed";
    case op_state::failed: return "failed";
    case op_state::cancelled: return "cancelled";
  }
  return "unknown";
}

std::string_view to_string(barrier_mode x) noexcept {
  switch (x) {
    case barrier_mode::host: return "host";
    case barrier_mode::device: return "device";
  }
  return "unknown";
}

std::string_view to_string(pool_strategy x) noexcept {
  switch (x) {
    case pool_strategy::round_robin: return "round_robin";
    case pool_strategy::load_balanced: return "load_balanced";
    case pool_strategy::priority: return "priority";
    case pool_strategy::workload: return "workload";
    case pool_strategy::adaptive: return "adaptive";
  }
  return "unknown";
}

std::optional<pool_strategy> parse_pool_strategy(std::string_view text) noexcept {
  for (auto x : {pool_strategy::round_robin, pool_strategy::load_balanced, pool_strategy::priority,
                 pool_strategy::workload, pool_strategy::adaptive}) {
    if (to_string(x) == text) return x;
  }
  return std::nullopt;
}

}  // namespace cudactor
