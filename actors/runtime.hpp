// actors/runtime.hpp
//
// One object that brings cudactor up and down: the actor system (with cudactor's message
// types), the backend (auto / host / cuda), the completion poller, the event pool, N stream
// actors and the coordinator, all from a runtime_config; barriers over its streams on request.
// shutdown() (and the destructor) stops them in the one order that cannot hang: the barriers,
// the coordinator and the stream actors answer what they hold and exit, then the pool, then
// the poller; the actor system goes last but one, the backend last.
//
// Actors and scoped_actors of the caller's own must be gone before shutdown: the actor
// system waits for every actor when it is destroyed (CAF 0.17). It also waits for every
// thread that ever spawned an actor or built a scoped_actor to let go of the system's
// logger: CAF keeps a per-thread reference, dropped when that thread ends. A thread that
// did so and is still alive while another thread shuts the runtime down must call
// release_calling_thread() first, or the shutdown never returns.
#pragma once

#include <caf/actor_system.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cudactor/actors/barrier_actor.hpp"
#include "cudactor/actors/coordinator.hpp"
#include "cudactor/actors/event_pool_actor.hpp"
#include "cudactor/actors/event_table.hpp"
#include "cudactor/actors/front_door.hpp"
#include "cudactor/actors/runtime_config.hpp"
#include "cudactor/actors/stream_actor.hpp"
#include "cudactor/gpu/backend.hpp"
#include "cudactor/gpu/completion_poller.hpp"

namespace cudactor {

namespace detail {
class poller_metrics;
}  // namespace detail

class runtime {
 public:
  // Starts everything, or says which part could not start (a bad option, no CUDA device
  // when cuda was asked for, ...). The config must outlive the runtime.
  [[nodiscard]] static gpu::result<std::unique_ptr<runtime>> start(runtime_config& config);

  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
  ~runtime();

  // Drops the calling thread's hold on the actor system (see above). Safe to call on any
  // thread at any time; the next spawn on the thread takes the hold again. start() calls it,
  // so the runtime may be shut down on a thread other than the one that started it.
  static void release_calling_thread() noexcept;

  // Idempotent. Every request to a stream actor is answered: completed, or shutting_down;
  // requests sent afterwards get CAF's request_receiver_down.
  void shutdown();

  [[nodiscard]] caf::actor_system& system() noexcept { return *system_; }
  [[nodiscard]] const std::vector<stream_actor>& streams() const noexcept { return streams_; }
  [[nodiscard]] const stream_actor& stream(std::size_t index) const { return streams_.at(index); }
  [[nodiscard]] const event_pool_actor& event_pool() const noexcept { return pool_; }
  [[nodiscard]] const coordinator_actor& coordinator() const noexcept { return coordinator_; }
  // The node: what control planes in other processes talk to (actors/node_actor.hpp).
  [[nodiscard]] const node_actor& node() const noexcept { return node_; }
  // Where the facade's requests enter (facade/): shared, so that a facade object may outlive
  // the runtime; closed by shutdown().
  [[nodiscard]] const std::shared_ptr<front_door>& door() const noexcept { return door_; }
  // Publishes node() on cudactor.node.address:port (127.0.0.1, any free port by default) and
  // answers the port. Needs runtime_config::enable_network(); the listener closes with the
  // runtime.
  // An address other than loopback needs TLS or cudactor.node.insecure: CAF 0.17 lets any
  // peer that reaches the port make the network layer stall (docs/distribution.md).
  [[nodiscard]] gpu::result<std::uint16_t> publish_node();
  // Whether `address` (IPv4, IPv6 or "localhost") is a loopback address.
  [[nodiscard]] static bool is_loopback(const std::string& address);
  // A barrier over the runtime's streams `members` (indices into streams(), at least one, none
  // twice). The runtime stops it before the streams. Safe to call from any thread.
  [[nodiscard]] gpu::result<barrier_actor> spawn_barrier(const std::vector<std::size_t>& members,
                                                         barrier_options options = {});
  [[nodiscard]] gpu::backend& device() noexcept { return *device_; }
  // The backend stream behind the runtime's stream `id` now (after a reset, its new one);
  // empty for an id the runtime does not have. Where a caller-launched operation's work goes
  // (op_lease::stream).
  [[nodiscard]] gpu::stream_ref backend_stream(stream_id id) const;
  [[nodiscard]] gpu::completion_poller& poller() noexcept { return *poller_; }
  // Where every actor's metrics go; its exposer (when serving) stops with shutdown(). Valid
  // until shutdown() returns.
  [[nodiscard]] metrics::registry& metrics() noexcept { return *metrics_; }
  [[nodiscard]] const runtime_options& options() const noexcept { return options_; }
  // The named operations this node runs (a copy of the config's, taken at start).
  [[nodiscard]] const operation_registry& operations() const noexcept { return *operations_; }
  // The communicators this node holds (actors/communicator_table.hpp): the cluster installs
  // them; a program that made one itself may add it. Valid until shutdown() returns.
  [[nodiscard]] communicator_table& communicators() noexcept { return *communicators_; }
  // Which backend "auto" chose, and why.
  [[nodiscard]] const std::string& backend_reason() const noexcept { return backend_reason_; }

 private:
  explicit runtime(runtime_options options);

  runtime_options options_;
  std::shared_ptr<metrics::registry> metrics_;  // first made, last gone
  std::shared_ptr<trace_writer> trace_;         // closed once the coordinator is gone
  std::unique_ptr<detail::poller_metrics> poller_metrics_;
  std::unique_ptr<gpu::backend> device_;
  std::string backend_reason_;
  std::unique_ptr<gpu::completion_poller> poller_;
  std::shared_ptr<event_table> events_;
  std::shared_ptr<const operation_registry> operations_;
  std::shared_ptr<communicator_table> communicators_;
  std::unique_ptr<caf::actor_system> system_;
  event_pool_actor pool_;
  coordinator_actor coordinator_;
  node_actor node_;
  caf::actor node_core_;  // what shutdown() stops; node_ goes with it
  std::vector<stream_actor> streams_;
  // What each stream actor publishes of its ledger; the coordinator reads them.
  std::vector<std::shared_ptr<detail::stream_ledger>> stream_ledgers_;
  // The backend stream behind each stream id (written by the stream actors).
  std::shared_ptr<detail::stream_directory> directory_;
  std::shared_ptr<front_door> door_;
  std::vector<barrier_member> stream_members_;  // the streams' names and ids
  std::mutex barriers_mutex_;
  std::vector<caf::actor_addr> barriers_;  // weak: a barrier nobody holds may go
  bool barriers_closed_ = false;           // set by shutdown(), under barriers_mutex_
  bool stopped_ = false;
};

}  // namespace cudactor
