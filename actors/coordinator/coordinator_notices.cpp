// Telling: what the coordinator does once operations end. Each end is counted, profiled,
// handed to the buffers it used, and becomes one notice, for the operation's listeners, the
// all-operations listeners, those waiting for its end and its run, then its record moves to
// the ring `describe` reads ended operations from.
#include <caf/all.hpp>

#include <algorithm>
#include <string>
#include <utility>

#include "cudactor/actors/coordinator/coordinator_state.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

void coordinator_state::finish() {
  if (ended_.empty()) return;
  const std::int64_t now = now_ns();
  bool unfinished = false;  // something ended without completing
  for (const ended_op& e : ended_) {
    if (e.state == op_state::completed) continue;
    unfinished = true;
    if (auto found = records_.find(e.id.value); found != nullptr) {
      note_ghost(e.id, *found, e.state);
      note_tail(e.id, *found, e.state);
    }
  }
  for (std::size_t i = 0; i < ended_.size(); ++i) {
    const ended_op& e = ended_[i];
    prefetch_ending(i);
    switch (e.state) {
      case op_state::completed: ++completed_; break;
      case op_state::failed: ++failed_; break;
      default: ++cancelled_; break;
    }
    auto found = records_.find(e.id.value);
    if (found == nullptr) continue;
    op_record& r = *found;
    if (r.deferred) (void)undefer(r);  // cancelled while its report was held
    op_metrics_->ended(r.type, r.priority, e.state, now - r.registered_ns);
    if (r.stream != no_stream) ++left_streams_;
    profile(e.id, r, e.state, now);
    if (r.bufs) buffer_user_ended(e.id, r, e.state, e.cause);
    if (op_info* kept = ended_kept_.next()) keep_ended(e, r, now, *kept);
    op_notice notice;
    notice.id = e.id;
    notice.state = e.state;
    notice.cause = e.cause;
    if (r.stream != no_stream) notice.stream = pool_.at(r.stream).id;
    notice.point = r.point;
    notice.registered_ns = r.registered_ns;
    notice.dispatched_ns = r.dispatched_ns;
    notice.ended_ns = now;
    if (r.bufs) notice.inferred = std::move(r.bufs->inferred);  // the ring has a copy
    if (r.type == op_type::barrier) end_barrier(e.id, notice);
    // Each listener gets a copy but the last to need it, which gets the notice itself: a
    // notice carries the inferred dependencies, and a graph's notices are many.
    const bool kept_after = r.run != 0 || !end_waiters_.empty() || !all_listeners_.empty();
    for (std::size_t k = 0; k < r.listeners.size(); ++k) {
      const auto& listener = r.listeners[k];
      if (std::find(all_listeners_.begin(), all_listeners_.end(), listener) !=
          all_listeners_.end()) {
        continue;
      }
      if (!kept_after && k + 1 == r.listeners.size()) {
        notify(listener, std::move(notice));
      } else {
        notify(listener, op_notice{notice});
      }
    }
    for (std::size_t k = 0; k < all_listeners_.size(); ++k) {
      const bool last = r.run == 0 && end_waiters_.empty() && k + 1 == all_listeners_.size();
      notify(all_listeners_[k], last ? std::move(notice) : op_notice{notice});
    }
    if (!end_waiters_.empty()) tell_end_waiters(notice);
    if (r.run != 0) runs_.ended(r.run, r.run_index, std::move(notice));  // the last to need it
    if (r.manual) {
      for (auto it = begin_waiters_.begin(); it != begin_waiters_.end(); ++it) {
        if (it->id == e.id) {
          it->promise.deliver(
              e.cause ? e.cause : make_error(errc::invalid_state, to_string(e.id) + " ended"));
          begin_waiters_.erase(it);
          break;
        }
      }
      if (r.stream != no_stream && pool_.size() > r.stream &&
          pool_.at(r.stream).reserved_by == e.id) {
        // Begun, then cancelled (or failed by a dependency) before complete: the stream goes
        // back (its waits stay in the stream's order, charged to the hold's point). A hold
        // still on its way is given back when it arrives (start_hold).
        pool_.at(r.stream).reserved_by = op_id{};
        if (r.point != 0 && !lost_) release_hold(r.stream, r.point, e.cause);
      }
    }
    records_.erase(e.id.value);
    if (!after_ops_.empty()) after_ops_.erase(e.id);
  }
  ended_.clear();
  (void)graph_.take_forgotten();  // records went with the end; the graph's own go here
  if (unfinished && deferred_count_ != 0) wake_deferred();
}

namespace {

// Asks for the first and the last line of a short list's items.
template <class T>
void prefetch_items(const std::vector<T>& items) {
  if (items.empty()) return;
  __builtin_prefetch(items.data());
  __builtin_prefetch(reinterpret_cast<const char*>(items.data() + items.size()) - 1);
}

}  // namespace

void coordinator_state::prefetch_ending(std::size_t i) const {
  // Out of id order each record is a cache miss, and a buffer user's end reads what hangs off
  // its record too: asked for in stages, so that each pointer followed was asked for before.
  // The record three ends ahead (all of it: an ending reads every part), the buffer side of
  // the one two ahead, the uses and inferred dependencies of the next (the ring copies them,
  // the notice takes the inferred ones).
  const std::size_t n = ended_.size();
  if (i + 3 < n && ended_[i + 3].id.value != ended_[i + 2].id.value + 1) {
    const auto* ahead = reinterpret_cast<const char*>(records_.find(ended_[i + 3].id.value));
    for (std::size_t at = 0; ahead != nullptr && at < sizeof(op_record); at += 64) {
      __builtin_prefetch(ahead + at);
    }
  }
  // Buffer sides hang only off users of a buffer that exists, or its release.
  if (!buffers_ || buffers_->size() == 0) return;
  if (i + 2 < n) {
    if (const op_record* r = records_.find(ended_[i + 2].id.value); r != nullptr && r->bufs) {
      const auto* side = reinterpret_cast<const char*>(r->bufs.get());
      __builtin_prefetch(side);
      __builtin_prefetch(side + sizeof(op_buffers) - 1);
    }
  }
  if (i + 1 < n) {
    if (const op_record* r = records_.find(ended_[i + 1].id.value); r != nullptr && r->bufs) {
      prefetch_items(r->bufs->uses);
      prefetch_items(r->bufs->inferred);
    }
    // The ring's entry it will overwrite: the entries come in order, the room of their lists
    // does not.
    if (const op_info* kept = ended_kept_.after_next()) {
      prefetch_items(kept->uses);
      prefetch_items(kept->inferred);
    }
  }
}

void coordinator_state::keep_ended(const ended_op& e, op_record& r, std::int64_t now,
                                   op_info& kept) {
  // The record goes now; the ring's entry is overwritten in place, its lists refilled in the
  // room the entry's last operation left (a fresh op_info moved in freed that room and the
  // next end allocated it again). The inferred dependencies stay in the record: the notice
  // takes them.
  fill_info(e.id, r, kept);
  kept.description = std::move(r.description);  // moved, not copied: the record goes now
  kept.state = e.state;
  kept.cause = e.cause;
  kept.ended_ns = now;
}

void coordinator_state::notify(const op_listener& listener, op_notice notice) {
  pump_later();  // whose handler flushes the outbox
  outbox_.add(listener, std::move(notice), ended_.size());
}

void coordinator_state::report_levels() {
  // The coordinator's own operations on streams: sent and not yet ended (the streams' loads
  // count other senders' work too).
  const std::uint64_t on_streams = dispatched_ > left_streams_ ? dispatched_ - left_streams_ : 0;
  op_metrics_->live(graph_.live(), static_cast<std::size_t>(on_streams));
}

void coordinator_state::flush() {
  report_levels();
  outbox_.send_all([this](const op_listener& listener, std::vector<op_notice> notices) {
    self_->send(listener, std::move(notices));
  });
}

}  // namespace cudactor::detail
