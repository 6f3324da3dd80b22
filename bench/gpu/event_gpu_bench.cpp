// bench/gpu/event_gpu_bench.cpp
//
// What one use of a CUDA event costs, on a CUDA device, three ways in the same run:
//   raw CUDA      cudaEventCreateWithFlags + cudaEventRecord + cudaEventDestroy per use, the
//                 baseline the event pool exists to beat;
//   device layer  the same through cudactor's backend (create_event, record, the event's
//                 destructor): what the handle tables add;
//   stream actor  record_atom on a stream actor, which records an event it leased from the
//                 event pool actor in batches (no timeline point: the record is answered
//                 once recorded), the events released back in batches of 64: the path
//                 actors use, messaging included, 64 requests in flight (all 64 sent, then
//                 their answers taken);
//   batched       one record_atom message asking for 64 events, then their release.
// Every path records on an idle stream, so the device never holds a record up.
//
//   event_gpu_bench --backend=cuda [--quick] [-- runtime options]
// Prints a table, then one JSON object on the last line.
#include <caf/all.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "common/gpu_mode.hpp"
#include "common/report.hpp"
#include "common/start_runtime.hpp"
#include "gpu/bench_kernels.hpp"

using namespace cudactor;
using namespace cudactor::bench;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "event_gpu_bench: %s\n", what.c_str());
  std::exit(1);
}

constexpr std::uint32_t window = 64;

// Nanoseconds per use.
double raw_uses(gpu::backend& device, gpu::stream_ref s, int uses) {
  auto native = device.native_handle(s);
  if (!native.ok()) fail("native stream: " + native.error().to_string());
  int error = 0;
  const long long ns = kernels::raw_event_churn(native.value(), uses, &error);
  if (ns < 0) fail("raw events: " + kernels::error_name(error));
  return static_cast<double>(ns) / uses;
}

double layer_uses(gpu::backend& device, gpu::stream_ref s, int uses) {
  const auto started = now_ns();
  for (int i = 0; i < uses; ++i) {
    auto e = device.create_event(gpu::event_kind::regular);
    if (!e.ok()) fail("create_event: " + e.error().to_string());
    if (auto st = device.record(e.value(), s); !st.ok()) fail("record: " + st.to_string());
  }  // each destroyed here
  return static_cast<double>(now_ns() - started) / uses;
}

// `batched`: one message for the window's events; else one request per event, the window's
// requests all sent before the first answer is taken.
double actor_uses(runtime& rt, int uses, bool batched) {
  caf::scoped_actor self{rt.system()};
  const auto stream = rt.stream(0);
  const auto on_error = [&](caf::error& err) { fail("record: " + rt.system().render(err)); };
  const auto started = now_ns();
  for (int done = 0; done < uses;) {
    const auto batch = std::min<int>(window, uses - done);
    std::vector<event_lease> leased;
    leased.reserve(static_cast<std::size_t>(batch));
    if (batched) {
      self->request(stream, std::chrono::seconds{10}, record_atom::value,
                    gpu::event_kind::regular, static_cast<std::uint32_t>(batch))
          .receive([&](std::vector<event_lease>& es) { leased = std::move(es); }, on_error);
    } else {
      using handle = decltype(self->request(stream, std::chrono::seconds{10}, record_atom::value,
                                            gpu::event_kind::regular));
      std::vector<handle> asked;
      asked.reserve(static_cast<std::size_t>(batch));
      for (int i = 0; i < batch; ++i) {
        asked.push_back(self->request(stream, std::chrono::seconds{10}, record_atom::value,
                                      gpu::event_kind::regular));
      }
      for (auto& h : asked) h.receive([&](event_lease& e) { leased.push_back(e); }, on_error);
    }
    self->request(rt.event_pool(), std::chrono::seconds{10}, release_atom::value, std::move(leased))
        .receive([] {}, [&](caf::error& err) { fail("release: " + rt.system().render(err)); });
    done += batch;
  }
  return static_cast<double>(now_ns() - started) / uses;
}

}  // namespace

int main(int argc, char** argv) {
  const auto mode = parse_gpu_mode(argc, argv);
  const int uses = mode.quick ? 20'000 : 200'000;
  const int rounds = mode.quick ? 3 : 5;
  runtime_config config;
  auto rt = start_cuda_runtime(config, {"--cudactor.streams=1"}, mode.passed_on);
  auto& device = rt->device();
  auto own = device.create_stream(gpu::stream_options{"event-bench", gpu::stream_priority::normal});
  if (!own.ok()) fail("create_stream: " + own.error().to_string());
  const gpu::stream_ref s = own.value();

  samples raw, layer, actor, batched;
  raw_uses(device, s, uses / 10);  // warm-up
  layer_uses(device, s, uses / 10);
  actor_uses(*rt, uses / 10, false);
  actor_uses(*rt, uses / 10, true);
  for (int round = 0; round < rounds; ++round) {
    raw.add(raw_uses(device, s, uses));
    layer.add(layer_uses(device, s, uses));
    actor.add(actor_uses(*rt, uses, false));
    batched.add(actor_uses(*rt, uses, true));
  }
  if (auto st = device.synchronize(s); !st.ok()) fail("synchronize: " + st.to_string());

  table t({"path", "uses", "ns per use (median)", "x raw"});
  t.add({"raw CUDA create/record/destroy", std::to_string(uses), fixed(raw.median()), "1.00"});
  t.add({"device layer create/record/destroy", std::to_string(uses), fixed(layer.median()),
         fixed(layer.median() / raw.median(), 2)});
  t.add({"stream actor record (pooled), 64 in flight", std::to_string(uses),
         fixed(actor.median()), fixed(actor.median() / raw.median(), 2)});
  t.add({"stream actor, 64 records per message", std::to_string(uses), fixed(batched.median()),
         fixed(batched.median() / raw.median(), 2)});
  std::printf("event_gpu_bench on %s, %d rounds\n", rt->backend_reason().c_str(), rounds);
  t.print("one event use");

  json_line json;
  json.add("benchmark", std::string{"event_gpu_bench"});
  json.add("backend", rt->backend_reason());
  json.add("quick", mode.quick);
  json.add("raw_ns_per_use", raw.median());
  json.add("layer_ns_per_use", layer.median());
  json.add("actor_ns_per_use", actor.median());
  json.add("actor_over_raw", actor.median() / raw.median());
  json.add("batched_ns_per_use", batched.median());
  json.add("batched_over_raw", batched.median() / raw.median());
  json.print();
  return 0;
}
