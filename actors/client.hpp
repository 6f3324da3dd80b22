// actors/client.hpp
//
// The coordinator for code that is not an actor: an HTTP handler, a training script's main
// loop, a test. submit() hands over an operation or a whole graph and returns at once; the
// caller learns of the end through a std::future or a function called on a CAF worker
// (actors/client_asio.hpp adds Boost.Asio completion tokens on top). One client serves any
// number of threads: a submit is one message to the client's actor, with no scoped_actor
// and no round trip on the calling thread.
//
// The client's actor registers each operation with itself as the listener, so no end can be
// missed, and tells each caller exactly once: the operation's end, or why it never ran (the
// coordinator refused it, or the client or the runtime stopped first: shutting_down).
//
// A client must be destroyed before its runtime is (shutting the runtime down first is fine:
// the client's actor follows the coordinator and ends with it).
#pragma once

#include <caf/actor_system.hpp>

#include <functional>
#include <future>
#include <vector>

#include "cudactor/messaging/client_protocol.hpp"
#include "cudactor/messaging/coordinator_protocol.hpp"

namespace cudactor {

class runtime;

class client {
 public:
  explicit client(runtime& rt);
  client(caf::actor_system& system, coordinator_actor coordinator);
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  client(client&&) noexcept = default;
  client& operator=(client&&) noexcept;
  // stop()
  ~client();

  // `done` runs once, on a CAF worker thread: keep it short and never block in it (set a
  // promise, post to an executor). An exception it throws is reported on stderr.
  void submit(op_spec op, std::function<void(op_notice)> done);
  // `done` gets every operation's end, in the graph's order, once the last one has ended.
  void submit(graph_spec graph, std::function<void(std::vector<op_notice>)> done);

  [[nodiscard]] std::future<op_notice> submit(op_spec op);
  [[nodiscard]] std::future<std::vector<op_notice>> submit(graph_spec graph);

  // Everything not yet ended is told shutting_down; submits after it are too. Idempotent.
  void stop() noexcept;

 private:
  client_actor actor_;
};

// True when every operation of a graph completed.
[[nodiscard]] bool all_completed(const std::vector<op_notice>& ends) noexcept;

}  // namespace cudactor
