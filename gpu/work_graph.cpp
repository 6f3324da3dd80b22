#include "cudactor/gpu/work_graph.hpp"

#include <string>

namespace cudactor::gpu {

std::string graph_node_label(const std::vector<graph_node>& nodes, std::size_t i) {
  if (i < nodes.size() && !nodes[i].label.empty()) return nodes[i].label;
  return "graph node " + std::to_string(i);
}

status check_graph_nodes(const std::vector<graph_node>& nodes) {
  if (nodes.empty()) return {status_code::invalid_argument, "a graph has at least one node"};
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].work) {
      return {status_code::invalid_argument, graph_node_label(nodes, i) + " has no work"};
    }
    for (const std::uint32_t a : nodes[i].after) {
      if (a >= i) {
        return {status_code::invalid_argument, graph_node_label(nodes, i) + " comes after node " +
                                                   std::to_string(a) +
                                                   ", which is not before it in the list"};
      }
    }
  }
  return {};
}

}  // namespace cudactor::gpu
