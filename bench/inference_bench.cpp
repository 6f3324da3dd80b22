// bench/inference_bench.cpp
//
// Buffer inference at its bounds (docs/buffers.md#bounds): what a graph of legal buffer uses
// costs the coordinator to register, up to the limits coordinator_options sets, and how fast
// a graph past them is refused. Host backend, 2 streams, every operation a no-op.
//
//  - interleaved writes: W operations, each writing 64 one-byte ranges of one buffer of 64 W
//    bytes, interleaved (op i writes bytes i, W + i, 2 W + i, ...), no explicit edge: every
//    byte its own history segment, 64 W of them. The attack (55 s to register at
//    W = 8192 on a sorted vector of segments). Rows at W = 1/8, 1/4, 1/2 and all of the
//    largest W that max-buffer-segments admits (1x, 2x, 4x, 8x): registration time (submit
//    -> ids answered) and time per use, whose ratio to 1x's shows whether it is linear.
//  - past the segment bound: the same at W = 1.25 times that largest, refused naming
//    max-buffer-segments; time to the refusal.
//  - whole-buffer reads after the largest interleaved writes: each read covers every
//    segment and depends on every writer; refused by max-covered-segments (the 1024
//    writes and 1024 reads took 26 s and 1.65 GB); time to the refusal.
#include <caf/all.hpp>

#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "common/end_counter.hpp"
#include "common/host_runs.hpp"
#include "common/report.hpp"
#include "cudactor/actors/coordinator.hpp"
#include "cudactor/actors/runtime.hpp"
#include "cudactor/messaging/errc.hpp"

using namespace cudactor;
using bench::count_state;
using bench::counter;
using bench::now_ns;
using bench::samples;

namespace {

constexpr std::size_t uses_per_op = 64;

op_spec noop_spec() {
  op_spec s;
  s.body = work::local([](const gpu::launch_context&) { return gpu::status{}; });
  return s;
}

buffer_id allocate(runtime& rt, std::uint64_t bytes) {
  caf::scoped_actor self{rt.system()};
  buffer_id out;
  self->request(rt.coordinator(), caf::infinite, alloc_atom::value, bytes)
      .receive([&](const buffer_handle& h) { out = h.id; },
               [](caf::error& why) {
                 std::fprintf(stderr, "alloc: %s\n", describe(why).c_str());
                 std::exit(1);
               });
  return out;
}

// W operations writing 64 interleaved bytes each of `buffer` (64 W bytes), then `reads`
// operations reading all of it.
graph_spec interleaved(buffer_id buffer, std::size_t w, std::size_t reads) {
  graph_spec g;
  g.ops.reserve(w + reads);
  for (std::size_t i = 0; i < w; ++i) {
    op_spec s = noop_spec();
    s.uses.reserve(uses_per_op);
    for (std::size_t j = 0; j < uses_per_op; ++j) {
      s.uses.push_back(buffer_use{buffer, buffer_access::write, j * w + i, 1});
    }
    g.add(std::move(s));
  }
  for (std::size_t r = 0; r < reads; ++r) {
    op_spec s = noop_spec();
    s.uses.push_back(buffer_use{buffer, buffer_access::read, 0, 0});
    g.add(std::move(s));
  }
  return g;
}

struct submitted {
  double register_ms = 0;  // submit sent -> ids or refusal answered
  caf::error refusal;
};

// Submits `g`; once registered, waits for every operation to complete.
submitted submit(runtime& rt, graph_spec g) {
  const std::size_t n = g.ops.size();
  auto st = std::make_shared<count_state>();
  st->expected = n;
  auto done = st->done.get_future();
  auto listener = rt.system().spawn(counter, st);
  caf::scoped_actor self{rt.system()};
  submitted out;
  const auto start = now_ns();
  self->request(rt.coordinator(), caf::infinite, submit_atom::value, std::move(g), listener)
      .receive([](const std::vector<op_id>&) {}, [&](caf::error& why) { out.refusal = why; });
  out.register_ms = static_cast<double>(now_ns() - start) * 1e-6;
  if (!out.refusal) {
    done.wait();
    if (st->not_completed != 0) {
      std::fprintf(stderr, "%llu operations did not complete\n",
                   static_cast<unsigned long long>(st->not_completed));
      std::exit(1);
    }
  }
  caf::anon_send_exit(listener, caf::exit_reason::user_shutdown);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const auto mode = bench::run_mode::parse(argc, argv);
  const int rounds = mode.quick ? 3 : 7;
  runtime_config config;
  auto rt = bench::start_runtime(config, {"--cudactor.streams=2"}, mode.passed_on);
  const coordinator_options bounds;  // the shipped defaults (options after "--" aside)
  // The largest W whose last operation still fits: 64 (W - 1) + 65 segments before it, and
  // room for two per use of it. A multiple of 8, so that the rows divide it evenly.
  const std::size_t most =
      ((bounds.max_buffer_segments - 1 - 2 * uses_per_op - 1) / uses_per_op + 1) / 8 * 8;
  const std::size_t sizes[] = {most / 8, most / 4, most / 2, most};
  std::vector<samples> per_size(4);
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t k = 0; k < 4; ++k) {
      const std::size_t w = sizes[k];
      const buffer_id b = allocate(*rt, w * uses_per_op);
      const submitted s = submit(*rt, interleaved(b, w, 0));
      if (s.refusal) {
        std::fprintf(stderr, "W=%zu refused: %s\n", w, describe(s.refusal).c_str());
        return 1;
      }
      per_size[k].add(s.register_ms);
    }
  }
  // Refusals: once each is enough to time (they end early by design).
  const std::size_t past = most + most / 4;
  const submitted too_many = submit(*rt, interleaved(allocate(*rt, past * uses_per_op), past, 0));
  const submitted reads = submit(*rt, interleaved(allocate(*rt, most * uses_per_op), most, 1024));
  if (!too_many.refusal || !reads.refusal) {
    std::fprintf(stderr, "a graph past the bounds was registered\n");
    return 1;
  }

  bench::table t{{"graph", "ops", "uses", "register ms (median)", "us per use", "per use / 1x"}};
  const double base = per_size[0].median() * 1e3 / static_cast<double>(sizes[0] * uses_per_op);
  double ratio_8x = 0;
  const char* names[] = {"interleaved writes 1x", "interleaved writes 2x", "interleaved writes 4x",
                         "interleaved writes 8x"};
  for (std::size_t k = 0; k < 4; ++k) {
    const double uses = static_cast<double>(sizes[k] * uses_per_op);
    const double per_use = per_size[k].median() * 1e3 / uses;
    if (k == 3) ratio_8x = per_use / base;
    t.add({names[k], std::to_string(sizes[k]), std::to_string(sizes[k] * uses_per_op),
           bench::fixed(per_size[k].median(), 1), bench::fixed(per_use, 3),
           bench::fixed(per_use / base, 2)});
  }
  t.add({"past max-buffer-segments (refused)", std::to_string(past),
         std::to_string(past * uses_per_op), bench::fixed(too_many.register_ms, 1), "-", "-"});
  t.add({"then 1024 whole-buffer reads (refused)", std::to_string(most + 1024),
         std::to_string(most * uses_per_op + 1024), bench::fixed(reads.register_ms, 1), "-", "-"});
  t.print("buffer inference at its bounds (host backend; registration = submit -> ids)");
  std::printf("refusals:\n  %s\n  %s\n", describe(too_many.refusal).c_str(),
              describe(reads.refusal).c_str());

  bench::json_line out;
  out.add("bench", std::string{"inference"});
  out.add("backend", rt->backend_reason());
  out.add("max_buffer_segments", static_cast<double>(bounds.max_buffer_segments));
  out.add("largest_ops", static_cast<double>(most));
  for (std::size_t k = 0; k < 4; ++k) {
    out.add("register_ms_" + std::to_string(1u << k) + "x", per_size[k].median());
  }
  out.add("per_use_8x_over_1x", ratio_8x);
  out.add("refused_past_segments_ms", too_many.register_ms);
  out.add("refused_reads_ms", reads.register_ms);
  out.print();
  return 0;
}
