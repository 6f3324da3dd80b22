// messaging/input_check.hpp
//
// The one place where a value that may have come from another process is checked before
// anything acts on it: every field (through the value's inspect(), so none is forgotten:
// detail/input_walker.hpp), then what the type means (a graph's indices, its edges and bytes,
// a barrier's generation). The node checks everything a peer sends with these; the
// coordinator checks local input with the same functions, under its own limits. An error is
// errc::invalid_argument naming the field or the limit, and quotes at most a short prefix of
// anything the peer sent.
#pragma once

#include <caf/error.hpp>

#include <cstddef>
#include <string>
#include <string_view>

#include "cudactor/messaging/communicator_types.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/input_limits.hpp"
#include "cudactor/messaging/node_types.hpp"
#include "cudactor/messaging/step_types.hpp"

namespace cudactor {

// A priority or workload that arrives bare, as a request's argument: in range.
[[nodiscard]] caf::error check_input(op_priority x);
[[nodiscard]] caf::error check_input(op_workload x);

// An operation on its own (register), or as operation `index` of a graph.
[[nodiscard]] caf::error check_input(const op_spec& op, const input_limits& limits);
// A graph as a whole: its size, every operation, indices in range, edges and bytes bounded.
[[nodiscard]] caf::error check_input(const graph_spec& graph, const input_limits& limits);
// One node's part in a barrier across nodes.
[[nodiscard]] caf::error check_input(const barrier_call& call, const input_limits& limits);
[[nodiscard]] caf::error check_input(const guest_call& call, const input_limits& limits);
// What a node says it is, as a control plane receives it (connect_node).
[[nodiscard]] caf::error check_input(const node_info& info, const input_limits& limits);
// A node's part of a communicator, and an entry of its rendezvous: names, ranks and sizes.
[[nodiscard]] caf::error check_input(const communicator_call& call, const input_limits& limits);
// A buffer call for `verb`: the fields it needs set and in bounds (a store or fetch of 1 to
// max_buffer_transfer bytes, a size for alloc), the others empty. The node checks the rest
// (the buffer is the caller's, the range inside it, its own bounds).
[[nodiscard]] caf::error check_input(const buffer_call& call, buffer_verb verb,
                                     const input_limits& limits);
[[nodiscard]] caf::error check_input(const rendezvous_entry& entry, const input_limits& limits);
// A replay: its notices in range, its bindings bounded (the coordinator checks what they name).
[[nodiscard]] caf::error check_input(const replay_request& request, const input_limits& limits);
// A name (a barrier's, an operation's): 1 to max_name bytes.
[[nodiscard]] caf::error check_name(const std::string& name, const input_limits& limits,
                                    std::string_view what);

// How a peer's text appears in an error or a log line: at most `keep` bytes, printable ASCII
// only, quoted, with the full size when cut ("'abc…' (104857600 bytes)").
[[nodiscard]] std::string quote_peer_text(std::string_view text, std::size_t keep = 48);

}  // namespace cudactor
