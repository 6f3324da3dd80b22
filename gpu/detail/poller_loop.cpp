#include <algorithm>
#include <iterator>
#include <string>

#include "cudactor/gpu/detail/poller_impl.hpp"

namespace cudactor::gpu {

namespace asio = boost::asio;
using detail::bump;
using detail::watch_entry;
using std::chrono::nanoseconds;
using time_point = watch_clock::time_point;

using detail::commands_per_tick;
using detail::deadline_compaction_floor;
using detail::later;
using detail::stream_cache_limit;

void completion_poller::impl::on_wake() {
  if (stopped_) return;
  ++generation_;
  disarm_timer();
  tick();
}

void completion_poller::impl::tick() {
  if (stopped_) return;
  bump(counters_.ticks);
  const time_point now = watch_clock::now();
  tick_started_ = now;
  if (batch_next_ < batch_.size() || core_->inbox_ready.load()) drain_inbox();
  // Cleared before looking: a callback that fires from here on sets it again.
  core_->notified.store(false);
  bool progressed = false;
  for (std::size_t i = 0; i < active_.size();) {
    watched_stream& s = *active_[i];
    progressed |= poll(s);
    if (s.queue.empty()) {
      s.active = false;
      active_[i] = active_.back();
      active_.pop_back();
    } else {
      ++i;
    }
  }
  if (!deadlines_.empty() && deadlines_.front().when <= now) expire_deadlines(now);
  if (options_.stuck_after.count() > 0 && now >= next_watchdog_) check_stuck(now);
  counters_.active_streams.store(active_.size(), std::memory_order_relaxed);
  if (stop_requested_.load()) {
    shut_down();
    return;
  }
  const time_point end = watch_clock::now();
  if (progressed) bump(counters_.busy_ns, static_cast<std::uint64_t>((end - now).count()));
  schedule(end, progressed);
}

void completion_poller::impl::drain_inbox() {
  if (batch_next_ == batch_.size()) {
    batch_.clear();
    batch_next_ = 0;
    std::lock_guard<std::mutex> lock{core_->mutex};
    batch_.swap(core_->inbox);
    core_->inbox_ready.store(false);
  }
  // A flood of watches is taken a slice per tick, so that completions keep being seen
  // while it is worked off.
  const std::size_t end = std::min(batch_.size(), batch_next_ + commands_per_tick);
  for (; batch_next_ < end; ++batch_next_) {
    auto& command = batch_[batch_next_];
    if (auto* w = std::get_if<watch_command>(&command)) {
      accept(std::move(*w));
    } else if (auto* c = std::get_if<cancel_command>(&command)) {
      cancel_now(c->id);
    } else {
      subscribe_now(std::move(std::get<subscribe_command>(command)));
    }
  }
}

void completion_poller::impl::accept(watch_command&& command) {
  watched_stream& s = state_for(command.stream);
  watch_entry& entry = command.entry;
  if (command.deadline) {
    entry.has_deadline = true;
    if (deadlines_.size() >= deadline_compaction_floor && deadlines_.size() > 4 * live_deadlines_) {
      compact_deadlines();
    }
    deadlines_.push_back({*command.deadline, entry.sequence, command.stream.id().value()});
    std::push_heap(deadlines_.begin(), deadlines_.end(), later);
    ++live_deadlines_;
  }
  if (pending_ == 0) {
    backoff_ = options_.min_interval;  // the loop was idle: start afresh
    core_->watching.store(true);
  }
  ++pending_;
  // An idle stream starts timing at the watch, made when its work was submitted, not when
  // this thread got round to it.
  if (s.queue.empty()) s.head_since = entry.added;
  s.queue.push(std::move(entry));
  if (!s.active) {
    s.active = true;
    active_.push_back(&s);
  }
}

void completion_poller::impl::cancel_now(const watch_id& id) {
  watched_stream* s = find_state(id.stream);
  if (s == nullptr) return;
  watch_entry* entry = s->queue.find(id.sequence);
  if (entry == nullptr) return;  // already answered: the cancel does nothing
  watch_entry taken = s->queue.take(*entry);
  answer(*s, std::move(taken), watch_outcome::cancelled,
         {status_code::cancelled,
          "watch " + std::to_string(id.sequence) + " on stream '" + s->name + "' was cancelled"},
         watch_clock::now());
}

void completion_poller::impl::subscribe_now(subscribe_command&& command) {
  state_for(command.stream).progress = std::move(command.callback);
}

bool completion_poller::impl::poll(watched_stream& s) {
  bool any = false;
  time_point when{};
  stream_progress report;
  bool report_any = false;
  std::uint64_t queries = 0;
  while (watch_entry* head = s.queue.front()) {
    const query_result answer_now =
        head->is_event ? device_.query(head->event) : query_point(s, head->point);
    ++queries;
    if (!answer_now.done()) {
      if (!any) s.last_miss = tick_started_;
      break;
    }
    if (!any) {
      any = true;
      when = watch_clock::now();
      // Only the first answer of a pass measures how long the work took; the rest were done
      // before we looked.
      const time_point became_head = std::max(s.head_since, head->added);
      if (options_.learn_durations) s.learner.observe(when - became_head);
      if (options_.on_detected) {
        const time_point told{nanoseconds{core_->notified_ns.load(std::memory_order_relaxed)}};
        time_point since = std::max(became_head, s.last_miss);
        if (told <= when) since = std::max(since, told);
        try {
          options_.on_detected(when - since);
        } catch (...) {
          bump(counters_.callback_errors);
        }
      }
    }
    watch_entry entry = s.queue.pop_front();
    if (!entry.is_event) {
      report_any = true;
      report.reached = std::max(report.reached, entry.point);
      if (answer_now.failed()) report.failures.emplace_back(entry.point, answer_now.error);
    }
    answer(s, std::move(entry),
           answer_now.ready() ? watch_outcome::completed : watch_outcome::failed, answer_now.error,
           when);
  }
  bump(counters_.queries, queries);
  if (!any) return false;
  s.head_since = when;
  if (report_any && s.progress) {
    report.stream = s.ref;
    report.detected = when;
    try {
      s.progress(report);
    } catch (...) {
      bump(counters_.callback_errors);
    }
  }
  return true;
}

query_result completion_poller::impl::query_point(watched_stream& s, timeline_point point) {
  if (!s.line) return {event_state::failed, s.line_error};
  return s.line->query(point);
}

void completion_poller::impl::answer(watched_stream& s, watch_entry&& entry, watch_outcome outcome,
                                     status error, time_point when) {
  assert(pending_ > 0);
  --pending_;
  if (entry.has_deadline) --live_deadlines_;
  switch (outcome) {
    case watch_outcome::completed: bump(counters_.completed); break;
    case watch_outcome::failed: bump(counters_.failed); break;
    case watch_outcome::timed_out: bump(counters_.timed_out); break;
    case watch_outcome::cancelled: bump(counters_.cancelled); break;
  }
  if (!entry.callback) return;
  const watch_result result{watch_id{entry.sequence, s.ref.id()}, outcome, std::move(error),
                            entry.is_event ? 0 : entry.point, when};
  try {
    entry.callback(result);
  } catch (...) {
    bump(counters_.callback_errors);
  }
}

void completion_poller::impl::expire_deadlines(time_point now) {
  while (!deadlines_.empty() && deadlines_.front().when <= now) {
    std::pop_heap(deadlines_.begin(), deadlines_.end(), later);
    const deadline_entry due = deadlines_.back();
    deadlines_.pop_back();
    watched_stream* s = find_state_by_key(due.stream_key);
    if (s == nullptr) continue;
    watch_entry* entry = s->queue.find(due.sequence);
    if (entry == nullptr) continue;  // answered before its deadline
    watch_entry taken = s->queue.take(*entry);
    const std::string what =
        taken.is_event ? std::string{"an event"} : "point " + std::to_string(taken.point);
    answer(*s, std::move(taken), watch_outcome::timed_out,
           {status_code::timeout, "watch of " + what + " on stream '" + s->name + "' passed its deadline"},
           now);
  }
}

void completion_poller::impl::compact_deadlines() {
  auto answered = [this](const deadline_entry& d) {
    watched_stream* s = find_state_by_key(d.stream_key);
    return s == nullptr || s->queue.find(d.sequence) == nullptr;
  };
  deadlines_.erase(std::remove_if(deadlines_.begin(), deadlines_.end(), answered),
                   deadlines_.end());
  std::make_heap(deadlines_.begin(), deadlines_.end(), later);
}

void completion_poller::impl::check_stuck(time_point now) {
  next_watchdog_ =
      now + std::max<nanoseconds>(options_.stuck_after / 8, std::chrono::milliseconds{1});
  std::uint64_t stuck = 0;
  for (watched_stream* s : active_) {
    const watch_entry* head = s->queue.front();
    if (head == nullptr) continue;
    // Stuck means the stream has not moved for stuck_after: a watch that queued behind a slow
    // one and has just become the front is not stuck, however long ago it was added.
    if (now - std::max(s->head_since, head->added) < options_.stuck_after) continue;
    const nanoseconds age = now - head->added;
    ++stuck;
    if (s->stuck_reported == head->sequence) continue;
    s->stuck_reported = head->sequence;
    bump(counters_.stuck_total);
    if (!options_.on_stuck) continue;
    try {
      options_.on_stuck(stuck_watch{watch_id{head->sequence, s->ref.id()}, s->ref, s->name,
                                    head->is_event ? 0 : head->point, age, s->queue.live() - 1});
    } catch (...) {
      bump(counters_.callback_errors);
    }
  }
  counters_.stuck_now.store(stuck, std::memory_order_relaxed);
}

void completion_poller::impl::schedule(time_point now, bool progressed) {
  if (progressed) {
    if (pending_at_activity_) note_spin_outcome(now - last_activity_);
    last_activity_ = now;
    backoff_ = options_.min_interval;
    pending_at_activity_ = pending_ > 0;
  }
  if (batch_next_ < batch_.size()) {
    spin();  // a backlog of commands to take in
    return;
  }
  if (pending_ == 0) {
    core_->watching.store(false);
    counters_.stuck_now.store(0, std::memory_order_relaxed);
    sleep_until(std::nullopt);  // nothing to watch: no timer, a new watch wakes the loop
    return;
  }
  // Right after a completion more tend to follow (back-to-back work): look again at once,
  // in either mode, rather than pay for a sleep and a wake-up per completion, as long as
  // that has paid lately.
  if (now - last_activity_ < options_.spin_window) {
    if (spin_pays() || !options_.adaptive_spin) {
      if (progressed) bump(counters_.spins);
      spin();
      return;
    }
    if (progressed) bump(counters_.spins_skipped);
  }
  time_point next =
      mode_ == delivery_mode::callback ? now + options_.callback_backstop : next_poll(now);
  if (!deadlines_.empty()) next = std::min(next, deadlines_.front().when);
  if (options_.stuck_after.count() > 0) next = std::min(next, next_watchdog_);
  sleep_until(next);
}

void completion_poller::impl::note_spin_outcome(nanoseconds gap) {
  // A loop that slept rather than spun sees a completion up to a poll interval late
  // (polling), so such a one still counts as within the spin's reach.
  const nanoseconds reach =
      options_.spin_window +
      (mode_ == delivery_mode::polling ? options_.max_interval : nanoseconds{0});
  spin_paid_ = static_cast<std::uint16_t>((spin_paid_ << 1) | (gap < reach ? 1u : 0u));
}

time_point completion_poller::impl::next_poll(time_point now) {
  const time_point backed_off = now + backoff_;
  // Sleep longer only when every active stream is predicted to need longer.
  if (options_.learn_durations) {
    time_point earliest = time_point::max();
    for (watched_stream* s : active_) {
      if (s->queue.empty()) continue;
      const auto shortest = s->learner.shortest();
      if (!shortest) return advance_backoff(backed_off);
      earliest = std::min(earliest, s->head_since + std::chrono::duration_cast<nanoseconds>(
                                                        *shortest * options_.learned_fraction));
    }
    if (earliest != time_point::max() && earliest > backed_off) {
      backoff_ = options_.min_interval;  // poll closely once the predicted time has come
      bump(counters_.learned_sleeps);
      return earliest;
    }
  }
  return advance_backoff(backed_off);
}

time_point completion_poller::impl::advance_backoff(time_point next) {
  backoff_ = std::min(backoff_ * 2, options_.max_interval);
  return next;
}

void completion_poller::impl::spin() {
  asio::post(core_->io, [this, g = ++generation_] {
    if (g == generation_) tick();
  });
}

void completion_poller::impl::disarm_timer() {
  if (!timer_armed_) return;
  timer_.cancel();
  timer_armed_ = false;
}

void completion_poller::impl::sleep_until(std::optional<time_point> when) {
  const std::uint64_t g = ++generation_;
  if (when) {
    timer_.expires_at(*when);
    timer_armed_ = true;
    timer_.async_wait([this, g](const boost::system::error_code& error) {
      if (error || g != generation_ || stopped_) return;
      timer_armed_ = false;
      core_->asleep.store(false);
      tick();
    });
  } else {
    disarm_timer();
  }
  core_->asleep.store(true);
  // A watch or a callback that came before `asleep` was set found the loop awake and posted
  // nothing; look again now that it is set.
  if (core_->inbox_ready.load() || core_->notified.load()) {
    if (core_->asleep.exchange(false)) {
      disarm_timer();
      spin();
    }
  }
}

void completion_poller::impl::shut_down() {
  if (stopped_) return;
  // Commands not yet taken: what is left of the current batch, then the inbox.
  std::vector<command> untaken(std::make_move_iterator(batch_.begin() + batch_next_),
                               std::make_move_iterator(batch_.end()));
  batch_.clear();
  batch_next_ = 0;
  {
    std::lock_guard<std::mutex> lock{core_->mutex};
    core_->closed = true;
    std::move(core_->inbox.begin(), core_->inbox.end(), std::back_inserter(untaken));
    core_->inbox.clear();
    core_->inbox_ready.store(false);
  }
  const time_point now = watch_clock::now();
  const status why{status_code::cancelled, "the completion poller stopped"};
  // Queued watches are older than those still in the inbox: answer them first.
  for (auto& [key, s] : streams_) {
    s->queue.drain([&](watch_entry&& entry) {
      answer(*s, std::move(entry), watch_outcome::cancelled, why, now);
    });
  }
  for (auto& command : untaken) {
    if (auto* w = std::get_if<watch_command>(&command)) {
      watched_stream& s = state_for(w->stream);
      ++pending_;
      if (w->deadline) {
        w->entry.has_deadline = true;
        ++live_deadlines_;
      }
      answer(s, std::move(w->entry), watch_outcome::cancelled, why, now);
    }
  }
  stopped_ = true;
  for (auto& [key, s] : streams_) {
    if (s->listener != 0) s->line->remove_listener(s->listener);
    s->listener = 0;
  }
  deadlines_.clear();
  active_.clear();
  counters_.active_streams.store(0, std::memory_order_relaxed);
  counters_.stuck_now.store(0, std::memory_order_relaxed);
  disarm_timer();
  guard_.reset();
  core_->io.stop();
}

completion_poller::impl::watched_stream* completion_poller::impl::find_state(
    const handle_id& stream) {
  if (stream.instance != device_.instance()) return nullptr;
  return find_state_by_key(stream.value());
}

completion_poller::impl::watched_stream* completion_poller::impl::find_state_by_key(
    std::uint64_t key) {
  auto found = streams_.find(key);
  return found == streams_.end() ? nullptr : found->second.get();
}

completion_poller::impl::watched_stream& completion_poller::impl::state_for(stream_ref s) {
  const std::uint64_t key = s.id().value();
  if (auto found = streams_.find(key); found != streams_.end()) return *found->second;
  if (streams_.size() >= stream_cache_limit) {
    for (auto it = streams_.begin(); it != streams_.end();) {
      const watched_stream& old = *it->second;
      const bool idle = !old.active && old.queue.held() == 0 && !old.progress;
      if (idle && old.listener != 0) old.line->remove_listener(old.listener);
      it = idle ? streams_.erase(it) : std::next(it);
    }
  }
  auto state = std::make_unique<watched_stream>();
  state->ref = s;
  if (auto line = device_.timeline_of(s)) {
    state->line = std::move(line.value());
  } else {
    state->line_error = line.error();
  }
  auto name = device_.stream_name(s);
  state->name = name ? std::move(name.value()) : to_string(s.id());
  if (mode_ == delivery_mode::callback && state->line) {
    // "Notify at completion": the timeline tells us itself when it moves, if it can.
    state->listener = state->line->add_listener([core = core_] { core->notify(); });
    notify_support_.store(state->listener != 0 ? notify_support::listeners
                                               : notify_support::callbacks);
  }
  return *streams_.emplace(key, std::move(state)).first->second;
}

}  // namespace cudactor::gpu
