// actors/coordinator/coordinator_state.hpp
//
// What ties the coordinator's parts together, each of which owns its own state: the dependency
// graph (op_graph), a record per live operation (op_record), the stream pool (its view of the
// stream actors it schedules onto), the pass being gathered (staged_passes), the run requests
// (run_table), the ends kept and the notices owed (ended_ring, notice_outbox), the barrier
// operations (barrier_book), the buffers (buffer_table). Here: placement, holds, the waits
// still owed (begin waiting for a ready operation, await, wait_for_any_ready) and what a
// buffer user leaves behind it. The behaviour in coordinator.cpp only unpacks messages and
// calls in here; each coordinator_*.cpp holds one concept's share.
//
// Past 600 lines because it is the one class whose members every part's file defines: each
// concept's state lives in its own type (above), its handlers' declarations here.
//
// Notices are flushed in one place: a handler that ends an operation, readies one or frees a
// stream asks for a pass (pump_later: a message to itself, handled once the messages already
// in the mailbox are), and that pass sends the notices of every operation that ended since
// as one message per listener. No handler flushes by hand.
#pragma once

#include <caf/fwd.hpp>
#include <caf/typed_response_promise.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cudactor/actors/coordinator.hpp"
#include "cudactor/actors/coordinator/barrier_book.hpp"
#include "cudactor/actors/coordinator/buffer_table.hpp"
#include "cudactor/actors/coordinator/ended_ring.hpp"
#include "cudactor/actors/coordinator/id_list.hpp"
#include "cudactor/actors/coordinator/id_table.hpp"
#include "cudactor/actors/coordinator/notice_outbox.hpp"
#include "cudactor/actors/coordinator/op_graph.hpp"
#include "cudactor/actors/coordinator/op_profile.hpp"
#include "cudactor/actors/coordinator/op_record.hpp"
#include "cudactor/actors/coordinator/run_table.hpp"
#include "cudactor/actors/coordinator/staged_passes.hpp"
#include "cudactor/actors/coordinator/step_replay.hpp"
#include "cudactor/actors/coordinator/step_table.hpp"
#include "cudactor/actors/coordinator/stream_pool.hpp"
#include "cudactor/actors/detail/actor_metrics.hpp"
#include "cudactor/actors/detail/stream_directory.hpp"
#include "cudactor/actors/detail/wait_keys.hpp"
#include "cudactor/actors/trace_writer.hpp"

namespace cudactor::detail {

// The graph's operations in an order where each comes after those it names in `after` (Kahn),
// or the cycle that makes one impossible, named. Linear in operations and edges. `extra`: more
// edges by index (inferred from buffer uses), op i's at [extra_first[i], extra_first[i + 1]);
// none when extra_first is empty.
[[nodiscard]] caf::error order_of(const graph_spec& graph, const std::vector<std::uint32_t>& extra,
                                  const std::vector<std::uint32_t>& extra_first,
                                  std::vector<std::uint32_t>& order);

class coordinator_state {
 public:
  static inline const char* name = "cudactor.coordinator";  // the actor's name in CAF's logs
  using self_pointer = coordinator_actor::stateful_pointer<coordinator_state>;

  void init(self_pointer self, const coordinator_context& context, coordinator_options options);
  ~coordinator_state();

  // --- registering ---------------------------------------------------------------------------
  caf::result<op_id> register_op(op_spec& spec, const op_listener* listener);
  caf::result<std::vector<op_id>> submit_graph(graph_spec& graph, const op_listener* listener);
  // Registered as above; answered once every operation has ended, with their notices.
  caf::result<op_notice> run_op(op_spec& spec);
  caf::result<std::vector<op_notice>> run_graph(graph_spec& graph);
  // The same for code that is not an actor (actors/client.hpp): the function is called once,
  // on this actor's thread, with the end (or a failed notice saying why it never ran).
  void run_op(op_spec& spec, op_callback& done);
  void run_graph(graph_spec& graph, graph_callback& done);
  caf::result<op_state> depend(op_id op, op_id dep);

  // --- caller-launched operations ----------------------------------------------------------
  caf::result<op_lease> begin(op_id id);
  caf::result<ticket> complete(op_id id);
  caf::result<op_state> complete_failed(op_id id, const caf::error& why);

  // --- following and inspecting ------------------------------------------------------------
  void subscribe_all(const op_listener& listener);
  caf::result<op_state> subscribe(op_id id, const op_listener& listener);
  // Answered with the operation's end (at once if it has ended), or timeout / cancelled
  // (withdraw) first.
  caf::result<op_notice> await_end(op_id id, const wait_limit& limit);
  bool withdraw(std::uint64_t key);
  void unsubscribe(const caf::actor_addr& listener);
  caf::result<op_info> describe(op_id id) const;
  caf::result<op_state> cancel(op_id id);
  // Each of `ids` still pending or ready is cancelled; the others are left. One pass after.
  void cancel_all(const std::vector<op_id>& ids);
  // The replays of `steps` still pending or ready are cancelled, as cancel_all() does.
  void cancel_replays(const std::vector<step_handle>& steps);
  deadlock_report detect_deadlocks(caf::timespan stall_after);
  // detect_deadlocks' two searches: dependency cycles among open operations (none unless the
  // guards at registration broke), and operations open longer than `stall_after`, each with
  // the operation that holds it up.
  void find_cycles(deadlock_report& report) const;
  // An operation's placement against the streams (a pinned stream the coordinator has, a
  // strict one some stream can satisfy).
  [[nodiscard]] caf::error check_placement(const op_spec& spec) const;
  // The stream the strategy would choose now (choose_atom); never waits.
  [[nodiscard]] caf::result<stream_id> choose_now(op_priority priority, op_workload workload);
  void find_stalls(deadlock_report& report, caf::timespan stall_after, std::int64_t now) const;
  // Why `root`, which waits on no unfinished operation, has not ended: in words.
  [[nodiscard]] std::string why_held(const op_graph::node& root) const;
  [[nodiscard]] coordinator_metrics metrics() const;
  // The profile, with each stream actor's count of the work sent to it directly (asked of
  // the stream actors: answered once they all have, or could not).
  caf::result<coordinator_report> report();

  // --- barriers over streams (coordinator_barriers.cpp) ------------------------------------
  // Registers `spec`, a barrier operation, and answers with its crossing: in host mode once
  // every member arrived, in device mode once every member waits for the others on the device.
  // The limit: timeout naming the members that did not arrive, and the operation ends (its
  // members go back); its key: withdraw() answers cancelled the same way.
  // `generation`: a barrier actor's, delegated here (its caller is the sender).
  caf::result<barrier_crossing> synchronize(op_spec& spec, const wait_limit& limit,
                                            const barrier_generation* generation = nullptr);

  // --- steps (coordinator_steps.cpp, docs/replay.md) ----------------------------------------
  // Checks `graph` as a whole, infers its dependencies and places it once: a recorded step.
  caf::result<step_handle> record_step(step_spec& spec);
  void record_step(step_spec& spec, step_record_callback& done);
  // Runs a recorded step as one operation (its uses the union of its operations'), answered
  // once with its outcome.
  caf::result<step_outcome> replay(replay_request& request);
  void replay(replay_request& request, step_callback& done);
  // Forgets a recorded step (replays in flight run to their end); false when `step` names none.
  bool release_step(const step_handle& step);
  // The step's scratch no longer counted in the metrics (released, or the coordinator shut
  // down); e may be null.
  void forget_scratch(step_table::entry* e);

  // --- buffers (coordinator_buffers.cpp) ---------------------------------------------------
  // A buffer of `bytes` allocated in the order of `on` (a runtime stream id), or of a stream
  // the coordinator picks.
  caf::result<buffer_handle> allocate_buffer(std::optional<stream_id> on, std::uint64_t bytes);
  // The caller's memory, ordered like any buffer and never freed by the coordinator.
  caf::result<buffer_handle> adopt_buffer(std::uint64_t address, std::uint64_t bytes);
  // Registers the buffer's release: an operation after every use of it on every stream; its
  // memory goes back once that operation has ended (the caller's may be reused then).
  caf::result<op_id> release_buffer(const buffer_id& id);

  // --- the pool ------------------------------------------------------------------------------
  [[nodiscard]] bool has_ready_streams() const { return pool_.any_idle().has_value(); }
  caf::result<stream_id> wait_for_any_ready(caf::timespan timeout);
  void expire(std::uint64_t token);
  caf::result<bool> reset();

  // --- stream actors and runtime ------------------------------------------------------------
  void on_progress(const completion_batch& batch);
  // The scheduling pass asked for by pump_later().
  void on_pump();
  // The idle timer armed by arm_shed(): frees the chunks kept for the next burst if nothing
  // was registered meanwhile and nothing is held.
  void on_shed();
  void shut_down();
  [[nodiscard]] const coordinator_options& options() const noexcept { return options_; }

 private:
  struct begin_waiter {
    op_id id;
    caf::typed_response_promise<op_lease> promise;
  };

  // Why nothing new is taken now (shut down, device lost), or an empty error.
  [[nodiscard]] caf::error refusal() const;
  // A named operation is given the spans of its declared uses (`ranges`, one per use, as
  // check_uses made them; null when it declares none).
  [[nodiscard]] caf::error resolve(const work& w, const std::vector<buffer_use>& uses,
                                   const byte_range* ranges, gpu::work_fn& out);
  // `now`: when it was registered (one stamp for a whole graph).
  op_record& add_record(op_id id, op_spec& spec, const std::vector<op_id>& deps, gpu::work_fn fn,
                        bool manual, std::int64_t now);
  // register_op and submit_graph, with the run request (0: none) the operations belong to;
  // set before anything can end, so that no end goes by unheard.
  // `own`: the coordinator's own operation (a replay), whose input checks it skips.
  caf::error add_op(op_spec& spec, const op_listener* listener, std::uint64_t run, op_id& out,
                    bool own = false);
  caf::error add_graph(graph_spec& graph, const op_listener* listener, std::uint64_t run,
                       std::vector<op_id>& out);
  // A graph's dependencies on operations registered before, and its work, resolved into
  // `fns` (by index): what would refuse it, before any of it is registered.
  struct graph_uses;
  // What a graph's (or a step's) operations are named by in its scratch histories until
  // registered: scratch_first + their index.
  static constexpr op_id scratch_first{std::uint64_t{1} << 63};
  // A graph as a whole before anything of it is registered: collectives expanded into uses,
  // uses checked and inferred, an order, work and collectives resolved into `fns`. Errors
  // name an operation as `label` + its index.
  caf::error prepare_graph(graph_spec& graph, const std::string& label, graph_uses& uses,
                           std::vector<std::uint32_t>& order, std::vector<gpu::work_fn>& fns);
  [[nodiscard]] caf::error check_graph(const graph_spec& graph, const graph_uses& uses,
                                       std::vector<gpu::work_fn>& fns);
  // Registers a run request; the error when nothing was registered (`done` is then not kept).
  caf::error start_run(op_spec& spec, std::function<void(std::vector<op_notice>)> done);
  caf::error start_run(graph_spec& graph, std::function<void(std::vector<op_notice>)> done);
  void add_listener(op_record& r, const op_listener& listener);

  // Steps (coordinator_steps.cpp).
  caf::error make_step(step_spec& spec, step_handle& out);
  // Builds the step's backend graph when options_.step_graphs asks for one on this backend;
  // the error names the operation whose work could not be captured.
  caf::error make_step_graph(recorded_step& step, const step_plan::input& in);
  // Registers the replay and calls `done` once with its outcome; the error when nothing was
  // registered (`done` is then not kept).
  caf::error start_replay(replay_request& request, std::function<void(step_outcome)> done);
  // The bindings of `request` checked and applied: the union's uses rebound into `uses`, the
  // rebound operations' work resolved anew into `replay`.
  caf::error bind(const replay_request& request, const recorded_step& step,
                  std::vector<buffer_use>& uses, step_replay& replay);
  // stage()'s share for a replay (pinned to its home part's stream): every part's operations staged
  // for their streams (the home part's before the join), each part's first with the replay's own
  // waits there; the join's waits (every other part's last operation).
  [[nodiscard]] std::vector<point_wait> stage_replay(op_id id);
  // No stream of the replay's plan is held for a caller (begin): its part would queue behind
  // the hold, and with it the join and everything after it.
  [[nodiscard]] bool replay_streams_free(op_id id) const;
  // The cause a replay's end carries once its join was reached with `why`: the first of its
  // operations that failed, by graph index; else `why`.
  [[nodiscard]] caf::error replay_cause(op_id id, caf::error why) const;
  // Adds a replay's span to the trace, and inside it a span per operation where the backend
  // told when each ran.
  void trace_replay(op_id id, traced_op& t) const;

  // Hands ready operations to streams while they have room (one message per stream per
  // pass), serves begin waiters whose operation became ready.
  void pump();
  // A pass once the messages already in the mailbox are handled: one pass, and one message
  // per stream, for a burst of registrations, tickets and completions.
  void pump_later();
  // The pass at the end of a handler: now when the mailbox is empty (no burst to join), else
  // pump_later(). Only at the end of a handler: a pass ends operations and sends notices.
  void pass_or_later();
  // pump(), then the waiters for an idle stream, then the notices (flush): the one place
  // notices go out.
  void pass();
  bool pump_pending_ = false;
  bool in_pass_ = false;
  void stage(op_id id, std::uint32_t index, std::int64_t now);
  // Puts `op` (of operation `id`) in the pass being gathered for stream `index`.
  void send_to(std::uint32_t index, op_id id, dispatched_op op);
  void send_staged();
  // Waits for `id`'s unreached deps on other streams: each stream's top point (+ top data one),
  // and a pending wait on the cell of each dependency whose point is not known yet.
  [[nodiscard]] std::vector<point_wait> waits_for(op_id id, std::uint32_t index);
  std::vector<std::pair<op_position, bool>> waits_work_;  // its scratch: (where, order only)
  // The cell of `dep`, a dependency on its way to a stream, if it has one.
  [[nodiscard]] point_cell* cell_of(op_id dep) const {
    const op_record* r = records_.find(dep.value);
    return r != nullptr ? r->cell.get() : nullptr;
  }
  // A pass's tickets came back (the operations are on their stream), or it was refused.
  void dispatched(std::uint64_t epoch, std::uint32_t index, const std::vector<op_id>& ids,
                  const std::vector<ticket>& tickets);
  void dispatch_refused(std::uint64_t epoch, std::uint32_t index, const caf::error& why);
  // Bookkeeping once `id`'s ticket says it is on stream `index` at `point`.
  static void on_stream(op_record& r, std::uint32_t index, timeline_point point) {
    r.stream = index;
    r.point = point;
  }
  // The stream `id` goes to now, or nothing: no stream has room, or a dependency is on its
  // way to another stream (no point to wait for yet).
  [[nodiscard]] std::optional<std::uint32_t> place(op_id id, const op_record& r);
  // How much busier than the strategy's choice a stream may be for an operation to follow
  // its dependency onto it rather than wait for that dependency's ticket (only a dependency
  // sent without a cell: registered as a dependency after it went out).
  static constexpr std::uint64_t follow_slack = 64;
  // A stream could not take `id`: a loss fails everything, anything else fails `id`.
  void launch_failed(op_id id, const caf::error& why);
  void serve_begin_waiters();
  void start_hold(op_id id, op_record& r, std::uint32_t index,
                  caf::typed_response_promise<op_lease> promise);
  // Ends the hold of a caller-launched operation that ended without complete.
  void release_hold(std::uint32_t index, timeline_point point, const caf::error& why);
  // complete() and complete_failed(): the hold ends, the operation takes its point.
  caf::error end_hold(op_id id, const caf::error& why,
                      std::function<void(const caf::expected<ticket>&)> answer);
  // Barrier operations (coordinator_barriers.cpp). The streams a barrier spans, checked: every
  // stream it names is one of ours, named once; none named: all of them.
  [[nodiscard]] caf::error members_of(const op_spec& spec, std::vector<std::uint32_t>& out) const;
  void add_barrier(op_id id, const op_spec& spec);
  // Marks every member, or answers false (it waits): a dependency is still on its way to a
  // stream, or a member is held (a caller-launched operation, another barrier).
  [[nodiscard]] bool start_barrier(op_id id, op_record& r);
  // The ticket of one of its marks or crossings came back.
  void barrier_ticket(op_id id, op_record& r, std::uint32_t index, timeline_point point);
  // One of its points was reached (`why`: it failed), seen at `when`.
  void barrier_reached(op_id id, std::uint32_t index, timeline_point point, caf::error why,
                       std::int64_t when);
  // It ends once every point is ticketed and reached (or with `why`, one failed).
  void barrier_settle(op_id id, barrier_run& b, caf::error why);
  // It ended: the notice says where it sat, its members go back, a synchronize is answered.
  void end_barrier(op_id id, op_notice& notice);
  // A ticket of `b` came back at `point` on stream `index`: the newest barrier point there, and the
  // newest work before it (a barrier point right after another stands for the same work).
  void note_barrier_point(std::uint32_t index, timeline_point point);
  // A synchronize's member `i` reached the barrier with failed work: dependency_failed naming
  // the stream; empty otherwise.
  [[nodiscard]] caf::error failed_before(const barrier_run& b, std::size_t i) const;
  // "2 of 4 streams did not arrive: 'a' (passed point 3, the barrier is at 5), ...", or empty
  // when every member arrived; `within` goes after "arrive" when given.
  [[nodiscard]] std::string not_arrived(const barrier_run& b, const std::string& within) const;
  // Answers a synchronize (once): `why`, else its crossing.
  void answer_barrier(barrier_run& b, caf::error why);
  // `why` in a barrier actor's words, and that actor told of it (or of a crossing: no error).
  [[nodiscard]] caf::error worded(const barrier_answer& a, caf::error why) const;
  void tell_front(const barrier_answer& a, const caf::error& why, std::uint64_t device_waits,
                  std::int64_t wait_ns);
  // Arms a timer for the earliest synchronize limit unless one is armed for it already.
  void arm_barrier_timer();
  // The timer fired: the synchronizes past their limit time out; the next one is armed.
  void barrier_timer_fired();
  // A synchronize's wait `wait` ran past its limit (`timer`: timeout) or was withdrawn (by its
  // caller: cancelled; by its barrier actor: shutting_down): it is answered so and its
  // operation ends, giving its members back. False: not a barrier's.
  bool abandon_barrier(op_id id, std::uint64_t wait, bool timer);
  // Fails every open operation with `why` and refuses new work until reset.
  void lose(caf::error why);

  // Collectives (coordinator_collectives.cpp). A collective's buffer uses, added to its own
  // (`which` names it in errors): what it reads and writes on this rank, and a write of its
  // communicator's order token, so that the communicator's collectives run in the order they
  // came on every rank. Then, once its uses are checked, the work that runs it.
  [[nodiscard]] caf::error expand_collective(op_spec& spec, const std::string& which);
  // The communicator collective `c` runs on (empty: none now) and what counts one run of it
  // that a graph's launch made.
  [[nodiscard]] std::function<void(const gpu::status&)> collective_counter(
      const op_collective& c, std::shared_ptr<gpu::communicator>& comm);
  [[nodiscard]] caf::error resolve_collective(const op_spec& spec, const std::string& which,
                                              gpu::work_fn& out);
  // The order token of the communicator `name`: a buffer of one byte that no operation but
  // its collectives uses (made on first use; counts against max_buffers).
  [[nodiscard]] caf::error order_token(const std::string& name, buffer_id& out);

  // Buffers (coordinator_buffers.cpp). What an operation's uses resolve to, checked: one
  // range per use into `ranges`, and the history of the buffer it uses into `histories`
  // (`graph_index`: which op of its graph errors name, or alone, ~0). The histories live in
  // the buffer table: valid until a buffer is added (registration adds none after this).
  [[nodiscard]] caf::error check_uses(const std::vector<buffer_use>& uses, std::size_t graph_index,
                                      byte_range* ranges, buffer_uses** histories);
  // What the operation must come after by its uses, against the buffers' histories (`tmp`,
  // a graph's scratch copies, instead where given): each dependency and the buffer it comes
  // from, sorted by dependency (for_each_inferred says what each is), and the cause if it
  // reads poisoned bytes.
  struct use_inference {
    std::vector<inferred_dep> inferred;
    caf::error poisoned;
  };
  // What an inferred dependency is to the graph: a data dependency, an order-only one, or an
  // ended user still on the device (a tail: waited for by its point, not through the graph).
  enum class dep_kind : std::uint8_t { data, order, tail };
  // f(dep, kind) once per dependency of sorted `inferred`: data if so through any buffer.
  template <class F>
  void for_each_inferred(const std::vector<inferred_dep>& inferred, F&& f) const;
  std::vector<use_edge> edges_;              // infer_uses' scratch, kept for its storage
  std::vector<inferred_dep> inferred_work_;  // the same
  // What the registration under way has inferred so far, against the bounds of
  // coordinator_options (max_inferred_edges, max_covered_segments): reset by
  // start_inference(), checked after each use (an operation's 64 uses could each take as
  // much as a whole history), so that no more than one use's work is done past a bound.
  std::size_t inferred_edges_ = 0;
  std::size_t covered_segments_ = 0;
  // The use whose inference took the registration past a bound: which of its operation's
  // uses, and its buffer, for the refusal's words.
  struct inference_crossing {
    std::size_t use = 0;
    buffer_id buffer;
  };
  std::optional<inference_crossing> crossed_;
  void start_inference() noexcept {
    inferred_edges_ = 0;
    covered_segments_ = 0;
    crossed_.reset();
  }
  [[nodiscard]] bool past_inference_bounds() const noexcept {
    return inferred_edges_ > options_.max_inferred_edges ||
           covered_segments_ > options_.max_covered_segments;
  }
  // Past a bound: invalid_argument naming it, the operation (`graph_index` as check_uses
  // takes it; ~0 - 1: the graph as a whole) and the use that crossed it.
  [[nodiscard]] caf::error inference_bounds(std::size_t graph_index) const;
  // resource_exhausted when the uses could take a history past max_buffer_segments (each adds
  // at most two segments), once a full history was compacted. `scratch_first`: a graph's
  // scratch copies, whose users from there on are its own, still to come (empty: the
  // buffers' own histories).
  [[nodiscard]] caf::error history_room(const std::vector<buffer_use>& uses,
                                        buffer_uses* const* histories, op_id scratch_first,
                                        std::size_t graph_index);
  // Whether a user a history names is still to be waited for by `user`'s uses: not `user`
  // itself, and registered and waited(), or a ghost, or one of the same graph still to come.
  [[nodiscard]] auto still_waited(op_id user) const;
  // The edges_ one use's history gave, as dependencies from its buffer into inferred_work_
  // (a ghost replaced by what it came after).
  void take_edges(const buffer_use& use);
  // inferred_work_, sorted and each dependency once per buffer, into `out`.
  void settle_inferred(use_inference& out);
  // Whether `op`, a user in a history, is still to be waited for: it has not ended, or it
  // ended while its work may still run on the device (a tail).
  [[nodiscard]] bool waited(op_id op) const;
  // Whether a history must keep `op`: still to be waited for, or a ghost (ended before it
  // ran), which later users come after through what it came after.
  [[nodiscard]] bool kept_in_history(op_id op) const {
    return waited(op) || (!ghosts_.empty() && ghosts_.count(op) != 0);
  }
  // A count that grows whenever kept_in_history() may have turned false for some operation
  // (an end, a tail reached, a ghost let go): the histories' compact() skips a history it
  // already compacted at the same count.
  [[nodiscard]] std::uint64_t history_let_go() const noexcept { return graph_.ends() + let_go_; }
  void compact_history(buffer_uses& history) {
    history.compact([this](op_id x) { return kept_in_history(x); }, history_let_go());
  }
  // An operation with uses ended: what it was to write is poisoned unless it completed; a
  // release's buffer is reclaimed (or kept back after a loss).
  void buffer_user_ended(op_id id, op_record& r, op_state state, const caf::error& cause);
  // Before buffer_user_ended, for every operation of a batch of ends: one that never ran
  // becomes a ghost; one whose work may still run on its stream becomes a tail. All of a
  // batch first: a ghost ended with a tail it came after (a cascade may end the ghost first)
  // must see that tail as still to be waited for, or what comes after the ghost would not.
  void note_ghost(op_id id, const op_record& r, op_state state);
  void note_tail(op_id id, const op_record& r, op_state state);
  // Where `op`, one of an operation's after_ops_, stands for it: ended and off the device
  // (nothing to wait for), not on a stream yet (the operation waits), or at a position (point
  // 0: on its way there).
  enum class after_state : std::uint8_t { done, not_yet, placed };
  [[nodiscard]] after_state after_op(op_id op, op_position& at) const;
  // Calls f(state, position) for everything `id` comes after by its after_ops_, each ghost
  // among them (ended before it ran) replaced by what it came after, and so on.
  template <class F>
  void for_each_after(op_id id, F&& f) const;
  // The places of `id`'s after_ops_ on other streams, added to waits_work_ (order only).
  void after_waits(op_id id, std::uint32_t index);
  // `id` comes after `ops` on the device only: its after_ops_, and its dependencies as
  // describe() shows them.
  void add_after_ops(op_id id, op_record& r, const std::vector<op_id>& ops);
  // `ended`, a buffer user that ended without completing, is held by its open dependents not
  // yet on a stream: they come after it on the device (it still runs: a tail), or after what
  // it came after (it never ran: a ghost), whatever the graph says of it now.
  void hand_over(op_id ended, const std::vector<op_id>& instead);
  // Registration's share: infer (into `out`), then record the uses as the newest.
  // `ranges` and `histories` as check_uses made them (a graph's: its scratch copies).
  void infer_uses(const std::vector<buffer_use>& uses, const byte_range* ranges,
                  buffer_uses* const* histories, op_id user, use_inference& out);
  // `compact`: compact the histories when due (not a graph's scratch copies, whose users are
  // not registered yet).
  void record_uses(const std::vector<buffer_use>& uses, const byte_range* ranges,
                   buffer_uses* const* histories, op_id user, bool compact);
  // infer_uses() then record_uses() of a graph's operation on its scratch copies, each use
  // with one search of its history where the operation's uses allow it.
  void infer_and_record_uses(const std::vector<buffer_use>& uses, const byte_range* ranges,
                             buffer_uses* const* histories, op_id user, use_inference& out);
  // The frees to send after this pass's dispatch to each stream (released buffers' memory).
  void free_released(std::uint32_t index, const buffer_ref& memory);
  // resource_exhausted naming what `doing` needed when the buffers held and being made are at
  // max_buffers; empty otherwise.
  [[nodiscard]] caf::error buffers_full(const std::string& doing) const;
  // After a reset: buffers kept back by the loss are dropped.
  void drop_kept_buffers();
  // The users that `ghost` (a buffer user that ended before it ran) came after and that are
  // still to be waited for, through other ghosts.
  void expand_ghost(op_id ghost, std::vector<op_id>& out) const;
  void prune_ghosts();
  // `id` reads bytes a failed writer left unwritten (`cause`): it is cancelled.
  void poisoned(op_id id, const caf::error& cause);
  // A graph's uses, checked and inferred in the graph's order (its submission order) on
  // scratch copies of the buffers it touches, the operations named by scratch ids (first +
  // index): per operation, its inference and the graph ops it comes after by its uses.
  // Flat, one allocation per array, not one per operation: op i's uses are
  // [use_first[i], use_first[i + 1]) of ranges and histories (its scratch copies), the graph
  // ops it comes after by them [local_first[i], local_first[i + 1]) of local. All empty when
  // no op of the graph declares a use.
  struct graph_uses {
    std::vector<byte_range> ranges;
    std::vector<buffer_uses*> histories;
    std::vector<std::uint32_t> use_first;
    std::vector<use_inference> inferences;
    std::vector<std::uint32_t> local;
    std::vector<std::uint32_t> local_first;
    std::unordered_map<std::uint32_t, buffer_uses> scratch;  // by buffer slot
    [[nodiscard]] bool empty() const noexcept { return use_first.empty(); }
    [[nodiscard]] const byte_range* ranges_of(std::size_t op) const noexcept {
      return empty() ? nullptr : ranges.data() + use_first[op];
    }
  };
  caf::error infer_graph_uses(const graph_spec& graph, op_id first, graph_uses& out);

  // Ends the operations the batch names as reached on stream `index` (by operation, from the stream
  // actor's own ledger), oldest first, each with its failure and device times.
  void retire(std::uint32_t index, const completion_batch& batch);
  // The device finished `id`: completed, failed (`why`), or cancelled (its wait reported a
  // failed dependency).
  void settle(op_id id, const caf::error& why);
  // settle(), then settles every deferred op that was waiting only for it, transitively.
  void settle_and_wake(op_id first, caf::error why);
  // The operations in ended_ go out as notices and their records go (coordinator_notices.cpp).
  void finish();
  // Settles the deferred operations whose dependencies have all ended now.
  void wake_deferred();
  // Holds the device's outcome of `id` until its dependencies have ended; takes it back.
  void defer(op_id id, op_record& r, caf::error why);
  [[nodiscard]] caf::error undefer(op_record& r);
  [[nodiscard]] bool is_deferred(op_id id) const {
    const op_record* r = records_.find(id.value);
    return r != nullptr && r->deferred;
  }
  void notify(const op_listener& listener, op_notice notice);
  // Asks for what the ends after ended_[i] will read, a few ends ahead (finish's loop).
  void prefetch_ending(std::size_t i) const;
  // Writes an ended operation's record into `kept`, its entry of the ended ring (describe
  // answers from it once the record has gone).
  void keep_ended(const ended_op& e, op_record& r, std::int64_t now, op_info& kept);
  void flush();
  void serve_ready_waiters();
  void subscribe_streams();
  // The index of the stream actor that sent the current message, if it is one of ours.
  [[nodiscard]] std::optional<std::uint32_t> index_of(stream_id id) const;
  [[nodiscard]] const op_info* find_ended(op_id id) const;
  // unknown_op for an id that is not live and not among the ended kept, saying which.
  [[nodiscard]] caf::error gone(op_id id) const;
  [[nodiscard]] op_info info_of(op_id id, const op_record& r) const;
  // What the record says into `out`, whose lists keep their room: all but the description
  // and the outcome (state, cause), which the caller sets (a live operation's from its node,
  // an ended one's from its end).
  void fill_info(op_id id, const op_record& r, op_info& out) const;

  self_pointer self_ = nullptr;
  coordinator_context context_;
  coordinator_options options_;
  op_graph graph_;
  stream_pool pool_{pool_strategy::load_balanced};
  std::vector<stream_actor> actors_;  // by stream index
  staged_passes staged_;              // what this pass sends each stream
  std::vector<op_id> unplaced_;       // taken from the ready queue, waiting for place()
  std::uint64_t epoch_ = 1;  // bumped by a loss: answers to passes sent before it are stale

  id_table<op_record> records_;
  // Buffers, and the buffer users that ended while their work may still run on the device
  // (cancelled on their way): where they sit (point 0: ticket not back), until reached.
  std::optional<buffer_table> buffers_;
  std::unordered_map<std::string, buffer_id> order_tokens_;  // by communicator name
  std::unordered_map<op_id, op_position> tails_;
  // Buffer users that ended before they ran, with what they came after by their uses.
  std::unordered_map<op_id, std::vector<op_id>> ghosts_;
  std::size_t ghosts_pruned_at_ = 0;
  std::uint64_t let_go_ = 0;  // tails reached and ghosts let go: history_let_go()'s share
  // Open operations' buffer users they come after on the device only (order), besides their
  // graph dependencies, by where those sit: ended ones still running there (tails), and those
  // that stand in for a user that ended before it ran. Rare (a failure, a release after a
  // cancelled user), so kept here and not in each record's buffer side: placing and staging
  // an operation read it, and a look at the side was a cache miss per buffer user. Goes with
  // the operation's end.
  std::unordered_map<op_id, std::vector<op_id>> after_ops_;
  std::vector<std::vector<buffer_ref>> frees_;  // by stream index: sent after its next dispatch
  std::vector<buffer_metrics> buffer_metrics_;  // by stream index
  std::size_t allocating_ = 0;  // allocations asked of stream actors, not yet answered
  barrier_book barriers_;       // barrier operations while they run, synchronizes' limits
  std::vector<ended_op> ended_;  // ended during the current handler, not yet told
  // Ops the device finished whose dependencies' reports have not come yet: their records hold
  // the outcome (op_record::deferred). The ids, some stale, for wake_deferred() to walk; a
  // random DAG defers about every other operation, so a map here cost a node and a hash each.
  std::vector<op_id> deferred_;
  std::size_t deferred_count_ = 0;  // records deferred now
  std::vector<op_id> wake_;         // settle_and_wake()'s work list, kept for its capacity
  ended_ring ended_kept_;           // the newest ended operations (options_.ended_kept of them)
  std::vector<op_listener> all_listeners_;
  notice_outbox outbox_;  // sent at the end of the pass (flush)

  run_table runs_;  // the run requests still owed an answer
  step_table steps_;  // recorded steps
  // The replays registered and not yet ended, by their operation.
  std::unordered_map<op_id, std::shared_ptr<step_replay>> replays_;
  // Arms on_shed() once the coordinator holds no operation (options_.keep_memory_for).
  void arm_shed();
  bool shed_armed_ = false;
  std::uint64_t made_at_arm_ = 0;  // records and nodes made, ever, when it was armed

  std::deque<begin_waiter> begin_waiters_;
  std::map<std::uint64_t, caf::typed_response_promise<stream_id>> ready_waiters_;
  // await_end's waits by operation; the bounded ones (and ready_waiters_' timers) tagged
  // by end_waits_, whose ids the expire message carries.
  struct end_waiter {
    caf::typed_response_promise<op_notice> promise;
    std::uint64_t id = 0;
  };
  std::unordered_multimap<op_id, end_waiter> end_waiters_;
  wait_keys end_waits_;
  void tell_end_waiters(const op_notice& notice);

  caf::error lost_;
  bool closing_ = false;

  // Prometheus: by type and priority (each stream's own are its stream actor's).
  std::shared_ptr<metrics::registry> registry_;
  std::optional<op_metrics> op_metrics_;
  std::optional<step_metrics> step_metrics_;
  std::string gpu_;
  void report_levels();

  // report_atom's profile, and the trace (timing_: every pass asks its stream actor for
  // timing events around each operation; their times come back with the completions).
  std::optional<op_profile> profile_;
  bool timing_ = false;
  void profile(op_id id, const op_record& r, op_state state, std::int64_t now);

  // metrics
  std::uint64_t total_ = 0, completed_ = 0, failed_ = 0, cancelled_ = 0, dispatched_ = 0;
  std::uint64_t left_streams_ = 0;    // dispatched operations that have ended since
  std::uint64_t passes_ = 0;          // dispatch messages sent
  std::int64_t coordination_ns_ = 0;  // sum over dispatched
  std::uint64_t device_waits_ = 0, deadlock_detections_ = 0;
  std::uint64_t failed_frees_ = 0;  // released buffers' frees a stream actor refused
};

template <class F>
void coordinator_state::for_each_inferred(const std::vector<inferred_dep>& inferred, F&& f) const {
  for (std::size_t i = 0; i < inferred.size();) {
    const op_id dep = inferred[i].dep;
    bool data = false;  // through any of its buffers
    for (; i < inferred.size() && inferred[i].dep == dep; ++i) {
      data = data || !inferred[i].order_only;
    }
    if (!tails_.empty() && tails_.count(dep) != 0) {
      f(dep, dep_kind::tail);
    } else {
      f(dep, data ? dep_kind::data : dep_kind::order);
    }
  }
}

template <class F>
void coordinator_state::for_each_after(op_id id, F&& f) const {
  if (after_ops_.empty()) return;
  const auto found = after_ops_.find(id);
  if (found == after_ops_.end()) return;
  std::vector<op_id> stack(found->second.begin(), found->second.end());
  std::unordered_set<std::uint64_t> seen;
  while (!stack.empty()) {
    const op_id t = stack.back();
    stack.pop_back();
    if (!seen.insert(t.value).second) continue;
    op_position at;
    const after_state st = after_op(t, at);
    if (st != after_state::done) {
      f(st, at);
    } else if (auto ghost = ghosts_.find(t); ghost != ghosts_.end()) {
      stack.insert(stack.end(), ghost->second.begin(), ghost->second.end());
    }
  }
}

}  // namespace cudactor::detail
