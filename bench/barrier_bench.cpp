// bench/barrier_bench.cpp
//
// What one crossing of a barrier actor costs (actors/barrier_actor.hpp), in host and device
// mode, against the floor it is built on: asking every member's stream actor at once to
// synchronize (answered once everything it took is done) and taking the last answer. Host
// backend, 4 streams, the barrier over all of them, each round one no-op submitted straight to
// every stream first (the seeds' pattern: launch on every stream, then the barrier), from one
// scoped actor, request -> answer in µs. The three paths are alternated in blocks, so that a
// slow stretch of the VM falls on all of them.
//
// Options after "--" go to the runtime.
#include <caf/all.hpp>

#include <cstdio>
#include <vector>

#include "common/host_runs.hpp"
#include "common/report.hpp"
#include "cudactor/actors/runtime.hpp"
#include "cudactor/messaging/barrier_protocol.hpp"

namespace {

using namespace cudactor;
using bench::fixed;
using bench::now_ns;

constexpr std::size_t streams = 4;

const gpu::work_fn noop = [](const gpu::launch_context&) { return gpu::status{}; };

void fail(const char* what, const caf::error& why) {
  std::fprintf(stderr, "%s: %s\n", what, caf::to_string(why).c_str());
  std::exit(1);
}

// One no-op on every stream, as the step before a barrier.
void launch_step(caf::scoped_actor& self, runtime& rt) {
  for (std::size_t i = 0; i < streams; ++i) {
    self->request(rt.stream(i), caf::infinite, submit_atom::value, work::local(noop))
        .receive([](const ticket&) {}, [](caf::error& e) { fail("submit", e); });
  }
}

// Every stream actor asked at once; the time to the last answer.
double floor_us(caf::scoped_actor& self, runtime& rt) {
  launch_step(self, rt);
  const auto start = now_ns();
  for (std::size_t i = 0; i < streams; ++i) {
    self->send(rt.stream(i), synchronize_atom::value);
  }
  std::size_t answered = 0;
  self->receive_for(answered, streams)([](const completion&) {},
                                       [](caf::error& e) { fail("synchronize", e); });
  return (now_ns() - start) * 1e-3;
}

double barrier_us(caf::scoped_actor& self, runtime& rt, const barrier_actor& b, barrier_mode mode) {
  launch_step(self, rt);
  const auto start = now_ns();
  self->request(b, caf::infinite, synchronize_atom::value, mode, caf::timespan{0})
      .receive([](const barrier_crossing&) {}, [](caf::error& e) { fail("barrier", e); });
  return (now_ns() - start) * 1e-3;
}

}  // namespace

int main(int argc, char** argv) {
  const auto mode = bench::run_mode::parse(argc, argv);
  const std::size_t count = mode.quick ? 2000 : 10000;
  runtime_config config;
  auto rt = bench::start_runtime(config, {"--cudactor.streams=" + std::to_string(streams)},
                                 mode.passed_on);
  auto spawned = rt->spawn_barrier({0, 1, 2, 3});
  if (!spawned) {
    std::fprintf(stderr, "barrier: %s\n", spawned.error().to_string().c_str());
    return 1;
  }
  const barrier_actor b = *spawned;
  std::vector<double> floor, host, device;
  {
    caf::scoped_actor self{rt->system()};
    for (int i = 0; i < 200; ++i) {  // warm-up
      (void)floor_us(self, *rt);
      (void)barrier_us(self, *rt, b, barrier_mode::host);
      (void)barrier_us(self, *rt, b, barrier_mode::device);
    }
    for (int block = 0; block < 8; ++block) {
      for (std::size_t i = 0; i < count / 8; ++i) floor.push_back(floor_us(self, *rt));
      for (std::size_t i = 0; i < count / 8; ++i) {
        host.push_back(barrier_us(self, *rt, b, barrier_mode::host));
      }
      for (std::size_t i = 0; i < count / 8; ++i) {
        device.push_back(barrier_us(self, *rt, b, barrier_mode::device));
      }
    }
  }
  const auto f = bench::summarize_us(floor);
  const auto h = bench::summarize_us(host);
  const auto d = bench::summarize_us(device);
  bench::table out({"path", "samples", "p50 us", "p99 us", "max us", "p50 / floor"});
  out.add({"every stream actor's synchronize (floor)", std::to_string(f.n), fixed(f.p50),
           fixed(f.p99), fixed(f.max), "1.00"});
  out.add({"barrier actor, host mode", std::to_string(h.n), fixed(h.p50), fixed(h.p99),
           fixed(h.max), fixed(h.p50 / f.p50, 2)});
  out.add({"barrier actor, device mode", std::to_string(d.n), fixed(d.p50), fixed(d.p99),
           fixed(d.max), fixed(d.p50 / f.p50, 2)});
  out.print("one no-op on each of 4 streams, then the crossing: request -> answer (" +
            rt->backend_reason() + ")");

  bench::json_line json;
  json.add("bench", std::string{"barrier"});
  json.add("quick", mode.quick);
  json.add("floor_p50_us", f.p50);
  json.add("host_p50_us", h.p50);
  json.add("host_p99_us", h.p99);
  json.add("device_p50_us", d.p50);
  json.add("device_p99_us", d.p99);
  json.add("host_over_floor_p50", h.p50 / f.p50);
  json.add("device_over_floor_p50", d.p50 / f.p50);
  json.print();
  rt->shutdown();
}
