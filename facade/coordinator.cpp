#include "cudactor/facade/coordinator.hpp"

#include <caf/all.hpp>

#include <utility>

#include "cudactor/actors/runtime.hpp"
#include "cudactor/facade/detail/ask.hpp"

namespace cudactor {

namespace {

using detail::coordinator_lane;

coordinator_actor the_coordinator(const front_door& d) { return d.coordinator(); }

}  // namespace

coordinator::coordinator(runtime& rt) : door_(rt.door()) {}

template <class T, class... Ts>
void coordinator::ask(on_done<T> done, Ts... args) const {
  detail::ask<T>(door_, coordinator_lane, std::move(done), the_coordinator, std::move(args)...);
}

void coordinator::add_with(op_spec op, on_done<op_id> done) const {
  ask<op_id>(std::move(done), register_atom::value, std::move(op));
}

void coordinator::submit_with(graph_spec graph, on_done<std::vector<op_id>> done) const {
  ask<std::vector<op_id>>(std::move(done), submit_atom::value, std::move(graph));
}

void coordinator::run_with(op_spec op, on_done<op_notice> done) const {
  ask<op_notice>(std::move(done), run_atom::value, std::move(op));
}

void coordinator::run_with(graph_spec graph, on_done<std::vector<op_notice>> done) const {
  ask<std::vector<op_notice>>(std::move(done), run_atom::value, std::move(graph));
}

void coordinator::record_with(step_spec step, on_done<step_handle> done) const {
  ask<step_handle>(std::move(done), record_atom::value, std::move(step));
}

void coordinator::replay_with(replay_request request, on_done<step_outcome> done) const {
  ask<step_outcome>(std::move(done), replay_atom::value, std::move(request));
}

void coordinator::release_with(step_handle step, on_done<bool> done) const {
  ask<bool>(std::move(done), release_atom::value, step);
}

void coordinator::depend_with(op_id op, op_id on, on_done<op_state> done) const {
  ask<op_state>(std::move(done), depend_atom::value, op, on);
}

void coordinator::begin_with(op_id op, on_done<launch_lease> done) const {
  ask<op_lease>(
      [door = door_, done = std::move(done)](outcome<op_lease> r) {
        if (!r) return done(r.error());
        done(launch_lease{door, *r});
      },
      begin_atom::value, op);
}

void coordinator::complete_with(op_id op, on_done<ticket> done) const {
  ask<ticket>(std::move(done), enqueued_atom::value, op);
}

void coordinator::fail_with(op_id op, std::string why, on_done<op_state> done) const {
  ask<op_state>(std::move(done), enqueued_atom::value, op,
                make_error(errc::op_failed, std::move(why)));
}

void coordinator::on_end_with(op_id op, std::chrono::nanoseconds limit,
                              const std::optional<cancellation>& cancel,
                              on_done<op_notice> done) const {
  detail::ask_waiting<op_notice>(door_, coordinator_lane, std::move(done), the_coordinator, limit,
                                 cancel, await_atom::value, op);
}

void coordinator::allocate_with(std::uint64_t bytes, std::optional<stream_id> on,
                                on_done<buffer_handle> done) const {
  if (on) {
    ask<buffer_handle>(std::move(done), alloc_atom::value, *on, bytes);
  } else {
    ask<buffer_handle>(std::move(done), alloc_atom::value, bytes);
  }
}

void coordinator::adopt_with(std::uint64_t at, std::uint64_t bytes,
                             on_done<buffer_handle> done) const {
  ask<buffer_handle>(std::move(done), adopt_atom::value, at, bytes);
}

void coordinator::release_with(buffer_id buffer, on_done<op_id> done) const {
  ask<op_id>(std::move(done), release_atom::value, buffer);
}

void coordinator::describe_with(op_id op, on_done<op_info> done) const {
  ask<op_info>(std::move(done), describe_atom::value, op);
}

void coordinator::cancel_with(op_id op, on_done<op_state> done) const {
  ask<op_state>(std::move(done), cancel_atom::value, op);
}

void coordinator::deadlocks_with(std::chrono::nanoseconds older_than,
                                 on_done<deadlock_report> done) const {
  if (older_than.count() == 0) {
    ask<deadlock_report>(std::move(done), deadlocks_atom::value);
  } else {
    ask<deadlock_report>(std::move(done), deadlocks_atom::value, caf::timespan{older_than});
  }
}

void coordinator::metrics_with(on_done<coordinator_metrics> done) const {
  ask<coordinator_metrics>(std::move(done), metrics_atom::value);
}

void coordinator::report_with(on_done<coordinator_report> done) const {
  ask<coordinator_report>(std::move(done), report_atom::value);
}

void coordinator::ready_streams_with(on_done<bool> done) const {
  ask<bool>(std::move(done), ready_streams_atom::value);
}

void coordinator::choose_with(op_priority priority, op_workload workload,
                              on_done<stream_id> done) const {
  ask<stream_id>(std::move(done), choose_atom::value, priority, workload);
}

void coordinator::wait_ready_with(std::chrono::nanoseconds limit, on_done<stream_id> done) const {
  ask<stream_id>(std::move(done), wait_ready_atom::value, caf::timespan{limit});
}

}  // namespace cudactor
