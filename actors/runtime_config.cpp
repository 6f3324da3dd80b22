#include "cudactor/actors/runtime_config.hpp"

#include <caf/atom.hpp>
#include <caf/config_option_adder.hpp>
#include <caf/config_value.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/pec.hpp>
#include <caf/settings.hpp>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <limits>

#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/message_types.hpp"
#include "cudactor/messaging/node_types.hpp"

namespace cudactor {

namespace {

std::string default_node_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string{host[0] != '\0' ? host : "node"} + "-" + std::to_string(::getpid());
}

}  // namespace

runtime_config::runtime_config() {
  cudactor::add_message_types(*this);
  set("scheduler.max-threads", default_scheduler_threads);
  set("scheduler.policy", default_scheduler_policy);
  opt_group{custom_options_, "cudactor"}
      .add(backend_, "backend", "device backend: auto, host or cuda")
      .add(streams_, "streams", "number of streams (one stream actor each; the coordinator's too)")
      .add(high_streams_, "high-priority-streams", "the first n streams get high priority")
      .add(low_streams_, "low-priority-streams", "the last n streams get low priority")
      .add(max_in_flight_, "max-in-flight",
           "operations in flight per stream before backpressure (at most the backend's "
           "max-in-flight)")
      .add(timing_, "timing", "timing events around each operation (device start/end times)")
      .add(event_batch_, "event-batch", "events a stream actor leases from the pool at once")
      .add(max_batch_, "max-batch", "most works accepted in one submit message")
      .add(reuse_limit_, "reuse-limit", "freed bytes a stream keeps for reuse");
  opt_group{custom_options_, "cudactor.pool"}
      .add(pool_max_, "max-events", "most events the event pool holds (both kinds)")
      .add(pool_regular_, "regular", "regular events the pool makes up front")
      .add(pool_timing_, "timing",
           "timing events the pool makes up front (lent for regular requests when those run out)")
      .add(pool_grow_, "grow-batch", "events the pool creates at once")
      .add(pool_keep_, "keep-free", "free events per kind kept through idle periods")
      .add(pool_idle_, "idle-period", "shrink after this long without an acquire (0: never)");
  opt_group{custom_options_, "cudactor.coordinator"}
      .add(co_streams_, "streams", "removed: the coordinator uses cudactor.streams")
      .add(co_high_, "high-priority-streams", "removed: see cudactor.high-priority-streams")
      .add(co_low_, "low-priority-streams", "removed: see cudactor.low-priority-streams")
      .add(co_strategy_, "strategy",
           "stream choice: round_robin, load_balanced, priority, workload or adaptive")
      .add(co_max_in_flight_, "max-in-flight", "removed: see cudactor.max-in-flight")
      .add(co_ended_kept_, "ended-kept", "ended operations describe still answers for")
      .add(co_stall_after_, "stall-after", "detect_deadlocks reports operations open this long")
      .add(co_dependents_in_pass_, "dependents-in-pass",
           "send a dependent with its dependencies on other streams, not after their tickets")
      .add(co_timing_, "timing",
           "stamp when each operation started and finished on its stream (report run times)")
      .add(co_trace_, "trace",
           "write every operation as Chrome trace-event JSON to this file (turns timing on)")
      .add(co_report_names_, "report-names", "operation names the report keeps apart")
      .add(co_max_buffers_, "max-buffers",
           "buffers allocated, adopted or being made, and not yet reclaimed, at most")
      .add(co_max_steps_, "max-steps", "recorded steps not yet released, at most")
      .add(co_step_graphs_, "step-graphs",
           "replay steps as backend graphs: auto (on CUDA), always (the host too) or never")
      .add(co_max_buffer_segments_, "max-buffer-segments",
           "segments one buffer's use history holds at most (each use adds up to two)")
      .add(co_max_inferred_edges_, "max-inferred-edges",
           "dependencies one graph's buffer uses infer at most")
      .add(co_max_covered_segments_, "max-covered-segments",
           "history segments one graph's buffer inference goes through at most")
      .add(co_keep_memory_for_, "keep-memory-for",
           "idle this long, the coordinator frees the memory it kept for the next graph (0: "
           "keeps it)");
  opt_group{custom_options_, "cudactor.host"}
      .add(host_workers_, "workers", "host backend worker threads (0: by hardware)")
      .add(host_memory_, "memory-limit", "bytes of device memory the host backend hands out")
      .add(host_idle_spin_, "idle-spin",
           "an idle host worker looks for work this long, then sleeps")
      .add(host_max_in_flight_, "max-in-flight",
           "signalled values in flight per host stream (bounded as on CUDA)");
  opt_group{custom_options_, "cudactor.cuda"}
      .add(cuda_device_, "device", "CUDA device ordinal")
      .add(cuda_max_in_flight_, "max-in-flight",
           "signalled values in flight per CUDA stream (below the ~1000 a stream queues)");
  opt_group{custom_options_, "cudactor.poller"}
      .add(poller_mode_, "mode", "completion detection: auto, polling or callback")
      .add(stuck_after_, "stuck-after", "report a watch waiting longer than this (0: never)")
      .add(spin_window_, "spin-window", "poll without pause this long after a completion")
      .add(fixed_spin_, "fixed-spin",
           "spin after every completion, also while completions come further apart")
      .add(min_interval_, "min-interval", "first pause when polling finds nothing")
      .add(max_interval_, "max-interval", "longest pause when polling finds nothing");
  opt_group{custom_options_, "cudactor.node"}
      .add(node_name_, "name", "this node's name in every error it gives (default: host-pid)")
      .add(node_address_, "address", "address publish_node listens on (IPv4; default loopback)")
      .add(node_port_, "port", "port publish_node listens on (0: any free port)")
      .add(node_insecure_, "insecure",
           "allow publishing on an address other than loopback without TLS")
      .add(node_max_graph_ops_, "max-graph-ops", "most operations in one graph a peer sends")
      .add(node_max_graph_edges_, "max-graph-edges", "most dependencies in one graph")
      .add(node_max_graph_bytes_, "max-graph-bytes",
           "most bytes of names, descriptions and arguments in one graph")
      .add(node_max_description_, "max-description", "most bytes of one description")
      .add(node_max_message_bytes_, "max-message-bytes",
           "most bytes of one message from a peer (1 MiB to 4 GiB - 1)")
      .add(node_max_pending_, "max-pending", "requests a node holds open at once")
      .add(node_max_pending_ops_, "max-pending-ops", "operations of the open requests")
      .add(node_max_transfer_bytes_, "max-transfer-bytes",
           "bytes of the open stores and fetches together (at least 4 MiB)")
      .add(node_max_hold_, "max-hold", "longest a barrier may hold a node's new work")
      .add(node_max_rendezvous_, "max-rendezvous",
           "longest a communicator's rendezvous may wait for its ranks")
      .add(node_max_steps_, "max-steps", "steps the owner may have recorded on the node at once")
      .add(node_owner_token_, "owner-token",
           "only the control plane presenting this token (16 to 256 bytes) holds the node");
  opt_group{custom_options_, "cudactor.tls"}
      .add(tls_enabled_, "enabled",
           "every node connection is TLS (CAF's OpenSSL module), peers checked against the CA")
      .add(tls_certificate_, "certificate", "this process's certificate (PEM)")
      .add(tls_key_, "key", "its private key (PEM)")
      .add(tls_ca_file_, "ca-file", "the CA that signs every certificate of the job (PEM)")
      .add(tls_passphrase_, "passphrase", "the key's passphrase, if it has one");
  opt_group{custom_options_, "cudactor.metrics"}
      .add(metrics_off_, "no-exposer", "collect metrics but serve no /metrics endpoint")
      .add(metrics_address_, "address", "address the /metrics endpoint binds (IPv4)")
      .add(metrics_port_, "port", "port of the /metrics endpoint (0: any free port)")
      .add(metrics_bind_failure_, "on-bind-failure",
           "when the port cannot be bound: refuse (do not start) or run-without (no endpoint)");
}

void runtime_config::enable_network() {
  if (network_) return;
  network_ = true;
  load<caf::io::middleman>();
  set("middleman.heartbeat-interval", default_heartbeat);
  set("middleman.connection-timeout", default_connection_timeout);
  // Every BASP message is decoded on the I/O thread, none by CAF's worker pool. With workers,
  // CAF 0.17 cleans up a closed connection through the workers' ordered queue, late and by
  // socket number: by then the kernel may have given the number to a new connection, whose
  // route and proxies the cleanup wipes, so its first request is never answered (issue 50: 0
  // to 3 of 32 control planes connecting at once). Inline, the cleanup runs before a new
  // connection on that number can have sent anything. The cost: a large message is decoded on
  // the I/O thread, while the others wait (docs/distribution.md).
  set("middleman.workers", std::size_t{0});
}

caf::error runtime_config::apply_tls() {
  if (!tls_enabled_) return caf::none;
  auto bad = [](std::string what) {
    return make_error(errc::invalid_argument, "cudactor.tls: " + what);
  };
  if (!network_) return bad("TLS needs the network layer: call enable_network() before parse()");
  // All three, or CAF would fall back to its anonymous cipher mode, which checks nobody.
  const std::pair<const char*, const std::string*> files[] = {
      {"certificate", &tls_certificate_}, {"key", &tls_key_}, {"ca-file", &tls_ca_file_}};
  for (const auto& [option, path] : files) {
    if (path->empty()) return bad(std::string{option} + " is required when TLS is enabled");
    if (!std::ifstream{*path}) return bad(std::string{option} + " '" + *path + "' cannot be read");
  }
  openssl_certificate = tls_certificate_;
  openssl_key = tls_key_;
  openssl_cafile = tls_ca_file_;
  openssl_passphrase = tls_passphrase_;
  if (!tls_loaded_) {
    tls_loaded_ = true;
    load<caf::openssl::manager>();
  }
  return caf::none;
}

caf::error runtime_config::parse(std::vector<std::string> args, std::istream& ini) {
  if (auto err = actor_system_config::parse(std::move(args), ini)) return err;
  return sync_nested_options();
}

caf::error runtime_config::parse(std::vector<std::string> args, const char* ini_file) {
  if (auto err = actor_system_config::parse(std::move(args), ini_file)) return err;
  return sync_nested_options();
}

caf::error runtime_config::parse(int argc, char** argv, std::istream& ini) {
  if (auto err = actor_system_config::parse(argc, argv, ini)) return err;
  return sync_nested_options();
}

caf::error runtime_config::parse(int argc, char** argv, const char* ini_file) {
  if (auto err = actor_system_config::parse(argc, argv, ini_file)) return err;
  return sync_nested_options();
}

caf::error runtime_config::sync_nested_options() {
  for (const auto& option : custom_options_) {
    const caf::string_view category_view = option.category();
    const std::string category{category_view.begin(), category_view.end()};
    if (category.rfind("cudactor.", 0) != 0) continue;  // one level works in CAF already
    const caf::string_view name_view = option.full_name();
    const std::string name{name_view.begin(), name_view.end()};
    const caf::config_value* value = caf::get_if(&content, name);
    if (value == nullptr) continue;
    if (auto err = option.check(*value)) {
      return caf::make_error(caf::pec::type_mismatch, name + ": " + caf::to_string(*value));
    }
    option.store(*value);
  }
  return apply_tls();
}

gpu::result<runtime_options> runtime_config::runtime_settings() const {
  auto bad = [](std::string what) { return gpu::status{gpu::status_code::invalid_argument, what}; };
  runtime_options out;
  if (backend_ != "auto" && backend_ != "host" && backend_ != "cuda") {
    return bad("cudactor.backend must be auto, host or cuda, not '" + backend_ + "'");
  }
  out.backend = backend_;
  if (streams_ == 0 || streams_ > 4096) return bad("cudactor.streams must be 1 to 4096");
  if (high_streams_ + low_streams_ > streams_) {
    return bad("cudactor.high-priority-streams + low-priority-streams exceed cudactor.streams");
  }
  out.streams = streams_;
  out.high_priority_streams = high_streams_;
  out.low_priority_streams = low_streams_;
  // The CUDA timeline keeps a bounded number of points in flight per stream.
  if (max_in_flight_ == 0 || max_in_flight_ > 4096) {
    return bad("cudactor.max-in-flight must be 1 to 4096");
  }
  out.stream.max_in_flight = max_in_flight_;
  out.stream.timing = timing_;
  if (event_batch_ == 0 || event_batch_ > 4096)
    return bad("cudactor.event-batch must be 1 to 4096");
  out.stream.event_batch = static_cast<std::uint32_t>(event_batch_);
  if (max_batch_ == 0) return bad("cudactor.max-batch must be at least 1");
  out.stream.max_batch = max_batch_;
  out.coordinator.max_pass = max_batch_;
  out.stream.reuse_limit = reuse_limit_;
  if (pool_max_ == 0 || pool_max_ > std::numeric_limits<std::uint32_t>::max()) {
    return bad("cudactor.pool.max-events must be 1 to 2^32-1");
  }
  if (pool_grow_ == 0 || pool_grow_ > pool_max_) {
    return bad("cudactor.pool.grow-batch must be 1 to cudactor.pool.max-events");
  }
  if (pool_regular_ + pool_timing_ > pool_max_) {
    return bad("cudactor.pool.regular (" + std::to_string(pool_regular_) +
               ") and cudactor.pool.timing (" + std::to_string(pool_timing_) +
               ") together exceed cudactor.pool.max-events (" + std::to_string(pool_max_) + ")");
  }
  out.pool.regular = static_cast<std::uint32_t>(pool_regular_);
  out.pool.timing = static_cast<std::uint32_t>(pool_timing_);
  out.pool.max_events = static_cast<std::uint32_t>(pool_max_);
  out.pool.grow_batch = static_cast<std::uint32_t>(pool_grow_);
  out.pool.keep_free = static_cast<std::uint32_t>(std::min(pool_keep_, pool_max_));
  out.pool.idle_period = std::chrono::duration_cast<std::chrono::milliseconds>(pool_idle_);
  // One set of streams: the coordinator schedules onto the runtime's stream actors, so its
  // own stream options are gone; a setting of one is refused rather than silently ignored.
  if (co_streams_ != 0 || co_high_ != 0 || co_low_ != 0 || co_max_in_flight_ != 0) {
    return bad(
        "cudactor.coordinator.streams, .high-priority-streams, .low-priority-streams and "
        ".max-in-flight were removed: the coordinator schedules onto the runtime's streams "
        "(cudactor.streams, cudactor.high-priority-streams, cudactor.low-priority-streams, "
        "cudactor.max-in-flight)");
  }
  auto strategy = parse_pool_strategy(co_strategy_);
  if (!strategy) {
    return bad(
        "cudactor.coordinator.strategy must be round_robin, load_balanced, priority, "
        "workload or adaptive, not '" +
        co_strategy_ + "'");
  }
  out.coordinator.strategy = *strategy;
  out.coordinator.ended_kept = co_ended_kept_;
  out.coordinator.stall_after = co_stall_after_;
  out.coordinator.timing = co_timing_;
  out.coordinator.dependents_in_pass = co_dependents_in_pass_;
  if (co_report_names_ == 0) return bad("cudactor.coordinator.report-names must be at least 1");
  out.coordinator.report_names = co_report_names_;
  if (co_max_buffers_ == 0) return bad("cudactor.coordinator.max-buffers must be at least 1");
  out.coordinator.max_buffers = co_max_buffers_;
  if (co_max_steps_ == 0) return bad("cudactor.coordinator.max-steps must be at least 1");
  out.coordinator.max_steps = co_max_steps_;
  if (co_step_graphs_ == "auto") {
    out.coordinator.step_graphs = step_graph_mode::automatic;
  } else if (co_step_graphs_ == "always") {
    out.coordinator.step_graphs = step_graph_mode::always;
  } else if (co_step_graphs_ == "never") {
    out.coordinator.step_graphs = step_graph_mode::never;
  } else {
    return bad("cudactor.coordinator.step-graphs must be auto, always or never, not '" +
               co_step_graphs_.substr(0, 64) + "'");
  }
  // An empty history (one segment) must take an operation with the most uses (two each).
  const std::size_t fewest_segments = 1 + 2 * out.coordinator.limits.max_uses;
  if (co_max_buffer_segments_ < fewest_segments) {
    return bad("cudactor.coordinator.max-buffer-segments must be at least " +
               std::to_string(fewest_segments) + " (an operation's most uses, two segments each)");
  }
  out.coordinator.max_buffer_segments = co_max_buffer_segments_;
  if (co_max_inferred_edges_ == 0) {
    return bad("cudactor.coordinator.max-inferred-edges must be at least 1");
  }
  out.coordinator.max_inferred_edges = co_max_inferred_edges_;
  if (co_max_covered_segments_ == 0) {
    return bad("cudactor.coordinator.max-covered-segments must be at least 1");
  }
  out.coordinator.max_covered_segments = co_max_covered_segments_;
  if (co_keep_memory_for_.count() < 0) {
    return bad("cudactor.coordinator.keep-memory-for must not be negative");
  }
  out.coordinator.keep_memory_for = co_keep_memory_for_;
  out.trace_path = co_trace_;
  out.node.name = node_name_.empty() ? default_node_name() : node_name_;
  if (out.node.name.size() > 256) return bad("cudactor.node.name has at most 256 characters");
  out.node_address = node_address_;
  out.node_insecure = node_insecure_;
  if (node_max_graph_ops_ == 0 || node_max_graph_edges_ == 0 || node_max_graph_bytes_ == 0 ||
      node_max_description_ == 0 || node_max_pending_ == 0 || node_max_pending_ops_ == 0) {
    return bad("cudactor.node.max-* must each be at least 1");
  }
  if (node_max_graph_ops_ > std::numeric_limits<std::uint32_t>::max()) {
    return bad("cudactor.node.max-graph-ops must be below 2^32 (graph indices are 32-bit)");
  }
  out.node.limits.max_graph_ops = node_max_graph_ops_;
  out.node.limits.max_graph_edges = node_max_graph_edges_;
  out.node.limits.max_graph_bytes = node_max_graph_bytes_;
  out.node.limits.max_description = node_max_description_;
  out.node.max_pending = node_max_pending_;
  out.node.max_pending_ops = node_max_pending_ops_;
  if (node_max_transfer_bytes_ < max_buffer_transfer) {
    return bad("cudactor.node.max-transfer-bytes must be at least " +
               std::to_string(max_buffer_transfer) + " (one store or fetch)");
  }
  out.node.max_transfer_bytes = node_max_transfer_bytes_;
  if (node_max_hold_.count() < 0) return bad("cudactor.node.max-hold must not be negative");
  out.node.max_hold = node_max_hold_;
  if (node_max_rendezvous_.count() <= 0) {
    return bad("cudactor.node.max-rendezvous must be more than 0");
  }
  out.node.max_rendezvous = node_max_rendezvous_;
  if (node_max_steps_ == 0) return bad("cudactor.node.max-steps must be at least 1");
  out.node.max_steps = node_max_steps_;
  if (!node_owner_token_.empty() &&
      (node_owner_token_.size() < min_owner_token || node_owner_token_.size() > max_owner_token)) {
    return bad("cudactor.node.owner-token must be " + std::to_string(min_owner_token) + " to " +
               std::to_string(max_owner_token) + " bytes (a short one can be guessed)");
  }
  out.node.owner_token = node_owner_token_;
  if (node_max_message_bytes_ < (std::size_t{1} << 20) ||
      node_max_message_bytes_ > std::numeric_limits<std::uint32_t>::max()) {
    return bad(
        "cudactor.node.max-message-bytes must be 1 MiB to 4 GiB - 1 (CAF announces a "
        "message's size in 32 bits)");
  }
  if (node_max_message_bytes_ / 2 < node_max_graph_bytes_) {
    // A graph at max-graph-bytes of text and arguments takes more on the wire (its structure,
    // ids, edges): with less room the node would close a control plane's legal connection.
    return bad("cudactor.node.max-message-bytes must be at least twice max-graph-bytes (" +
               std::to_string(node_max_graph_bytes_) + ")");
  }
  out.node_max_message_bytes = static_cast<std::uint32_t>(node_max_message_bytes_);
  if (node_port_ > 65535) return bad("cudactor.node.port must be 0 to 65535");
  out.node_port = static_cast<std::uint16_t>(node_port_);
  out.network = network_;
  out.tls = tls_enabled_;
  out.device.host.workers = static_cast<unsigned>(host_workers_);
  out.device.host.memory_limit = host_memory_;
  if (host_idle_spin_.count() < 0) return bad("cudactor.host.idle-spin must not be negative");
  out.device.host.idle_spin =
      std::chrono::duration_cast<std::chrono::microseconds>(host_idle_spin_);
  if (host_max_in_flight_ == 0) return bad("cudactor.host.max-in-flight must be at least 1");
  out.device.host.max_in_flight = host_max_in_flight_;
  out.device.cuda_device = cuda_device_;
  if (cuda_max_in_flight_ == 0) return bad("cudactor.cuda.max-in-flight must be at least 1");
  out.device.cuda_max_in_flight = cuda_max_in_flight_;
  if (poller_mode_ == "polling") {
    out.poller.mode = gpu::delivery_mode::polling;
  } else if (poller_mode_ == "callback") {
    out.poller.mode = gpu::delivery_mode::callback;
  } else if (poller_mode_ != "auto") {
    return bad("cudactor.poller.mode must be auto, polling or callback, not '" + poller_mode_ +
               "'");
  }
  out.poller.stuck_after = stuck_after_;
  if (spin_window_.count() < 0) return bad("cudactor.poller.spin-window must not be negative");
  if (min_interval_.count() <= 0 || max_interval_ < min_interval_) {
    return bad("cudactor.poller.min-interval must be positive and at most max-interval");
  }
  out.poller.spin_window = spin_window_;
  out.poller.adaptive_spin = !fixed_spin_;
  out.poller.min_interval = min_interval_;
  out.poller.max_interval = max_interval_;
  out.metrics.enabled = !metrics_off_;
  out.metrics.address = metrics_address_;
  if (metrics_port_ > 65535) return bad("cudactor.metrics.port must be 0 to 65535");
  out.metrics.port = static_cast<std::uint16_t>(metrics_port_);
  if (metrics_bind_failure_ == "refuse") {
    out.metrics.failure = metrics::on_bind_failure::refuse;
  } else if (metrics_bind_failure_ == "run-without") {
    out.metrics.failure = metrics::on_bind_failure::run_without;
  } else {
    return bad("cudactor.metrics.on-bind-failure must be refuse or run-without, not '" +
               metrics_bind_failure_ + "'");
  }
  return out;
}

}  // namespace cudactor
