// actors/operation_registry.hpp
//
// Named operations: the form of work that can cross a process boundary. A node registers a
// launch function under a name; work::named(name, args...) sent from anywhere runs it on
// that node's stream with the deserialized arguments. No code crosses the wire, only the
// name and the arguments, and an unknown name is answered with unknown_operation.
//
// An operation may also work on buffers: those its op_spec declares in `uses` reach it, in
// the order declared, as spans of the node's memory (buffer_span), so that a control plane
// that holds only buffer ids can say which memory a kernel reads and writes.
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
#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

// Launches the operation on ctx's stream (CUDA: a kernel on ctx.native_stream(); host: runs
// it). `args` came over the network: check their types and sizes before use.
using named_launch =
    std::function<gpu::status(const gpu::launch_context& ctx, const caf::message& args)>;

// One buffer an operation declared it uses, as the node that runs it resolved it: the bytes
// the use names (its range, or the buffer from the offset to its end), on the device on CUDA.
struct buffer_span {
  void* data = nullptr;
  std::uint64_t bytes = 0;
  buffer_access access = buffer_access::none;

  template <class T>
  [[nodiscard]] T* as() const noexcept {
    return static_cast<T*>(data);
  }
  // How many whole T the span holds.
  template <class T>
  [[nodiscard]] std::uint64_t count() const noexcept {
    return bytes / sizeof(T);
  }
};

using buffer_spans = std::vector<buffer_span>;

// The same, given the spans of the operation's declared uses.
using buffer_launch = std::function<gpu::status(
    const gpu::launch_context& ctx, const buffer_spans& buffers, const caf::message& args)>;

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
  // An operation on buffers: `buffers` uses at least (refused at submission otherwise), and
  // the function checks what it needs of their sizes.
  [[nodiscard]] gpu::status add_on_buffers(std::string name, std::size_t buffers,
                                           buffer_launch launch);

  // A typed operation: `fn(ctx, a, b, ...)` with the argument types given. Work naming it
  // with other arguments is refused when it is registered or submitted (invalid_argument:
  // "operation 'axpy' takes (float, uint64), not ...") instead of failing on the stream.
  template <class... Ts, class F>
  [[nodiscard]] gpu::status add_typed(std::string name, F fn) {
    argument_check check = typed_check<Ts...>(name);
    named_launch launch = [fn = std::move(fn)](const gpu::launch_context& ctx,
                                               const caf::message& args) {
      return call<Ts...>(fn, ctx, args, std::index_sequence_for<Ts...>{});
    };
    if (auto s = add(name, std::move(launch)); !s.ok()) return s;
    checks_[std::move(name)] = std::move(check);
    return {};
  }

  // A typed operation on buffers: `fn(ctx, spans, a, b, ...)`, given the spans of at least
  // `buffers` declared uses.
  template <class... Ts, class F>
  [[nodiscard]] gpu::status add_typed_on_buffers(std::string name, std::size_t buffers, F fn) {
    argument_check check = typed_check<Ts...>(name);
    buffer_launch launch = [fn = std::move(fn)](const gpu::launch_context& ctx,
                                                const buffer_spans& spans,
                                                const caf::message& args) {
      return call_on<Ts...>(fn, ctx, spans, args, std::index_sequence_for<Ts...>{});
    };
    if (auto s = add_on_buffers(name, buffers, std::move(launch)); !s.ok()) return s;
    checks_[std::move(name)] = std::move(check);
    return {};
  }

  // Whether an operation has this name.
  [[nodiscard]] bool contains(const std::string& name) const;
  // The launch function, or nullptr.
  [[nodiscard]] const buffer_launch* find(const std::string& name) const;
  // Whether `args` suit the operation `name` (typed operations; others check themselves), and
  // it is given as many buffers as it works on.
  [[nodiscard]] caf::error check(const std::string& name, const caf::message& args,
                                 std::size_t buffers) const;
  [[nodiscard]] std::size_t size() const noexcept { return launches_.size(); }
  // Every name, sorted.
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  // Refuses arguments of other types than Ts, naming what the operation takes.
  template <class... Ts>
  static argument_check typed_check(const std::string& name) {
    return [name, signature = describe<Ts...>()](const caf::message& args) -> caf::error {
      if (args.match_elements<Ts...>()) return {};
      return make_error(errc::invalid_argument, "operation '" + name + "' takes (" + signature +
                                                    "), not " + caf::to_string(args));
    };
  }
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
      return {gpu::status_code::invalid_argument, "arguments of the wrong types"};
    }
    return fn(ctx, args.get_as<Ts>(Is)...);
  }
  template <class... Ts, class F, std::size_t... Is>
  static gpu::status call_on(const F& fn, const gpu::launch_context& ctx, const buffer_spans& spans,
                             const caf::message& args, std::index_sequence<Is...>) {
    if (!args.match_elements<Ts...>()) {
      return {gpu::status_code::invalid_argument, "arguments of the wrong types"};
    }
    return fn(ctx, spans, args.get_as<Ts>(Is)...);
  }

  struct entry {
    buffer_launch launch;
    std::size_t buffers = 0;  // how many declared uses it needs at least
  };
  std::unordered_map<std::string, entry> launches_;
  std::unordered_map<std::string, argument_check> checks_;
};

// Turns work into a launch function: a local closure as it is, a named operation through
// `registry` given `spans`, the operation's declared buffers (unknown_operation naming
// `where` when no launch has that name; invalid_argument for empty work, or for too few
// buffers).
[[nodiscard]] caf::error resolve_work(const work& w, const operation_registry* registry,
                                      const std::string& where, buffer_spans spans,
                                      gpu::work_fn& out);

}  // namespace cudactor
