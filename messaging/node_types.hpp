// messaging/node_types.hpp
//
// What a node says about itself when asked (info_atom): the values a control plane checks
// after connecting, before it hands the node any work.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace cudactor {

struct node_info {
  std::string name;     // as configured (cudactor.node.name), unique per job
  std::string backend;  // the runtime's backend, and why it was chosen
  std::uint32_t coordinator_streams = 0;
  std::vector<std::string> operations;  // the named operations it runs, sorted
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_info& x) {
  return f(caf::meta::type_name("cudactor::node_info"), x.name, x.backend, x.coordinator_streams,
           x.operations);
}

}  // namespace cudactor
