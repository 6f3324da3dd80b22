// The requests that put something on a stream actor's timeline, each checked where it enters
// (work, memory, events, callbacks), the coordinator's passes and holds, and the reset after a
// lost host device; and a record's dispatch (it takes no point, so it is answered here, not
// through the timeline). What happens to the rest once accepted is in stream_state.cpp.
#include <caf/all.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/actors/detail/stream_directory.hpp"
#include "cudactor/actors/stream/stream_state.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

caf::result<ticket> stream_state::accept_work(const work& w) {
  if (auto why = refusal()) return why;
  pending_op op;
  if (auto bad = resolve(w, op.fn)) return bad;
  ++direct_kernels_;
  return accept(std::move(op));
}

caf::result<std::vector<ticket>> stream_state::accept_works(const std::vector<work>& works) {
  if (auto why = refusal()) return why;
  if (works.empty() || works.size() > options_.max_batch) {
    return make_error(errc::invalid_argument, "submit: a batch holds 1 to " +
                                                  std::to_string(options_.max_batch) +
                                                  " works, not " + std::to_string(works.size()));
  }
  // All or none: every work is checked before any is accepted.
  std::vector<gpu::work_fn> fns(works.size());
  for (std::size_t i = 0; i < works.size(); ++i) {
    if (auto bad = resolve(works[i], fns[i])) return bad;
  }
  std::vector<ticket> out;
  out.reserve(works.size());
  direct_kernels_ += works.size();
  begin_burst();
  for (auto& fn : fns) {
    pending_op op;
    op.fn = std::move(fn);
    out.push_back(accept(std::move(op)));
  }
  end_burst();
  if (broken_) return broken_;  // broke part way: the tickets name nothing that will run
  return out;
}

caf::result<ticket> stream_state::accept_copy(std::uint64_t dst, std::uint64_t src,
                                              std::uint64_t bytes, gpu::copy_kind direction) {
  if (auto why = refusal()) return why;
  if (dst == 0 || src == 0 || bytes == 0) {
    return make_error(errc::invalid_argument, "copy: null address or zero bytes");
  }
  pending_op op;
  op.kind = stream_op_kind::copy;
  ++direct_transfers_;
  op.a = dst;
  op.b = src;
  op.c = bytes;
  op.mode = static_cast<std::uint8_t>(direction);
  return accept(std::move(op));
}

caf::result<ticket> stream_state::accept_fill(std::uint64_t dst, std::uint8_t value,
                                              std::uint64_t bytes) {
  if (auto why = refusal()) return why;
  if (dst == 0 || bytes == 0) {
    return make_error(errc::invalid_argument, "fill: null address or zero bytes");
  }
  pending_op op;
  op.kind = stream_op_kind::fill;
  ++direct_transfers_;
  op.a = dst;
  op.b = value;
  op.c = bytes;
  return accept(std::move(op));
}

caf::result<ticket> stream_state::accept_prefetch(std::uint64_t data, std::uint64_t bytes,
                                                  gpu::prefetch_target target) {
  if (auto why = refusal()) return why;
  if (data == 0 || bytes == 0) {
    return make_error(errc::invalid_argument, "prefetch: null address or zero bytes");
  }
  pending_op op;
  op.kind = stream_op_kind::prefetch;
  ++direct_transfers_;
  op.a = data;
  op.b = bytes;
  op.mode = static_cast<std::uint8_t>(target);
  return accept(std::move(op));
}

caf::result<ticket> stream_state::accept_wait(const event_lease& ref) {
  if (auto why = refusal()) return why;
  auto device = resolve_event(ref);
  if (!device) {
    return make_error(ref.empty() ? errc::invalid_argument : errc::stale_event,
                      "wait on stream '" + options_.name + "': " + device.error().message());
  }
  pending_op op;
  op.kind = stream_op_kind::wait;
  op.wait_on = *device;
  return accept(std::move(op));
}

caf::result<ticket> stream_state::accept_callback(const stream_callback& callback) {
  if (auto why = refusal()) return why;
  if (!callback.get()) return make_error(errc::invalid_argument, "callback: empty");
  pending_op op;
  op.kind = stream_op_kind::callback;
  op.callback = callback.get();
  op.a = last_callback_ + 1;  // answers for what failed since the callback before it
  const ticket out = accept(std::move(op));
  if (out.point != 0) last_callback_ = out.point;
  return out;
}

namespace {

caf::error bad_event_kind(gpu::event_kind kind) {
  if (kind == gpu::event_kind::regular || kind == gpu::event_kind::timing) return {};
  return make_error(errc::invalid_argument, "record: unknown event kind");
}

}  // namespace

caf::result<event_lease> stream_state::accept_record(gpu::event_kind kind) {
  if (auto why = refusal()) return why;
  if (auto why = bad_event_kind(kind)) return why;
  record_reply reply;
  reply.one = self_->make_response_promise<event_lease>();
  auto promise = reply.one;
  queue_record(kind, 1, std::move(reply));
  return promise;
}

caf::result<std::vector<event_lease>> stream_state::accept_records(gpu::event_kind kind,
                                                                   std::uint32_t n) {
  if (auto why = refusal()) return why;
  if (auto why = bad_event_kind(kind)) return why;
  if (n == 0 || n > max_records_per_message) {
    return make_error(errc::invalid_argument, "record: " + std::to_string(n) +
                                                  " events asked, 1 to " +
                                                  std::to_string(max_records_per_message) +
                                                  " per message");
  }
  record_reply reply;
  reply.batched = true;
  reply.many = self_->make_response_promise<std::vector<event_lease>>();
  auto promise = reply.many;
  queue_record(kind, n, std::move(reply));
  return promise;
}

caf::result<event_lease> stream_state::accept_record_into(const event_lease& event) {
  if (auto why = refusal()) return why;
  auto device = resolve_event(event);
  if (!device) {
    return make_error(event.empty() ? errc::invalid_argument : errc::stale_event,
                      "record on stream '" + options_.name + "': " + device.error().message());
  }
  record_reply reply;
  reply.one = self_->make_response_promise<event_lease>();
  reply.given = event;
  reply.given_device = *device;
  auto promise = reply.one;
  queue_record(event.kind, 0, std::move(reply));  // takes none of the cache's
  return promise;
}

void stream_state::queue_record(gpu::event_kind kind, std::uint32_t n, record_reply reply) {
  record_replies_.push_back(std::move(reply));  // answered in the order records are dispatched
  pending_op op;
  op.kind = stream_op_kind::record;
  op.mode = static_cast<std::uint8_t>(kind);
  op.a = n;
  accept(std::move(op));
}

void stream_state::dispatch_record(pending_op& op) {
  record_reply reply = std::move(record_replies_.front());
  record_replies_.pop_front();
  if (reply.given) {
    std::optional<gpu::batch_scope> batch;
    if (burst_ns_ == 0) batch.emplace(*context_.device);
    const gpu::status launched = context_.device->record(reply.given_device, stream_.ref());
    if (!launched.ok()) {
      answer_record(reply, {}, to_error(launched));
      return;
    }
    event_lease lease = *reply.given;
    lease.stream = options_.id;
    lease.point = op.point;
    lease.on_stream = true;
    answer_record(reply, {lease}, {});
    return;
  }
  auto& cache = cache_[op.mode];
  const auto n = static_cast<std::size_t>(op.a);
  if (cache.size() < n) {  // the pool said no (events_ready let it through to be answered)
    caf::error why = std::exchange(refill_error_[op.mode], caf::error{});
    answer_record(reply, {},
                  why ? why
                      : make_error(errc::pool_exhausted, "record on stream '" + options_.name +
                                                             "': no event from the pool"));
    return;
  }
  std::optional<gpu::batch_scope> batch;  // reaches the backend's workers with its neighbours
  if (burst_ns_ == 0) batch.emplace(*context_.device);
  // The newest n of the cache; they leave it only once all are recorded (a failed record
  // leaves them for the next, which records them anew).
  const std::size_t first = cache.size() - n;
  std::vector<event_lease> out;
  out.reserve(n);
  for (std::size_t i = cache.size(); i-- > first;) {
    const gpu::status launched = context_.device->record(cache[i].device, stream_.ref());
    if (!launched.ok()) {
      answer_record(reply, {}, to_error(launched));
      return;
    }
    event_lease lease = cache[i].lease;
    lease.stream = options_.id;
    lease.point = op.point;
    lease.on_stream = true;
    out.push_back(lease);
  }
  cache.resize(first);
  answer_record(reply, std::move(out), {});
}

void stream_state::answer_record(record_reply& reply, std::vector<event_lease> events,
                                 const caf::error& why) {
  if (why) {
    if (reply.batched) {
      reply.many.deliver(why);
    } else {
      reply.one.deliver(why);
    }
  } else if (reply.batched) {
    reply.many.deliver(std::move(events));
  } else {
    reply.one.deliver(events.front());
  }
}

caf::result<buffer_ref> stream_state::allocate(std::uint64_t bytes) {
  if (auto why = refusal()) return why;
  auto made = allocator_->allocate(static_cast<std::size_t>(bytes));
  if (!made) return to_error(made.error());
  buffer_ref out;
  out.stream = options_.id;
  out.id = made->id;
  out.address = reinterpret_cast<std::uintptr_t>(made->data);
  out.size = made->size;
  return out;
}

caf::result<ticket> stream_state::free(const buffer_ref& buffer) {
  if (auto why = refusal()) return why;
  if (buffer.stream != options_.id) {
    return make_error(errc::invalid_argument,
                      "free: buffer " + std::to_string(buffer.id) + " belongs to stream " +
                          std::to_string(buffer.stream.value) + ", not to '" + options_.name + "'");
  }
  // Refused now (double free, unknown id); reusable once the stream passes the free's point.
  auto freed = allocator_->free(buffer.id, last_point_ + 1);
  if (!freed.ok()) return to_error(freed);
  pending_op op;
  op.kind = stream_op_kind::free;
  return accept(std::move(op));
}

void stream_state::answer(const std::shared_ptr<dispatch_reply>& reply, const caf::error& why) {
  if (!reply || reply->answered) return;
  reply->answered = true;
  if (why) {
    reply->promise.deliver(why);
  } else {
    reply->promise.deliver(std::move(reply->tickets));
  }
}

caf::result<std::vector<ticket>> stream_state::accept_dispatch(std::vector<dispatched_op>& ops) {
  // The coordinator reserved a point of the ledger for each of its operations (those with an
  // id; a barrier actor's marks have none): a pass refused gives them back.
  auto refuse = [&](caf::error why) {
    ledger_->release(static_cast<std::uint64_t>(std::count_if(
        ops.begin(), ops.end(), [](const dispatched_op& d) { return !d.op.empty(); })));
    for (auto& d : ops) {
      if (d.cell) d.cell->abandon();
    }
    return why;
  };
  if (auto why = refusal()) return refuse(std::move(why));
  if (ops.empty() || ops.size() > options_.max_batch) {
    return refuse(make_error(errc::invalid_argument,
                             "dispatch: a pass holds 1 to " + std::to_string(options_.max_batch) +
                                 " operations, not " + std::to_string(ops.size())));
  }
  for (const auto& d : ops) {
    if (!d.fn) {
      return refuse(make_error(errc::invalid_argument, "dispatch: an operation without work"));
    }
  }
  // Answered once the last of them is on the backend: what other streams wait for must be
  // signalled already (CUDA refuses a wait for a point not yet signalled).
  auto reply = std::make_shared<dispatch_reply>();
  reply->promise = self_->make_response_promise<std::vector<ticket>>();
  reply->left = ops.size();
  reply->tickets.reserve(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    reply->tickets.push_back(ticket{options_.id, last_point_ + 1 + i});  // accept()'s points
  }
  auto promise = reply->promise;
  begin_burst();
  for (auto& d : ops) {
    pending_op op;
    op.op = d.op;
    op.fn = std::move(d.fn);
    op.waits = std::move(d.waits);
    op.timed = d.timed;
    op.reply = reply;
    op.reserved = !d.op.empty();
    op.cell = std::move(d.cell);
    op.unplaced = std::any_of(op.waits.begin(), op.waits.end(),
                              [](const point_wait& w) { return w.pending != nullptr; });
    accept(std::move(op));
  }
  end_burst();
  return promise;
}

caf::result<ticket> stream_state::accept_hold(hold_request& request) {
  if (auto why = refusal()) return why;
  auto promise = self_->make_response_promise<ticket>();
  pending_op op;
  op.kind = stream_op_kind::hold;
  op.op = request.op;
  op.waits = std::move(request.waits);
  op.unplaced = std::any_of(op.waits.begin(), op.waits.end(),
                            [](const point_wait& w) { return w.pending != nullptr; });
  op.hold = promise;
  accept(std::move(op));
  return promise;
}

caf::result<ticket> stream_state::end_hold(timeline_point point, const caf::error& why) {
  if (auto refused = refusal()) return refused;
  if (held_ == 0 || held_ != point) {
    return make_error(errc::invalid_state, "stream '" + options_.name + "' is not held for point " +
                                               std::to_string(point));
  }
  held_ = 0;
  point_record record;
  // Ended well, the point is the operation's end; a failure the caller reports the
  // coordinator charges to it itself, and a released hold's point is nobody's.
  if (!why) record.op = held_for_;
  held_for_ = op_id{};
  const caf::error launch_failed = std::exchange(held_failure_, caf::error{});
  record.issued_ns = now_ns();
  // The caller's own work on the stream may have failed: that is charged to this point too.
  if (auto broke = issue(point, std::move(record), gpu::status{})) {
    break_stream(broke);
    return broke;
  }
  // The caller's failure is this point's (and so is whatever its work left on the stream); a
  // launch that failed is, whatever the caller said.
  if (why) note_failure(point, why);
  if (launch_failed) note_failure(point, launch_failed);
  flush_watches();
  drain();
  return ticket{options_.id, point};
}

caf::result<ticket> stream_state::accept_launch(op_id op, const work& w) {
  if (auto refused = refusal()) return refused;
  if (held_ == 0 || op.empty() || held_for_ != op) {
    return make_error(errc::invalid_state,
                      "stream '" + options_.name + "' is not held for " + to_string(op) +
                          ": launch only between begin and complete, on the lease begin gave");
  }
  const ticket out{options_.id, held_};
  gpu::work_fn fn;
  if (auto bad = resolve(w, fn)) {
    if (!held_failure_) held_failure_ = bad;
    return bad;
  }
  // Straight to the backend: everything before the hold is there already, and nothing else
  // goes on until the hold's point is signalled after this.
  const gpu::status launched = context_.device->enqueue(stream_.ref(), std::move(fn));
  if (!launched.ok()) {
    caf::error why = to_error(launched);
    if (!held_failure_) held_failure_ = why;
    return why;
  }
  return out;
}

caf::result<bool> stream_state::reset() {
  if (closing_) return refusal();
  // A stream the backend still knows, on a stream actor that did not break, goes on. (A reset
  // of the host backend destroys every stream, used or not.)
  if (!broken_ && context_.device->timeline_of(stream_.ref())) return false;
  if (auto health = context_.device->health(); !health.ok()) {
    return make_error(errc::device_lost, "stream '" + options_.name +
                                             "': the backend is still lost (" + health.message() +
                                             "): reset it first");
  }
  auto made = context_.device->create_stream({options_.name, options_.priority});
  if (!made) return to_error(made.error());
  // The old stream is gone with the backend's reset. What this actor still held for it
  // (operations waiting for another stream's point never issued, their points the old
  // timeline's) goes with it: a new timeline starts where its points would not.
  if (!broken_) {
    fail_outstanding(make_error(errc::device_lost, "stream '" + options_.name +
                                                       "' was replaced after the backend's reset"));
  }
  context_.poller->subscribe(stream_.ref(), {}).ignore();
  allocator_.reset();  // before the stream it orders its memory on
  give_back_in_flight_events();
  stream_ = std::move(made.value());
  context_.directory->publish(options_.id, stream_.ref());
  allocator_.emplace(*context_.device, stream_.ref(), options_.reuse_limit);
  // A new stream, a new timeline: what the old one reached says nothing about it.
  last_point_ = issued_ = completed_ = watched_ = last_sync_ = last_callback_ = 0;
  if (auto tl = context_.device->timeline_of(stream_.ref())) {
    last_point_ = issued_ = completed_ = watched_ = last_sync_ = last_callback_ =
        (*tl)->signalled();
  }
  failures_.clear();
  reached_times_.assign(options_.times_kept, completion{});
  held_ = 0;
  held_for_ = op_id{};
  held_failure_ = caf::error{};
  broken_ = caf::error{};
  ledger_->restart(completed_);
  follow_stream();
  if (broken_) return broken_;
  return true;
}

}  // namespace cudactor::detail
