#include "cudactor/facade/launch_lease.hpp"

#include <caf/all.hpp>

#include <utility>

#include "cudactor/actors/front_door.hpp"
#include "cudactor/facade/detail/ask.hpp"

namespace cudactor {

// Launches and the end go through the held stream's lane, in the order asked: the end reaches
// the coordinator after every launch reached the stream actor, so the coordinator's end of
// the hold arrives there after them.

void launch_lease::launch_with(work w, on_done<ticket> done) const {
  const std::size_t index = held_.stream.value;
  detail::ask<ticket>(
      door_, index, std::move(done), [index](const front_door& d) { return d.stream(index); },
      launch_atom::value, held_.op, std::move(w));
}

void launch_lease::complete_with(on_done<ticket> done) const {
  detail::ask<ticket>(
      door_, held_.stream.value, std::move(done),
      [](const front_door& d) { return d.coordinator(); }, enqueued_atom::value, held_.op);
}

void launch_lease::fail_with(std::string why, on_done<op_state> done) const {
  detail::ask<op_state>(
      door_, held_.stream.value, std::move(done),
      [](const front_door& d) { return d.coordinator(); }, enqueued_atom::value, held_.op,
      make_error(errc::op_failed, std::move(why)));
}

}  // namespace cudactor
