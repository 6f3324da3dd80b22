#include "cudactor/gpu/detail/host_work_graph.hpp"

#include <exception>
#include <string>
#include <utility>

namespace cudactor::gpu::detail {

host_work_graph::host_work_graph(std::vector<graph_node> nodes) {
  works_.reserve(nodes.size());
  for (graph_node& n : nodes) works_.push_back(std::move(n.work));
  count_instantiation();
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
    try {  // as the host engine does for a lone work: a throw is that work's failure
      outcome = works_[i](on);
    } catch (const std::exception& e) {
      outcome = status{status_code::op_failed, std::string{"work threw: "} + e.what()};
    } catch (...) {
      outcome = status{status_code::op_failed, "work threw"};
    }
    if (observer != nullptr && *observer) (*observer)(i, outcome);
    if (!outcome.ok() && first.ok()) first = std::move(outcome);
  }
  return first;
}

}  // namespace cudactor::gpu::detail
