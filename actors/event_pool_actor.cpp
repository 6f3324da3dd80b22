#include "cudactor/actors/event_pool_actor.hpp"

#include <caf/all.hpp>

#include <array>
#include <optional>
#include <unordered_set>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/actors/detail/actor_metrics.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace {

struct pool_state {
  static inline const char* name = "cudactor.event_pool";  // the actor's name in CAF's logs
  std::shared_ptr<event_table> events;
  event_pool_options options;
  std::shared_ptr<metrics::registry> registry;  // keeps the cells below alive
  std::optional<detail::event_pool_metrics> metrics;
  std::array<std::vector<std::uint32_t>, 2> free;  // slots, by event kind
  std::array<std::uint64_t, 2> leased{0, 0};
  std::unordered_set<std::uint32_t> lent;  // timing events leased for regular requests
  std::uint64_t created = 0;
  bool acquired_since_check = false;
  bool shrink_armed = false;
  bool closing = false;

  static std::size_t index(gpu::event_kind kind) { return static_cast<std::size_t>(kind); }

  // Creates up to `count` events of `kind` within max_events; says how many it made, or the
  // backend's failure when it could make none.
  gpu::result<std::uint32_t> grow(gpu::event_kind kind, std::uint32_t count) {
    const std::uint64_t room = options.max_events > created ? options.max_events - created : 0;
    const auto target = static_cast<std::uint32_t>(std::min<std::uint64_t>(count, room));
    std::uint32_t made = 0;
    while (made < target) {
      auto slot = events->create(kind);
      if (!slot) {
        if (made == 0) return slot.error();
        break;
      }
      free[index(kind)].push_back(*slot);
      ++created;
      ++made;
    }
    return made;
  }

  void report(gpu::event_kind kind) {
    const std::size_t k = index(kind);
    metrics->levels(k, free[k].size(), leased[k]);
  }

  pool_utilization utilization() const {
    pool_utilization out;
    out.available = free[index(gpu::event_kind::regular)].size();
    out.timing_available = free[index(gpu::event_kind::timing)].size();
    out.in_use = leased[0] + leased[1];
    out.capacity = options.max_events;
    out.timing_lent = lent.size();
    return out;
  }

  // Destroys free events beyond what is kept of each kind.
  void shrink() {
    for (std::size_t k = 0; k < free.size(); ++k) {
      auto& slots = free[k];
      const std::uint32_t up_front = k == index(gpu::event_kind::regular) ? options.regular
                                                                          : options.timing;
      const std::size_t keep = std::max(options.keep_free, up_front);
      while (slots.size() > keep) {
        events->destroy(slots.back());
        slots.pop_back();
        --created;
      }
    }
    report(gpu::event_kind::regular);
    report(gpu::event_kind::timing);
  }
};

caf::error shutting_down() {
  return make_error(errc::shutting_down, "the event pool is shutting down");
}

// Slots of the events made up front, by kind.
using made_events = std::array<std::vector<std::uint32_t>, 2>;

event_pool_actor::behavior_type event_pool(event_pool_actor::stateful_pointer<pool_state> self,
                                           std::shared_ptr<event_table> events,
                                           event_pool_options options,
                                           std::shared_ptr<metrics::registry> registry,
                                           made_events made) {
  self->state.registry = detail::registry_or_own(std::move(registry));
  self->state.metrics.emplace(*self->state.registry, detail::gpu_label(events->device()),
                              options.max_events);
  self->state.events = std::move(events);
  self->state.options = options;
  self->state.free = std::move(made);
  self->state.created = self->state.free[0].size() + self->state.free[1].size();
  self->state.report(gpu::event_kind::regular);
  self->state.report(gpu::event_kind::timing);
  if (options.grow_batch == 0) self->state.options.grow_batch = 1;
  auto arm_shrink = [self] {
    auto& st = self->state;
    if (st.shrink_armed || st.options.idle_period.count() <= 0) return;
    st.shrink_armed = true;
    self->delayed_send(self, st.options.idle_period, shrink_atom::value);
  };
  return {
      [self, arm_shrink](acquire_atom, gpu::event_kind kind,
                         std::uint32_t count) -> caf::result<std::vector<event_lease>> {
        auto& st = self->state;
        if (st.closing) return shutting_down();
        if (kind != gpu::event_kind::regular && kind != gpu::event_kind::timing) {
          return make_error(errc::invalid_argument, "acquire: unknown event kind");
        }
        if (count == 0 || count > st.options.max_events) {
          return make_error(errc::invalid_argument, "acquire: asked for " + std::to_string(count) +
                                                        " events; the pool holds at most " +
                                                        std::to_string(st.options.max_events));
        }
        auto& slots = st.free[pool_state::index(kind)];
        if (slots.size() < count) {
          const auto missing = static_cast<std::uint32_t>(count - slots.size());
          auto made = st.grow(kind, std::max(missing, st.options.grow_batch));
          if (!made) return to_error(made.error());
        }
        // A regular request short of events takes free timing events on loan; what it takes
        // goes back to the timing events when released (its ref says timing).
        auto& timing = st.free[pool_state::index(gpu::event_kind::timing)];
        const std::size_t lend =
            kind == gpu::event_kind::regular && slots.size() < count
                ? std::min<std::size_t>(count - slots.size(), timing.size())
                : 0;
        if (slots.size() + lend < count) {
          st.metrics->exhausted(pool_state::index(kind));
          st.report(kind);
          return make_error(errc::pool_exhausted,
                            "acquire " + std::to_string(count) + " " +
                                std::string{gpu::to_string(kind)} + " events: the pool is at " +
                                "its maximum of " + std::to_string(st.options.max_events) +
                                " events (" + std::to_string(st.leased[0] + st.leased[1]) +
                                " leased)");
        }
        std::vector<event_lease> out;
        out.reserve(count);
        for (std::size_t i = 0; i < lend; ++i) {
          st.lent.insert(timing.back());
          out.push_back(st.events->lease(timing.back()));
          timing.pop_back();
        }
        while (out.size() < count) {
          out.push_back(st.events->lease(slots.back()));
          slots.pop_back();
        }
        st.leased[pool_state::index(kind)] += count - lend;
        st.leased[pool_state::index(gpu::event_kind::timing)] += lend;
        st.report(kind);
        if (lend > 0) {
          st.metrics->lent(lend);
          st.report(gpu::event_kind::timing);
        }
        st.acquired_since_check = true;
        arm_shrink();
        return out;
      },
      [self, arm_shrink](release_atom, const std::vector<event_lease>& refs) -> caf::result<void> {
        auto& st = self->state;
        // All or none: check every ref (and duplicates within the call) before changing any.
        for (std::size_t i = 0; i < refs.size(); ++i) {
          auto checked = st.events->check_release(refs[i]);
          if (!checked.ok()) {
            return make_error(refs[i].empty() ? errc::invalid_argument : errc::stale_event,
                              "release: " + checked.message());
          }
          for (std::size_t j = 0; j < i; ++j) {
            if (refs[j].same_lease(refs[i])) {
              return make_error(errc::stale_event,
                                "release: " + describe(refs[i]) + " appears twice in one call");
            }
          }
        }
        for (const auto& ref : refs) {
          st.events->end_lease(ref);
          st.free[pool_state::index(ref.kind)].push_back(ref.slot);
          --st.leased[pool_state::index(ref.kind)];
          st.lent.erase(ref.slot);
        }
        st.report(gpu::event_kind::regular);
        st.report(gpu::event_kind::timing);
        arm_shrink();
        return caf::unit;
      },
      [self](utilization_atom) { return self->state.utilization(); },
      [self](elapsed_atom, const event_lease& start,
             const event_lease& end) -> caf::result<caf::timespan> {
        if (start.empty() || end.empty()) {
          return make_error(errc::invalid_argument, "elapsed: an empty event names nothing");
        }
        auto between = self->state.events->elapsed(start, end);
        if (!between) {
          // A handle the table does not know is a released lease here, not a lost stream.
          const auto code = between.error().code();
          return make_error(
              code == gpu::status_code::invalid_handle ? errc::stale_event : to_errc(code),
              "elapsed between " + describe(start) + " and " + describe(end) + ": " +
                  between.error().message());
        }
        return caf::timespan{*between};
      },
      [self, arm_shrink](shrink_atom) {
        auto& st = self->state;
        st.shrink_armed = false;
        // Busy since the last look: look again later. Idle: shrink, and sleep until the next
        // acquire or release arms the timer again.
        const bool busy = st.acquired_since_check;
        st.acquired_since_check = false;
        if (busy && !st.closing) {
          arm_shrink();
        } else {
          st.shrink();
        }
      },
      [self](shutdown_atom) { self->state.closing = true; },
  };
}

}  // namespace

gpu::result<event_pool_actor> spawn_event_pool(caf::actor_system& system,
                                               std::shared_ptr<event_table> events,
                                               event_pool_options options,
                                               std::shared_ptr<metrics::registry> metrics) {
  if (std::uint64_t{options.regular} + options.timing > options.max_events) {
    return gpu::status{gpu::status_code::invalid_argument,
                       "event pool: " + std::to_string(options.regular) + " regular and " +
                           std::to_string(options.timing) + " timing events up front exceed " +
                           "its maximum of " + std::to_string(options.max_events)};
  }
  // Made here, before any stream actor can read the table: a device that cannot make them
  // fails the start, naming the kind, instead of a later acquire.
  made_events made;
  auto undo = [&] {
    for (auto& slots : made) {
      for (auto slot : slots) events->destroy(slot);
    }
  };
  for (auto [kind, count] : {std::pair{gpu::event_kind::regular, options.regular},
                             std::pair{gpu::event_kind::timing, options.timing}}) {
    for (std::uint32_t i = 0; i < count; ++i) {
      auto slot = events->create(kind);
      if (!slot) {
        undo();
        return gpu::status{slot.error().code(),
                           "event pool: making " + std::to_string(count) + " " +
                               std::string{gpu::to_string(kind)} + " events up front: " +
                               slot.error().message()};
      }
      made[static_cast<std::size_t>(kind)].push_back(*slot);
    }
  }
  return system.spawn(event_pool, std::move(events), options, std::move(metrics), std::move(made));
}

}  // namespace cudactor
