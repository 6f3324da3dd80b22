// node/main.cpp — cudactor-node
//
// One node of a distributed job: starts a runtime, publishes its node actor on
// cudactor.node.address:port (127.0.0.1 and any free port by default) and serves control
// planes until SIGINT or SIGTERM. It prints the address it listens on first, so that whoever
// started it can connect (connect_node, actors/node_client.hpp).
//
// The named operations it runs:
//   noop ()               nothing, on the stream (a round trip's floor)
//   busy (uint64 us)      keeps the stream busy that long (a spinning kernel on CUDA)
//   fail (string why)     fails with that message (to see failures travel)
//   scale (float s)       multiplies the floats of the one buffer it declares, in place
//   dp_grad, dp_sgd       data-parallel training's gradient and optimizer (demo/data_parallel.hpp)
//
// A control plane allocates buffers on the node and names them in operations' uses and in
// collectives; the node's communicators are made by its cluster (actors/cluster_actor.hpp).
//
//   cudactor-node --cudactor.node.name=n1 --cudactor.node.port=7000 --cudactor.metrics.port=9465
#include <caf/all.hpp>

#include <csignal>
#include <cstdio>
#include <string>

#include "cudactor/actors/runtime.hpp"
#include "data_parallel.hpp"
#include "kernels.hpp"

using namespace cudactor;

namespace {

gpu::status add_operations(operation_registry& ops) {
  if (auto s = ops.add_typed<>("noop", [](const gpu::launch_context&) { return gpu::status{}; });
      !s.ok()) {
    return s;
  }
  if (auto s = ops.add_typed<std::uint64_t>(
          "busy",
          [](const gpu::launch_context& ctx, std::uint64_t microseconds) {
            if (microseconds > 60'000'000) {
              return gpu::status{gpu::status_code::invalid_argument, "busy: at most 60 s"};
            }
            return demo::busy(ctx, microseconds);
          });
      !s.ok()) {
    return s;
  }
  if (auto s = ops.add_typed<std::string>(
          "fail",
          [](const gpu::launch_context&, const std::string& why) {
            return gpu::status{gpu::status_code::op_failed, why.substr(0, 1024)};
          });
      !s.ok()) {
    return s;
  }
  if (auto s = ops.add_typed_on_buffers<float>(
          "scale", 1,
          [](const gpu::launch_context& ctx, const buffer_spans& b, float factor) {
            float* x = b[0].as<float>();
            return demo::scale(ctx, x, x, factor, b[0].count<float>());
          });
      !s.ok()) {
    return s;
  }
  return demo::data_parallel::add_operations(ops);
}

}  // namespace

int main(int argc, char** argv) {
  // Every thread the runtime starts inherits this mask, so the signals reach sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  runtime_config config;
  config.enable_network();
  if (auto s = add_operations(config.operations()); !s.ok()) {
    std::fprintf(stderr, "cudactor-node: %s\n", s.to_string().c_str());
    return 1;
  }
  if (auto err = config.parse(argc, argv)) {
    std::fprintf(stderr, "cudactor-node: %s\n", caf::to_string(err).c_str());
    return 2;
  }
  if (config.cli_helptext_printed) return 0;
  auto started = runtime::start(config);
  if (!started) {
    std::fprintf(stderr, "cudactor-node: %s\n", started.error().to_string().c_str());
    return 1;
  }
  runtime& rt = *started.value();
  const std::string& name = rt.options().node.name;
  auto port = rt.publish_node();
  if (!port) {
    std::fprintf(stderr, "cudactor-node: %s\n", port.error().to_string().c_str());
    rt.shutdown();
    return 1;
  }
  const std::string metrics = rt.metrics().endpoint();
  std::printf("cudactor-node '%s' listening on %s:%u\n", name.c_str(),
              rt.options().node_address.c_str(), static_cast<unsigned>(*port));
  std::printf("backend: %s; streams: %zu; metrics: %s\n", rt.backend_reason().c_str(),
              rt.options().streams, metrics.empty() ? "not served" : metrics.c_str());
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::printf("cudactor-node '%s': %s, stopping\n", name.c_str(),
              signal == SIGINT ? "SIGINT" : "SIGTERM");
  rt.shutdown();
  std::printf("cudactor-node '%s' stopped\n", name.c_str());
  return 0;
}
