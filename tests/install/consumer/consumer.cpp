// Uses each installed library once: the device layer (a copy round trip on the backend
// open_backend picks, answered through the completion poller), messaging (a rendered cudactor error
// from a real actor system), metrics (a registry without an exposer) and the actors (a runtime
// that runs one operation and reports it). Prints "consumer ok" and exits 0 on success.
#include <caf/all.hpp>
#include <cudactor/actors/runtime.hpp>
#include <cudactor/gpu/completion_poller.hpp>
#include <cudactor/gpu/open_backend.hpp>
#include <cudactor/messaging/errc.hpp>
#include <cudactor/metrics/registry.hpp>

#include <cstdio>
#include <cstring>
#include <future>
#include <vector>

int main() {
  using namespace cudactor;
  auto opened = gpu::open_backend("host");
  if (!opened) {
    std::fprintf(stderr, "open_backend: %s\n", opened.error().to_string().c_str());
    return 1;
  }
  gpu::backend& device = *opened.value().chosen;
  auto stream = device.create_stream({"consumer", gpu::stream_priority::normal});
  if (!stream) return 2;
  auto memory = device.allocate(stream.value(), 16);
  if (!memory) return 3;
  // Copies take pinned host memory (both backends refuse pageable memory, as CUDA does).
  auto staging = device.allocate_pinned(32);
  if (!staging) return 3;
  const char text[16] = "installed fine";
  char* in = staging.value().as<char>();
  char* back = in + 16;
  std::memcpy(in, text, 16);
  std::memset(back, 0, 16);
  if (!device.copy(stream.value(), memory.value().data(), in, 16, gpu::copy_kind::host_to_device) ||
      !device.copy(stream.value(), back, memory.value().data(), 16,
                   gpu::copy_kind::device_to_host) ||
      !device.synchronize(stream.value()) || std::strcmp(back, text) != 0) {
    return 4;
  }
  {
    gpu::completion_poller poller{device};
    std::promise<gpu::watch_outcome> outcome;
    auto point = device.signal(stream.value());
    if (!point ||
        !poller.watch(stream.value(), point.value(), std::nullopt,
                      [&](const gpu::watch_result& r) { outcome.set_value(r.outcome); })) {
      return 5;
    }
    if (outcome.get_future().get() != gpu::watch_outcome::completed) return 6;
  }

  caf::actor_system_config config;
  add_error_category(config);
  caf::actor_system system{config};
  const std::string rendered =
      system.render(to_error(gpu::status{gpu::status_code::device_lost, "consumer check"}));
  if (rendered != "cudactor::device_lost: consumer check") {
    std::fprintf(stderr, "rendered: %s\n", rendered.c_str());
    return 5;
  }

  metrics::exposer_options off;
  off.enabled = false;
  metrics::registry registry{off};
  if (registry.port()) return 6;

  {
    runtime_config rc;
    if (rc.parse({"--cudactor.backend=host", "--cudactor.streams=1", "--cudactor.metrics.port=0"})) {
      return 7;
    }
    auto rt = runtime::start(rc);
    if (!rt) return 8;
    {
      caf::scoped_actor self{(*rt)->system()};
      bool done = false;
      self->request((*rt)->stream(0), std::chrono::seconds{10}, submit_atom::value,
                    work::local([](const gpu::launch_context&) { return gpu::status{}; }))
          .receive([&](const ticket& t) { done = t.point > 0; }, [](caf::error&) {});
      if (!done) return 9;
    }
    if ((*rt)->metrics().serialize().find("cudactor_stream_operations_total") ==
        std::string::npos) {
      return 10;
    }
  }

  std::printf("consumer ok (%s)\n", opened.value().reason.c_str());
  return 0;
}
