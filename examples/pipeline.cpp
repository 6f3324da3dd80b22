// examples/pipeline.cpp
//
// The classic stream pipeline: data cut into chunks, each chunk copied host -> device,
// computed on, copied device -> host. The chunks are independent, so with several streams
// one chunk's copy overlaps another's compute. The same graph runs twice, on a coordinator
// with one stream and on one with three, and the example prints the speedup. The coordinator
// places each chunk's three operations (copy in, compute, copy out) on whichever stream it
// picks and makes them wait for each other on the device; the program only states the
// dependencies.
//
// The compute is the shared demo kernels (demo/kernels.hpp): CUDA kernels when the toolkit
// was found, host loops otherwise, the same floats on both. The output is checked against the
// same arithmetic done here on the host, bit for bit.
//
//   build/examples/pipeline                       # 16 chunks of 256k floats, 24 rounds
//   build/examples/pipeline --chunks=8 --width=65536 --rounds=8 --cudactor.backend=host
#include <caf/all.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cudactor/actors/client.hpp"
#include "cudactor/actors/runtime.hpp"
#include "kernels.hpp"

using namespace cudactor;

namespace {

class pipeline_config : public runtime_config {
 public:
  pipeline_config() {
    opt_group{custom_options_, "global"}
        .add(chunks, "chunks", "independent chunks of the data")
        .add(width, "width", "floats per chunk")
        .add(rounds, "rounds", "axpy rounds of the compute step per chunk")
        .add(repeat, "repeat", "runs per stream count (the fastest is reported)");
  }
  std::size_t chunks = 16;
  std::size_t width = std::size_t{1} << 18;
  std::size_t rounds = 24;
  std::size_t repeat = 3;
};

// The compute step: y = x, then `rounds` times y = y + 0.5 x. Plain float arithmetic in a
// fixed order, so the host loop below gives the same bits.
float expected(float x, std::size_t rounds) {
  float y = x;
  for (std::size_t r = 0; r < rounds; ++r) y = y + 0.5f * x;
  return y;
}

float input_value(std::size_t i) { return static_cast<float>(i % 1024) / 256.0f - 2.0f; }

op_spec operation(op_type type, op_workload workload, std::string name, gpu::work_fn fn) {
  op_spec s;
  s.type = type;
  s.workload = workload;
  s.description = std::move(name);
  s.body = work::local(std::move(fn));
  return s;
}

// One run of the whole pipeline on a runtime whose coordinator has `streams` streams; the
// wall time of the fastest attempt from submit to the last copy out, or a negative value
// after printing why not.
double run(const std::vector<std::string>& command_line, std::size_t streams,
           std::vector<float>& result) {
  // The command line, then this run's stream count, all at one priority, and no metrics
  // endpoint (CAF takes the last value given).
  std::vector<std::string> args = command_line;
  for (std::string o : {"--cudactor.streams=" + std::to_string(streams),
                        std::string{"--cudactor.high-priority-streams=0"},
                        std::string{"--cudactor.low-priority-streams=0"},
                        std::string{"--cudactor.metrics.no-exposer"}}) {
    args.push_back(std::move(o));
  }
  pipeline_config config;
  if (auto err = config.parse(args)) {
    std::fprintf(stderr, "pipeline: %s\n", cudactor::describe(err).c_str());
    return -1;
  }
  auto started = runtime::start(config);
  if (!started) {
    std::fprintf(stderr, "pipeline: %s\n", started.error().to_string().c_str());
    return -1;
  }
  auto& rt = *started.value();
  gpu::backend& device = rt.device();
  const std::size_t n = config.width;
  const std::size_t bytes = n * sizeof(float);
  double best = -1;
  {
    // Pinned host memory for the copies, device memory (managed) per chunk.
    auto in = device.allocate_pinned(config.chunks * bytes);
    auto out = device.allocate_pinned(config.chunks * bytes);
    std::vector<gpu::buffer> x, y;
    for (std::size_t c = 0; c < config.chunks && in && out; ++c) {
      auto bx = device.allocate_managed(bytes);
      auto by = device.allocate_managed(bytes);
      if (!bx || !by) break;
      x.push_back(std::move(bx.value()));
      y.push_back(std::move(by.value()));
    }
    if (!in || !out || x.size() != config.chunks) {
      std::fprintf(stderr, "pipeline: out of memory for %zu chunks of %zu floats\n", config.chunks,
                   n);
      config.repeat = 0;  // nothing runs; the buffers go before the runtime shuts down
    }
    float* host_in = config.repeat != 0 ? in.value().as<float>() : nullptr;
    float* host_out = config.repeat != 0 ? out.value().as<float>() : nullptr;
    for (std::size_t i = 0; host_in != nullptr && i < config.chunks * n; ++i) {
      host_in[i] = input_value(i);
    }

    client control{rt};
    for (std::size_t attempt = 0; attempt < config.repeat; ++attempt) {
      graph_spec g;
      for (std::size_t c = 0; c < config.chunks; ++c) {
        float* dx = x[c].as<float>();
        float* dy = y[c].as<float>();
        const float* src = host_in + c * n;
        float* dst = host_out + c * n;
        const std::size_t rounds = config.rounds;
        const auto copy_in = g.add(operation(
            op_type::memory_transfer, op_workload::memory, "copy in",
            [=](const gpu::launch_context& ctx) { return demo::copy(ctx, dx, src, bytes); }));
        const auto compute = g.add(operation(op_type::kernel, op_workload::compute, "compute",
                                             [=](const gpu::launch_context& ctx) {
                                               auto s = demo::scale(ctx, dy, dx, 1.0f, n);
                                               for (std::size_t r = 0; s && r < rounds; ++r) {
                                                 s = demo::axpy(ctx, dy, 0.5f, dx, n);
                                               }
                                               return s;
                                             }),
                                   {copy_in});
        g.add(operation(
                  op_type::memory_transfer, op_workload::memory, "copy out",
                  [=](const gpu::launch_context& ctx) { return demo::copy(ctx, dst, dy, bytes); }),
              {compute});
      }
      const auto start = std::chrono::steady_clock::now();
      const std::vector<op_notice> ends = control.submit(std::move(g)).get();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!all_completed(ends)) {
        for (const auto& e : ends) {
          if (e.state != op_state::completed) {
            std::fprintf(stderr, "pipeline: an operation did not complete: %s\n",
                         rt.system().render(e.cause).c_str());
            break;
          }
        }
        best = -1;
        break;
      }
      if (best < 0 || seconds < best) best = seconds;
    }
    if (best >= 0) result.assign(host_out, host_out + config.chunks * n);
  }
  runtime::release_calling_thread();
  rt.shutdown();
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  pipeline_config config;
  if (auto err = config.parse(argc, argv)) {
    std::fprintf(stderr, "pipeline: %s\n", cudactor::describe(err).c_str());
    return 2;
  }
  if (config.cli_helptext_printed) return 0;
  if (config.chunks == 0 || config.width == 0 || config.repeat == 0) {
    std::fprintf(stderr, "pipeline: --chunks, --width and --repeat must be at least 1\n");
    return 2;
  }
  std::printf("pipeline: %zu chunks of %zu floats, copy in / %zu compute rounds / copy out\n",
              config.chunks, config.width, config.rounds);

  const std::vector<std::string> command_line(argv + 1, argv + argc);
  std::vector<float> one_result, three_result;
  const double one = run(command_line, 1, one_result);
  const double three = run(command_line, 3, three_result);
  if (one < 0 || three < 0) return 1;

  // Every output value against the host's arithmetic; and their sum, to print.
  std::size_t wrong = 0;
  double sum = 0;
  for (std::size_t i = 0; i < one_result.size(); ++i) {
    const float want = expected(input_value(i), config.rounds);
    if (one_result[i] != want || three_result[i] != want) ++wrong;
    sum += three_result[i];
  }
  std::printf("%-10s %12s\n", "streams", "wall ms");
  std::printf("%-10d %12.2f\n", 1, one * 1e3);
  std::printf("%-10d %12.2f\n", 3, three * 1e3);
  std::printf("speedup of 3 streams over 1: %.2fx\n", one / three);
  std::printf("result: sum %.3f over %zu values; %s\n", sum, one_result.size(),
              wrong == 0
                  ? "every value equals the host reference"
                  : (std::to_string(wrong) + " values differ from the host reference").c_str());
  return wrong == 0 ? 0 : 1;
}
