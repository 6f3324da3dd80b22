// gpu/detail/host_scratch.hpp
//
// Scratch on the host backend (launch_context::scratch): host memory aligned as the backend's
// "device" memory and counted against the same budget (host_backend_options::memory_limit),
// so that a work asking for more than the device has is refused as on a GPU. A lone run's
// (host_run_scratch) is freed when the work returns, which on the host is when what it
// "launched" is done; a host graph's nodes keep theirs (graph_scratch) until the graph goes.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "cudactor/gpu/detail/allocation_table.hpp"
#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu::detail {

// The budget scratch counts against: the backend's table, shared so that a graph outliving
// its backend still gives back what it took.
struct host_scratch_budget {
  std::shared_ptr<allocation_table> table;
  std::size_t limit = 0;
};

// `bytes` of host memory aligned to launch_context::scratch_alignment, within the budget;
// out_of_memory when over it or when the host has none.
[[nodiscard]] result<void*> allocate_host_scratch(const host_scratch_budget& budget,
                                                  std::size_t bytes);
void free_host_scratch(const host_scratch_budget& budget, void* data, std::size_t bytes) noexcept;

// One run's scratch: every block it took is freed with it.
class host_run_scratch final : public scratch_source {
 public:
  explicit host_run_scratch(const host_scratch_budget& budget) : budget_(&budget) {}
  ~host_run_scratch() override;

  [[nodiscard]] result<void*> take(std::size_t bytes) override;

 private:
  struct taken {
    void* data;
    std::size_t bytes;
  };
  const host_scratch_budget* budget_;
  std::vector<taken> taken_;
};

}  // namespace cudactor::gpu::detail
