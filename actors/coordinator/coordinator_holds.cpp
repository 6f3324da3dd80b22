// Caller-launched operations: begin hands the caller a stream held for it (the stream
// actor's hold: everything before is on the backend, nothing else goes on until the hold
// ends), complete ends the hold and the operation takes the hold's point.
#include <caf/all.hpp>

#include <string>
#include <utility>

#include "cudactor/actors/coordinator/coordinator_state.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

caf::result<op_lease> coordinator_state::begin(op_id id) {
  if (auto why = refusal()) return why;
  auto found = records_.find(id.value);
  if (found == nullptr) {
    if (const op_info* ended = find_ended(id)) {
      return make_error(errc::invalid_state, to_string(id) + " has ended (" +
                                                 std::string{to_string(ended->state)} + ")");
    }
    return make_error(errc::unknown_op, to_string(id) + " is unknown or long gone");
  }
  op_record& r = *found;
  if (!r.manual) {
    return make_error(errc::invalid_state,
                      to_string(id) + " carries its own work: the coordinator launches it");
  }
  for (const auto& waiter : begin_waiters_) {
    if (waiter.id == id)
      return make_error(errc::invalid_state, to_string(id) + " is already begun");
  }
  const op_state state = graph_.find(id)->state;
  if (state != op_state::pending && state != op_state::ready) {
    return make_error(errc::invalid_state,
                      to_string(id) + " is " + std::string{to_string(state)} + ": already begun");
  }
  // Answered once the dependencies are submitted and a stream is free: now, if they are.
  auto promise = self_->make_response_promise<op_lease>();
  begin_waiters_.push_back({id, promise});
  pump();
  return promise;
}

caf::result<ticket> coordinator_state::complete(op_id id) {
  auto promise = self_->make_response_promise<ticket>();
  if (auto bad = end_hold(id, {}, [promise](const caf::expected<ticket>& done) mutable {
        if (done) {
          promise.deliver(*done);
        } else {
          promise.deliver(done.error());
        }
      })) {
    promise.deliver(bad);  // once a promise is made, only it answers
  }
  return promise;
}

caf::result<op_state> coordinator_state::complete_failed(op_id id, const caf::error& why) {
  auto promise = self_->make_response_promise<op_state>();
  const bool failed = static_cast<bool>(why);
  if (auto bad = end_hold(id, why, [promise, failed](const caf::expected<ticket>& done) mutable {
        if (done) {
          promise.deliver(failed ? op_state::failed : op_state::submitted);
        } else {
          promise.deliver(done.error());
        }
      })) {
    promise.deliver(bad);  // once a promise is made, only it answers
  }
  return promise;
}

caf::error coordinator_state::end_hold(op_id id, const caf::error& why,
                                       std::function<void(const caf::expected<ticket>&)> answer) {
  if (closing_) return refusal();
  auto found = records_.find(id.value);
  const op_graph::node* n = graph_.find(id);
  if (found == nullptr || n == nullptr || !found->manual || n->state != op_state::running ||
      found->point == 0 || found->completing) {
    return make_error(
        errc::invalid_state,
        to_string(id) +
            (found == nullptr ? " has ended or is unknown" : " is not a begun caller-launched op") +
            ": nothing to complete");
  }
  op_record& r = *found;
  r.completing = true;
  const std::uint32_t index = r.stream;
  const timeline_point point = r.point;
  const std::uint64_t epoch = epoch_;
  // The stream actor takes nothing of ours before the hold's end (one mailbox, in order): the
  // index is free again for the next pass.
  pool_.at(index).reserved_by = op_id{};
  self_->request(actors_[index], caf::infinite, hold_end_atom::value, point, why)
      .then(
          [this, epoch, id, index, why, answer](const ticket& done) {
            if (epoch == epoch_) {
              auto r = records_.find(id.value);
              if (r != nullptr) {
                // A failure the caller reports is this operation's; the point still passes.
                on_stream(*r, index, done.point);
                graph_.submitted(id, op_position{index, done.point});
                // The stream names the point as the operation's only when it ended well.
                if (why) graph_.fail(id, why, ended_);
              }
            }
            answer(done);
            pump();
          },
          [this, epoch, id, answer](caf::error& failed) {
            if (epoch == epoch_) launch_failed(id, failed);
            answer(failed);
            finish();
            pump();
          });
  pump();
  return {};
}

void coordinator_state::serve_begin_waiters() {
  for (auto it = begin_waiters_.begin(); it != begin_waiters_.end() && !lost_;) {
    const op_graph::node* n = graph_.find(it->id);
    if (n == nullptr || n->state != op_state::ready) {
      ++it;  // not ready yet; ended ones are answered by finish()
      continue;
    }
    op_record& r = records_.at(it->id.value);
    // No stream free, or a dependency's ticket not back: later waiters wait as well, in order.
    const auto index = place(it->id, r);
    if (!index) return;
    auto promise = std::move(it->promise);
    const op_id id = it->id;
    it = begin_waiters_.erase(it);
    start_hold(id, r, *index, std::move(promise));
  }
}

void coordinator_state::start_hold(op_id id, op_record& r, std::uint32_t index,
                                   caf::typed_response_promise<op_lease> promise) {
  if (auto bad = graph_.begin(id)) {
    promise.deliver(bad);
    return;
  }
  auto waits = waits_for(id, index);
  auto& s = pool_.at(index);
  s.reserved_by = id;
  r.stream = index;
  r.dispatched_ns = now_ns();
  op_metrics_->dispatched(r.type, r.priority);
  ++dispatched_;
  coordination_ns_ += r.dispatched_ns - r.registered_ns;
  const std::uint64_t epoch = epoch_;
  // Answered once the stream is the caller's: everything before it on the backend, its waits
  // placed. Then the lease goes out.
  self_
      ->request(actors_[index], caf::infinite, hold_atom::value,
                stream_hold{hold_request{id, std::move(waits)}})
      .then(
          [this, epoch, id, index, promise](const ticket& held) mutable {
            auto found = records_.find(id.value);
            const op_graph::node* n = graph_.find(id);
            if (epoch != epoch_ || found == nullptr || n == nullptr ||
                n->state != op_state::running) {
              // It ended while the hold was on its way: the stream goes back at once.
              if (epoch == epoch_) release_hold(index, held.point, n ? n->cause : caf::error{});
              promise.deliver(make_error(errc::invalid_state, to_string(id) + " ended"));
              return;
            }
            found->point = held.point;
            promise.deliver(op_lease{id, pool_.at(index).id});
          },
          [this, epoch, id, promise](caf::error& why) mutable {
            promise.deliver(why);
            if (epoch == epoch_) launch_failed(id, why);
            finish();
            pump();
          });
}

void coordinator_state::release_hold(std::uint32_t index, timeline_point point,
                                     const caf::error& why) {
  // With a cause, the stream names the point as no operation's.
  self_
      ->request(actors_[index], caf::infinite, hold_end_atom::value, point,
                why ? why : make_error(errc::cancelled, "the operation ended before complete"))
      .then([](const ticket&) {}, [](caf::error&) {});  // a broken stream tells its subscribers
}

}  // namespace cudactor::detail
