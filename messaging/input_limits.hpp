// messaging/input_limits.hpp
//
// How much one message may ask for. Every value that may have come from another process is
// checked against these (messaging/input_check.hpp) before anything acts on it, so that the
// work a message causes stays linear in its size and bounded in total. A node's defaults
// (node_options) are these; the coordinator, which takes only local input, allows more.
// Each is an option of the runtime (docs/configuration.md, cudactor.node.*).
#pragma once

#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <cstddef>

namespace cudactor {

struct input_limits {
  std::size_t max_graph_ops = 65536;                    // operations in one graph
  std::size_t max_graph_edges = std::size_t{1} << 20;   // dependencies (after + deps) in one
  std::size_t max_graph_bytes = std::size_t{16} << 20;  // names, descriptions, arguments
  std::size_t max_description = 256;                    // bytes of one description
  std::size_t max_name = 256;                           // bytes of a barrier or operation name
  std::size_t max_args = 16;                            // arguments of one named operation
  std::size_t max_uses = 64;                            // buffer uses of one operation
  std::size_t max_string = std::size_t{1} << 20;        // bytes of any one string
  std::size_t max_sequence = std::size_t{1} << 22;      // elements of any one list
  caf::timespan max_duration{std::chrono::hours{24}};   // any duration (never negative)
};

// A node says what it takes (node_info), so that a control plane refuses more before it
// sends it rather than moving it across the network to be refused.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, input_limits& x) {
  return f(caf::meta::type_name("cudactor::input_limits"), x.max_graph_ops, x.max_graph_edges,
           x.max_graph_bytes, x.max_description, x.max_name, x.max_args, x.max_uses, x.max_string,
           x.max_sequence, x.max_duration);
}

}  // namespace cudactor
