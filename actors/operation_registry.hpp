// actors/operation_registry.hpp
//
// Named operations: the form of work that can cross a process boundary. A node registers a
// launch function under a name; work::named(name, args...) sent from anywhere runs it on
// that node's stream with the deserialized arguments. No code crosses the wire, only the
// name and the arguments, and an unknown name is answered with unknown_operation.
//
// Filled before the runtime starts and read-only afterwards, so stream actors share it
// without locking.
#pragma once

#include <caf/message.hpp>

#include <functional>
#include <string>
#include <unordered_map>

#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/gpu/status.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

// Launches the operation on ctx's stream (CUDA: a kernel on ctx.native_stream(); host: runs
// it). `args` came over the network: check their types and sizes before use.
using named_launch =
    std::function<gpu::status(const gpu::launch_context& ctx, const caf::message& args)>;

class operation_registry {
 public:
  static constexpr std::size_t max_name_length = 256;

  // invalid_argument for an empty or overlong name or an empty function; a second add under
  // the same name replaces the first.
  [[nodiscard]] gpu::status add(std::string name, named_launch launch);
  // The launch function, or nullptr.
  [[nodiscard]] const named_launch* find(const std::string& name) const;
  [[nodiscard]] std::size_t size() const noexcept { return launches_.size(); }

 private:
  std::unordered_map<std::string, named_launch> launches_;
};

// Turns work into a launch function: a local closure as it is, a named operation through
// `registry` (unknown_operation naming `where` when no launch has that name; invalid_argument
// for empty work).
[[nodiscard]] caf::error resolve_work(const work& w, const operation_registry* registry,
                                      const std::string& where, gpu::work_fn& out);

}  // namespace cudactor
