// messaging/work.hpp
//
// The two forms work takes, designed for distribution from the start:
//
//  - a local closure (work::local): any host callable; the fastest form and the only one
//    that can capture pointers. It is local-only: it cannot be serialized, so it never
//    leaves its process.
//  - a named operation (work::named): a name registered with the receiving node's
//    operation_registry plus serialized arguments. No code crosses the wire.
//
// local_only<T> marks any other payload that must not leave its process (a stream callback).
// Its inspect() fails on serialization with cudactor::errc::local_only, so a message that
// carries one to another process is refused by CAF's network layer with an error to the
// requester (sec::unexpected_message) rather than sent empty or crashing. check_sendable()
// gives the clear cudactor error before a send.
#pragma once

#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/save_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/node_id.hpp>

#include <functional>
#include <string>
#include <utility>

#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace detail {
[[nodiscard]] caf::error local_only_error(const char* what);
}  // namespace detail

// A payload that only makes sense inside its own process.
template <class T>
class local_only {
 public:
  local_only() = default;
  explicit local_only(T value) : value_(std::move(value)) {}

  [[nodiscard]] const T& get() const noexcept { return value_; }
  [[nodiscard]] T& get() noexcept { return value_; }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, local_only& x) {
    (void)x;
    return f(caf::meta::type_name("cudactor::local_only"),
             caf::meta::save_callback([] { return detail::local_only_error("payload"); }),
             caf::meta::load_callback([] { return detail::local_only_error("payload"); }));
  }

 private:
  T value_;
};

// Runs on the stream actor once its stream passes the point where the callback was added;
// the error is empty then, or says why the point was not reached cleanly (the stream's
// failure, or shutting_down).
using stream_callback = local_only<std::function<void(const caf::error&)>>;

class work {
 public:
  work() = default;

  // Local-only: refused when sent to another process.
  [[nodiscard]] static work local(gpu::work_fn fn) {
    work w;
    w.closure_ = std::move(fn);
    return w;
  }

  // Runs the launch function registered under `name` on the receiving node with `args`.
  template <class... Ts>
  [[nodiscard]] static work named(std::string name, Ts&&... args) {
    work w;
    w.name_ = std::move(name);
    if constexpr (sizeof...(Ts) > 0) w.args_ = caf::make_message(std::forward<Ts>(args)...);
    return w;
  }

  [[nodiscard]] bool is_local() const noexcept { return static_cast<bool>(closure_); }
  [[nodiscard]] bool empty() const noexcept { return !closure_ && name_.empty(); }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const caf::message& args() const noexcept { return args_; }
  [[nodiscard]] const gpu::work_fn& closure() const noexcept { return closure_; }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, work& x) {
    // The check comes first so that nothing of a local closure is written.
    return f(caf::meta::type_name("cudactor::work"), caf::meta::save_callback([&x] {
               return x.is_local() ? detail::local_only_error("work (a local closure)")
                                   : caf::error{};
             }),
             x.name_, x.args_);
  }

 private:
  std::string name_;
  caf::message args_;
  gpu::work_fn closure_;
};

// local_only when `w` is a local closure and `to` is another node than `from`; empty
// otherwise. Call it before sending work to a handle that may be remote.
[[nodiscard]] caf::error check_sendable(const work& w, const caf::node_id& from,
                                        const caf::node_id& to);

}  // namespace cudactor
