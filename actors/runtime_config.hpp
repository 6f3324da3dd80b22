// actors/runtime_config.hpp
//
// The runtime's configuration, read through CAF's own config system: the options below are
// set on the command line (--cudactor.streams=8) or in caf-application.ini ([cudactor]
// streams=8), after cfg.parse(argc, argv), like CAF's own scheduler.* and middleman.*
// options. The constructor registers cudactor's message types and sets the scheduler
// defaults the stream benchmark chose (docs/benchmarks.md); both can still be overridden.
//
// Named operations are registered here before the runtime starts.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/timespan.hpp>

#include <cstddef>
#include <istream>
#include <string>
#include <vector>

#include "cudactor/actors/coordinator.hpp"
#include "cudactor/actors/event_pool_actor.hpp"
#include "cudactor/actors/node_actor.hpp"
#include "cudactor/actors/operation_registry.hpp"
#include "cudactor/actors/stream_actor.hpp"
#include "cudactor/gpu/completion_poller.hpp"
#include "cudactor/gpu/open_backend.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor {

// The runtime's view of its options, with defaults applied and values checked.
struct runtime_options {
  std::string backend = "auto";  // auto, host or cuda
  std::size_t streams = 4;       // stream actors; the coordinator schedules onto all of them
  std::size_t high_priority_streams = 0;  // the first n streams
  std::size_t low_priority_streams = 0;   // the last n streams
  stream_actor_options stream;            // id, name and priority are set per stream
  event_pool_options pool;
  coordinator_options coordinator;
  gpu::backend_options device;
  gpu::poller_options poller;
  metrics::exposer_options metrics;        // collection is always on; this is about serving
  std::string trace_path;                  // the coordinator's Chrome trace; empty: none
  node_options node;                       // the node actor (runtime::node())
  std::string node_address = "127.0.0.1";  // where publish_node() listens
  std::uint16_t node_port = 0;             // 0: any free port
  // The largest message publish_node() takes from a peer (a header announcing more closes the
  // connection before CAF allocates it): above the largest the node's other limits admit.
  std::uint32_t node_max_message_bytes = std::uint32_t{64} << 20;
  bool network = false;                    // runtime_config::enable_network() was called
  bool tls = false;                        // cudactor.tls.enabled: publish through OpenSSL
  // cudactor.node.insecure: publish without TLS on an address other than loopback (CAF 0.17
  // lets any peer that reaches the port stall the network layer: docs/distribution.md)
  bool node_insecure = false;
};

class runtime_config : public caf::actor_system_config {
 public:
  runtime_config();

  // CAF's own parsing (command line over caf-application.ini), then one fix: CAF 0.17.6 reads
  // a file section such as [cudactor.coordinator] into `content` but never into the options
  // bound to it, so every cudactor.*.* option is copied from `content`, which holds the
  // command line's value over the file's.
  caf::error parse(std::vector<std::string> args, std::istream& ini);
  caf::error parse(std::vector<std::string> args, const char* ini_file = nullptr);
  caf::error parse(int argc, char** argv, std::istream& ini);
  caf::error parse(int argc, char** argv, const char* ini_file = nullptr);

  // Loads CAF's network layer (caf::io::middleman), which publishing a node and connecting to
  // one need, with CAF's heartbeat on (default_heartbeat, default_connection_timeout; the
  // middleman.* options change them), so that a peer that hangs is detected, not only one
  // whose connection closes. With cudactor.tls.enabled, parse() also loads CAF's OpenSSL
  // module; every connection is then TLS with certificates checked against the CA.
  // one need. Call it before parse(); calling it again does nothing.
  void enable_network();
  [[nodiscard]] bool network_enabled() const noexcept { return network_; }
  [[nodiscard]] bool tls_enabled() const noexcept { return tls_enabled_; }
  static constexpr caf::timespan default_heartbeat{std::chrono::milliseconds{250}};
  static constexpr caf::timespan default_connection_timeout{std::chrono::seconds{2}};

  // The options as the runtime will use them; invalid_argument naming the bad option.
  [[nodiscard]] gpu::result<runtime_options> runtime_settings() const;

  // Named operations this node runs (work::named). Fill before starting the runtime.
  [[nodiscard]] operation_registry& operations() noexcept { return operations_; }
  [[nodiscard]] const operation_registry& operations() const noexcept { return operations_; }

  // The scheduler defaults set by the constructor (see docs/benchmarks.md, stream_bench).
  static constexpr std::size_t default_scheduler_threads = 1;
  static constexpr caf::atom_value default_scheduler_policy = caf::atom("sharing");

 private:
  std::string backend_ = "auto";
  std::size_t streams_ = runtime_options{}.streams;
  std::size_t high_streams_ = 0;
  std::size_t low_streams_ = 0;
  std::size_t max_in_flight_ = 1024;
  bool timing_ = false;
  std::size_t event_batch_ = 32;
  std::size_t max_batch_ = 65536;
  std::size_t reuse_limit_ = std::size_t{256} << 20;
  std::size_t pool_max_ = 8192;
  std::size_t pool_regular_ = 0;
  std::size_t pool_timing_ = 0;
  std::size_t pool_grow_ = 64;
  std::size_t pool_keep_ = 64;
  caf::timespan pool_idle_{std::chrono::seconds{5}};
  std::size_t co_streams_ = 0;  // removed options: refused when set
  std::size_t co_high_ = 0;
  std::size_t co_low_ = 0;
  std::string co_strategy_ = "load_balanced";
  std::size_t co_max_in_flight_ = 0;
  std::size_t co_ended_kept_ = coordinator_options{}.ended_kept;
  caf::timespan co_stall_after_{coordinator_options{}.stall_after};
  bool co_timing_ = false;
  bool co_dependents_in_pass_ = false;
  std::string co_trace_;
  std::size_t co_report_names_ = coordinator_options{}.report_names;
  std::size_t co_max_buffers_ = coordinator_options{}.max_buffers;
  std::size_t co_max_steps_ = coordinator_options{}.max_steps;
  std::string co_step_graphs_ = "auto";
  std::size_t co_max_buffer_segments_ = coordinator_options{}.max_buffer_segments;
  std::size_t co_max_inferred_edges_ = coordinator_options{}.max_inferred_edges;
  std::size_t co_max_covered_segments_ = coordinator_options{}.max_covered_segments;
  caf::timespan co_keep_memory_for_{coordinator_options{}.keep_memory_for};
  std::size_t host_workers_ = 0;
  std::size_t host_memory_ = std::size_t{4} << 30;
  caf::timespan host_idle_spin_{gpu::host_backend_options{}.idle_spin};
  std::size_t host_max_in_flight_ = gpu::host_backend_options{}.max_in_flight;
  int cuda_device_ = 0;
  std::size_t cuda_max_in_flight_ = gpu::cuda_default_max_in_flight;
  std::string poller_mode_ = "auto";
  caf::timespan stuck_after_{std::chrono::seconds{10}};
  caf::timespan spin_window_{gpu::poller_options{}.spin_window};
  bool fixed_spin_ = !gpu::poller_options{}.adaptive_spin;
  caf::timespan min_interval_{gpu::poller_options{}.min_interval};
  caf::timespan max_interval_{gpu::poller_options{}.max_interval};
  bool metrics_off_ = false;
  std::string metrics_address_ = metrics::exposer_options{}.address;
  std::size_t metrics_port_ = metrics::exposer_options{}.port;
  std::string metrics_bind_failure_ = "refuse";
  std::string node_name_;
  std::string node_address_ = "127.0.0.1";
  std::size_t node_port_ = 0;
  std::size_t node_max_message_bytes_ = std::size_t{64} << 20;
  std::size_t node_max_graph_ops_ = input_limits{}.max_graph_ops;
  std::size_t node_max_graph_edges_ = input_limits{}.max_graph_edges;
  std::size_t node_max_graph_bytes_ = input_limits{}.max_graph_bytes;
  std::size_t node_max_description_ = input_limits{}.max_description;
  std::size_t node_max_pending_ = node_options{}.max_pending;
  std::size_t node_max_pending_ops_ = node_options{}.max_pending_ops;
  caf::timespan node_max_hold_ = node_options{}.max_hold;
  caf::timespan node_max_rendezvous_ = node_options{}.max_rendezvous;
  std::size_t node_max_steps_ = node_options{}.max_steps;
  std::uint64_t node_max_transfer_bytes_ = node_options{}.max_transfer_bytes;
  std::string node_owner_token_;
  bool node_insecure_ = false;
  bool network_ = false;
  bool tls_enabled_ = false;
  bool tls_loaded_ = false;
  std::string tls_certificate_;
  std::string tls_key_;
  std::string tls_ca_file_;
  std::string tls_passphrase_;
  operation_registry operations_;

  [[nodiscard]] caf::error apply_tls();

  [[nodiscard]] caf::error sync_nested_options();
};

}  // namespace cudactor
