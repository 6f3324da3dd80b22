// actors/front_door.hpp
//
// Where requests from code that is not an actor enter the actor world (the facade,
// facade/). A thread that is not an actor cannot receive an answer without blocking, and
// spawning or building a scoped_actor on it ties it to the actor system (runtime.hpp). So the
// runtime keeps a few small actors, the lanes: a caller hands a lane a job (one message, never
// a wait), and the job, run on the lane, sends the request and handles its answer there.
// Requests through one lane reach each actor in the order they were posted; the facade
// sends everything addressed to one actor through one lane, so one caller's requests to a
// stream keep their order.
//
// The door also holds the handles the jobs address (streams, pool, coordinator, barriers the
// facade made): the runtime closes it once its actors have stopped, and from then on it
// refuses jobs and holds no handle, so a facade object may outlive its runtime.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cudactor/messaging/barrier_protocol.hpp"
#include "cudactor/messaging/coordinator_protocol.hpp"
#include "cudactor/messaging/event_pool_protocol.hpp"
#include "cudactor/messaging/front_door_protocol.hpp"
#include "cudactor/messaging/stream_protocol.hpp"

namespace cudactor {

class front_door {
 public:
  // Runs on a lane: send requests from `self`, handle their answers with then().
  using job = std::function<void(caf::event_based_actor* self)>;  // front_job's

  // Spawns `lanes` lanes (at least one) in `system`.
  front_door(caf::actor_system& system, std::vector<stream_actor> streams, event_pool_actor pool,
             coordinator_actor coordinator, std::size_t lanes);
  front_door(const front_door&) = delete;
  front_door& operator=(const front_door&) = delete;
  ~front_door();

  [[nodiscard]] std::size_t lanes() const noexcept { return lane_count_; }
  // Runs `j` on lane `lane % lanes()`; false once the door is closed (`j` is dropped unrun).
  [[nodiscard]] bool post(std::size_t lane, job j);

  // The handles, for jobs; empty handles once closed. Stream indices are those of the
  // runtime's streams(); the count never changes.
  [[nodiscard]] std::size_t stream_count() const noexcept { return stream_count_; }
  [[nodiscard]] stream_actor stream(std::size_t index) const;
  [[nodiscard]] event_pool_actor pool() const;
  [[nodiscard]] coordinator_actor coordinator() const;
  // A barrier the door holds for a facade object, under a key of its own; nothing when the
  // door is closed.
  [[nodiscard]] std::optional<std::uint64_t> keep(barrier_actor barrier);
  [[nodiscard]] barrier_actor barrier(std::uint64_t key) const;
  void forget(std::uint64_t key);

  // The runtime's, once its actors have stopped: refuses jobs from now on, stops the lanes
  // (a request still unanswered there is dropped, which tells its caller shutting_down) and
  // lets go of every handle. Idempotent.
  void close() noexcept;
  [[nodiscard]] bool closed() const;

 private:
  mutable std::mutex mutex_;
  bool closed_ = false;
  std::vector<caf::actor> lanes_;
  std::size_t lane_count_;
  std::size_t stream_count_;
  std::vector<stream_actor> streams_;
  event_pool_actor pool_;
  coordinator_actor coordinator_;
  std::unordered_map<std::uint64_t, barrier_actor> barriers_;
  std::uint64_t next_barrier_ = 1;
};

}  // namespace cudactor
