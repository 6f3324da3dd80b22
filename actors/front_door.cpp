#include "cudactor/actors/front_door.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <utility>

namespace cudactor {

namespace {

// `index` only tells the lanes apart (and spares CAF's factory an argument-less spawn, whose
// empty tuple UBSan reports as a null dereference).
caf::behavior lane(caf::event_based_actor* self, std::size_t index) {
  (void)index;
  return {
      [self](front_job& j) {
        if (j.get()) j.get()(self);
      },
  };
}

}  // namespace

front_door::front_door(caf::actor_system& system, std::vector<stream_actor> streams,
                       event_pool_actor pool, coordinator_actor coordinator, std::size_t lanes)
    : lane_count_(std::max<std::size_t>(lanes, 1)),
      stream_count_(streams.size()),
      streams_(std::move(streams)),
      pool_(std::move(pool)),
      coordinator_(std::move(coordinator)) {
  for (std::size_t i = 0; i < lane_count_; ++i) lanes_.push_back(system.spawn(lane, i));
}

front_door::~front_door() { close(); }

bool front_door::post(std::size_t lane, job j) {
  caf::actor to;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    if (closed_) return false;
    to = lanes_[lane % lane_count_];
  }
  caf::anon_send(to, front_job{std::move(j)});
  return true;
}

stream_actor front_door::stream(std::size_t index) const {
  std::lock_guard<std::mutex> lock{mutex_};
  return index < streams_.size() ? streams_[index] : stream_actor{};
}

event_pool_actor front_door::pool() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return pool_;
}

coordinator_actor front_door::coordinator() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return coordinator_;
}

std::optional<std::uint64_t> front_door::keep(barrier_actor barrier) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (closed_) return std::nullopt;
  const std::uint64_t key = next_barrier_++;
  barriers_.emplace(key, std::move(barrier));
  return key;
}

barrier_actor front_door::barrier(std::uint64_t key) const {
  std::lock_guard<std::mutex> lock{mutex_};
  auto found = barriers_.find(key);
  return found == barriers_.end() ? barrier_actor{} : found->second;
}

void front_door::forget(std::uint64_t key) {
  barrier_actor gone;  // released outside the lock: the last handle may destroy the actor
  std::lock_guard<std::mutex> lock{mutex_};
  if (auto found = barriers_.find(key); found != barriers_.end()) {
    gone = std::move(found->second);
    barriers_.erase(found);
  }
}

void front_door::close() noexcept {
  std::vector<caf::actor> lanes;
  std::vector<stream_actor> streams;
  std::unordered_map<std::uint64_t, barrier_actor> barriers;
  event_pool_actor pool;
  coordinator_actor coordinator;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    if (closed_) return;
    closed_ = true;
    lanes.swap(lanes_);
    streams.swap(streams_);
    barriers.swap(barriers_);
    pool = std::move(pool_);
    coordinator = std::move(coordinator_);
  }
  for (const auto& l : lanes) caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
}

bool front_door::closed() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return closed_;
}

}  // namespace cudactor
