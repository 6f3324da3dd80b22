#include "cudactor/facade/owned_event.hpp"

#include <caf/all.hpp>

#include <vector>

#include "cudactor/actors/front_door.hpp"
#include "cudactor/facade/detail/ask.hpp"

namespace cudactor {

struct owned_event::owner {
  std::shared_ptr<front_door> door;
  event_lease lease;

  owner(std::shared_ptr<front_door> d, const event_lease& l) : door(std::move(d)), lease(l) {}
  owner(const owner&) = delete;
  owner& operator=(const owner&) = delete;
  ~owner() {
    // Through the pool's lane (detail::pool_lane), after anything asked of the pool before.
    // A closed door: the pool went with the runtime. Never throws.
    try {
      if (!door || lease.empty()) return;
      (void)door->post(detail::pool_lane, [d = door, l = lease](caf::event_based_actor* self) {
        auto pool = d->pool();
        if (!pool) return;
        self->request(pool, caf::infinite, release_atom::value, std::vector<event_lease>{l})
            .then([] {}, [](caf::error&) {});  // a lease the pool ended already: nothing to give
      });
    } catch (...) {  // a job that could not be made: the lease stays leased, never a throw
    }
  }
};

owned_event::owned_event(std::shared_ptr<front_door> door, const event_lease& lease)
    : owner_(lease.empty() ? nullptr : std::make_shared<const owner>(std::move(door), lease)),
      lease_(lease) {}

}  // namespace cudactor
