#include "cudactor/facade/barrier.hpp"

#include <utility>

#include "cudactor/actors/runtime.hpp"
#include "cudactor/facade/detail/ask.hpp"

namespace cudactor {

struct barrier::held {
  std::shared_ptr<front_door> door;
  std::uint64_t key = 0;
  barrier_mode mode = barrier_mode::host;  // the options' mode, for a limit given alone
  held(std::shared_ptr<front_door> d, std::uint64_t k, barrier_mode m)
      : door(std::move(d)), key(k), mode(m) {}
  held(const held&) = delete;
  held& operator=(const held&) = delete;
  ~held() { door->forget(key); }
};

barrier::barrier(runtime& rt, const std::vector<std::size_t>& members, barrier_options options) {
  const auto& door = rt.door();
  if (!door || door->closed()) throw detail::stopped();
  const barrier_mode mode = options.mode;
  auto spawned = rt.spawn_barrier(members, std::move(options));
  if (!spawned) throw failure{to_error(spawned.error())};
  auto key = door->keep(std::move(*spawned));
  if (!key) throw detail::stopped();
  held_ = std::make_shared<held>(door, *key, mode);
}

barrier_mode barrier::mode() const noexcept { return held_->mode; }

void barrier::synchronize_with(std::optional<barrier_mode> mode, std::chrono::nanoseconds limit,
                               const std::optional<cancellation>& cancel,
                               on_done<barrier_crossing> done) const {
  auto pick = [key = held_->key](const front_door& d) { return d.barrier(key); };
  const std::size_t lane = held_->key;
  if (!mode) {
    detail::ask<barrier_crossing>(held_->door, lane, std::move(done), pick,
                                  synchronize_atom::value);
  } else if (!cancel) {
    detail::ask<barrier_crossing>(held_->door, lane, std::move(done), pick, synchronize_atom::value,
                                  *mode, caf::timespan{limit});
  } else {
    detail::ask_waiting<barrier_crossing>(held_->door, lane, std::move(done), pick, limit, cancel,
                                          synchronize_atom::value, *mode);
  }
}

void barrier::status_with(on_done<barrier_status> done) const {
  detail::ask<barrier_status>(
      held_->door, held_->key, std::move(done),
      [key = held_->key](const front_door& d) { return d.barrier(key); }, status_atom::value);
}

}  // namespace cudactor
