// messaging/message_types.hpp
//
// The one place cudactor's message types are registered with CAF. Every node of a
// distributed run must call add_message_types() on its config before building its
// actor_system: CAF matches types across processes by these names and compares actor
// interfaces by them when connecting.
#pragma once

#include <caf/actor_system_config.hpp>

namespace cudactor {

// Registers every message type of messaging/ (and the vectors of them), the actor interfaces,
// and the "cudactor" error category.
void add_message_types(caf::actor_system_config& config);

}  // namespace cudactor
