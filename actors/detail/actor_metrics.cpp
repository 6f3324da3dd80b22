#include "cudactor/actors/detail/actor_metrics.hpp"

namespace cudactor::detail {

namespace {

const std::vector<std::string> stream_labels{"gpu", "stream"};

}  // namespace

std::string gpu_label(const gpu::backend& device) {
  if (device.kind() == gpu::backend_kind::host) return "host";
  return std::to_string(device.device().ordinal);
}

std::shared_ptr<metrics::registry> registry_or_own(std::shared_ptr<metrics::registry> given) {
  if (given) return given;
  metrics::exposer_options off;
  off.enabled = false;
  off.process_metrics = false;
  return std::make_shared<metrics::registry>(off);
}

stream_metrics::stream_metrics(metrics::registry& r, const std::string& gpu,
                               const std::string& stream)
    : accepted_(r.counters("cudactor_stream_operations_total",
                           "Operations a stream accepted (each takes a point of its timeline).",
                           stream_labels)
                    .add({gpu, stream})),
      completed_(r.counters("cudactor_stream_operations_completed_total",
                            "Operations whose point the stream has passed, failed ones included.",
                            stream_labels)
                     .add({gpu, stream})),
      failed_(r.counters("cudactor_stream_operations_failed_total",
                         "Operations that failed: rejected at launch or reported failed.",
                         stream_labels)
                  .add({gpu, stream})),
      in_flight_(r.gauges("cudactor_stream_in_flight",
                          "Operations handed to the device and not yet completed.", stream_labels)
                     .add({gpu, stream})),
      queued_(r.gauges("cudactor_stream_queued",
                       "Operations accepted but held back (in-flight cap, events).", stream_labels)
                  .add({gpu, stream})),
      latency_(r.histograms("cudactor_stream_operation_latency_seconds",
                            "From handing an operation to the device to seeing it complete.",
                            stream_labels)
                   .add({gpu, stream})),
      gpu_time_(r.histograms("cudactor_stream_gpu_seconds",
                             "Device time of an operation, from its timing events (timing on).",
                             stream_labels)
                    .add({gpu, stream})) {}

buffer_metrics::buffer_metrics(metrics::registry& r, const std::string& gpu,
                               const std::string& stream)
    : in_use_(r.gauges("cudactor_buffer_in_use_bytes",
                       "Bytes of the coordinator's buffers allocated on a stream and not released.",
                       stream_labels)
                  .add({gpu, stream})),
      releasing_(r.gauges("cudactor_buffer_releasing_bytes",
                          "Bytes of released buffers waiting for every stream to pass their last "
                          "use before the memory goes back.",
                          stream_labels)
                     .add({gpu, stream})),
      reclaimed_(r.counters("cudactor_buffer_reclaimed_bytes_total",
                            "Bytes of released buffers given back to the stream's allocator.",
                            stream_labels)
                     .add({gpu, stream})) {}

op_metrics::op_metrics(metrics::registry& r, std::string gpu)
    : registry_(r),
      gpu_(std::move(gpu)),
      device_waits_(r.counters("cudactor_coordinator_device_waits_total",
                               "Cross-stream waits the coordinator placed on the device.", {"gpu"})
                        .add({gpu_})),
      deadlocks_(r.counters("cudactor_coordinator_deadlock_detections_total",
                            "Deadlock checks that found a cycle or a stalled operation.", {"gpu"})
                     .add({gpu_})),
      stalled_(r.gauges("cudactor_coordinator_stalled_operations",
                        "Operations the last deadlock check found stalled.", {"gpu"})
                   .add({gpu_})),
      live_(r.gauges("cudactor_coordinator_live_operations",
                     "Operations registered and not yet ended.", {"gpu"})
                .add({gpu_})),
      queued_(r.gauges("cudactor_coordinator_queued_operations",
                       "Live operations not on a stream yet: pending, ready or being begun.",
                       {"gpu"})
                  .add({gpu_})) {}

std::unique_ptr<op_metrics::op_cells> op_metrics::make(op_type t, op_priority p) {
  const std::vector<std::string> labels{"gpu", "type", "priority"};
  const metrics::label_values values{gpu_, std::string{to_string(t)}, std::string{to_string(p)}};
  auto counter = [&](const char* name, const char* help) -> metrics::counter& {
    return registry_.counters(name, help, labels).add(values);
  };
  return std::unique_ptr<op_cells>{new op_cells{
      counter("cudactor_operations_registered_total",
              "Operations registered with the coordinator."),
      counter("cudactor_operations_dispatched_total", "Operations handed a stream."),
      counter("cudactor_operations_completed_total", "Operations that completed."),
      counter("cudactor_operations_failed_total", "Operations that failed."),
      counter("cudactor_operations_cancelled_total",
              "Operations cancelled: by request, or because a dependency failed."),
      registry_
          .histograms("cudactor_operation_latency_seconds",
                      "From registration to the end of an operation, however it ended.", labels)
          .add(values)}};
}

void op_metrics::ended(op_type t, op_priority p, op_state how, std::int64_t latency_ns) {
  op_cells& c = cells(t, p);
  switch (how) {
    case op_state::completed: c.completed.add(); break;
    case op_state::failed: c.failed.add(); break;
    default: c.cancelled.add(); break;
  }
  c.latency.observe(std::chrono::nanoseconds{latency_ns});
}

step_metrics::step_cells& step_metrics::of(const std::string& step) {
  auto found = cells_.find(step);
  if (found != cells_.end()) return *found->second;
  const std::string& label = cells_.size() < max_names ? step : std::string{"other"};
  if (label != step) {
    if (auto other = cells_.find(label); other != cells_.end()) return *other->second;
  }
  const metrics::label_values values{gpu_, label};
  const std::vector<std::string> labels{"gpu", "step"};
  const std::vector<std::string> with_outcome{"gpu", "step", "outcome"};
  auto replays = [&](const char* outcome) -> metrics::counter& {
    return registry_
        .counters("cudactor_step_replays_total", "Replays of recorded steps, by how they ended.",
                  with_outcome)
        .add({gpu_, label, outcome});
  };
  auto made = std::unique_ptr<step_cells>{new step_cells{
      replays("completed"), replays("failed"), replays("cancelled"),
      registry_
          .histograms("cudactor_step_seconds",
                      "From a replay's registration to its end, however it ended.", labels)
          .add(values),
      registry_
          .histograms("cudactor_step_record_seconds",
                      "What recording a step took: checks, inference, placement.", labels)
          .add(values),
      registry_
          .counters("cudactor_step_rebound_operations_total",
                    "Operations whose work a replay's bindings resolved anew.", labels)
          .add(values),
      registry_
          .histograms("cudactor_step_instantiate_seconds",
                      "What building a step's graph took (on CUDA: capture, instantiation, "
                      "upload).",
                      labels)
          .add(values),
      registry_
          .counters("cudactor_step_graph_instantiations_total",
                    "Times a step's graph was instantiated: once when recorded, again when a "
                    "binding changed a node's shape.",
                    labels)
          .add(values),
      registry_
          .counters("cudactor_step_graph_updates_total",
                    "Nodes of a step's graph given another work in place for a replay's "
                    "bindings (no instantiation).",
                    labels)
          .add(values),
      registry_
          .gauges("cudactor_step_scratch_bytes",
                  "Scratch the work of recorded steps holds in their graphs' pools "
                  "(launch_context::scratch), until the steps are released.",
                  labels)
          .add(values)}};
  return *cells_.emplace(label, std::move(made)).first->second;
}

void step_metrics::replayed(const std::string& step, op_state how, std::int64_t ns) {
  step_cells& c = of(step);
  switch (how) {
    case op_state::completed: c.completed.add(); break;
    case op_state::failed: c.failed.add(); break;
    default: c.cancelled.add(); break;
  }
  c.time.observe(std::chrono::nanoseconds{ns});
}

event_pool_metrics::event_pool_metrics(metrics::registry& r, const std::string& gpu,
                                       std::uint32_t capacity) {
  const std::vector<std::string> labels{"gpu", "kind"};
  const std::array<const char*, 2> kinds{"regular", "timing"};
  for (std::size_t k = 0; k < 2; ++k) {
    available_[k] =
        &r.gauges("cudactor_event_pool_available", "Events in the pool ready to be leased.", labels)
             .add({gpu, kinds[k]});
    in_use_[k] = &r.gauges("cudactor_event_pool_in_use", "Events leased to streams.", labels)
                      .add({gpu, kinds[k]});
    exhausted_[k] = &r.counters("cudactor_event_pool_exhausted_total",
                                "Leases refused because the pool was at its maximum.", labels)
                         .add({gpu, kinds[k]});
  }
  lent_ =
      &r.counters("cudactor_event_pool_lent_total",
                  "Timing events leased for regular requests (regular ones had run out).", {"gpu"})
           .add({gpu});
  r.gauges("cudactor_event_pool_capacity", "The most events the pool holds, both kinds.", {"gpu"})
      .add({gpu})
      .set(capacity);
}

barrier_metrics::barrier_metrics(metrics::registry& r, const std::string& gpu,
                                 const std::string& barrier)
    : crossed_(r.counters("cudactor_barrier_crossings_total", "Barrier generations crossed.",
                          {"gpu", "barrier"})
                   .add({gpu, barrier})),
      timeouts_(r.counters("cudactor_barrier_timeouts_total",
                           "Barrier generations answered timeout (a stream did not arrive).",
                           {"gpu", "barrier"})
                    .add({gpu, barrier})),
      failed_(r.counters("cudactor_barrier_failures_total",
                         "Barrier generations that failed: failed work, lost device, shutdown.",
                         {"gpu", "barrier"})
                  .add({gpu, barrier})),
      wait_(r.histograms("cudactor_barrier_wait_seconds",
                         "From a synchronize to the barrier's answer, for generations crossed.",
                         {"gpu", "barrier"})
                .add({gpu, barrier})) {}

poller_metrics::poller_metrics(metrics::registry& r, std::string gpu)
    : registry_(r),
      gpu_(std::move(gpu)),
      detection_(r.histograms("cudactor_poller_detection_delay_seconds",
                              "How late the poller saw a stream move (see docs/metrics.md).",
                              {"gpu"})
                     .add({gpu_})) {}

std::function<void(std::chrono::nanoseconds)> poller_metrics::detection_observer() const {
  metrics::duration_histogram* h = &detection_;
  return [h](std::chrono::nanoseconds d) { h->observe(d); };
}

void poller_metrics::attach(const gpu::completion_poller& poller) {
  series_.clear();
  const gpu::completion_poller* p = &poller;
  using metrics::metric_kind;
  auto add = [&](const char* name, const char* help, metric_kind kind,
                 std::vector<std::string> labels, metrics::label_values values, auto read) {
    series_.push_back(
        registry_.callbacks(name, help, std::move(labels), kind).add(values, [p, read] {
          return static_cast<double>(read(p->stats()));
        }));
  };
  using stats = gpu::poller_stats;
  const char* watches = "cudactor_poller_watches_total";
  const char* watches_help = "Watches the poller answered, by outcome.";
  const std::vector<std::string> outcome{"gpu", "outcome"};
  add(watches, watches_help, metric_kind::counter, outcome, {gpu_, "completed"},
      [](const stats& s) { return s.completed; });
  add(watches, watches_help, metric_kind::counter, outcome, {gpu_, "failed"},
      [](const stats& s) { return s.failed; });
  add(watches, watches_help, metric_kind::counter, outcome, {gpu_, "timed_out"},
      [](const stats& s) { return s.timed_out; });
  add(watches, watches_help, metric_kind::counter, outcome, {gpu_, "cancelled"},
      [](const stats& s) { return s.cancelled; });
  add("cudactor_poller_watches_in_flight", "Watches accepted and not yet answered.",
      metric_kind::gauge, {"gpu"}, {gpu_}, [](const stats& s) { return s.in_flight; });
  add("cudactor_poller_active_streams", "Streams with a pending watch.", metric_kind::gauge,
      {"gpu"}, {gpu_}, [](const stats& s) { return s.active_streams; });
  add("cudactor_poller_ticks_total", "Passes of the poller's loop.", metric_kind::counter, {"gpu"},
      {gpu_}, [](const stats& s) { return s.ticks; });
  add("cudactor_poller_queries_total", "Timeline or event queries the poller made.",
      metric_kind::counter, {"gpu"}, {gpu_}, [](const stats& s) { return s.queries; });
  add("cudactor_poller_wakeups_total", "Sleeps cut short by a new watch or a backend callback.",
      metric_kind::counter, {"gpu"}, {gpu_}, [](const stats& s) { return s.wakeups; });
  add("cudactor_poller_spins_total",
      "Completions after which the poller looked again at once (spun) rather than slept.",
      metric_kind::counter, {"gpu"}, {gpu_}, [](const stats& s) { return s.spins; });
  add("cudactor_poller_spins_skipped_total",
      "Completions after which the poller slept rather than spun, because completions had "
      "lately come further apart than its spin window.",
      metric_kind::counter, {"gpu"}, {gpu_}, [](const stats& s) { return s.spins_skipped; });
  add("cudactor_poller_stuck_watches", "Streams whose oldest watch is older than stuck-after.",
      metric_kind::gauge, {"gpu"}, {gpu_}, [](const stats& s) { return s.stuck_now; });
  add("cudactor_poller_stuck_reports_total", "Watchdog reports of a stuck stream.",
      metric_kind::counter, {"gpu"}, {gpu_}, [](const stats& s) { return s.stuck_total; });
  add("cudactor_poller_callback_errors_total", "Callbacks that threw (caught and counted).",
      metric_kind::counter, {"gpu"}, {gpu_}, [](const stats& s) { return s.callback_errors; });
  add("cudactor_poller_host_notifications_total",
      "Host callbacks added to streams to wake the poller (CUDA callback mode; at most one "
      "outstanding per stream).",
      metric_kind::counter, {"gpu"}, {gpu_}, [](const stats& s) { return s.host_notifications; });
  add("cudactor_poller_cpu_seconds_total", "CPU time of the poller's thread.", metric_kind::counter,
      {"gpu"}, {gpu_},
      [](const stats& s) { return std::chrono::duration<double>(s.cpu_time).count(); });
  add("cudactor_poller_busy_seconds_total", "Wall time of the ticks that answered something.",
      metric_kind::counter, {"gpu"}, {gpu_},
      [](const stats& s) { return std::chrono::duration<double>(s.busy_time).count(); });
}

}  // namespace cudactor::detail
