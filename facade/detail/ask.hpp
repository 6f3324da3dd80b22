// facade/detail/ask.hpp
//
// One request of a facade call: posted to a lane of the runtime's front door, sent from the
// lane to the actor `pick` names, its answer (or why none came) handed to `done` exactly
// once. Nothing here waits: the calling thread posts a message and returns.
#pragma once

#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "cudactor/actors/detail/call_once.hpp"
#include "cudactor/actors/front_door.hpp"
#include "cudactor/facade/cancellation.hpp"
#include "cudactor/facade/completion.hpp"

namespace cudactor::detail {

// Everything asked of the coordinator goes through one lane, so that it arrives in the order
// it was asked (an add, then a depend on its id).
inline constexpr std::size_t coordinator_lane = 1;
// The event pool's requests share one lane: a release is seen before an acquire asked after.
inline constexpr std::size_t pool_lane = 0;

[[nodiscard]] inline failure stopped() {
  return failure{errc::shutting_down, "the runtime has shut down"};
}

// A cell that tells `done` once: the answer, or shutting_down if the request is dropped.
template <class T>
[[nodiscard]] std::shared_ptr<call_once<outcome<T>>> answer_cell(on_done<T> done) {
  return std::make_shared<call_once<outcome<T>>>(std::move(done),
                                                 [] { return outcome<T>{stopped()}; });
}

// Sends `args...` to the actor `pick(door)` returns (empty: the door closed) and tells `done`
// its answer. `lane` orders requests: the same lane for everything to one actor.
template <class T, class Pick, class... Ts>
void ask(const std::shared_ptr<front_door>& door, std::size_t lane, on_done<T> done, Pick pick,
         Ts... args) {
  auto cell = answer_cell<T>(std::move(done));
  if (!door) {
    (*cell)(stopped());
    return;
  }
  // The arguments are moved in here and on into the message: a graph of 100k operations is
  // never copied on its way (the lane runs a job once).
  auto job = [cell, door, pick = std::move(pick),
              held = std::tuple<Ts...>{std::move(args)...}](caf::event_based_actor* self) mutable {
    auto to = pick(*door);
    if (!to) {
      (*cell)(stopped());
      return;
    }
    auto on_error = [cell](caf::error& err) { (*cell)(failure{std::move(err)}); };
    auto sent = std::apply(
        [&](Ts&... xs) { return self->request(to, caf::infinite, std::move(xs)...); }, held);
    if constexpr (std::is_void_v<T>) {
      std::move(sent).then([cell] { (*cell)(outcome<void>{}); }, on_error);
    } else {
      std::move(sent).then([cell](T& value) { (*cell)(outcome<T>{std::move(value)}); }, on_error);
    }
  };
  if (!door->post(lane, std::move(job))) (*cell)(stopped());
}

// A wait through ask: `args..., wait_limit{limit, key}`, the key one `cancel` withdraws (the
// withdraw goes through the same lane, after the wait, to the same actor). A wait whose
// cancellation was cancelled already is answered cancelled without reaching the actor.
template <class T, class Pick, class... Ts>
void ask_waiting(const std::shared_ptr<front_door>& door, std::size_t lane, on_done<T> done,
                 Pick pick, std::chrono::nanoseconds limit,
                 const std::optional<cancellation>& cancel, Ts... args) {
  if (cancel && cancel->cancelled()) {
    done(failure{errc::cancelled, "the wait was withdrawn before it began"});
    return;
  }
  const std::uint64_t key = cancel ? next_wait_key() : 0;
  if (cancel) {
    done = [done = std::move(done), c = *cancel, key](outcome<T> r) {
      c.forget(key);
      done(std::move(r));
    };
  }
  ask<T>(door, lane, std::move(done), pick, std::move(args)...,
         wait_limit{caf::timespan{limit}, key});
  if (!cancel || !door) return;
  (void)cancel->keep(key, [door, lane, pick, key] {
    (void)door->post(lane, [door, pick, key](caf::event_based_actor* self) {
      auto to = pick(*door);
      if (!to) return;
      // The wait itself is answered (cancelled, or its end if that came first).
      self->request(to, caf::infinite, withdraw_atom::value, key)
          .then([](bool) {}, [](caf::error&) {});
    });
  });
}

}  // namespace cudactor::detail
