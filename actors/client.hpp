// actors/client.hpp
//
// The coordinator for code that is not an actor: an HTTP handler, a training script's main
// loop, a test. submit() hands over an operation or a whole graph and returns at once; the
// caller learns of the end through a std::future or a function called on a CAF worker
// (actors/client_asio.hpp adds Boost.Asio completion tokens on top). One client serves any
// number of threads: a submit is one message, a run request straight to the coordinator
// carrying the caller's function, with no scoped_actor, no actor of the client's own in
// between and no round trip on the calling thread.
//
// The coordinator calls the function once the operation (or every operation of the graph)
// has ended, on its own thread, the one way anything in cudactor hears "this has ended". Each
// caller is told exactly once: the end, or why it never ran (the coordinator refused it, or
// the client or the runtime stopped first: shutting_down; a request that reaches no
// coordinator any more is told so when it is dropped).
//
// A client must be destroyed before its runtime is (shutting the runtime down first is fine).
#pragma once

#include <caf/actor_system.hpp>

#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "cudactor/messaging/coordinator_protocol.hpp"

namespace cudactor {

class runtime;

class client {
 public:
  explicit client(runtime& rt);
  explicit client(coordinator_actor coordinator);
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  client(client&&) noexcept = default;
  client& operator=(client&&) noexcept;
  // stop()
  ~client();

  // `done` runs once, on a CAF worker thread (the coordinator's): keep it short and never
  // block in it (set a promise, post to an executor). An exception it throws is reported on
  // stderr.
  void submit(op_spec op, std::function<void(op_notice)> done);
  // `done` gets every operation's end, in the graph's order, once the last one has ended.
  void submit(graph_spec graph, std::function<void(std::vector<op_notice>)> done);

  [[nodiscard]] std::future<op_notice> submit(op_spec op);
  [[nodiscard]] std::future<std::vector<op_notice>> submit(graph_spec graph);

  // Steps (docs/replay.md): a graph recorded once, answered with its handle or why not;
  // replayed, answered once with the step's outcome; released (replays in flight run on).
  void record(step_spec step, std::function<void(step_handle, caf::error)> done);
  [[nodiscard]] std::future<step_handle> record(step_spec step);  // failure as an exception
  void replay(replay_request request, std::function<void(step_outcome)> done);
  [[nodiscard]] std::future<step_outcome> replay(replay_request request);
  void release(step_handle step);

  // Everything not yet ended is told shutting_down (a failed notice with no id: the client
  // hears an operation only at its end; the work itself goes on); submits after it are too.
  // Idempotent.
  void stop() noexcept;

 private:
  struct open_calls;  // the callers not yet told, so that stop() can tell them
  coordinator_actor coordinator_;
  std::shared_ptr<open_calls> open_;
};

}  // namespace cudactor
