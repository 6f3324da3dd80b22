// actors/coordinator/barrier_book.hpp
//
// The coordinator's barrier operations while they run: per operation its members and where
// it stands (barrier_run), for a synchronize what it is owed (barrier_answer), and the
// synchronizes' limits by deadline. A barrier that ended (timed out, withdrawn, failed) while
// tickets of its points were still on their way is remembered until they are back: its points
// are still its streams' newest barrier points, which the next synchronize reads the work
// before the barrier from. The coordinator drives it (coordinator_barriers.cpp).
#pragma once

#include <caf/typed_response_promise.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cudactor/actors/coordinator/deadline_queue.hpp"
#include "cudactor/messaging/barrier_protocol.hpp"
#include "cudactor/messaging/coordinator_types.hpp"

namespace cudactor::detail {

// What a synchronize (a barrier actor's generation) is owed: its crossing, in device mode once
// its crossings are placed, in host mode once every member arrived; or the first of its
// limit, its withdrawal, a failure. The newest work before each member's mark is what a member
// "reached the barrier with".
struct barrier_answer {
  caf::typed_response_promise<barrier_crossing> promise;
  std::int64_t began_ns = 0;
  caf::timespan limit{0};
  std::uint64_t wait = 0;                 // its id among the coordinator's waits, or 0
  std::vector<gpu::timeline_point> work;  // by member: the newest work before its mark
  bool given = false;
  // A barrier actor's generation: the words its answers carry ("barrier 'step' generation 3:
  // ..."), its number, and the actor told of the outcome.
  std::string label;
  std::uint64_t generation = 0;
  barrier_actor front;
  // The barrier actor's waits: under 2g its caller withdrew it (cancelled), under 2g + 1 the
  // barrier actor shut down (shutting_down).
  std::uint64_t front_wait = 0, front_stop = 0;
  bool withdrawn = false;           // answered cancelled for its caller
  deadline_queue::handle deadline;  // its limit among the book's deadlines (none() when none)
};

// A barrier operation: its members and where it stands.
struct barrier_run {
  std::vector<std::uint32_t> members;  // stream indexes, in the order the operation named them
  barrier_mode mode = barrier_mode::device;
  std::size_t tickets_left = 0;          // of the marks (and, device mode, crossings) on their way
  std::vector<std::uint8_t> tickets_of;  // by member: its tickets back (mark, then crossing)
  // Ticketed and not yet reached; below zero while points were reached before their tickets
  // came back (the stream reports ends by operation, the tickets come with a pass).
  std::ptrdiff_t points_left = 0;
  std::vector<barrier_arrival> arrivals;   // by member: its mark, and when it was reached
  std::uint64_t device_waits = 0;          // its crossings' waits on other members' marks
  std::unique_ptr<barrier_answer> answer;  // a synchronize's; none for a graph's barrier
};

class barrier_book {
 public:
  barrier_run& add(op_id id, barrier_run run) {
    return runs_.insert_or_assign(id, std::move(run)).first->second;
  }
  [[nodiscard]] barrier_run* find(op_id id) noexcept {
    auto found = runs_.find(id);
    return found == runs_.end() ? nullptr : &found->second;
  }
  [[nodiscard]] const barrier_run* find(op_id id) const noexcept {
    auto found = runs_.find(id);
    return found == runs_.end() ? nullptr : &found->second;
  }
  [[nodiscard]] bool empty() const noexcept { return runs_.empty(); }
  // The operation ended: forgotten, but the tickets of its points still on their way are
  // expected (late_ticket).
  void ended(op_id id) {
    auto found = runs_.find(id);
    if (found == runs_.end()) return;
    if (found->second.tickets_left > 0) late_[id] = found->second.tickets_left;
    runs_.erase(found);
  }
  // A ticket came back for `id`, whose operation has ended: whether it is one an ended
  // barrier expected (counted off).
  [[nodiscard]] bool late_ticket(op_id id) {
    if (late_.empty()) return false;
    auto found = late_.find(id);
    if (found == late_.end()) return false;
    if (--found->second == 0) late_.erase(found);
    return true;
  }
  // The device was lost: no ticket of a pass sent before comes back.
  void lost() noexcept { late_.clear(); }
  [[nodiscard]] deadline_queue& deadlines() noexcept { return deadlines_; }

 private:
  std::unordered_map<op_id, barrier_run> runs_;
  std::unordered_map<op_id, std::size_t> late_;  // ended barriers: their tickets still to come
  deadline_queue deadlines_;
};

}  // namespace cudactor::detail
