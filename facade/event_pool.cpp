#include "cudactor/facade/event_pool.hpp"

#include <utility>

#include "cudactor/actors/runtime.hpp"
#include "cudactor/facade/detail/ask.hpp"

namespace cudactor {

namespace {

using detail::pool_lane;

event_pool_actor the_pool(const front_door& d) { return d.pool(); }

}  // namespace

event_pool::event_pool(runtime& rt) : door_(rt.door()) {}

void event_pool::acquire_with(gpu::event_kind kind, std::uint32_t n,
                              on_done<std::vector<event_lease>> done) const {
  detail::ask<std::vector<event_lease>>(door_, pool_lane, std::move(done), the_pool,
                                        acquire_atom::value, kind, n);
}

void event_pool::release_with(std::vector<event_lease> events, on_done<void> done) const {
  detail::ask<void>(door_, pool_lane, std::move(done), the_pool, release_atom::value,
                    std::move(events));
}

void event_pool::elapsed_with(const event_lease& start, const event_lease& end,
                              on_done<std::chrono::nanoseconds> done) const {
  detail::ask<caf::timespan>(
      door_, pool_lane,
      [done = std::move(done)](outcome<caf::timespan> r) {
        if (!r) return done(r.error());
        done(std::chrono::nanoseconds{*r});
      },
      the_pool, elapsed_atom::value, start, end);
}

void event_pool::utilization_with(on_done<pool_utilization> done) const {
  detail::ask<pool_utilization>(door_, pool_lane, std::move(done), the_pool,
                                utilization_atom::value);
}

}  // namespace cudactor
