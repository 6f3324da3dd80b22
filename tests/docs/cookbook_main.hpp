// tests/docs/cookbook_main.hpp
//
// What the cookbook's blocks (docs/cookbook.md) are compiled with: the facade's headers, the
// one helper the page names (kernel), and the main that starts the runtime the page
// describes (four streams, the first of high priority, the last of low, on the backend
// CUDACTOR_TEST_BACKEND names) and runs the example its argument names. An example that
// throws fails: its exit code is 1 and what it threw is printed.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/test_backend.hpp"
#include "cudactor/actors/client.hpp"
#include "cudactor/actors/runtime.hpp"
#include "cudactor/facade/barrier.hpp"
#include "cudactor/facade/cancellation.hpp"
#include "cudactor/facade/coordinator.hpp"
#include "cudactor/facade/event_pool.hpp"
#include "cudactor/facade/host_memory.hpp"
#include "cudactor/facade/stream.hpp"

using namespace cudactor;

// Work that does nothing on the host backend; `what` says what it stands for.
inline gpu::work_fn kernel(const std::string& what) {
  (void)what;
  return [](const gpu::launch_context&) { return gpu::status{}; };
}

struct cookbook_example {
  const char* name;
  void (*run)(runtime&);
};

template <std::size_t N>
int cookbook_main(int argc, char** argv, const cookbook_example (&examples)[N]) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <example>\n", argv[0]);
    return 2;
  }
  const cookbook_example* chosen = nullptr;
  for (const auto& e : examples) {
    if (std::strcmp(e.name, argv[1]) == 0) chosen = &e;
  }
  if (chosen == nullptr) {
    std::fprintf(stderr, "no example '%s'\n", argv[1]);
    return 2;
  }
  runtime_config config;
  if (auto err = config.parse(
          {test::backend_option(), "--cudactor.streams=4", "--cudactor.high-priority-streams=1",
           "--cudactor.low-priority-streams=1", "--cudactor.metrics.no-exposer"})) {
    std::fprintf(stderr, "options: %s\n", describe(err).c_str());
    return 2;
  }
  auto started = runtime::start(config);
  if (!started) {
    std::fprintf(stderr, "start: %s\n", started.error().to_string().c_str());
    return 1;
  }
  int rc = 0;
  try {
    chosen->run(*started.value());
    std::printf("%s: ok\n", chosen->name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", chosen->name, e.what());
    rc = 1;
  }
  started.value()->shutdown();
  return rc;
}
