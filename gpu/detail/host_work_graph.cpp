#include "cudactor/gpu/detail/host_work_graph.hpp"

#include <cstddef>
#include <exception>
#include <string>
#include <utility>

namespace cudactor::gpu::detail {

host_work_graph::host_work_graph(std::vector<graph_node> nodes, host_scratch_budget budget)
    : budget_(std::move(budget)), scratch_(nodes.size(), [this](std::size_t bytes) {
        return allocate_host_scratch(budget_, bytes);
      }) {
  works_.reserve(nodes.size());
  for (graph_node& n : nodes) works_.push_back(std::move(n.work));
  count_instantiation();
}

host_work_graph::~host_work_graph() {
  for (const graph_scratch::block& b : scratch_.blocks())
    free_host_scratch(budget_, b.data, b.size);
}

status host_work_graph::set_work(std::uint32_t node, work_fn work) {
  if (!work) return {status_code::invalid_argument, "empty work function"};
  std::lock_guard<std::mutex> lock{mutex_};
  if (node >= works_.size()) {
    return {status_code::invalid_argument, "graph node " + std::to_string(node) +
                                               " does not exist (" + std::to_string(works_.size()) +
                                               " nodes)"};
  }
  works_[node] = std::move(work);
  count_update();
  return {};
}

status host_work_graph::launch(const launch_context& on, const node_observer* observer) {
  if (on.kind() != backend_kind::host) {
    return {status_code::invalid_argument, "a host backend's graph launched on another backend"};
  }
  std::lock_guard<std::mutex> lock{mutex_};
  status first;
  for (std::uint32_t i = 0; i < works_.size(); ++i) {
    status outcome;
    // The node's own scratch, the same at every launch, in place of the launching work's.
    const launch_context node{on.kind(), on.stream(), on.native_stream(), false,
                              &scratch_.begin(i)};
    try {  // as the host engine does for a lone work: a throw is that work's failure
      outcome = works_[i](node);
    } catch (const std::exception& e) {
      outcome = status{status_code::op_failed, std::string{"work threw: "} + e.what()};
    } catch (...) {
      outcome = status{status_code::op_failed, "work threw"};
    }
    scratch_.settle(true);  // it runs at every launch: what it took is its own, failed or not
    hold_scratch(scratch_.bytes());
    if (observer != nullptr && *observer) (*observer)(i, outcome);
    if (!outcome.ok() && first.ok()) first = std::move(outcome);
  }
  return first;
}

}  // namespace cudactor::gpu::detail
