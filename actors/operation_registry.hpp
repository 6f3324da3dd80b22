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
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/gpu/status.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

// Launches the operation on ctx's stream (CUDA: a kernel on ctx.native_stream(); host: runs
// it). `args` came over the network: check their types and sizes before use.
using named_launch =
    std::function<gpu::status(const gpu::launch_context& ctx, const caf::message& args)>;

namespace detail {

// A readable name for an argument type of a typed operation ("float", "uint64", "string").
template <class T>
std::string argument_type_name() {
  if constexpr (std::is_same_v<T, bool>)
    return "bool";
  else if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, double>)
    return "double";
  else if constexpr (std::is_same_v<T, std::string>)
    return "string";
  else if constexpr (std::is_integral_v<T>)
    return (std::is_signed_v<T> ? "int" : "uint") + std::to_string(8 * sizeof(T));
  else if constexpr (std::is_same_v<T, std::vector<float>>)
    return "vector<float>";
  else if constexpr (std::is_same_v<T, std::vector<double>>)
    return "vector<double>";
  else
    return "value";
}

}  // namespace detail

// Checks a named operation's arguments before it is accepted: an error naming what it takes,
// or none.
using argument_check = std::function<caf::error(const caf::message& args)>;

class operation_registry {
 public:
  static constexpr std::size_t max_name_length = 256;

  // invalid_argument for an empty or overlong name or an empty function; a second add under
  // the same name replaces the first. The function checks its own arguments.
  [[nodiscard]] gpu::status add(std::string name, named_launch launch);

  // A typed operation: `fn(ctx, a, b, ...)` with the argument types given. Work naming it
  // with other arguments is refused when it is registered or submitted (invalid_argument:
  // "operation 'axpy' takes (float, uint64), not ...") instead of failing on the stream.
  template <class... Ts, class F>
  [[nodiscard]] gpu::status add_typed(std::string name, F fn) {
    const std::string signature = describe<Ts...>();
    argument_check check = [name, signature](const caf::message& args) -> caf::error {
      if (args.match_elements<Ts...>()) return {};
      return make_error(errc::invalid_argument, "operation '" + name + "' takes (" + signature +
                                                    "), not " + caf::to_string(args));
    };
    named_launch launch = [fn = std::move(fn)](const gpu::launch_context& ctx,
                                               const caf::message& args) {
      return call<Ts...>(fn, ctx, args, std::index_sequence_for<Ts...>{});
    };
    if (auto s = add(name, std::move(launch)); !s.ok()) return s;
    checks_[std::move(name)] = std::move(check);
    return {};
  }

  // The launch function, or nullptr.
  [[nodiscard]] const named_launch* find(const std::string& name) const;
  // Whether `args` suit the operation `name` (typed operations; others check themselves).
  [[nodiscard]] caf::error check(const std::string& name, const caf::message& args) const;
  [[nodiscard]] std::size_t size() const noexcept { return launches_.size(); }
  // Every name, sorted.
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  template <class... Ts>
  static std::string describe() {
    std::string out;
    ((out += (out.empty() ? "" : ", ") + detail::argument_type_name<Ts>()), ...);
    return out;
  }
  template <class... Ts, class F, std::size_t... Is>
  static gpu::status call(const F& fn, const gpu::launch_context& ctx, const caf::message& args,
                          std::index_sequence<Is...>) {
    if (!args.match_elements<Ts...>()) {
      return {gpu::errc::invalid_argument, "arguments of the wrong types"};
    }
    return fn(ctx, args.get_as<Ts>(Is)...);
  }

  std::unordered_map<std::string, named_launch> launches_;
  std::unordered_map<std::string, argument_check> checks_;
};

// Turns work into a launch function: a local closure as it is, a named operation through
// `registry` (unknown_operation naming `where` when no launch has that name; invalid_argument
// for empty work).
[[nodiscard]] caf::error resolve_work(const work& w, const operation_registry* registry,
                                      const std::string& where, gpu::work_fn& out);

}  // namespace cudactor
