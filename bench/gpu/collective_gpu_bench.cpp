// bench/gpu/collective_gpu_bench.cpp
//
// What an NCCL all-reduce costs through cudactor, against NCCL called directly by the same
// process in the same run, on one CUDA device (one rank: the machine has one GPU, and NCCL
// takes one rank per GPU; a one-rank all-reduce from one buffer to another is NCCL's launch
// path and a device copy, so what cudactor adds per collective shows, while the wire's time
// does not; in place, NCCL skips even the copy). Two shapes:
//   single     one all-reduce at a time: direct, the call then cudaStreamSynchronize;
//              through cudactor, coordinator::run of one collective operation (registered,
//              dispatched to the stream actor, launched by the communicator, its end seen by
//              the poller) until the notice is back. p50 of each.
//   pipelined  `rounds` all-reduces back to back: direct, enqueued then one synchronize;
//              through cudactor, one graph of them (ordered by the communicator and the
//              buffer), submission to the last notice. Microseconds per all-reduce.
// Sum of floats, out of place, 4 KiB to 16 MiB (64 MiB without --quick); the two sides alternate
// three times per size and the median of each side's figure is reported.
//
//   collective_gpu_bench --backend=cuda [--quick] [-- runtime options]
// Prints a table, then one JSON object on the last line (keys cudactor_single_us_<size>,
// nccl_single_us_<size>, cudactor_pipelined_us_<size>, nccl_pipelined_us_<size>, and
// cudactor_dispatch_span_us_<size>: how long the pipelined graph took to reach its stream).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/gpu_mode.hpp"
#include "common/report.hpp"
#include "common/start_runtime.hpp"
#include "cudactor/facade/coordinator.hpp"
#include "cudactor/gpu/nccl_communicator.hpp"
#include "gpu/raw_nccl.hpp"

using namespace cudactor;
using namespace cudactor::bench;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "collective_gpu_bench: %s\n", what.c_str());
  std::exit(1);
}

struct size_case {
  std::size_t bytes;
  const char* label;
  int single_rounds;
  int pipelined_rounds;
};

std::vector<size_case> sizes(bool quick) {
  std::vector<size_case> out{{4 << 10, "4kib", 200, 200},
                             {64 << 10, "64kib", 200, 200},
                             {1 << 20, "1mib", 100, 100},
                             {16 << 20, "16mib", 30, 30}};
  if (!quick) out.push_back({64 << 20, "64mib", 20, 20});
  return out;
}

op_spec all_reduce(buffer_id from, buffer_id to, std::size_t bytes) {
  op_collective x;
  x.communicator = "bench";
  x.kind = gpu::collective_kind::all_reduce;
  x.type = gpu::element_type::f32;
  x.op = gpu::reduce_op::sum;
  x.count = bytes / sizeof(float);
  x.send = from;
  x.recv = to;
  return op_spec::of(x, "all-reduce");
}

struct buffer_pair {
  buffer_id send, recv;
};

void check(const op_notice& n, runtime& rt) {
  if (n.state != op_state::completed) fail("all-reduce: " + rt.system().render(n.cause));
}

std::vector<double> cudactor_single(const coordinator& c, runtime& rt, const buffer_pair& data,
                                    std::size_t bytes, int rounds) {
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(rounds));
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = now_ns();
    check(c.run(all_reduce(data.send, data.recv, bytes)).get(), rt);
    us.push_back(static_cast<double>(now_ns() - t0) / 1e3);
  }
  return us;
}

struct pipelined_run {
  double us_per_op = 0;
  // From the first all-reduce's dispatch to the last's: near zero when the graph went to the
  // stream in one pass, the whole run when each waited for the one before.
  double dispatch_span_us = 0;
};

pipelined_run cudactor_pipelined(const coordinator& c, runtime& rt, const buffer_pair& data,
                                 std::size_t bytes, int rounds) {
  graph_spec g;
  for (int i = 0; i < rounds; ++i) g.add(all_reduce(data.send, data.recv, bytes));
  const auto t0 = now_ns();
  const auto ends = c.run(std::move(g)).get();
  pipelined_run out;
  out.us_per_op = static_cast<double>(now_ns() - t0) / 1e3 / rounds;
  std::int64_t first = ends.front().dispatched_ns, last = first;
  for (const auto& n : ends) {
    check(n, rt);
    first = std::min(first, n.dispatched_ns);
    last = std::max(last, n.dispatched_ns);
  }
  out.dispatch_span_us = static_cast<double>(last - first) / 1e3;
  return out;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const auto mode = parse_gpu_mode(argc, argv);
  const auto cases = sizes(mode.quick);
  const std::size_t largest = cases.back().bytes;

  raw_nccl direct{largest};
  if (!direct.failure().empty()) fail("NCCL directly: " + direct.failure());

  runtime_config config;
  auto rt = start_cuda_runtime(config, {"--cudactor.streams=1"}, mode.passed_on);
  {
    const auto available = gpu::nccl_available();
    if (!available.ok()) fail(available.to_string());
    gpu::memory_store store;
    gpu::nccl_options o;
    o.name = "bench";
    auto made = gpu::make_nccl_communicator(o, store);
    if (!made) fail("communicator: " + made.error().to_string());
    if (auto err = rt->communicators().add(std::move(made.value()))) {
      fail("communicator: " + rt->system().render(err));
    }
  }
  coordinator c{*rt};
  const buffer_pair data{c.allocate(largest).get().id, c.allocate(largest).get().id};

  table t({"size", "shape", "rounds x 3", "NCCL us", "cudactor us", "ratio", "added us"});
  json_line json;
  json.add("benchmark", std::string{"collective_gpu_bench"});
  json.add("backend", rt->backend_reason());
  json.add("quick", mode.quick);
  // Warm-up: NCCL's first calls and cudactor's first operation pay one-off costs.
  (void)direct.single(4 << 10, 20);
  (void)cudactor_single(c, *rt, data, 4 << 10, 20);
  std::string dispatch_spans;
  for (const auto& sc : cases) {
    std::vector<double> nccl_single, ours_single, nccl_pipe, ours_pipe, spans;
    for (int alternation = 0; alternation < 3; ++alternation) {
      const auto d = direct.single(sc.bytes, sc.single_rounds);
      if (d.empty()) fail("NCCL directly: " + direct.failure());
      nccl_single.push_back(summarize_us(d).p50);
      ours_single.push_back(
          summarize_us(cudactor_single(c, *rt, data, sc.bytes, sc.single_rounds)).p50);
      const double p = direct.pipelined(sc.bytes, sc.pipelined_rounds);
      if (p < 0) fail("NCCL directly: " + direct.failure());
      nccl_pipe.push_back(p);
      const auto ours = cudactor_pipelined(c, *rt, data, sc.bytes, sc.pipelined_rounds);
      ours_pipe.push_back(ours.us_per_op);
      spans.push_back(ours.dispatch_span_us);
    }
    const auto row = [&](const char* shape, int rounds, double theirs, double ours) {
      t.add({sc.label, shape, std::to_string(rounds), fixed(theirs), fixed(ours),
             fixed(ours / theirs, 2), fixed(ours - theirs)});
      json.add(std::string{"nccl_"} + shape + "_us_" + sc.label, theirs);
      json.add(std::string{"cudactor_"} + shape + "_us_" + sc.label, ours);
    };
    row("single", sc.single_rounds, median(nccl_single), median(ours_single));
    row("pipelined", sc.pipelined_rounds, median(nccl_pipe), median(ours_pipe));
    json.add(std::string{"cudactor_dispatch_span_us_"} + sc.label, median(spans));
    dispatch_spans +=
        std::string{dispatch_spans.empty() ? "" : ", "} + sc.label + " " + fixed(median(spans));
  }
  (void)c.release(data.send).get();
  (void)c.release(data.recv).get();
  std::printf("collective_gpu_bench on %s: one rank\n", rt->backend_reason().c_str());
  t.print("all-reduce (sum, f32, out of place): NCCL called directly vs through cudactor");
  std::printf("pipelined graphs, first to last dispatch (us): %s\n", dispatch_spans.c_str());
  json.print();
  return 0;
}
