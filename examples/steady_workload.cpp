// examples/steady_workload.cpp
//
// A runtime under a steady, uneven load, for watching cudactor on a dashboard: every
// `--interval` it submits a small training-step-shaped graph to the coordinator (copies in,
// kernels per stream, an all-reduce, a copy out; host "kernels" of varied length, now and then
// one that fails) and crosses a barrier over the stream actors. Metrics are served as
// configured (--cudactor.metrics.port, 9464 by default; 0 picks a free port, printed on the
// first line). Runs for --duration seconds (0: until interrupted).
//
//   build/examples/steady_workload --cudactor.backend=host --cudactor.metrics.port=9464
#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <random>
#include <thread>

#include "cudactor/actors/runtime.hpp"

using namespace cudactor;
using namespace std::chrono_literals;

namespace {

std::atomic<bool> interrupted{false};

class workload_config : public runtime_config {
 public:
  workload_config() {
    opt_group{custom_options_, "global"}
        .add(duration, "duration", "seconds to run (0: until interrupted)")
        .add(interval, "interval", "pause between steps")
        .add(width, "width", "kernels per step");
  }
  std::size_t duration = 0;
  caf::timespan interval{std::chrono::milliseconds{20}};
  std::size_t width = 8;
};

work busy_for(std::chrono::microseconds d, bool fail) {
  return work::local([d, fail](const gpu::launch_context&) {
    std::this_thread::sleep_for(d);
    return fail ? gpu::status{gpu::status_code::op_failed, "a kernel failed (on purpose, 1 in 200)"}
                : gpu::status{};
  });
}

op_spec spec(op_type type, op_priority priority, work body) {
  op_spec s;
  s.type = type;
  s.priority = priority;
  s.body = std::move(body);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  workload_config config;
  if (auto err = config.parse(argc, argv)) {
    std::fprintf(stderr, "steady_workload: %s\n", cudactor::describe(err).c_str());
    return 2;
  }
  if (config.cli_helptext_printed) return 0;
  auto started = runtime::start(config);
  if (!started) {
    std::fprintf(stderr, "steady_workload: %s\n", started.error().to_string().c_str());
    return 1;
  }
  auto rt = std::move(started.value());
  std::printf("serving metrics at %s\n", rt->metrics().endpoint().c_str());
  std::fflush(stdout);
  std::signal(SIGINT, [](int) { interrupted = true; });
  std::signal(SIGTERM, [](int) { interrupted = true; });

  barrier_options step_barrier;
  step_barrier.name = "step";
  std::vector<std::size_t> all(rt->streams().size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  auto barrier = rt->spawn_barrier(all, step_barrier);
  if (!barrier) {
    std::fprintf(stderr, "steady_workload: %s\n", barrier.error().to_string().c_str());
    return 1;
  }

  std::mt19937 random{42};
  std::lognormal_distribution<double> micros{5.0, 0.8};  // median ~150 µs, a long tail
  std::uniform_int_distribution<int> one_in{1, 200};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds{config.duration};
  std::size_t steps = 0;
  {
    caf::scoped_actor self{rt->system()};
    while (!interrupted && (config.duration == 0 || std::chrono::steady_clock::now() < until)) {
      auto length = [&] { return std::chrono::microseconds{static_cast<long>(micros(random))}; };
      graph_spec g;
      const auto in =
          g.add(spec(op_type::memory_transfer, op_priority::high, busy_for(length(), false)));
      std::vector<std::uint32_t> kernels;
      for (std::size_t k = 0; k < config.width; ++k) {
        kernels.push_back(g.add(
            spec(op_type::kernel, op_priority::normal, busy_for(length(), one_in(random) == 1)),
            {in}));
      }
      const auto reduce = g.add(
          spec(op_type::all_reduce, op_priority::critical, busy_for(length(), false)), kernels);
      g.add(spec(op_type::memory_transfer, op_priority::low, busy_for(length(), false)), {reduce});
      self->request(rt->coordinator(), 10s, submit_atom::value, std::move(g))
          .receive([](std::vector<op_id>&) {}, [](caf::error&) {});
      // Work on the stream actors too, then a barrier over them.
      for (std::size_t s = 0; s < rt->streams().size(); ++s) {
        self->request(rt->stream(s), 10s, submit_atom::value, busy_for(length(), false))
            .receive([](ticket&) {}, [](caf::error&) {});
      }
      self->request(*barrier, 10s, synchronize_atom::value)
          .receive([](barrier_crossing&) {}, [](caf::error&) {});
      ++steps;
      std::this_thread::sleep_for(config.interval);
    }
  }
  runtime::release_calling_thread();
  std::printf("%zu steps\n", steps);
  rt->shutdown();
  return 0;
}
