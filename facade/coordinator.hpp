// facade/coordinator.hpp
//
// The runtime's operation coordinator as a plain C++ object: register operations and whole
// graphs, add dependencies, launch work yourself between begin and complete, hear an
// operation's end, inspect, cancel, find deadlocks, read the metrics and the profile, and ask
// the stream pool. Answers as every facade call does (facade/completion.hpp).
//
//   cudactor::coordinator c{*rt};
//   op_spec load;  load.type = op_type::memory_transfer;  load.work = work::local(copy_in);
//   op_id a = c.add(load).get();
//   op_spec step;  step.deps = {a};  step.work = work::local(kernel);
//   op_notice end = c.run(step).get();          // registered, answered at its end
//   c.on_end(a, [](outcome<op_notice> n) { ... });
//
// Everything one coordinator object (or any copy) asks reaches the coordinator in the order
// it was asked: an add, then a depend naming its id, is safe without waiting in between.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cudactor/facade/address.hpp"
#include "cudactor/facade/cancellation.hpp"
#include "cudactor/facade/completion.hpp"
#include "cudactor/facade/launch_lease.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/report_types.hpp"
#include "cudactor/messaging/step_types.hpp"

namespace cudactor {

class front_door;
class runtime;

class coordinator {
 public:
  explicit coordinator(runtime& rt);

  // --- registering ----------------------------------------------------------------------
  // One operation; its id at once. It runs when its dependencies have been submitted.
  template <class Token = use_future_t>
  auto add(op_spec op, Token&& token = {}) const {
    return complete<op_id>(std::forward<Token>(token),
                           [c = *this, op = std::move(op)](on_done<op_id> d) mutable {
                             c.add_with(std::move(op), std::move(d));
                           });
  }
  // A whole graph, validated as a whole; the ids in the graph's order.
  template <class Token = use_future_t>
  auto submit(graph_spec graph, Token&& token = {}) const {
    return complete<std::vector<op_id>>(
        std::forward<Token>(token),
        [c = *this, graph = std::move(graph)](on_done<std::vector<op_id>> d) mutable {
          c.submit_with(std::move(graph), std::move(d));
        });
  }
  // Registered like add/submit, answered at the end (of every operation of the graph).
  template <class Token = use_future_t>
  auto run(op_spec op, Token&& token = {}) const {
    return complete<op_notice>(std::forward<Token>(token),
                               [c = *this, op = std::move(op)](on_done<op_notice> d) mutable {
                                 c.run_with(std::move(op), std::move(d));
                               });
  }
  template <class Token = use_future_t>
  auto run(graph_spec graph, Token&& token = {}) const {
    return complete<std::vector<op_notice>>(
        std::forward<Token>(token),
        [c = *this, graph = std::move(graph)](on_done<std::vector<op_notice>> d) mutable {
          c.run_with(std::move(graph), std::move(d));
        });
  }
  // `op` also waits for `on`; answers op's state, or dependency_cycle naming the cycle.
  template <class Token = use_future_t>
  auto depend(op_id op, op_id on, Token&& token = {}) const {
    return complete<op_state>(std::forward<Token>(token), [c = *this, op, on](on_done<op_state> d) {
      c.depend_with(op, on, std::move(d));
    });
  }

  // --- buffers (docs/buffers.md) ------------------------------------------------------------
  // A buffer of `bytes`, allocated in the order of a stream the coordinator picks, or of
  // `on`. Operations declare their uses of it (op_spec::uses) and are ordered by them.
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto allocate(std::uint64_t bytes, Token&& token = {}) const {
    return complete<buffer_handle>(
        std::forward<Token>(token),
        [c = *this, bytes](on_done<buffer_handle> d) { c.allocate_with(bytes, {}, std::move(d)); });
  }
  template <class Token = use_future_t>
  auto allocate(std::uint64_t bytes, stream_id on, Token&& token = {}) const {
    return complete<buffer_handle>(std::forward<Token>(token),
                                   [c = *this, bytes, on](on_done<buffer_handle> d) {
                                     c.allocate_with(bytes, on, std::move(d));
                                   });
  }
  // Memory of the caller's, ordered like any buffer and never freed by cudactor.
  template <class Token = use_future_t>
  auto adopt(address memory, std::uint64_t bytes, Token&& token = {}) const {
    return complete<buffer_handle>(std::forward<Token>(token), [c = *this, at = memory.value(),
                                                                bytes](on_done<buffer_handle> d) {
      c.adopt_with(at, bytes, std::move(d));
    });
  }
  // Takes no use from now on; the release operation's id: it comes after every use on every
  // stream, and when it has ended (on_end) the memory went back (adopted: is the caller's).
  template <class Token = use_future_t>
  auto release(buffer_id buffer, Token&& token = {}) const {
    return complete<op_id>(std::forward<Token>(token), [c = *this, buffer](on_done<op_id> d) {
      c.release_with(buffer, std::move(d));
    });
  }

  // --- steps (docs/replay.md) ----------------------------------------------------------------
  // A graph recorded once: checked, its dependencies inferred, placed; its handle.
  template <class Token = use_future_t>
  auto record(step_spec step, Token&& token = {}) const {
    return complete<step_handle>(std::forward<Token>(token), [c = *this, step = std::move(step)](
                                                                 on_done<step_handle> d) mutable {
      c.record_with(std::move(step), std::move(d));
    });
  }
  // The step run again as one operation, answered once with its outcome (a failed or
  // cancelled replay is an outcome, not an error; a refused one is an error).
  template <class Token = use_future_t>
  auto replay(replay_request request, Token&& token = {}) const {
    return complete<step_outcome>(
        std::forward<Token>(token),
        [c = *this, request = std::move(request)](on_done<step_outcome> d) mutable {
          c.replay_with(std::move(request), std::move(d));
        });
  }
  template <class Token = use_future_t>
  auto replay(step_handle step, Token&& token = {}) const {
    return replay(replay_request{step, {}, step_notices::none}, std::forward<Token>(token));
  }
  // Forgets the step (replays in flight run on); false when it names none.
  template <class Token = use_future_t>
  auto release(step_handle step, Token&& token = {}) const {
    return complete<bool>(std::forward<Token>(token), [c = *this, step](on_done<bool> d) {
      c.release_with(step, std::move(d));
    });
  }

  // --- work the caller launches itself (op_spec::manual) -----------------------------------
  // Answered once the operation is ready and a stream is held for it: the lease launches the
  // operation's work on that stream and ends the operation (facade/launch_lease.hpp).
  template <class Token = use_future_t>
  auto begin(op_id op, Token&& token = {}) const {
    return complete<launch_lease>(
        std::forward<Token>(token),
        [c = *this, op](on_done<launch_lease> d) { c.begin_with(op, std::move(d)); });
  }
  // The same as lease.complete() and lease.fail(), by the operation's id. Asked of the
  // coordinator, not through the lease: wait for the lease's launches to be answered first.
  // The launch is done: the end is tracked from the stream (the ticket it is tracked by).
  template <class Token = use_future_t>
  auto complete_launch(op_id op, Token&& token = {}) const {
    return complete<ticket>(std::forward<Token>(token), [c = *this, op](on_done<ticket> d) {
      c.complete_with(op, std::move(d));
    });
  }
  // The launch failed: the operation fails with `why`, its dependents are cancelled.
  template <class Token = use_future_t>
  auto fail_launch(op_id op, std::string why, Token&& token = {}) const {
    return complete<op_state>(std::forward<Token>(token),
                              [c = *this, op, why = std::move(why)](on_done<op_state> d) mutable {
                                c.fail_with(op, std::move(why), std::move(d));
                              });
  }

  // --- following and inspecting ------------------------------------------------------------
  // The end of an operation registered before (now, if it has ended already): exactly once.
  // With a limit: timeout once it has passed (zero: none; negative: refused); with a
  // cancellation: cancelled when it is cancelled first. The coordinator keeps nothing of the
  // wait afterwards.
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto on_end(op_id op, Token&& token = {}) const {
    return on_end(op, std::chrono::nanoseconds{0}, std::forward<Token>(token));
  }
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto on_end(op_id op, std::chrono::nanoseconds limit, Token&& token = {}) const {
    return complete<op_notice>(std::forward<Token>(token),
                               [c = *this, op, limit](on_done<op_notice> d) {
                                 c.on_end_with(op, limit, std::nullopt, std::move(d));
                               });
  }
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto on_end(op_id op, std::chrono::nanoseconds limit, const cancellation& cancel,
              Token&& token = {}) const {
    return complete<op_notice>(std::forward<Token>(token),
                               [c = *this, op, limit, cancel](on_done<op_notice> d) {
                                 c.on_end_with(op, limit, cancel, std::move(d));
                               });
  }
  template <class Token = use_future_t>
  auto describe(op_id op, Token&& token = {}) const {
    return complete<op_info>(std::forward<Token>(token), [c = *this, op](on_done<op_info> d) {
      c.describe_with(op, std::move(d));
    });
  }
  // Withdraws an operation not yet handed to a stream; its dependents are cancelled too.
  template <class Token = use_future_t>
  auto cancel(op_id op, Token&& token = {}) const {
    return complete<op_state>(std::forward<Token>(token), [c = *this, op](on_done<op_state> d) {
      c.cancel_with(op, std::move(d));
    });
  }
  // Cycles, and operations stalled behind something that cannot end or older than
  // `older_than` (zero: the coordinator's configured threshold), each with what it waits on.
  template <class Token = use_future_t>
  auto deadlocks(std::chrono::nanoseconds older_than = {}, Token&& token = {}) const {
    return complete<deadlock_report>(std::forward<Token>(token),
                                     [c = *this, older_than](on_done<deadlock_report> d) {
                                       c.deadlocks_with(older_than, std::move(d));
                                     });
  }
  template <class Token = use_future_t>
  auto metrics(Token&& token = {}) const {
    return complete<coordinator_metrics>(
        std::forward<Token>(token),
        [c = *this](on_done<coordinator_metrics> d) { c.metrics_with(std::move(d)); });
  }
  // The profile: per stream, and per operation name.
  template <class Token = use_future_t>
  auto report(Token&& token = {}) const {
    return complete<coordinator_report>(
        std::forward<Token>(token),
        [c = *this](on_done<coordinator_report> d) { c.report_with(std::move(d)); });
  }

  // --- the stream pool ---------------------------------------------------------------------
  // Whether a stream has room now.
  template <class Token = use_future_t>
  auto ready_streams(Token&& token = {}) const {
    return complete<bool>(std::forward<Token>(token),
                          [c = *this](on_done<bool> d) { c.ready_streams_with(std::move(d)); });
  }
  // The stream the pool would give an operation of this priority and workload now.
  template <class Token = use_future_t>
  auto choose(op_priority priority, op_workload workload, Token&& token = {}) const {
    return complete<stream_id>(std::forward<Token>(token),
                               [c = *this, priority, workload](on_done<stream_id> d) {
                                 c.choose_with(priority, workload, std::move(d));
                               });
  }
  // A stream with room, once there is one; timeout after `limit`.
  template <class Token = use_future_t>
  auto wait_ready(std::chrono::nanoseconds limit, Token&& token = {}) const {
    return complete<stream_id>(
        std::forward<Token>(token),
        [c = *this, limit](on_done<stream_id> d) { c.wait_ready_with(limit, std::move(d)); });
  }

 private:
  void add_with(op_spec op, on_done<op_id> done) const;
  void submit_with(graph_spec graph, on_done<std::vector<op_id>> done) const;
  void run_with(op_spec op, on_done<op_notice> done) const;
  void run_with(graph_spec graph, on_done<std::vector<op_notice>> done) const;
  void depend_with(op_id op, op_id on, on_done<op_state> done) const;
  void allocate_with(std::uint64_t bytes, std::optional<stream_id> on,
                     on_done<buffer_handle> done) const;
  void adopt_with(std::uint64_t at, std::uint64_t bytes, on_done<buffer_handle> done) const;
  void release_with(buffer_id buffer, on_done<op_id> done) const;
  void record_with(step_spec step, on_done<step_handle> done) const;
  void replay_with(replay_request request, on_done<step_outcome> done) const;
  void release_with(step_handle step, on_done<bool> done) const;
  void begin_with(op_id op, on_done<launch_lease> done) const;
  void complete_with(op_id op, on_done<ticket> done) const;
  void fail_with(op_id op, std::string why, on_done<op_state> done) const;
  void on_end_with(op_id op, std::chrono::nanoseconds limit,
                   const std::optional<cancellation>& cancel, on_done<op_notice> done) const;
  void describe_with(op_id op, on_done<op_info> done) const;
  void cancel_with(op_id op, on_done<op_state> done) const;
  void deadlocks_with(std::chrono::nanoseconds older_than, on_done<deadlock_report> done) const;
  void metrics_with(on_done<coordinator_metrics> done) const;
  void report_with(on_done<coordinator_report> done) const;
  void ready_streams_with(on_done<bool> done) const;
  void choose_with(op_priority priority, op_workload workload, on_done<stream_id> done) const;
  void wait_ready_with(std::chrono::nanoseconds limit, on_done<stream_id> done) const;
  template <class T, class... Ts>
  void ask(on_done<T> done, Ts... args) const;

  std::shared_ptr<front_door> door_;
};

}  // namespace cudactor
