// actors/stream/stream_state.hpp
//
// What a stream actor owns and how it moves: accepting operations (each takes the next
// timeline point), dispatching them to the backend within the in-flight cap, and turning the
// completion poller's progress reports into answers. The behaviour in stream_actor.cpp only
// checks messages and calls in here.
#pragma once

#include <caf/fwd.hpp>
#include <caf/typed_response_promise.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "cudactor/actors/detail/actor_metrics.hpp"
#include "cudactor/actors/detail/device_clock.hpp"
#include "cudactor/actors/detail/ring_queue.hpp"
#include "cudactor/actors/detail/stream_ledger.hpp"
#include "cudactor/actors/detail/wait_keys.hpp"
#include "cudactor/actors/stream_actor.hpp"
#include "cudactor/gpu/stream_allocator.hpp"

namespace cudactor::detail {

// What a stream actor puts on its stream for one accepted request (not an operation's
// op_type, which says what the coordinator's operation is for).
enum class stream_op_kind : std::uint8_t {
  work,
  copy,
  fill,
  prefetch,
  record,
  wait,
  callback,
  free,
  hold,  // a caller-launched operation: the stream is the caller's until the hold ends
  mark   // a point alone: synchronize places one after records made since the newest point
};

// The answer to a coordinator's pass: given once every operation of it is on the backend
// (its point signalled), so that other streams may wait for those points on the device.
struct dispatch_reply {
  caf::typed_response_promise<std::vector<ticket>> promise;
  std::vector<ticket> tickets;
  std::size_t left = 0;  // operations of the pass not yet issued
  bool answered = false;
};

// An accepted operation not yet handed to the backend.
struct pending_op {
  timeline_point point = 0;
  op_id op;  // the coordinator's operation the point is (empty: not the coordinator's)
  stream_op_kind kind = stream_op_kind::work;
  gpu::work_fn fn;                    // work
  std::uint64_t a = 0, b = 0, c = 0;  // copy: dst src bytes; fill: dst value bytes; ...
  std::uint8_t mode = 0;              // copy_kind / prefetch_target / event_kind
  gpu::event_ref wait_on;             // wait
  std::function<void(const caf::error&)> callback;  // callback
  std::vector<point_wait> waits;                    // device-side waits placed before the operation
  bool timed = false;  // timing events around it, asked for by the coordinator
  caf::typed_response_promise<ticket> hold;  // hold: answered once the stream is held
  std::shared_ptr<dispatch_reply> reply;     // the pass it came in, if the coordinator's
  bool reserved = false;  // the ledger counts it already (the coordinator's: reserved when staged)
  bool unplaced = false;  // some of its waits are on points not yet issued (point_wait::pending)
  std::shared_ptr<point_cell> cell;  // where its point is published once issued
};

struct cached_event {
  event_lease lease;
  gpu::event_ref device;
};

// Who waits for a record operation's events (one, or a batch), in the order the records were
// accepted: records are dispatched in that order, so the oldest is always the one answered.
// How far beyond the newest point handed out a bounded await may wait (a point submitted
// later); further ahead is a mistake, refused.
inline constexpr timeline_point max_await_ahead = timeline_point{1} << 16;

struct record_reply {
  caf::typed_response_promise<event_lease> one;
  caf::typed_response_promise<std::vector<event_lease>> many;
  bool batched = false;
  std::optional<event_lease> given;  // the caller's event, recorded instead of the cache's
  gpu::event_ref given_device;       // what `given` resolved to when it was accepted
};

class stream_state {
 public:
  static inline const char* name = "cudactor.stream";  // the actor's name in CAF's logs
  using self_pointer = stream_actor::stateful_pointer<stream_state>;

  void init(self_pointer self, const stream_context& context, stream_actor_options options,
            gpu::stream s, std::shared_ptr<stream_ledger> ledger);

  // --- accepting ---------------------------------------------------------------------------
  // Why nothing can be accepted now (shutting down, stream broken), or an empty error.
  [[nodiscard]] caf::error refusal() const;
  // Checks a work item and turns it into a launch function.
  [[nodiscard]] caf::error resolve(const work& w, gpu::work_fn& out) const;
  // Assigns the next point and dispatches or queues the operation.
  ticket accept(pending_op op);
  // The requests that put one operation on the stream, each checked first.
  caf::result<ticket> accept_work(const work& w);
  caf::result<std::vector<ticket>> accept_works(const std::vector<work>& works);
  caf::result<ticket> accept_copy(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
                                  gpu::copy_kind direction);
  caf::result<ticket> accept_fill(std::uint64_t dst, std::uint8_t value, std::uint64_t bytes);
  caf::result<ticket> accept_prefetch(std::uint64_t data, std::uint64_t bytes,
                                      gpu::prefetch_target target);
  caf::result<ticket> accept_wait(const event_lease& ref);
  caf::result<ticket> accept_callback(const stream_callback& callback);
  // Between begin_burst and end_burst (one message's worth of dispatches), operations share a
  // submission time, read again every burst_stamp_reuse dispatches: a clock read per
  // operation was ~5% of the actor's time in batches.
  static constexpr std::uint32_t burst_stamp_reuse = 64;
  // A burst is also one batch of the backend's (backend::begin_batch): its operations reach
  // the backend's workers together when it ends, then the poller learns of their points.
  void begin_burst();
  void end_burst() {
    burst_ns_ = 0;
    if (std::exchange(burst_batch_, false)) context_.device->end_batch();
    flush_watches();
    metrics_->publish(in_flight(), queue_.size());
  }
  // Events recorded after everything accepted before, taking no timeline point: answered once
  // recorded (dispatched), not once reached.
  caf::result<event_lease> accept_record(gpu::event_kind kind);
  caf::result<std::vector<event_lease>> accept_records(gpu::event_kind kind, std::uint32_t n);
  // The caller's own event (a current pool lease), recorded the same way.
  caf::result<event_lease> accept_record_into(const event_lease& event);
  // The coordinator's pass onto this stream: one ticket per operation, in order.
  caf::result<std::vector<ticket>> accept_dispatch(std::vector<dispatched_op>& ops);
  // A caller-launched operation's hold (answered once held) and its end (the point it takes,
  // `why` charged to it).
  caf::result<ticket> accept_hold(hold_request& request);
  caf::result<ticket> end_hold(timeline_point point, const caf::error& why);
  // The holding operation's work, on the backend at once, before the hold's point; a work
  // that cannot go on fails that point (the operation) whatever complete says.
  caf::result<ticket> accept_launch(op_id op, const work& w);
  // After the backend was reset: a new stream in place of the broken one (true), published in
  // the directory; false when the stream it had goes on.
  caf::result<bool> reset();
  caf::result<buffer_ref> allocate(std::uint64_t bytes);
  caf::result<ticket> free(const buffer_ref& buffer);
  [[nodiscard]] gpu::result<gpu::event_ref> resolve_event(const event_lease& ref) const;

  // --- completion ----------------------------------------------------------------------------
  caf::result<completion> await(timeline_point point, const wait_limit& limit = {});
  caf::result<completion> synchronize(const wait_limit& limit = {});
  // A bounded wait's limit passed / its sender withdrew it: answered timeout / cancelled.
  void expire(std::uint64_t id);
  bool withdraw(std::uint64_t key);
  // The poller's report on the stream of incarnation `incarnation`; one about a stream this
  // actor no longer owns (reported before a reset, delivered after it) is dropped.
  void on_progress(const completion_batch& batch, std::uint64_t incarnation);

  // Another stream actor issued an operation one of ours waits for: go on if we can.
  void on_issued() { drain(); }

  void subscribe(const completion_listener& listener);
  void unsubscribe(const caf::actor_addr& listener);

  [[nodiscard]] stream_status status() const;
  [[nodiscard]] const stream_actor_options& options() const noexcept { return options_; }
  [[nodiscard]] stream_id id() const noexcept { return options_.id; }

  // Answers everything outstanding with shutting_down and gives back what the actor holds.
  void shut_down();
  ~stream_state();

  [[nodiscard]] bool closing() const noexcept { return closing_; }

 private:
  struct point_record {
    op_id op;  // the coordinator's operation, told by id in the batch that reaches it
    std::int64_t issued_ns = 0;
    std::optional<cached_event> start, end;  // timing mode
  };
  struct sync_waiter {
    timeline_point from = 0, to = 0;
    caf::typed_response_promise<completion> promise;
    std::uint64_t id = 0;  // a bounded wait's (wait_keys), or 0
  };
  struct awaiter {
    caf::typed_response_promise<completion> promise;
    std::uint64_t id = 0;  // a bounded wait's (wait_keys), or 0
  };
  // Tags a wait made with `limit` (its timer started); 0 when it is not bounded.
  std::uint64_t bound(const wait_limit& limit, timeline_point where);
  // Answers the bounded wait `id` (at `where`) with `why` and removes it.
  void end_wait(std::uint64_t id, timeline_point where, caf::error why);

  [[nodiscard]] std::uint64_t in_flight() const noexcept { return issued_ - completed_; }
  void drain();
  void drain_queue();
  // Whether the events `op` needs are at hand; asks the pool for more when not.
  bool events_ready(const pending_op& op);
  // Whether every point `op` waits for is issued (each pending one read from its cell, and the
  // waits then kept to one per stream); when one is not, the cell will say when it is.
  bool waits_placeable(pending_op& op);
  void dispatch(pending_op& op);
  // The operation's waits, timing events and work on the stream; what failed, if anything.
  // Untimed work is enqueued with its point's signal in one backend call: `signalled` then
  // holds what the signal answered.
  [[nodiscard]] gpu::status launch(pending_op& op, point_record& record,
                                   std::optional<gpu::result<timeline_point>>& signalled);
  // A record operation: its events on the stream, answered to the oldest record_reply.
  void dispatch_record(pending_op& op);
  // A record of `n` events, `reply` its answer.
  void queue_record(gpu::event_kind kind, std::uint32_t n, record_reply reply);
  void answer_record(record_reply& reply, std::vector<event_lease> events, const caf::error& why);
  // Whether the in-flight cap lets `op` go to the backend now.
  [[nodiscard]] bool has_room(const pending_op& op) const noexcept;
  // Signals `point` on the stream (unless launch() did: `signalled`) and keeps `record` for
  // it; why the stream broke, if it did.
  [[nodiscard]] caf::error issue(timeline_point point, point_record record,
                                 const gpu::status& launched,
                                 std::optional<gpu::result<timeline_point>> signalled = {});
  [[nodiscard]] bool timed(const pending_op& op) const noexcept;
  // Answers a pass once (its tickets, or `why`).
  void answer(const std::shared_ptr<dispatch_reply>& reply, const caf::error& why);
  // Subscribes to the poller's reports of the stream now owned.
  void follow_stream();
  // The stream can go on no more: everything outstanding is answered with `why`, the
  // subscribers are told, nothing more is accepted until reset().
  void break_stream(const caf::error& why);
  // Tells the poller of every point dispatched since the last flush, in one call.
  void flush_watches();
  // Asks the pool for max(event_batch, at_least) events of `kind`, unless a refill is on its
  // way already.
  void request_refill(gpu::event_kind kind, std::size_t at_least = 0);
  void give_back_events(std::vector<cached_event>& events, std::size_t keep);
  // The timing events of every point not yet reached go back to the pool; their records go.
  void give_back_in_flight_events();
  void note_failure(timeline_point point, caf::error error);
  [[nodiscard]] caf::error failure_in(timeline_point from, timeline_point to) const;
  completion make_completion(timeline_point point, const point_record* record,
                             std::int64_t detected_ns) const;
  // Everything not yet reached is answered with `why`; nothing more is accepted.
  void fail_outstanding(const caf::error& why);
  void close(bool running);

  self_pointer self_ = nullptr;
  stream_context context_;
  stream_actor_options options_;
  gpu::stream stream_;
  std::optional<gpu::stream_allocator> allocator_;
  std::shared_ptr<stream_ledger> ledger_;  // what this actor publishes of its ledger

  timeline_point last_point_ = 0;     // newest point handed out
  // A record was accepted after last_point_: it takes no point, so reaching last_point_ does
  // not mean it has been recorded (synchronize places a mark after it).
  bool records_since_point_ = false;
  timeline_point issued_ = 0;         // newest point signalled on the backend stream
  timeline_point watched_ = 0;        // newest point the poller was asked to watch
  timeline_point completed_ = 0;      // newest point the stream has passed
  std::deque<pending_op> queue_;      // accepted, held back by the cap or waiting for events
  timeline_point held_ = 0;           // a hold's point: nothing goes on the stream until it ends
  op_id held_for_;                    // the operation holding it
  caf::error held_failure_;           // the first launch into the hold that failed
  std::uint64_t incarnation_ = 0;     // of the stream owned: one more at every new stream
  ring_queue<point_record> records_;  // one per point in (completed_, issued_]

  std::multimap<timeline_point, awaiter> awaiters_;
  wait_keys waits_;                // the bounded ones among awaiters_ and syncs_
  std::deque<sync_waiter> syncs_;  // ascending by `to`
  timeline_point last_sync_ = 0;
  std::deque<record_reply> record_replies_;  // one per record operation accepted, oldest first
  // A callback by its point, with the first point it answers for: it is told the first
  // failure since the callback before it (as CUDA's stream callbacks hear what failed before).
  struct placed_callback {
    timeline_point from = 0;
    std::function<void(const caf::error&)> fn;
  };
  std::multimap<timeline_point, placed_callback> callbacks_;
  timeline_point last_callback_ = 0;               // the newest callback's point
  std::map<timeline_point, caf::error> failures_;  // the newest failure_history ones
  // The times of the newest times_kept completed points, indexed by point modulo its size
  // (an entry whose ticket names another point has been overwritten).
  std::vector<completion> reached_times_;
  void keep_times(const completion& done);
  [[nodiscard]] completion times_of(timeline_point point) const;
  std::uint64_t failure_count_ = 0;
  std::uint64_t direct_kernels_ = 0;    // work sent straight to this actor
  std::uint64_t direct_transfers_ = 0;  // copies, fills, prefetches sent straight to it

  std::array<std::vector<cached_event>, 2> cache_;  // by event kind
  std::array<bool, 2> refill_pending_{false, false};
  std::array<caf::error, 2> refill_error_;

  // Timing mode: host times of the timing events around each operation.
  shared_clock clock_;  // set when timing

  std::vector<completion_listener> subscribers_;
  std::shared_ptr<metrics::registry> registry_;  // keeps metrics_' cells alive
  std::optional<stream_metrics> metrics_;
  caf::error broken_;  // set once the stream cannot go on (device lost)
  bool closing_ = false;
  std::int64_t burst_ns_ = 0;  // 0: outside a burst, every dispatch reads the clock
  bool burst_batch_ = false;   // the burst holds a batch of the backend's open
  std::uint32_t burst_uses_ = 0;
};

}  // namespace cudactor::detail
