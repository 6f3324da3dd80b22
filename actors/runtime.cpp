#include "cudactor/actors/runtime.hpp"

#include "cudactor/actors/detail/actor_metrics.hpp"
#include "cudactor/actors/detail/device_clock.hpp"
#include "cudactor/actors/detail/stream_directory.hpp"
#include "cudactor/actors/node/node_listener.hpp"

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <caf/logger.hpp>

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <utility>

namespace cudactor {

namespace {

// The front door's lanes: enough that one slow completion function (run on a lane) does not
// hold up every other caller, few enough to cost nothing idle.
constexpr std::size_t front_lanes = 4;

gpu::stream_priority priority_of(const runtime_options& options, std::size_t index) {
  if (index < options.high_priority_streams) return gpu::stream_priority::high;
  if (index >= options.streams - options.low_priority_streams) return gpu::stream_priority::low;
  return gpu::stream_priority::normal;
}

// What publish_node's listener does with a connection it closed: counts it, and logs the first
// ten, then one in a thousand, so that a peer sending garbage cannot flood the log. Runs on
// the network layer's thread, which stops before the registry goes (shutdown()).
std::function<void(const std::string&)> refusal_log(metrics::registry& registry,
                                                    const std::string& node) {
  auto* counter =
      &registry
           .counters("cudactor_node_refused_connections_total",
                     "Connections a node closed before CAF read them: a first message that is "
                     "no handshake, or a header announcing more than the node takes",
                     {"node"})
           .add({node});
  auto count = std::make_shared<std::atomic<std::uint64_t>>(0);
  return [counter, count, node](const std::string& why) {
    counter->add();
    const std::uint64_t n = ++*count;
    if (n <= 10 || n % 1000 == 0) {
      std::fprintf(stderr, "cudactor node '%s': closed a connection: %s (%llu so far)\n",
                   node.c_str(), why.c_str(), static_cast<unsigned long long>(n));
    }
  };
}

}  // namespace

gpu::stream_ref runtime::backend_stream(stream_id id) const {
  return directory_ ? directory_->view(id) : gpu::stream_ref{};
}

gpu::result<std::unique_ptr<runtime>> runtime::start(runtime_config& config) {
  auto settings = config.runtime_settings();
  if (!settings) return settings.error();
  std::unique_ptr<runtime> rt{new runtime(std::move(settings.value()))};
  const runtime_options& options = rt->options_;

  try {
    rt->metrics_ = std::make_shared<metrics::registry>(options.metrics);
  } catch (const metrics::bind_error& e) {
    return gpu::status{gpu::status_code::invalid_argument,
                       std::string{e.what()} +
                           " (set cudactor.metrics.port, 0 for any free port, or "
                           "cudactor.metrics.on-bind-failure=run-without)"};
  }
  if (!rt->metrics_->exposer_error().empty()) {
    std::fprintf(stderr, "cudactor: running without a metrics endpoint: %s\n",
                 rt->metrics_->exposer_error().c_str());
  }
  auto chosen = gpu::open_backend(options.backend, options.device);
  if (!chosen) return chosen.error();
  rt->device_ = std::move(chosen->chosen);
  rt->backend_reason_ = std::move(chosen->reason);
  rt->poller_metrics_ =
      std::make_unique<detail::poller_metrics>(*rt->metrics_, detail::gpu_label(*rt->device_));
  gpu::poller_options poller_options = options.poller;
  if (!poller_options.on_detected)
    poller_options.on_detected = rt->poller_metrics_->detection_observer();
  rt->poller_ = std::make_unique<gpu::completion_poller>(*rt->device_, std::move(poller_options));
  rt->poller_metrics_->attach(*rt->poller_);
  rt->events_ = std::make_shared<event_table>(*rt->device_);
  rt->system_ = std::make_unique<caf::actor_system>(config);
  auto pool = spawn_event_pool(*rt->system_, rt->events_, options.pool, rt->metrics_);
  if (!pool) return pool.error();
  rt->pool_ = std::move(*pool);

  stream_context context;
  context.device = rt->device_.get();
  context.poller = rt->poller_.get();
  context.pool = rt->pool_;
  context.events = rt->events_;
  rt->operations_ = std::make_shared<const operation_registry>(config.operations());
  context.operations = rt->operations_;
  context.metrics = rt->metrics_;
  // One clock for every actor that times (streams, coordinator, trace), based before any of
  // them runs, so that no actor's thread waits for it. With timing asked for, a clock that
  // cannot be read is an error, not a silently untimed run. From here on a failure returns
  // without calling shutdown(): the contexts, which hold the clock (an event of the
  // device), go first, then rt, whose destructor shuts down and closes the device last.
  if (options.stream.timing || options.coordinator.timing || !options.trace_path.empty()) {
    context.clock = detail::start_shared_clock(*rt->device_, std::chrono::seconds{2});
    if (!context.clock) {
      return gpu::status{gpu::status_code::not_supported,
                         "timing was asked for (cudactor.timing, cudactor.coordinator.timing or "
                         "a trace), but the device's clock could not be read: its timing events "
                         "did not complete within 2 s"};
    }
  }
  rt->directory_ = std::make_shared<detail::stream_directory>(options.streams);
  context.directory = rt->directory_;
  for (std::size_t i = 0; i < options.streams; ++i) {
    stream_actor_options stream_options = options.stream;
    stream_options.id = stream_id{static_cast<std::uint32_t>(i)};
    stream_options.priority = priority_of(options, i);
    auto spawned = spawn_stream_actor(*rt->system_, context, std::move(stream_options));
    if (!spawned) {
      return spawned.error();
    }
    rt->streams_.push_back(spawned->actor);
    rt->stream_ledgers_.push_back(spawned->ledger);
    rt->stream_members_.push_back({spawned->name, stream_id{static_cast<std::uint32_t>(i)}});
  }
  // The coordinator schedules onto these same stream actors: one set of streams.
  coordinator_context coordination;
  coordination.device = context.device;
  coordination.directory = rt->directory_;
  for (std::size_t i = 0; i < rt->streams_.size(); ++i) {
    coordinated_stream s;
    s.actor = rt->streams_[i];
    s.id = stream_id{static_cast<std::uint32_t>(i)};
    s.name = rt->stream_members_[i].name;
    s.priority = priority_of(options, i);
    s.ledger = rt->stream_ledgers_[i];
    coordination.streams.push_back(std::move(s));
  }
  coordination.operations = context.operations;
  rt->communicators_ = std::make_shared<communicator_table>(rt->metrics_);
  coordination.communicators = rt->communicators_;
  coordination.metrics = rt->metrics_;
  if (!options.trace_path.empty()) {
    auto opened = trace_writer::open(options.trace_path);
    if (!opened) {
      return opened.error();
    }
    rt->trace_ = std::move(opened.value());
    coordination.trace = rt->trace_;
  }
  auto coordinator = spawn_coordinator(*rt->system_, coordination, options.coordinator);
  if (!coordinator) {
    return coordinator.error();
  }
  rt->coordinator_ = std::move(coordinator.value());
  node_context node;
  node.coordinator = rt->coordinator_;
  node.operations = rt->operations_;
  node.communicators = rt->communicators_;
  node.device_kind = rt->device_->kind();
  node.device_ordinal = rt->device_->device().ordinal;
  node.backend = rt->backend_reason_;
  node.coordinator_streams = static_cast<std::uint32_t>(options.streams);
  node.metrics = rt->metrics_;
  auto node_actors = spawn_node(*rt->system_, std::move(node), options.node);
  rt->node_ = std::move(node_actors.face);
  rt->node_core_ = std::move(node_actors.core);
  rt->door_ = std::make_shared<front_door>(*rt->system_, rt->streams_, rt->pool_,
                                           rt->coordinator_, front_lanes);
  release_calling_thread();
  return rt;
}

runtime::runtime(runtime_options options) : options_(std::move(options)) {}

runtime::~runtime() { shutdown(); }

gpu::result<barrier_actor> runtime::spawn_barrier(const std::vector<std::size_t>& members,
                                                  barrier_options options) {
  std::vector<barrier_member> chosen;
  for (std::size_t index : members) {
    if (index >= stream_members_.size()) {
      return gpu::status{gpu::status_code::invalid_argument,
                         "barrier '" + options.name + "': the runtime has no stream " +
                             std::to_string(index) + " (it has " +
                             std::to_string(stream_members_.size()) + ")"};
    }
    chosen.push_back(stream_members_[index]);
  }
  std::lock_guard<std::mutex> lock{barriers_mutex_};
  if (barriers_closed_ || !system_) {
    return gpu::status{gpu::status_code::invalid_argument, "barrier: the runtime has shut down"};
  }
  barrier_context context;
  context.coordinator = coordinator_;
  context.gpu = detail::gpu_label(*device_);
  context.metrics = metrics_;
  auto spawned = cudactor::spawn_barrier(*system_, context, std::move(chosen), std::move(options));
  if (!spawned) return spawned.error();
  // Forget barriers that are gone now and then, so the list does not grow with churn.
  if (barriers_.size() >= 64 && barriers_.size() % 64 == 0) {
    barriers_.erase(std::remove_if(barriers_.begin(), barriers_.end(),
                                   [](const caf::actor_addr& weak) {
                                     return !caf::actor_cast<caf::actor>(weak);
                                   }),
                    barriers_.end());
  }
  barriers_.push_back(caf::actor_cast<caf::actor_addr>(*spawned));
  release_calling_thread();
  return spawned;
}

gpu::result<std::uint16_t> runtime::publish_node() {
  if (!options_.network) {
    return gpu::status{gpu::status_code::not_supported,
                       "publishing a node needs CAF's network layer: call "
                       "runtime_config::enable_network() before parse()"};
  }
  if (!options_.tls && !options_.node_insecure && !is_loopback(options_.node_address)) {
    return gpu::status{gpu::status_code::invalid_argument,
                       "node '" + options_.node.name + "' will not listen on " +
                           options_.node_address +
                           " without TLS: any peer that reaches the port could stall it "
                           "(docs/distribution.md, Security). Enable cudactor.tls, or pass "
                           "cudactor.node.insecure=true on a network you trust"};
  }
  detail::listener_options listen;
  listen.address = options_.node_address;
  listen.port = options_.node_port;
  listen.tls = options_.tls;
  listen.bounds.max_message = options_.node_max_message_bytes;
  listen.on_refused = refusal_log(*metrics_, options_.node.name);
  auto port = detail::publish_checked(*system_, caf::actor_cast<caf::strong_actor_ptr>(node_),
                                      system_->message_types(node_), listen);
  release_calling_thread();
  if (!port) {
    return gpu::status{gpu::status_code::invalid_argument,
                       "node '" + options_.node.name + "' cannot listen on " +
                           options_.node_address + ":" + std::to_string(options_.node_port) + ": " +
                           system_->render(port.error())};
  }
  return *port;
}

bool runtime::is_loopback(const std::string& address) {
  boost::system::error_code ec;
  const auto parsed = boost::asio::ip::make_address(address, ec);
  if (!ec) return parsed.is_loopback();
  return address == "localhost";
}

void runtime::release_calling_thread() noexcept {
  // Spawning stores a strong reference to the system's logger in a thread_local, and
  // ~actor_system blocks until the logger is destroyed. With CAF's logging compiled out
  // (Debian's build), a null current system is never dereferenced.
  caf::logger::set_current_actor_system(nullptr);
}

void runtime::shutdown() {
  if (stopped_) return;
  stopped_ = true;
  if (system_) {
    {
      // Each actor answers what it holds, then exits; wait until they all have, so that no
      // actor still uses the poller or the backend below.
      caf::scoped_actor self{*system_};
      std::size_t alive = 0;
      auto stop = [&](const auto& handle) {
        if (!handle) return;
        self->monitor(handle);
        self->send(handle, shutdown_atom::value);
        self->send_exit(handle, caf::exit_reason::user_shutdown);
        ++alive;
      };
      {
        std::lock_guard<std::mutex> lock{barriers_mutex_};
        barriers_closed_ = true;
        for (const auto& weak : barriers_) stop(caf::actor_cast<barrier_actor>(weak));
        barriers_.clear();
      }
      // A collective in progress holds its stream until its peers answer: aborted, it fails
      // the peers at once, and ends here at the engine's timeout at the latest.
      if (communicators_) communicators_->clear("the runtime is shutting down");
      // The node answers what it holds with shutting_down before the coordinator goes; its
      // face, which takes no lifecycle message from anyone, goes with it.
      if (node_) {
        self->monitor(node_);
        ++alive;
      }
      stop(node_core_);
      stop(coordinator_);
      for (const auto& s : streams_) stop(s);
      stop(pool_);
      bool in_time = true;
      std::size_t gone = 0;
      self->receive_for(gone, alive)([](const caf::down_msg&) {},
                                     caf::after(std::chrono::seconds{30}) >>
                                         [&] {
                                           in_time = false;
                                           gone = alive - 1;  // give up waiting
                                         });
      if (!in_time) {
        std::fprintf(stderr, "cudactor: runtime shutdown: actors did not exit within 30 s\n");
      }
    }
    // Every answer the lanes wait for has been sent by now: the rest (none, or requests that
    // came too late) are told shutting_down as the lanes go.
    if (door_) door_->close();
    streams_.clear();
    pool_ = nullptr;
    coordinator_ = nullptr;
    node_ = nullptr;
    node_core_ = nullptr;
  }
  if (poller_metrics_) poller_metrics_->detach();  // reads the poller at scrape time
  if (poller_) poller_->stop();
  system_.reset();
  if (events_) events_->clear();
  poller_.reset();
  device_.reset();
  poller_metrics_.reset();
  if (trace_) trace_->close();  // the coordinator, its only writer, is gone
  trace_.reset();
  communicators_.reset();  // its counts are in the registry; the workers that ran them are gone
  metrics_.reset();  // the exposer stops here (every actor holding the registry is gone)
}

}  // namespace cudactor
