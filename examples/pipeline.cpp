// examples/pipeline.cpp
//
// The classic stream pipeline: data cut into chunks, each chunk copied host -> device,
// computed on, copied device -> host. The chunks are independent, so with several streams
// one chunk's copy overlaps another's compute. The same graph runs twice, on a coordinator
// with one stream and on one with three, and the example prints the speedup.
//
// The program states no dependency. Each operation declares the buffers it reads and writes
// (docs/buffers.md): copy in reads its chunk of the pinned input and writes the chunk's
// device buffer x, compute reads x and writes y, copy out reads y and writes its chunk of the
// pinned output. The coordinator infers the order from those uses (copy in, then compute,
// then copy out, per chunk; the chunks are disjoint ranges, so they do not order each other),
// places each operation on whichever stream it picks and makes them wait for each other on
// the device. The device buffers are allocated through the coordinator in a stream's order
// and released after their last use; the pinned host memory is the program's, adopted.
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

#include "cudactor/actors/runtime.hpp"
#include "cudactor/facade/coordinator.hpp"
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

op_spec operation(op_type type, op_workload workload, std::string name,
                  std::vector<buffer_use> uses, gpu::work_fn fn) {
  op_spec s;
  s.type = type;
  s.workload = workload;
  s.description = std::move(name);
  s.uses = std::move(uses);
  s.body = work::local(std::move(fn));
  return s;
}

// The device buffers of every chunk and the two adopted pinned host buffers, released
// through the coordinator when the run is over: each release comes after the buffer's last
// use, and the memory goes back (the pinned memory: is the program's again) once it ended.
struct pipeline_buffers {
  buffer_handle in, out;
  std::vector<buffer_handle> x, y;

  void release(const coordinator& c) {
    std::vector<op_id> releases;
    auto one = [&](const buffer_handle& b) {
      if (!b.id.empty()) releases.push_back(c.release(b.id).get());
    };
    one(in);
    one(out);
    for (const auto& b : x) one(b);
    for (const auto& b : y) one(b);
    for (op_id r : releases) c.on_end(r).get();
  }
};

// The graph of one attempt: three operations per chunk, ordered by their declared uses.
graph_spec pipeline_graph(const pipeline_buffers& b, std::size_t n, std::size_t rounds) {
  const std::size_t bytes = n * sizeof(float);
  graph_spec g;
  for (std::size_t c = 0; c < b.x.size(); ++c) {
    float* dx = b.x[c].as<float>();
    float* dy = b.y[c].as<float>();
    const float* src = b.in.as<float>() + c * n;
    float* dst = b.out.as<float>() + c * n;
    g.add(
        operation(op_type::memory_transfer, op_workload::memory, "copy in",
                  {buffer_use::read(b.in.id, c * bytes, bytes), buffer_use::write(b.x[c].id)},
                  [=](const gpu::launch_context& ctx) { return demo::copy(ctx, dx, src, bytes); }));
    g.add(operation(op_type::kernel, op_workload::compute, "compute",
                    {buffer_use::read(b.x[c].id), buffer_use::write(b.y[c].id)},
                    [=](const gpu::launch_context& ctx) {
                      auto s = demo::scale(ctx, dy, dx, 1.0f, n);
                      for (std::size_t r = 0; s && r < rounds; ++r) {
                        s = demo::axpy(ctx, dy, 0.5f, dx, n);
                      }
                      return s;
                    }));
    g.add(
        operation(op_type::memory_transfer, op_workload::memory, "copy out",
                  {buffer_use::read(b.y[c].id), buffer_use::write(b.out.id, c * bytes, bytes)},
                  [=](const gpu::launch_context& ctx) { return demo::copy(ctx, dst, dy, bytes); }));
  }
  return g;
}

// The fastest of `repeat` attempts, in seconds; the result of the last one in `result`, how
// many dependencies the coordinator inferred in the first in `first_inferred`. Throws
// cudactor::failure when a request is refused or an operation does not complete.
double attempts(const coordinator& c, const pipeline_config& config, pipeline_buffers& b,
                std::vector<float>& result, std::size_t& first_inferred) {
  const std::size_t n = config.width;
  float* host_in = b.in.as<float>();
  for (std::size_t i = 0; i < config.chunks * n; ++i) host_in[i] = input_value(i);
  double best = -1;
  for (std::size_t attempt = 0; attempt < config.repeat; ++attempt) {
    graph_spec g = pipeline_graph(b, n, config.rounds);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<op_notice> ends = c.run(std::move(g)).get();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::size_t inferred = 0;
    for (const auto& e : ends) {
      if (e.state != op_state::completed) throw failure{e.cause};
      inferred += e.inferred.size();
    }
    if (attempt == 0) first_inferred = inferred;
    if (best < 0 || seconds < best) best = seconds;
  }
  const float* host_out = b.out.as<float>();
  result.assign(host_out, host_out + config.chunks * n);
  return best;
}

// One run of the whole pipeline on a runtime whose coordinator has `streams` streams; the
// wall time of the fastest attempt from submit to the last copy out, or a negative value
// after printing why not.
double run(const std::vector<std::string>& command_line, std::size_t streams,
           std::vector<float>& result, std::size_t& inferred) {
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
  const std::size_t bytes = config.width * sizeof(float);
  double best = -1;
  {
    // Pinned host memory for the copies, the program's own: adopted. Device memory per
    // chunk, allocated by the coordinator in the order of a stream it picks.
    auto in = device.allocate_pinned(config.chunks * bytes);
    auto out = device.allocate_pinned(config.chunks * bytes);
    coordinator c{rt};
    pipeline_buffers b;
    try {
      if (!in || !out) {
        throw failure{errc::out_of_memory, "no pinned memory for " +
                                               std::to_string(2 * config.chunks * bytes) +
                                               " bytes of input and output"};
      }
      b.in = c.adopt(in.value().data(), in.value().size()).get();
      b.out = c.adopt(out.value().data(), out.value().size()).get();
      for (std::size_t k = 0; k < config.chunks; ++k) {
        b.x.push_back(c.allocate(bytes).get());
        b.y.push_back(c.allocate(bytes).get());
      }
      best = attempts(c, config, b, result, inferred);
    } catch (const failure& f) {
      std::fprintf(stderr, "pipeline: %s\n", f.what());
      best = -1;
    }
    try {
      b.release(c);  // before the pinned memory goes, with the runtime still up
    } catch (const failure& f) {
      std::fprintf(stderr, "pipeline: release: %s\n", f.what());
      best = -1;
    }
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
  std::size_t one_inferred = 0, three_inferred = 0;
  const double one = run(command_line, 1, one_result, one_inferred);
  const double three = run(command_line, 3, three_result, three_inferred);
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
  // Copy in -> compute -> copy out per chunk: two per chunk, none stated by the program.
  std::printf("dependencies inferred from declared buffer uses: %zu (1 stream), %zu (3 streams)\n",
              one_inferred, three_inferred);
  std::printf("result: sum %.3f over %zu values; %s\n", sum, one_result.size(),
              wrong == 0
                  ? "every value equals the host reference"
                  : (std::to_string(wrong) + " values differ from the host reference").c_str());
  return wrong == 0 ? 0 : 1;
}
