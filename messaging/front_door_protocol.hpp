// messaging/front_door_protocol.hpp
//
// What the front door's lanes (actors/front_door.hpp) take: a job run on the lane, which
// sends requests from the lane and handles their answers there. Local-only: lanes are never
// published, and a closure cannot leave its process.
#pragma once

#include <caf/event_based_actor.hpp>

#include <functional>

#include "cudactor/messaging/work.hpp"

namespace cudactor {

using front_job = local_only<std::function<void(caf::event_based_actor* self)>>;

}  // namespace cudactor
