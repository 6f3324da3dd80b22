// What the multi-process tests share: a cudactor-node process (started, stopped and reaped
// by the test), and a control plane (an actor system with cudactor's types and CAF's network
// layer, no runtime) that asks remote actors and waits for their answers.
#pragma once

#include <caf/all.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "build_tree.hpp"
#include "common/child_process.hpp"
#include "common/log_file.hpp"
#include "common/test_backend.hpp"
#include "common/time_scale.hpp"
#include "cudactor/actors/runtime.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::test {

// A sanitized build stalls for longer than a plain one (a node starting under ASan while
// another test compiles), so the connection timeout that tells a lost peer grows with the
// build's slowdown on both sides, as every other limit of the tests does; a plain build
// keeps runtime_config's 2 s.
inline std::vector<std::string> liveness_args() {
  if (time_scale() <= 1.0) return {};
  const auto ms = static_cast<long>(2000 * time_scale());
  return {"--middleman.connection-timeout=" + std::to_string(ms) + "ms"};
}

// How long a test lets connect_node try: its 5 s default, stretched with the build's
// slowdown like the connection timeout a try may have to wait out (liveness_args).
inline std::chrono::milliseconds connect_limit() {
  return scaled(std::chrono::milliseconds{5000});
}

// A cudactor-node process on the host backend, stopped and reaped when the object goes.
struct node_process {
  explicit node_process(const std::string& name, std::vector<std::string> extra = {})
      : log(fresh_log(name)), child(arguments(name, std::move(extra)), log) {
    port = wait_for_port(log, child, "listening on 127.0.0.1:").value_or(0);
  }
  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;
  ~node_process() {
    child.stop();
    if (!std::getenv("KEEP_LOGS")) std::remove(log.c_str());
  }
  // One log per node process: a test case's node never reads another's lines (KEEP_LOGS=1
  // keeps them all, and a rerun in the same process would otherwise append to the same file).
  static std::string fresh_log(const std::string& name) {
    static int started = 0;
    std::string path =
        "node." + name + "." + std::to_string(getpid()) + "." + std::to_string(++started) + ".log";
    std::remove(path.c_str());
    return path;
  }
  static std::vector<std::string> arguments(const std::string& name,
                                            std::vector<std::string> extra) {
    // CTest names the program (the GPU bundle moves it); the build's own path otherwise.
    const char* given = std::getenv("CUDACTOR_NODE");
    std::vector<std::string> out{given != nullptr ? given : build_tree::node_program(),
                                 "--cudactor.node.name=" + name, backend_option(),
                                 "--cudactor.metrics.no-exposer"};
    for (auto& e : liveness_args()) out.push_back(std::move(e));
    for (auto& e : extra) out.push_back(std::move(e));
    return out;
  }
  std::string log;
  child_process child;
  std::uint16_t port = 0;
};

// The control plane's side. `args` are parsed as command-line options (TLS, heartbeat).
struct control_plane {
  explicit control_plane(std::vector<std::string> args = {})
      : config(make_config(std::move(args))), system(*config) {}
  ~control_plane() { runtime::release_calling_thread(); }
  static std::unique_ptr<runtime_config> make_config(std::vector<std::string> args) {
    auto c = std::make_unique<runtime_config>();
    c->enable_network();
    for (auto& e : liveness_args()) args.insert(args.begin(), std::move(e));
    if (auto err = c->parse(std::move(args))) {
      throw std::runtime_error{"control plane options: " + caf::to_string(err)};
    }
    return c;
  }
  // Asks `to` and waits (up to `limit`) for the answer or the error.
  template <class T, class Handle, class... Ts>
  caf::expected<T> ask_for(caf::timespan limit, const Handle& to, Ts&&... xs) {
    caf::expected<T> out{caf::sec::request_timeout};
    {
      caf::scoped_actor self{system};
      self->request(to, scaled(limit), std::forward<Ts>(xs)...)
          .receive([&](T& value) { out = std::move(value); },
                   [&](caf::error& err) { out = std::move(err); });
    }
    runtime::release_calling_thread();
    return out;
  }
  template <class T, class Handle, class... Ts>
  caf::expected<T> ask(const Handle& to, Ts&&... xs) {
    return ask_for<T>(std::chrono::seconds{20}, to, std::forward<Ts>(xs)...);
  }
  std::string render(const caf::error& e) { return e ? system.render(e) : std::string{}; }
  // The error of an expected, or "" when it holds a value (Boost evaluates messages eagerly).
  template <class T>
  std::string why(const caf::expected<T>& x) {
    return x ? std::string{} : render(x.error());
  }
  std::unique_ptr<runtime_config> config;
  caf::actor_system system;
};

inline op_spec named(std::string description, work w) {
  op_spec s;
  s.description = std::move(description);
  s.body = std::move(w);
  return s;
}

inline bool is(const caf::error& e, errc code) {
  return e && e.category() == error_category && e.code() == static_cast<std::uint8_t>(code);
}

}  // namespace cudactor::test
