// gpu/detail/host_work_graph.hpp
//
// The host backend's work_graph (gpu/work_graph.hpp): the nodes' work functions, run in the
// list's order (a dependency order) inside the work that launches the graph, each outcome told
// to the launch's observer. A node's work is replaced in place (an update); the graph is
// "instantiated" once, when built.
#pragma once

#include <mutex>
#include <vector>

#include "cudactor/gpu/detail/graph_scratch.hpp"
#include "cudactor/gpu/detail/host_scratch.hpp"
#include "cudactor/gpu/work_graph.hpp"

namespace cudactor::gpu::detail {

class host_work_graph final : public work_graph {
 public:
  // `nodes` checked (check_graph_nodes).
  host_work_graph(std::vector<graph_node> nodes, host_scratch_budget budget);
  ~host_work_graph() override;

  [[nodiscard]] std::size_t size() const noexcept override { return works_.size(); }
  [[nodiscard]] bool observes_nodes() const noexcept override { return true; }
  [[nodiscard]] bool captured() const noexcept override { return false; }
  [[nodiscard]] status set_work(std::uint32_t node, work_fn work) override;
  [[nodiscard]] status launch(const launch_context& on, const node_observer* observer) override;

 private:
  std::mutex mutex_;  // one launcher at a time
  std::vector<work_fn> works_;
  host_scratch_budget budget_;
  graph_scratch scratch_;
};

}  // namespace cudactor::gpu::detail
