// actors/stream/stream_state.cpp
//
// The stream actor's state: taking operations onto its one backend stream in order (the
// in-flight cap, events from the pool's leases, timing, holds, batches to the backend),
// and hearing back from the poller (completions, failures, awaits and synchronizes). Past
// 600 lines because accepting and completing share the point records and the queue; the
// requests' argument checks already live apart (stream_requests.cpp).
#include "cudactor/actors/stream/stream_state.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/actors/detail/progress.hpp"
#include "cudactor/actors/detail/stream_directory.hpp"
#include "cudactor/actors/detail/top_waits.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

namespace {

std::size_t kind_index(gpu::event_kind kind) { return static_cast<std::size_t>(kind); }

// One wait per stream (top_waits.hpp). An order on an operation that never reached its stream
// orders nothing, and must not hide a real order below it.
void keep_top_waits(std::vector<point_wait>& waits) {
  waits.erase(std::remove_if(
                  waits.begin(), waits.end(),
                  [](const point_wait& w) { return w.order_only && w.point == point_cell::never; }),
              waits.end());
  detail::keep_top_waits(
      waits, [](const point_wait& w) { return std::uint64_t{w.stream.value}; },
      [](const point_wait& w) { return w.point; },
      [](const point_wait& w) { return w.order_only; });
}

bool is_device_op(stream_op_kind kind) {
  return kind == stream_op_kind::work || kind == stream_op_kind::copy ||
         kind == stream_op_kind::fill || kind == stream_op_kind::prefetch;
}

}  // namespace

void stream_state::init(self_pointer self, const stream_context& context,
                        stream_actor_options options, gpu::stream s,
                        std::shared_ptr<stream_ledger> ledger) {
  self_ = self;
  context_ = context;
  options_ = std::move(options);
  options_.max_in_flight = effective_max_in_flight(options_, *context_.device);
  if (options_.event_batch == 0) options_.event_batch = 1;
  stream_ = std::move(s);
  registry_ = registry_or_own(context_.metrics);
  metrics_.emplace(*registry_, gpu_label(*context_.device), options_.name);
  allocator_.emplace(*context_.device, stream_.ref(), options_.reuse_limit);
  reached_times_.assign(options_.times_kept, completion{});
  last_point_ = issued_ = completed_ = watched_ = 0;
  if (auto tl = context_.device->timeline_of(stream_.ref())) {
    last_point_ = issued_ = completed_ = watched_ = (*tl)->signalled();
  }
  // The runtime's clock, else (timing asked for) one based on this stream, which is new and
  // idle. Without one, no device times.
  if (context_.clock) {
    clock_ = context_.clock;
  } else if (options_.timing) {
    clock_ = start_shared_clock(*context_.device, stream_.ref());
  }
  if (!clock_) options_.timing = false;
  ledger_ = ledger ? std::move(ledger) : std::make_shared<stream_ledger>(options_.max_in_flight);
  ledger_->restart(completed_);
  follow_stream();
}

void stream_state::follow_stream() {
  // The poller's per-tick report, forwarded as one message. A weak handle: the subscription
  // must not keep the actor alive.
  // Tagged with the stream's incarnation: a report already on its way when the stream is
  // replaced (a reset after a loss) must not break the new one.
  auto weak = caf::actor_cast<caf::actor_addr>(self_);
  const stream_id id = options_.id;
  const std::uint64_t incarnation = ++incarnation_;
  auto subscribed = context_.poller->subscribe(
      stream_.ref(), [weak, id, incarnation](const gpu::stream_progress& progress) {
        auto strong = caf::actor_cast<stream_actor>(weak);
        if (!strong) return;
        caf::anon_send(strong, progress_atom::value, to_batch(id, progress), incarnation);
      });
  if (!subscribed.ok()) broken_ = to_error(subscribed);
}

// The actor is exiting (killed, or its last handle gone) without a shutdown message: the
// requests it still holds are answered all the same.
stream_state::~stream_state() {
  if (self_ != nullptr && !closing_) close(false);
}

caf::error stream_state::refusal() const {
  if (closing_) {
    return make_error(errc::shutting_down, "stream '" + options_.name + "' is shutting down");
  }
  return broken_;
}

caf::error stream_state::resolve(const work& w, gpu::work_fn& out) const {
  if (w.is_local()) {  // the hot path builds no name
    out = w.closure();
    return {};
  }
  // Work sent straight to a stream declares no buffers.
  return resolve_work(w, context_.operations.get(), "stream '" + options_.name + "'s node", {},
                      out);
}

ticket stream_state::accept(pending_op op) {
  if (broken_) {
    // The stream broke earlier in this message (its checks passed before): nothing more goes
    // on it, and what would have is answered now.
    if (op.cell) op.cell->abandon();
    if (op.reserved) ledger_->release(1);
    if (op.callback) op.callback(broken_);
    if (op.kind == stream_op_kind::hold) op.hold.deliver(broken_);
    if (op.kind == stream_op_kind::record) {  // its reply is the newest
      answer_record(record_replies_.back(), {}, broken_);
      record_replies_.pop_back();
    }
    answer(op.reply, broken_);
    return ticket{options_.id, 0};
  }
  if (op.kind == stream_op_kind::record) {
    op.point = last_point_;  // takes none: recorded after this one
    records_since_point_ = true;
  } else {
    op.point = ++last_point_;
    records_since_point_ = false;
    if (!op.reserved) ledger_->reserve();
  }
  const ticket out{options_.id, op.point};
  metrics_->accepted();
  if (queue_.empty() && held_ == 0 && has_room(op) && waits_placeable(op) && events_ready(op)) {
    dispatch(op);
  } else {
    queue_.push_back(std::move(op));
    drain();
  }
  if (burst_ns_ == 0) metrics_->publish(in_flight(), queue_.size());  // else at end_burst
  return out;
}

gpu::result<gpu::event_ref> stream_state::resolve_event(const event_lease& ref) const {
  return context_.events->resolve(ref);
}

bool stream_state::waits_placeable(pending_op& op) {
  if (!op.unplaced) return true;
  const auto me = caf::actor_cast<caf::actor_addr>(self_);
  for (auto& w : op.waits) {
    if (!w.pending) continue;
    const timeline_point p = w.pending->point_or_tell(me);
    if (p == 0) return false;  // told once it is issued (on_issued)
    w.point = p;               // `never`: launch() fails the operation (or skips an order)
    w.pending.reset();
  }
  op.unplaced = false;
  keep_top_waits(op.waits);
  return true;
}

bool stream_state::events_ready(const pending_op& op) {
  gpu::event_kind kind;
  std::size_t needed;
  if (op.kind == stream_op_kind::record) {
    if (op.a == 0) return true;  // the caller's own event: none of the cache's
    kind = static_cast<gpu::event_kind>(op.mode);
    needed = static_cast<std::size_t>(op.a);
  } else if (timed(op)) {
    kind = gpu::event_kind::timing;
    needed = 2;
  } else {
    return true;
  }
  const std::size_t k = kind_index(kind);
  auto& cache = cache_[k];
  if (cache.size() >= needed) {
    // Keep a batch ahead so that a steady stream of operations never waits for the pool.
    if (cache.size() < needed + options_.event_batch / 2 && !refill_error_[k]) {
      request_refill(kind, needed);
    }
    return true;
  }
  if (refill_pending_[k]) return false;  // its answer drains the queue again
  // The pool refused the refill asked for this operation: it goes on without (a record is
  // refused, timed work runs untimed) and the refusal is spent, so the next asks anew.
  if (refill_error_[k]) return true;
  request_refill(kind, needed);
  return !refill_pending_[k];  // no pool to ask (closing): it is refused rather than kept
}

void stream_state::request_refill(gpu::event_kind kind, std::size_t at_least) {
  const std::size_t k = kind_index(kind);
  if (refill_pending_[k] || closing_ || !context_.pool) return;
  refill_pending_[k] = true;
  const auto count =
      static_cast<std::uint32_t>(std::max<std::size_t>(options_.event_batch, at_least));
  self_->request(context_.pool, caf::infinite, acquire_atom::value, kind, count)
      .then(
          [this, k](std::vector<event_lease>& leases) {
            refill_pending_[k] = false;
            refill_error_[k] = caf::error{};
            for (const auto& lease : leases) {
              auto device = context_.events->resolve(lease);
              if (device) cache_[k].push_back({lease, *device});
            }
            if (closing_) {
              give_back_events(cache_[k], 0);
              return;
            }
            drain();
          },
          [this, k](caf::error& why) {
            refill_pending_[k] = false;
            refill_error_[k] = std::move(why);
            drain();
          });
}

void stream_state::begin_burst() {
  burst_ns_ = now_ns();
  burst_uses_ = 0;
  if (!burst_batch_) burst_batch_ = context_.device->begin_batch();
}

void stream_state::drain() {
  if (queue_.empty()) return;             // most progress reports: no burst to open (a clock read)
  const bool outermost = burst_ns_ == 0;  // drain also runs inside a batch's burst
  if (outermost) begin_burst();
  drain_queue();
  if (outermost) end_burst();
}

void stream_state::drain_queue() {
  while (!queue_.empty() && held_ == 0 && !broken_ && !closing_ && has_room(queue_.front())) {
    if (!waits_placeable(queue_.front()) || !events_ready(queue_.front())) return;
    // Out of the queue first: a dispatch that breaks the stream clears the queue.
    pending_op op = std::move(queue_.front());
    queue_.pop_front();
    dispatch(op);
  }
}

bool stream_state::has_room(const pending_op& op) const noexcept {
  // A record takes no point, so the cap on points in flight does not hold it back.
  return op.kind == stream_op_kind::record || in_flight() < options_.max_in_flight;
}

bool stream_state::timed(const pending_op& op) const noexcept {
  return (options_.timing || op.timed) && clock_ && is_device_op(op.kind);
}

gpu::status stream_state::launch(pending_op& op, point_record& record,
                                 std::optional<gpu::result<timeline_point>>& signalled) {
  gpu::backend& device = *context_.device;
  const gpu::stream_ref s = stream_.ref();
  gpu::status launched;
  for (const point_wait& w : op.waits) {  // orders the device, never the host
    if (w.point == point_cell::never) {
      // What it waits for never reached its stream: nothing to come after; nothing to read.
      if (w.order_only) continue;
      return gpu::status{
          gpu::status_code::dependency_failed,
          "stream '" + options_.name + "': an operation it waits for never reached its stream"};
    }
    // The other stream as it is now. A wait sent before that stream was made anew (a reset)
    // belongs to an operation the coordinator failed with the loss: on the new stream it is
    // refused (a point not signalled there) or passes at once, either way harmless.
    const gpu::stream_ref other = context_.directory->view(w.stream);
    launched =
        w.order_only ? device.order_after(s, other, w.point) : device.wait_point(s, other, w.point);
    if (!launched.ok()) return launched;
  }
  // Timing events after the waits: the start is when the stream got to the work.
  const bool times = timed(op) && cache_[kind_index(gpu::event_kind::timing)].size() >= 2;
  if (timed(op) && !times) refill_error_[kind_index(gpu::event_kind::timing)] = {};  // spent
  if (times) {
    auto& cache = cache_[kind_index(gpu::event_kind::timing)];
    record.start = cache.back();
    cache.pop_back();
    record.end = cache.back();
    cache.pop_back();
    launched = device.record(record.start->device, s);
    if (!launched.ok()) return launched;
  }
  switch (op.kind) {
    case stream_op_kind::work:
      if (times) {
        launched = device.enqueue(s, std::move(op.fn));  // the end's event goes between
      } else {
        auto both = device.enqueue_signalled(s, std::move(op.fn));
        launched = std::move(both.launched);
        signalled.emplace(std::move(both.point));
      }
      break;
    case stream_op_kind::copy:
      launched = device.copy(s, reinterpret_cast<void*>(static_cast<std::uintptr_t>(op.a)),
                             reinterpret_cast<const void*>(static_cast<std::uintptr_t>(op.b)),
                             static_cast<std::size_t>(op.c), static_cast<gpu::copy_kind>(op.mode));
      break;
    case stream_op_kind::fill:
      launched = device.fill(s, reinterpret_cast<void*>(static_cast<std::uintptr_t>(op.a)),
                             static_cast<std::uint8_t>(op.b), static_cast<std::size_t>(op.c));
      break;
    case stream_op_kind::prefetch:
      launched = device.prefetch(
          s, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(op.a)),
          static_cast<std::size_t>(op.b), static_cast<gpu::prefetch_target>(op.mode));
      break;
    case stream_op_kind::wait:  // stream-waits-event: orders the device, never the host
      launched = device.wait(s, op.wait_on);
      break;
    case stream_op_kind::record:  // dispatch_record's
    case stream_op_kind::callback:
    case stream_op_kind::free:
    case stream_op_kind::hold:
    case stream_op_kind::mark: break;  // the point alone is the operation
  }
  if (times && launched.ok()) launched = device.record(record.end->device, s);
  return launched;
}

void stream_state::dispatch(pending_op& op) {
  if (op.kind == stream_op_kind::record) {
    dispatch_record(op);
    return;
  }
  point_record record;
  record.op = op.op;
  if (burst_ns_ != 0 && ++burst_uses_ % burst_stamp_reuse == 0) burst_ns_ = now_ns();
  record.issued_ns = burst_ns_ != 0 ? burst_ns_ : now_ns();
  std::optional<gpu::result<timeline_point>> signalled;  // the point, if launched with the work
  // The work and its signal reach the backend's workers together (within a burst: with the
  // rest of it).
  std::optional<gpu::batch_scope> batch;
  if (burst_ns_ == 0) batch.emplace(*context_.device);
  const gpu::status launched = launch(op, record, signalled);

  if (op.kind == stream_op_kind::hold && launched.ok()) {
    // Everything before it is on the backend and its waits are placed: the stream is the
    // caller's until end_hold() signals the point.
    held_ = op.point;
    held_for_ = op.op;
    op.hold.deliver(ticket{options_.id, op.point});
    return;
  }
  if (auto why = issue(op.point, std::move(record), launched, std::move(signalled))) {
    if (op.cell) op.cell->abandon();
    if (op.callback) callbacks_.emplace(op.point, placed_callback{op.a, std::move(op.callback)});
    if (op.kind == stream_op_kind::hold) op.hold.deliver(why);
    answer(op.reply, why);
    break_stream(why);
    return;
  }
  if (op.cell) op.cell->publish(op.point);  // dependents on other streams may wait for it now
  if (op.reply && --op.reply->left == 0) answer(op.reply, {});
  if (op.kind == stream_op_kind::hold) {  // its waits could not be placed: it is not held
    op.hold.deliver(to_error(launched));
  }
  if (op.callback) callbacks_.emplace(op.point, placed_callback{op.a, std::move(op.callback)});
  // The poller learns of the point with the rest of the burst (flush_watches), or now, once
  // the work has gone to the backend's workers.
  batch.reset();
  if (burst_ns_ == 0) flush_watches();
}

caf::error stream_state::issue(timeline_point point, point_record record,
                               const gpu::status& launched,
                               std::optional<gpu::result<timeline_point>> made) {
  auto signalled = made ? std::move(*made) : context_.device->signal(stream_.ref());
  if (!signalled || *signalled != point) {
    return signalled
               ? make_error(errc::backend_error, "stream '" + options_.name + "': timeline at " +
                                                     std::to_string(*signalled) + " where point " +
                                                     std::to_string(point) + " was expected")
               : to_error(signalled.error());
  }
  issued_ = point;
  if (!launched.ok()) note_failure(point, to_error(launched));
  records_.push_back(std::move(record));
  return {};
}

void stream_state::break_stream(const caf::error& why) {
  if (broken_) return;
  broken_ = why;
  fail_outstanding(why);
  completion_batch told;
  told.stream = options_.id;
  told.reached = completed_;
  told.broken = why;
  for (const auto& listener : subscribers_) self_->send(listener, told);
}

void stream_state::flush_watches() {
  if (issued_ <= watched_ || broken_) return;
  const timeline_point first = watched_ + 1;
  watched_ = issued_;
  auto watched = context_.poller->watch_points(stream_.ref(), first, issued_);
  if (!watched.ok()) {
    const caf::error why = to_error(watched);
    break_stream(why);
  }
}

void stream_state::note_failure(timeline_point point, caf::error error) {
  // A point fails once: a launch's failure (known when issued) is the timeline's too, and the
  // poller reports it again when the stream passes the point.
  if (failures_.count(point) != 0) return;
  ++failure_count_;
  metrics_->failed();
  failures_[point] = std::move(error);
  while (failures_.size() > options_.failure_history) failures_.erase(failures_.begin());
}

caf::error stream_state::failure_in(timeline_point from, timeline_point to) const {
  auto first = failures_.lower_bound(from);
  if (first == failures_.end() || first->first > to) return {};
  return first->second;
}

completion stream_state::make_completion(timeline_point point, const point_record* record,
                                         std::int64_t detected_ns) const {
  completion out;
  out.op = ticket{options_.id, point};
  out.detected_ns = detected_ns;
  if (record != nullptr) {
    out.issued_ns = record->issued_ns;
    if (record->start && record->end) {
      out.started_ns = clock_ ? clock_->host_ns(record->start->device) : 0;
      out.ended_ns = clock_ ? clock_->host_ns(record->end->device) : 0;
      if (out.started_ns == 0 || out.ended_ns == 0) out.started_ns = out.ended_ns = 0;
    }
  }
  return out;
}

void stream_state::keep_times(const completion& done) {
  if (reached_times_.empty()) return;
  reached_times_[done.op.point % reached_times_.size()] = done;
}

completion stream_state::times_of(timeline_point point) const {
  if (!reached_times_.empty()) {
    const completion& kept = reached_times_[point % reached_times_.size()];
    if (kept.op.point == point) return kept;
  }
  // Older than what is kept, or before this actor's first point (a stream's timeline can
  // start past 0): reached, with no times left to tell.
  return make_completion(point, nullptr, 0);
}

void stream_state::on_progress(const completion_batch& batch, std::uint64_t incarnation) {
  if (incarnation != incarnation_) return;  // about a stream replaced since
  // A report already on its way when the actor shut down: every request was answered and the
  // records of the points in flight went back with their events, so there is nothing to
  // advance (and no record to take for the points it claims).
  if (closing_) return;
  caf::error lost;
  for (const auto& f : batch.failures) {
    note_failure(f.point, f.error);
    if (!lost && f.error.code() == static_cast<std::uint8_t>(errc::device_lost)) lost = f.error;
  }
  const timeline_point reached = std::min(batch.reached, issued_);
  if (reached <= completed_ && batch.failures.empty()) return;

  completion_batch told;
  told.stream = options_.id;
  told.detected_ns = batch.detected_ns;
  const timeline_point before = completed_;
  told.ops.reserve(reached > completed_ ? reached - completed_ : 0);
  auto& timing_cache = cache_[kind_index(gpu::event_kind::timing)];
  for (timeline_point p = completed_ + 1; p <= reached; ++p) {
    point_record record = std::move(records_.front());
    records_.pop_front();
    if (batch.detected_ns != 0) metrics_->latency(batch.detected_ns - record.issued_ns);
    if (record.start && record.end) {
      if (auto took = context_.device->elapsed(record.start->device, record.end->device)) {
        metrics_->gpu_time(took->count());
      }
    }
    const completion done = make_completion(p, &record, batch.detected_ns);
    keep_times(done);
    if (!record.op.empty()) told.ops.push_back({record.op, p});
    auto range = awaiters_.equal_range(p);
    if (range.first != range.second) {
      auto failed = failures_.find(p);
      for (auto i = range.first; i != range.second; ++i) {
        if (i->second.id != 0) waits_.forget(i->second.id);
        if (failed != failures_.end()) {
          i->second.promise.deliver(failed->second);
        } else {
          i->second.promise.deliver(done);
        }
      }
      awaiters_.erase(range.first, range.second);
    }
    if (record.end && !subscribers_.empty()) told.timed.push_back(done);
    if (record.start) timing_cache.push_back(*record.start);
    if (record.end) timing_cache.push_back(*record.end);
  }
  // Every failure of the points reached, ascending: the poller's, a launch's (CUDA runs the
  // work as it is issued: a launch that failed leaves a point the device reaches all the
  // same) and a timing event's.
  for (auto f = failures_.upper_bound(before); f != failures_.end() && f->first <= reached; ++f) {
    told.failures.push_back({f->first, f->second});
  }
  if (reached > completed_) {
    metrics_->completed(reached - completed_);
    ledger_->release(reached - completed_);
  }
  completed_ = std::max(completed_, reached);
  ledger_->publish_completed(completed_);
  told.reached = completed_;
  allocator_->reached(completed_);

  while (!callbacks_.empty() && callbacks_.begin()->first <= completed_) {
    auto node = callbacks_.extract(callbacks_.begin());
    auto failed = failure_in(node.mapped().from, node.key());
    node.mapped().fn(failed);
  }
  while (!syncs_.empty() && syncs_.front().to <= completed_) {
    sync_waiter waiter = std::move(syncs_.front());
    syncs_.pop_front();
    if (waiter.id != 0) waits_.forget(waiter.id);
    if (auto failed = failure_in(waiter.from, waiter.to)) {
      waiter.promise.deliver(failed);
    } else {
      waiter.promise.deliver(times_of(waiter.to));
    }
  }
  // A copy for each subscriber but the last, which takes the batch itself (its lists of
  // operations and times are one allocation each).
  for (std::size_t k = 0; k < subscribers_.size(); ++k) {
    if (k + 1 == subscribers_.size()) {
      self_->send(subscribers_[k], std::move(told));
    } else {
      self_->send(subscribers_[k], told);
    }
  }
  // Timing events come back with each completion; keep a few batches, return the rest.
  if (timing_cache.size() > 4 * std::size_t{options_.event_batch}) {
    give_back_events(timing_cache, 2 * std::size_t{options_.event_batch});
  }
  if (lost) {
    break_stream(lost);  // the device is gone: nothing more will be reached until reset
  } else {
    drain();
  }
  metrics_->publish(in_flight(), queue_.size());
}

caf::result<completion> stream_state::await(timeline_point point, const wait_limit& limit) {
  if (point == 0) return make_error(errc::invalid_argument, "await: points count from 1");
  if (auto bad = check_limit(limit, "await on stream '" + options_.name + "'")) return bad;
  // A point not yet handed out is waited for (a timeline value signalled later, as the
  // seeds' wait(value, timeout)) when the wait is bounded, by its limit or its cancellation,
  // and not too far ahead; unbounded, it could wait for ever on a point never submitted.
  if (point > last_point_ &&
      (point - last_point_ > max_await_ahead || !wait_keys::bounded(limit))) {
    return make_error(
        errc::out_of_range,
        "await: point " + std::to_string(point) + " on stream '" + options_.name +
            "' is beyond anything submitted (newest " + std::to_string(last_point_) + ")" +
            (point - last_point_ > max_await_ahead
                 ? ", more than " + std::to_string(max_await_ahead) + " points ahead"
                 : ": give the wait a time limit to wait for a point not yet submitted"));
  }
  if (point <= completed_) {
    auto failed = failures_.find(point);
    if (failed != failures_.end()) return failed->second;
    return times_of(point);
  }
  if (auto why = refusal()) return why;
  // Tagged first: the promise takes the sender over, and the tag needs it.
  const std::uint64_t id = bound(limit, point);
  auto promise = self_->make_response_promise<completion>();
  awaiters_.emplace(point, awaiter{promise, id});
  return promise;
}

caf::result<completion> stream_state::synchronize(const wait_limit& limit) {
  if (auto bad = check_limit(limit, "synchronize on stream '" + options_.name + "'")) return bad;
  // Everything given to the stream before, records too: a record takes no point, so one made
  // since the newest point gets a point after it to wait for.
  if (records_since_point_ && !refusal()) {
    pending_op mark;
    mark.kind = stream_op_kind::mark;
    (void)accept(std::move(mark));
  }
  const timeline_point from = last_sync_ + 1;
  const timeline_point to = last_point_;
  last_sync_ = to;
  if (to <= completed_) {
    if (auto failed = failure_in(from, to)) return failed;
    return times_of(to);
  }
  if (auto why = refusal()) return why;
  const std::uint64_t id = bound(limit, to);  // before the promise takes the sender over
  auto promise = self_->make_response_promise<completion>();
  syncs_.push_back({from, to, promise, id});
  return promise;
}

std::uint64_t stream_state::bound(const wait_limit& limit, timeline_point where) {
  if (!wait_keys::bounded(limit)) return 0;
  const auto& sender = self_->current_sender();
  const std::uint64_t id =
      waits_.add(sender ? sender->address() : caf::actor_addr{}, limit.key, where);
  if (limit.limit.count() > 0) {
    self_->delayed_send(self_, held_limit(limit.limit), expire_atom::value, id);
  }
  return id;
}

void stream_state::expire(std::uint64_t id) {
  const std::uint64_t* where = waits_.find(id);
  if (where == nullptr) return;  // answered or withdrawn before its limit
  const timeline_point point = *where;
  waits_.forget(id);
  end_wait(id, point,
           make_error(errc::timeout, "stream '" + options_.name + "' did not reach point " +
                                         std::to_string(point) + " in time (it is at " +
                                         std::to_string(completed_) + ")"));
}

bool stream_state::withdraw(std::uint64_t key) {
  if (key == 0) return false;
  const auto sender = self_->current_sender();
  const auto w = waits_.take(sender ? sender->address() : caf::actor_addr{}, key);
  if (w.id == 0) return false;  // none open: answered, timed out, or never made
  end_wait(
      w.id, w.where,
      make_error(errc::cancelled, "the wait for point " + std::to_string(w.where) + " on stream '" +
                                      options_.name + "' was withdrawn by its caller"));
  return true;
}

void stream_state::end_wait(std::uint64_t id, timeline_point where, caf::error why) {
  auto range = awaiters_.equal_range(where);
  for (auto i = range.first; i != range.second; ++i) {
    if (i->second.id != id) continue;
    i->second.promise.deliver(std::move(why));
    awaiters_.erase(i);
    return;
  }
  for (auto i = syncs_.begin(); i != syncs_.end(); ++i) {
    if (i->id != id) continue;
    i->promise.deliver(std::move(why));
    syncs_.erase(i);
    return;
  }
}

void stream_state::subscribe(const completion_listener& listener) {
  if (!listener) return;
  if (std::find(subscribers_.begin(), subscribers_.end(), listener) != subscribers_.end()) return;
  subscribers_.push_back(listener);
  self_->monitor(listener);
}

void stream_state::unsubscribe(const caf::actor_addr& listener) {
  subscribers_.erase(
      std::remove_if(subscribers_.begin(), subscribers_.end(),
                     [&](const completion_listener& l) { return l.address() == listener; }),
      subscribers_.end());
}

stream_status stream_state::status() const {
  stream_status out;
  out.id = options_.id;
  out.name = options_.name;
  out.priority = options_.priority;
  out.accepted = last_point_;
  out.completed = completed_;
  out.in_flight = in_flight();
  out.queued = queue_.size();
  out.max_in_flight = options_.max_in_flight;
  out.failures = failure_count_;
  out.awaiting = awaiters_.size() + syncs_.size();
  out.timing = options_.timing;
  out.cached_events = cache_[0].size() + cache_[1].size();
  const auto& memory = allocator_->stats();
  out.allocated_bytes = memory.allocated_bytes;
  out.reusable_bytes = memory.reusable_bytes;
  out.pending_free_bytes = memory.pending_free_bytes;
  out.direct_kernels = direct_kernels_;
  out.direct_transfers = direct_transfers_;
  return out;
}

void stream_state::fail_outstanding(const caf::error& why) {
  // Operations never handed to the backend will not be reached.
  for (auto& op : queue_) {
    if (op.cell) op.cell->abandon();  // its dependents elsewhere go on without it
    if (op.callback) callbacks_.emplace(op.point, placed_callback{op.a, std::move(op.callback)});
    if (op.kind == stream_op_kind::hold) op.hold.deliver(why);
    answer(op.reply, why);
  }
  queue_.clear();
  held_ = 0;
  held_failure_ = caf::error{};
  for (auto& reply : record_replies_) answer_record(reply, {}, why);
  record_replies_.clear();
  for (auto& [point, waiter] : awaiters_) waiter.promise.deliver(why);
  awaiters_.clear();
  for (auto& waiter : syncs_) waiter.promise.deliver(why);
  syncs_.clear();
  waits_.clear();
  auto callbacks = std::move(callbacks_);
  callbacks_.clear();
  for (auto& [point, callback] : callbacks) callback.fn(why);
}

void stream_state::give_back_events(std::vector<cached_event>& events, std::size_t keep) {
  if (events.size() <= keep) return;
  std::vector<event_lease> leases;
  leases.reserve(events.size() - keep);
  while (events.size() > keep) {
    leases.push_back(events.back().lease);
    events.pop_back();
  }
  if (context_.pool) caf::anon_send(context_.pool, release_atom::value, std::move(leases));
}

void stream_state::give_back_in_flight_events() {
  // A later record of them supersedes this stream's, so they may go back while in flight.
  std::vector<cached_event> in_flight_events;
  for (auto& record : records_) {
    if (record.start) in_flight_events.push_back(*record.start);
    if (record.end) in_flight_events.push_back(*record.end);
  }
  records_.clear();
  give_back_events(in_flight_events, 0);
}

void stream_state::shut_down() { close(true); }

void stream_state::close(bool running) {
  if (closing_) return;
  closing_ = true;
  fail_outstanding(refusal());
  context_.poller->subscribe(stream_.ref(), {}).ignore();  // fails only once the poller stopped
  for (auto& cache : cache_) give_back_events(cache, 0);
  give_back_in_flight_events();
  allocator_->trim();
  if (running) {
    for (auto& listener : subscribers_) self_->demonitor(listener.address());
  }
  subscribers_.clear();
}

}  // namespace cudactor::detail
