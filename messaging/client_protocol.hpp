// messaging/client_protocol.hpp
//
// How code that is not an actor hands work to the coordinator: a client (actors/client.hpp)
// keeps one actor that registers operations and graphs on the caller's behalf, follows their
// ends as the coordinator's listener, and calls the caller's function once per operation or
// once per graph. The functions are local-only: a client serves its own process.
#pragma once

#include <caf/typed_actor.hpp>

#include <functional>
#include <vector>

#include "cudactor/messaging/atoms.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

// Called once with the operation's end: completed, failed or cancelled with its cause. An
// operation the coordinator refused to register ends failed, with an empty id.
using op_callback = local_only<std::function<void(op_notice)>>;
// Called once with the end of every operation of the graph, in the graph's order.
using graph_callback = local_only<std::function<void(std::vector<op_notice>)>>;

using client_actor = caf::typed_actor<
    // as the coordinator's op_listener
    caf::reacts_to<std::vector<op_notice>>, caf::reacts_to<submit_atom, op_spec, op_callback>,
    caf::reacts_to<submit_atom, graph_spec, graph_callback>, caf::reacts_to<shutdown_atom>>;

}  // namespace cudactor
