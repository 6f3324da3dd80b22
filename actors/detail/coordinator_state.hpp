// actors/detail/coordinator_state.hpp
//
// What the coordinator actor owns and how it moves: the dependency graph (op_graph), a record
// per live operation (its work, listeners and times), the stream pool, and the answers still
// owed (begin waiting for a ready operation, wait_for_any_ready). The behaviour in
// coordinator.cpp only unpacks messages and calls in here.
//
// Every handler ends with flush(): the notices of operations that ended while it ran go out as
// one message per listener.
#pragma once

#include <caf/fwd.hpp>
#include <caf/typed_response_promise.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cudactor/actors/coordinator.hpp"
#include "cudactor/actors/detail/actor_metrics.hpp"
#include "cudactor/actors/detail/device_clock.hpp"
#include "cudactor/actors/detail/op_graph.hpp"
#include "cudactor/actors/detail/op_profile.hpp"
#include "cudactor/actors/detail/stream_pool.hpp"

namespace cudactor::detail {

class coordinator_state {
 public:
  using self_pointer = coordinator_actor::stateful_pointer<coordinator_state>;

  void init(self_pointer self, const coordinator_context& context, coordinator_options options,
            std::vector<gpu::stream> streams);
  ~coordinator_state();

  // --- registering ---------------------------------------------------------------------------
  caf::result<op_id> register_op(op_spec& spec, const op_listener* listener);
  caf::result<std::vector<op_id>> submit_graph(graph_spec& graph, const op_listener* listener);
  // Registered as above; answered once every operation has ended, with their notices.
  caf::result<op_notice> run_op(op_spec& spec);
  caf::result<std::vector<op_notice>> run_graph(graph_spec& graph);
  caf::result<op_state> depend(op_id op, op_id dep);

  // --- caller-launched operations ----------------------------------------------------------
  caf::result<op_lease> begin(op_id id);
  caf::result<ticket> complete(op_id id);
  caf::result<op_state> complete_failed(op_id id, const caf::error& why);

  // --- following and inspecting ------------------------------------------------------------
  void subscribe_all(const op_listener& listener);
  caf::result<op_state> subscribe(op_id id, const op_listener& listener);
  void unsubscribe(const caf::actor_addr& listener);
  caf::result<op_info> describe(op_id id) const;
  caf::result<op_state> cancel(op_id id);
  deadlock_report detect_deadlocks(caf::timespan stall_after);
  [[nodiscard]] coordinator_metrics metrics() const;
  [[nodiscard]] coordinator_report report() const;

  // --- the pool ------------------------------------------------------------------------------
  [[nodiscard]] bool has_ready_streams() const { return pool_.any_idle().has_value(); }
  caf::result<stream_id> wait_for_any_ready(caf::timespan timeout);
  void expire(std::uint64_t token);
  caf::result<bool> reset();

  // --- poller and runtime --------------------------------------------------------------------
  void on_progress(std::uint64_t epoch, const completion_batch& batch);
  void shut_down();
  [[nodiscard]] const coordinator_options& options() const noexcept { return options_; }

 private:
  static constexpr std::uint32_t no_stream = ~std::uint32_t{0};

  // Timing events recorded before and after an operation's work on its stream: when the
  // device started and finished it, read on the device clock once its end has been seen.
  struct op_timing {
    gpu::event start;
    gpu::event end;
  };

  struct op_record {
    op_type type = op_type::kernel;
    op_priority priority = op_priority::normal;
    op_workload workload = op_workload::compute;
    bool manual = false;
    std::string description;
    std::vector<op_id> deps;
    gpu::work_fn fn;
    std::vector<op_listener> listeners;
    std::int64_t registered_ns = 0;
    std::int64_t dispatched_ns = 0;
    std::uint32_t stream = no_stream;
    timeline_point point = 0;
    std::optional<op_timing> timing;  // timing on, and events to be had
    std::uint64_t run = 0;            // the run request it belongs to (0: none)
    std::uint32_t run_index = 0;      // its place in that request's answer
  };
  // A run request: the notices of its operations, gathered until the last has ended.
  struct run_waiter {
    caf::typed_response_promise<std::vector<op_notice>> graph;
    caf::typed_response_promise<op_notice> single;  // a run of one op_spec
    bool is_graph = true;
    std::vector<op_notice> ends;
    std::size_t left = 0;
  };
  struct begin_waiter {
    op_id id;
    caf::typed_response_promise<op_lease> promise;
  };

  // Why nothing new is taken now (shut down, device lost), or an empty error.
  [[nodiscard]] caf::error refusal() const;
  [[nodiscard]] caf::error resolve(const work& w, gpu::work_fn& out) const;
  // `now`: when it was registered (one stamp for a whole graph).
  op_record& add_record(op_id id, op_spec& spec, gpu::work_fn fn, bool manual, std::int64_t now);
  // register_op and submit_graph, with the run request (0: none) the operations belong to;
  // set before anything can end, so that no end goes by unheard.
  caf::error add_op(op_spec& spec, const op_listener* listener, std::uint64_t run, op_id& out);
  caf::error add_graph(graph_spec& graph, const op_listener* listener, std::uint64_t run,
                       std::vector<op_id>& out);
  // An operation of run request `r` ended: its notice goes in, the answer once it is full.
  void ran(const op_record& r, const op_notice& notice);
  void add_listener(op_record& r, const op_listener& listener);

  // Dispatches ready operations while streams have room, serves begin waiters whose
  // operation became ready, and tells the poller what went out.
  void pump();
  void dispatch(op_id id, std::uint32_t slot, std::int64_t now);
  // Device waits for every dependency of `id` submitted on another stream and not yet reached.
  [[nodiscard]] gpu::status place_waits(op_id id, std::uint32_t slot);
  // Bookkeeping once `id` is on `slot` at `point` (its work enqueued, the point signalled).
  void submitted(op_id id, op_record& r, std::uint32_t slot, timeline_point point,
                 std::int64_t now);
  // `slot`: the stream the launch had begun on, whose waits close_off() then seals.
  void launch_failed(op_id id, std::uint32_t slot, const gpu::status& why);
  // Waits (or a caller's work) put on `slot` for an operation that will never take a point of
  // its own stay in the stream's order; on the host a failed wait, or the caller's failed
  // work, would be charged to the next operation's point. A point that is no operation's
  // seals them off. A loss it runs into comes back for the caller to lose() with.
  [[nodiscard]] caf::error close_off(std::uint32_t slot);
  void serve_begin_waiters();
  op_lease start_manual(op_id id, op_record& r, std::uint32_t slot);
  // complete(): the caller's work is enqueued; the operation takes the stream's next point.
  [[nodiscard]] caf::error submit_manual(op_id id, ticket& out);
  void watch_all();
  // Tells the poller of the points issued on `slot` since it last did; the loss if that fails.
  [[nodiscard]] caf::error watch(std::uint32_t slot);
  // Fails every open operation with `why` and refuses new work until reset.
  void lose(caf::error why);

  // Every dependency of `id` has completed (a failed one would have cancelled it).
  [[nodiscard]] bool deps_done(op_id id) const;
  // The device finished `id`: completed, failed (`why`), or cancelled (its wait reported a
  // failed dependency).
  void settle(op_id id, const caf::error& why);
  // settle(), then settles every deferred op that was waiting only for it, transitively.
  void settle_and_wake(op_id first, caf::error why);
  // The operations in ended_ go out as notices and their records go.
  void finish();
  void notify(const op_listener& listener, const op_notice& notice);
  void flush();
  void serve_ready_waiters();
  void subscribe_streams();
  [[nodiscard]] const op_info* find_ended(op_id id) const;
  // unknown_op for an id that is not live and not among the ended kept, saying which.
  [[nodiscard]] caf::error gone(op_id id) const;
  [[nodiscard]] op_info info_of(op_id id, const op_record& r) const;

  self_pointer self_ = nullptr;
  coordinator_context context_;
  coordinator_options options_;
  op_graph graph_;
  stream_pool pool_{pool_strategy::load_balanced, 1};
  std::uint64_t epoch_ = 1;  // of the pool's streams

  std::unordered_map<op_id, op_record> records_;
  std::vector<ended_op> ended_;  // ended during the current handler, not yet told
  // Ops the device finished whose dependencies' reports have not come yet, with their outcome.
  std::unordered_map<op_id, caf::error> deferred_;
  std::vector<op_id> wake_;  // settle_and_wake()'s work list, kept for its capacity
  std::deque<op_info> ended_kept_;
  std::vector<op_listener> all_listeners_;
  std::vector<std::pair<op_listener, std::vector<op_notice>>> outbox_;
  std::unordered_map<caf::actor_addr, std::size_t> outbox_index_;

  std::unordered_map<std::uint64_t, run_waiter> runs_;
  std::uint64_t next_run_ = 1;

  std::deque<begin_waiter> begin_waiters_;
  std::map<std::uint64_t, caf::typed_response_promise<stream_id>> ready_waiters_;
  std::uint64_t next_token_ = 1;

  caf::error lost_;
  bool closing_ = false;

  // Prometheus: by type and priority, and per stream of the pool (created as slots appear).
  std::shared_ptr<metrics::registry> registry_;
  std::optional<op_metrics> op_metrics_;
  std::vector<stream_metrics> slot_metrics_;
  std::string gpu_;
  void report_levels();

  // report_atom's profile, and the trace (timing_: timing events around every operation,
  // recycled through spare_timing_, read on clock_).
  std::optional<op_profile> profile_;
  bool timing_ = false;
  shared_clock clock_;  // set when timing
  std::vector<op_timing> spare_timing_;
  [[nodiscard]] std::optional<op_timing> take_timing();
  // A failure that one of the operation's timing events reported instead of its point.
  [[nodiscard]] caf::error timing_failure(op_id id);
  void profile(op_id id, const op_record& r, op_state state, std::int64_t now);

  // metrics
  std::uint64_t total_ = 0, completed_ = 0, failed_ = 0, cancelled_ = 0, dispatched_ = 0;
  std::int64_t coordination_ns_ = 0;  // sum over dispatched
  std::uint64_t device_waits_ = 0, deadlock_detections_ = 0;
};

}  // namespace cudactor::detail
