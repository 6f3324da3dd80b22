// facade/event_pool.hpp
//
// The runtime's event pool as a plain C++ object: lease events by kind, give them back, see
// how full it is. Answers as every facade call does (facade/completion.hpp).
//
//   cudactor::event_pool pool{*rt};
//   auto leased = pool.acquire(gpu::event_kind::timing, 4).get();
//   pool.release(leased).get();
//   auto took = pool.elapsed(start, end).get();   // two recorded timing events
//
// Events recorded through cudactor::stream::record are owned_events, given back on their
// own; leases from acquire are the caller's until released (record and wait take them too).
//
// The pool is made with cudactor.pool.regular regular and cudactor.pool.timing timing events
// up front; a request for regular events may be served with timing ones when the regular ones
// run out, never the other way round.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "cudactor/facade/completion.hpp"
#include "cudactor/facade/owned_event.hpp"
#include "cudactor/messaging/types.hpp"

namespace cudactor {

class front_door;
class runtime;

class event_pool {
 public:
  explicit event_pool(runtime& rt);

  // `n` events of `kind`, all or none (pool_exhausted when the pool is at its maximum).
  template <class Token = use_future_t>
  auto acquire(gpu::event_kind kind, std::uint32_t n, Token&& token = {}) const {
    return complete<std::vector<event_lease>>(
        std::forward<Token>(token), [p = *this, kind, n](on_done<std::vector<event_lease>> d) {
          p.acquire_with(kind, n, std::move(d));
        });
  }
  // All or none: one stale or doubly released event refuses the call (stale_event, naming it).
  template <class Token = use_future_t>
  auto release(std::vector<event_lease> events, Token&& token = {}) const {
    return complete<void>(std::forward<Token>(token),
                          [p = *this, events = std::move(events)](on_done<void> d) mutable {
                            p.release_with(std::move(events), std::move(d));
                          });
  }
  // end - start of two timing events, as cudaEventElapsedTime: once the device has passed
  // both (not_ready before: await the stream first), not_timing, not_recorded, stale_event.
  template <class Token = use_future_t>
  auto elapsed(const owned_event& start, const owned_event& end, Token&& token = {}) const {
    return complete<std::chrono::nanoseconds>(
        std::forward<Token>(token),
        [p = *this, start, end](on_done<std::chrono::nanoseconds> d) {  // both kept leased
          p.elapsed_with(start.lease(), end.lease(), [start, end, d](auto r) { d(std::move(r)); });
        });
  }
  template <class Token = use_future_t>
  auto elapsed(const event_lease& start, const event_lease& end, Token&& token = {}) const {
    return complete<std::chrono::nanoseconds>(
        std::forward<Token>(token), [p = *this, start, end](on_done<std::chrono::nanoseconds> d) {
          p.elapsed_with(start, end, std::move(d));
        });
  }
  template <class Token = use_future_t>
  auto utilization(Token&& token = {}) const {
    return complete<pool_utilization>(
        std::forward<Token>(token),
        [p = *this](on_done<pool_utilization> d) { p.utilization_with(std::move(d)); });
  }

 private:
  void acquire_with(gpu::event_kind kind, std::uint32_t n,
                    on_done<std::vector<event_lease>> done) const;
  void release_with(std::vector<event_lease> events, on_done<void> done) const;
  void utilization_with(on_done<pool_utilization> done) const;
  void elapsed_with(const event_lease& start, const event_lease& end,
                    on_done<std::chrono::nanoseconds> done) const;

  std::shared_ptr<front_door> door_;
};

}  // namespace cudactor
