// tests/common/protocol_printing.hpp
//
// Lets Boost.Test print the protocol's ids and the coordinator's enums.
#pragma once

#include <ostream>

#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/messaging/types.hpp"
#include "printing.hpp"

namespace cudactor {

inline std::ostream& operator<<(std::ostream& out, op_id id) { return out << to_string(id); }
inline std::ostream& operator<<(std::ostream& out, stream_id id) {
  return out << "stream " << id.value;
}
inline std::ostream& operator<<(std::ostream& out, op_state s) { return out << to_string(s); }
inline std::ostream& operator<<(std::ostream& out, op_workload w) { return out << to_string(w); }

}  // namespace cudactor
