// bench/gpu/dag_gpu_bench.cpp
//
// A DAG of 10k small kernels (5 us of GPU time each; each after 0 to 3 of the 64 ops before
// it) over 8 streams on a CUDA device: through the coordinator (one graph message, every
// end told to a listener actor; the coordinator picks streams and puts device waits where a
// dependency ran on another stream) against the same DAG written directly with CUDA streams
// and events (op i on stream i % 8, an event after each op, cudaStreamWaitEvent per
// cross-stream dependency, one cudaDeviceSynchronize), in the same run, alternately. Also the
// device's floor: kernels x 5 us / 8 streams. And the same DAG recorded once as a step and
// replayed (docs/replay.md), from the replay's request to its answer: as a CUDA graph (the
// default, cudactor.coordinator.step-graphs=auto) and, in a second runtime on the same device
// with step-graphs=never, as the step's plan over the streams. A CUDA graph is not held to
// the 8 streams (only its edges order it), so its own floor is printed beside: the DAG's
// longest chain x 5 us, or kernels x 5 us / 128 (the device's concurrent kernels), whichever
// is longer.
//
//   dag_gpu_bench --backend=cuda [--quick] [-- runtime options]
// Prints a table, then one JSON object on the last line.
#include <caf/all.hpp>

#include <algorithm>
#include <cstdio>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/end_counter.hpp"
#include "common/gpu_mode.hpp"
#include "common/report.hpp"
#include "common/start_runtime.hpp"
#include "cudactor/actors/runtime.hpp"
#include "gpu/bench_kernels.hpp"

using namespace cudactor;
using namespace cudactor::bench;

namespace {

constexpr int streams = 8;
constexpr long long kernel_ns = 5'000;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "dag_gpu_bench: %s\n", what.c_str());
  std::exit(1);
}

kernels::dag make_dag(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  kernels::dag g;
  g.kernel_ns = kernel_ns;
  g.after.resize(n);
  for (std::uint32_t i = 1; i < n; ++i) {
    const auto deps = static_cast<std::uint32_t>(rng() % 4);
    for (std::uint32_t d = 0; d < deps; ++d) {
      const std::uint32_t window = std::min<std::uint32_t>(i, 64);
      const std::uint32_t dep = i - 1 - static_cast<std::uint32_t>(rng() % window);
      auto& after = g.after[i];
      if (std::find(after.begin(), after.end(), dep) == after.end()) after.push_back(dep);
    }
  }
  return g;
}

// Kernels on the DAG's longest chain.
std::size_t longest_chain(const kernels::dag& g) {
  std::vector<std::size_t> depth(g.after.size(), 1);
  std::size_t most = g.after.empty() ? 0 : 1;
  for (std::size_t i = 0; i < g.after.size(); ++i) {
    for (const std::uint32_t d : g.after[i]) depth[i] = std::max(depth[i], depth[d] + 1);
    most = std::max(most, depth[i]);
  }
  return most;
}

// What the DAG takes on the device when only its edges order it (a CUDA graph).
double graph_floor_s(const kernels::dag& g) {
  constexpr double concurrent_kernels = 128;  // Hopper's bound on kernels resident at once
  const double chain = static_cast<double>(longest_chain(g)) * kernel_ns * 1e-9;
  const double width = static_cast<double>(g.after.size()) * kernel_ns * 1e-9 / concurrent_kernels;
  return std::max(chain, width);
}

work spin_work() {
  return work::local([](const gpu::launch_context& ctx) -> gpu::status {
    const int e = kernels::spin(ctx.native_stream(), kernel_ns);
    if (e == 0) return {};
    return {gpu::status_code::op_failed, "spin kernel: " + kernels::error_name(e)};
  });
}

graph_spec graph_of(const kernels::dag& dag) {
  graph_spec g;
  g.ops.reserve(dag.after.size());
  for (const auto& after : dag.after) {
    op_spec s;
    s.body = spin_work();
    g.add(std::move(s), after);
  }
  return g;
}

// Seconds from the graph's submission to the last end told.
double coordinator_run(runtime& rt, const kernels::dag& dag) {
  graph_spec g = graph_of(dag);
  auto st = std::make_shared<count_state>();
  st->expected = dag.after.size();
  auto done = st->done.get_future();
  auto listener = rt.system().spawn(counter, st);
  const auto started = now_ns();
  caf::anon_send(rt.coordinator(), submit_atom::value, std::move(g), listener);
  if (done.wait_for(std::chrono::seconds{120}) != std::future_status::ready) {
    fail("the coordinator's DAG did not end within 120 s");
  }
  const double seconds = static_cast<double>(now_ns() - started) * 1e-9;
  caf::anon_send_exit(listener, caf::exit_reason::user_shutdown);
  if (st->not_completed != 0) fail(std::to_string(st->not_completed) + " ops did not complete");
  return seconds;
}

// Seconds from the replay's request to its answer; recording is not counted.
double replay_run(runtime& rt, const kernels::dag& dag) {
  caf::scoped_actor self{rt.system()};
  step_handle h;
  self->request(rt.coordinator(), std::chrono::seconds{60}, record_atom::value,
                step_spec{"dag", graph_of(dag)})
      .receive([&](step_handle made) { h = made; },
               [](caf::error& why) { fail("record: " + describe(why)); });
  const auto started = now_ns();
  self->request(rt.coordinator(), std::chrono::seconds{120}, replay_atom::value,
                replay_request{h, {}, step_notices::none})
      .receive(
          [](const step_outcome& o) {
            if (o.state != op_state::completed) fail("replay: " + describe(o.cause));
          },
          [](caf::error& why) { fail("replay: " + describe(why)); });
  const double seconds = static_cast<double>(now_ns() - started) * 1e-9;
  self->request(rt.coordinator(), std::chrono::seconds{10}, release_atom::value, h)
      .receive([](bool) {}, [](caf::error&) {});
  return seconds;
}

double raw_run(const kernels::dag& dag) {
  int error = 0;
  const long long ns = kernels::raw_dag_run(dag, streams, &error);
  if (ns < 0) fail("raw CUDA DAG: " + kernels::error_name(error));
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  const auto mode = parse_gpu_mode(argc, argv);
  const std::size_t n = 10'000;
  const int rounds = mode.quick ? 3 : 7;

  runtime_config config;
  auto rt =
      start_cuda_runtime(config, {"--cudactor.streams=" + std::to_string(streams)}, mode.passed_on);
  const std::string backend = rt->backend_reason();
  runtime_config plan_config;
  auto rt_plan = start_cuda_runtime(
      plan_config,
      {"--cudactor.streams=" + std::to_string(streams), "--cudactor.coordinator.step-graphs=never"},
      mode.passed_on);

  samples through_coordinator, raw, replayed, planned, graph_floor;
  const auto warm = make_dag(n / 10, 99);
  coordinator_run(*rt, warm);
  raw_run(warm);
  replay_run(*rt, warm);
  replay_run(*rt_plan, warm);
  for (int round = 0; round < rounds; ++round) {
    const auto dag = make_dag(n, 7 + static_cast<std::uint64_t>(round));
    graph_floor.add(graph_floor_s(dag));
    // Alternately first, so that neither always runs on a warmer device.
    if (round % 2 == 0) {
      through_coordinator.add(coordinator_run(*rt, dag));
      raw.add(raw_run(dag));
      replayed.add(replay_run(*rt, dag));
      planned.add(replay_run(*rt_plan, dag));
    } else {
      planned.add(replay_run(*rt_plan, dag));
      replayed.add(replay_run(*rt, dag));
      raw.add(raw_run(dag));
      through_coordinator.add(coordinator_run(*rt, dag));
    }
  }
  const double floor_s = static_cast<double>(n) * kernel_ns * 1e-9 / streams;
  auto ms = [](double s) { return fixed(s * 1e3, 2); };
  auto lo_hi = [&](const samples& x) {
    auto [lo, hi] = std::minmax_element(x.xs.begin(), x.xs.end());
    return ms(*lo) + "-" + ms(*hi);
  };
  table t({"path", "kernels", "ms (median)", "range", "kernels/s", "x the device floor"});
  t.add({"coordinator", std::to_string(n), ms(through_coordinator.median()),
         lo_hi(through_coordinator), fixed(n / through_coordinator.median(), 0),
         fixed(through_coordinator.median() / floor_s, 2)});
  t.add({"step replayed (CUDA graph)", std::to_string(n), ms(replayed.median()), lo_hi(replayed),
         fixed(n / replayed.median(), 0), fixed(replayed.median() / floor_s, 2)});
  t.add({"step replayed (plan)", std::to_string(n), ms(planned.median()), lo_hi(planned),
         fixed(n / planned.median(), 0), fixed(planned.median() / floor_s, 2)});
  t.add({"raw CUDA", std::to_string(n), ms(raw.median()), lo_hi(raw), fixed(n / raw.median(), 0),
         fixed(raw.median() / floor_s, 2)});
  t.add({"device floor", std::to_string(n), ms(floor_s), "-", fixed(n / floor_s, 0), "1.00"});
  t.add({"graph floor (longest chain)", std::to_string(n), ms(graph_floor.median()),
         lo_hi(graph_floor), fixed(n / graph_floor.median(), 0),
         fixed(graph_floor.median() / floor_s, 2)});
  std::printf(
      "dag_gpu_bench on %s: %zu kernels of %lld us, each after 0-3 of the 64 before it, "
      "%d streams, %d rounds\n",
      backend.c_str(), n, kernel_ns / 1000, streams, rounds);
  t.print("one DAG, submission to the last completion");

  json_line json;
  json.add("benchmark", std::string{"dag_gpu_bench"});
  json.add("backend", backend);
  json.add("quick", mode.quick);
  json.add("kernels", static_cast<double>(n));
  json.add("coordinator_ms", through_coordinator.median() * 1e3);
  json.add("raw_ms", raw.median() * 1e3);
  json.add("floor_ms", floor_s * 1e3);
  json.add("coordinator_over_raw", through_coordinator.median() / raw.median());
  json.add("replay_ms", replayed.median() * 1e3);
  json.add("replay_over_raw", replayed.median() / raw.median());
  json.add("replay_over_floor", replayed.median() / floor_s);
  json.add("graph_floor_ms", graph_floor.median() * 1e3);
  json.add("replay_over_graph_floor", replayed.median() / graph_floor.median());
  json.add("replay_plan_ms", planned.median() * 1e3);
  json.add("replay_plan_over_raw", planned.median() / raw.median());
  json.print();
  return 0;
}
