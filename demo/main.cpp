// demo/main.cpp — cudactor-demo
//
// cudactor doing its main job: a training-step control plane. Every step is one graph
// submitted to the coordinator (demo/training_step.hpp): the next batch copied in, forward
// and backward per layer, a gradient all-reduce per layer, the optimizer, a barrier, spread
// over the coordinator's priority streams. No operation states what it waits for: each
// declares the buffers it reads and writes (the model's memory, adopted by the coordinator),
// and the coordinator infers the order. The control plane is an ordinary loop using the
// cudactor::coordinator facade: it submits a step, learns of its end through a future,
// checks it, submits the next. A progress line runs meanwhile; metrics are served for Prometheus;
// at the end a summary table, and the weights checked against the same arithmetic on the host
// (non-finite weights fail it). SIGINT and SIGTERM end the run early with the same summary
// and a complete trace file. Latencies go to a histogram (bounded memory however long the
// run): its percentiles are bucket bounds, within 2.5% above the true value.
//
// --nodes=N trains data-parallel across N cudactor-node processes instead, with a real
// all-reduce of the gradients between them (demo/node_training.hpp): every node's weights
// must equal a single-process reference bit for bit.
//
//   cudactor-demo                      # the host backend, or the GPU when there is one
//   cudactor-demo --steps=50 --layers=4 --streams=4 --backend=host --metrics-port=0
//   cudactor-demo --nodes=4 --steps=8      # across 4 node processes
//   cudactor-demo --help
#include <caf/all.hpp>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "build_tree.hpp"
#include "cudactor/actors/runtime.hpp"
#include "cudactor/facade/coordinator.hpp"
#include "cudactor/facade/failure.hpp"
#include "cudactor/metrics/cells.hpp"
#include "kernels.hpp"
#include "node_training.hpp"
#include "training_step.hpp"

using namespace cudactor;

namespace {

volatile std::sig_atomic_t interrupted = 0;

class demo_config : public runtime_config {
 public:
  demo_config() {
    opt_group{custom_options_, "global"}
        .add(steps, "steps", "training steps to run (0: as many as fit in --duration)")
        .add(duration, "duration", "seconds to run when --steps is 0")
        .add(layers, "layers", "layers of the model")
        .add(replicas, "replicas", "data-parallel replicas whose gradients are all-reduced (1-8)")
        .add(width, "width", "floats per layer")
        .add(streams, "streams", "streams (shorthand for cudactor.streams)")
        .add(backend, "backend", "auto, host or cuda (shorthand for cudactor.backend)")
        .add(metrics_port, "metrics-port",
             "serve metrics on 127.0.0.1:PORT; 0: off (shorthand for cudactor.metrics.*)")
        .add(trace, "trace",
             "write every operation as Chrome trace-event JSON to FILE (shorthand for "
             "cudactor.coordinator.trace; timing on)")
        .add(learning_rate, "learning-rate", "the optimizer's step size")
        .add(quiet, "quiet", "no progress line")
        .add(no_replay, "no-replay",
             "submit every step as a graph (by default the third step on replays the step "
             "recorded once per batch buffer: docs/replay.md)")
        .add(nodes, "nodes",
             "train data-parallel across this many cudactor-node processes instead (0: in "
             "this process)")
        .add(node_program, "node-program", "the cudactor-node --nodes starts");
  }
  std::size_t steps = 0;
  std::size_t duration = 15;
  std::size_t layers = 8;
  std::size_t replicas = 4;
  std::size_t width = std::size_t{1} << 16;
  std::size_t streams = 6;
  std::string backend = "auto";
  std::size_t metrics_port = 9464;
  std::string trace;
  double learning_rate = 0.01;
  bool quiet = false;
  bool no_replay = false;
  std::size_t nodes = 0;
  std::string node_program;
};

// Whether the command line asks for --nodes (the network must be on before it is parsed).
bool wants_nodes(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--nodes=", 8) == 0 && std::strcmp(argv[i], "--nodes=0") != 0) {
      return true;
    }
  }
  return false;
}

// --nodes: the same training's idea across node processes, checked bit for bit.
int run_on_nodes(demo_config& config, const char* argv0) {
  demo::node_training_options o;
  o.name = "cudactor-demo";
  o.nodes = config.nodes;
  o.steps = config.steps != 0 ? config.steps : 10;
  o.width = config.width;
  o.step_us = 2000;
  o.backend = config.backend;
  o.replay = !config.no_replay;
  // The one beside the demo (an install), else where a build tree keeps it relative to the
  // demo (a build moved elsewhere, as the GPU bundle is), else the one this build made.
  const auto here = std::filesystem::path{argv0}.parent_path();
  const auto beside = here / "cudactor-node";
  const auto in_tree = here / ".." / "node" / "cudactor-node";
  o.program = !config.node_program.empty()       ? config.node_program
              : std::filesystem::exists(beside)  ? beside.string()
              : std::filesystem::exists(in_tree) ? in_tree.string()
                                                 : std::string{cudactor::build_tree::node_program()};
  caf::actor_system system{config};
  return demo::run_node_training(system, o);
}

// 100 ns to 1000 s in steps of 2.5%: about 930 buckets, fine enough for a percentile and the
// same memory after a minute or a week.
metrics::bucket_bounds fine_latency_buckets() {
  std::vector<double> seconds;
  for (double s = 1e-7; s < 1e3; s *= 1.025) seconds.push_back(s);
  return metrics::buckets_in_seconds(seconds);
}

double percentile(const metrics::duration_histogram& h, double q) {
  return static_cast<double>(h.quantile_bound(q).count());
}

// Quantile of a Prometheus histogram, as the upper bound of the bucket it falls in.
double histogram_quantile(const prometheus::ClientMetric::Histogram& h, double q) {
  const double rank = q * static_cast<double>(h.sample_count);
  for (const auto& b : h.bucket) {
    if (static_cast<double>(b.cumulative_count) >= rank && b.cumulative_count > 0) {
      return b.upper_bound;
    }
  }
  return 0;
}

std::string us(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", ns / 1e3);
  return buf;
}

// The demo's defaults, then the command line, then the shorthands spelled out as the
// runtime's own options (CAF takes the last value given).
std::vector<std::string> arguments(int argc, char** argv) {
  std::vector<std::string> out{"--cudactor.streams=6", "--cudactor.high-priority-streams=1",
                               "--cudactor.low-priority-streams=1"};
  std::vector<std::string> spelled;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    out.push_back(a);
    auto value_of = [&](const std::string& name) -> std::optional<std::string> {
      const std::string prefix = "--" + name + "=";
      if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
      return std::nullopt;
    };
    if (auto v = value_of("streams")) {
      spelled.push_back("--cudactor.streams=" + *v);
      if (*v == "1" || *v == "2") spelled.push_back("--cudactor.low-priority-streams=0");
      if (*v == "1") spelled.push_back("--cudactor.high-priority-streams=0");
    } else if (auto b = value_of("backend")) {
      spelled.push_back("--cudactor.backend=" + *b);
    } else if (auto t = value_of("trace")) {
      spelled.push_back("--cudactor.coordinator.trace=" + *t);
    } else if (auto p = value_of("metrics-port")) {
      spelled.push_back(*p == "0" ? "--cudactor.metrics.no-exposer"
                                  : "--cudactor.metrics.port=" + *p);
    }
  }
  out.insert(out.end(), spelled.begin(), spelled.end());
  return out;
}

// The coordinator's profile (report_atom): per stream, then per operation name.
void print_report(runtime& rt, double wall_s) {
  std::optional<coordinator_report> report;
  {
    caf::scoped_actor self{rt.system()};
    self->request(rt.coordinator(), std::chrono::seconds{10}, report_atom::value)
        .receive([&](coordinator_report& r) { report = std::move(r); },
                 [&](caf::error& err) {
                   std::printf("\nno report: %s\n", rt.system().render(err).c_str());
                 });
  }
  runtime::release_calling_thread();
  if (!report) return;
  const double wall_ns = wall_s * 1e9;
  std::printf("\n%-10s %8s %8s %10s %7s %22s %12s\n", "stream", "ops", "kernels", "transfers",
              "failed", "utilisation (busy %)", "running %");
  for (const auto& s : report->streams) {
    char running[16] = "-";
    if (report->timed) std::snprintf(running, sizeof running, "%.1f", 100.0 * s.run_ns / wall_ns);
    std::printf("%-10s %8llu %8llu %10llu %7llu %22.1f %12s\n",
                ("#" + std::to_string(s.stream.value)).c_str(),
                static_cast<unsigned long long>(s.ops), static_cast<unsigned long long>(s.kernels),
                static_cast<unsigned long long>(s.transfers),
                static_cast<unsigned long long>(s.failed), 100.0 * s.busy_ns / wall_ns, running);
  }
  std::printf("\n%-16s %8s %12s %14s %12s %12s\n", "operation", "count", "queued ms",
              "on stream ms", "run ms", "max run us");
  for (const auto& n : report->operations) {
    char run[16] = "-", max_run[16] = "-";
    if (report->timed) {
      std::snprintf(run, sizeof run, "%.1f", n.run_ns / 1e6);
      std::snprintf(max_run, sizeof max_run, "%.1f", n.max_run_ns / 1e3);
    }
    std::printf("%-16s %8llu %12.1f %14.1f %12s %12s\n", n.name.c_str(),
                static_cast<unsigned long long>(n.count), n.queued_ns / 1e6, n.on_stream_ns / 1e6,
                run, max_run);
  }
  if (!report->timed) {
    std::printf("(run times need --trace=FILE or --cudactor.coordinator.timing)\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  demo_config config;
  if (wants_nodes(argc, argv)) config.enable_network();
  if (auto err = config.parse(arguments(argc, argv))) {
    std::fprintf(stderr, "cudactor-demo: %s\n", cudactor::describe(err).c_str());
    return 2;
  }
  if (config.cli_helptext_printed) return 0;
  if (config.nodes > 0) return run_on_nodes(config, argv[0]);
  auto started = runtime::start(config);
  if (!started) {
    std::fprintf(stderr, "cudactor-demo: %s\n", started.error().to_string().c_str());
    return 1;
  }
  auto rt = std::move(started.value());
  std::signal(SIGINT, [](int) { interrupted = 1; });
  std::signal(SIGTERM, [](int) { interrupted = 1; });

  demo::model_shape shape;
  shape.layers = config.layers;
  shape.replicas = config.replicas;
  shape.width = config.width;
  shape.learning_rate = static_cast<float>(config.learning_rate);
  auto made = demo::training_model::make(rt->device(), shape);
  if (!made) {
    std::fprintf(stderr, "cudactor-demo: %s\n", made.error().to_string().c_str());
    return 1;
  }
  // Its memory is the backend's: it must go before the runtime shuts down.
  std::optional<demo::training_model> held{std::move(made.value())};
  demo::training_model& model = *held;
  const bool on_gpu = rt->device().kind() == gpu::backend_kind::cuda;
  const std::string how_long = config.steps != 0 ? std::to_string(config.steps) + " steps"
                                                 : std::to_string(config.duration) + " seconds";
  std::printf(
      "cudactor-demo: %s of training, %zu ops per step (%zu layers, %zu replicas, %zu "
      "floats per layer)\n",
      how_long.c_str(), model.ops_per_step(), shape.layers, shape.replicas, shape.width);
  const std::string endpoint = rt->metrics().endpoint();
  std::printf("backend: %s; streams: %zu; metrics: %s\n", rt->backend_reason().c_str(),
              rt->options().streams, endpoint.empty() ? "not served" : endpoint.c_str());
  if (on_gpu && !demo::built_with_cuda()) {
    std::fprintf(stderr, "cudactor-demo: a GPU is present but this build has no CUDA kernels\n");
    return 1;
  }
  std::fflush(stdout);

  metrics::duration_histogram latency{fine_latency_buckets()};
  std::uint64_t ops = 0, failed = 0, inferred = 0;
  std::string first_failure;
  auto account = [&](const std::vector<op_notice>& ends) {
    for (const auto& n : ends) {
      ++ops;
      inferred += n.inferred.size();
      if (n.state != op_state::completed) {
        if (failed++ == 0) first_failure = rt->system().render(n.cause);
        continue;
      }
      latency.observe(std::chrono::nanoseconds{n.ended_ns - n.registered_ns});
    }
  };

  const bool live = !config.quiet && isatty(STDOUT_FILENO);
  std::size_t steps_done = 0, replayed = 0;
  std::array<step_handle, 2> steps{};  // recorded, by batch buffer (step % 2)
  metrics::duration_histogram step_latency{fine_latency_buckets()};
  const auto start = std::chrono::steady_clock::now();
  auto last_print = start;
  try {
    coordinator control{*rt};
    model.adopt(control);
    account(control.run(model.prepare()).get());
    const auto until = start + std::chrono::seconds{config.duration};
    const std::string of = config.steps != 0 ? "/" + std::to_string(config.steps) : "";
    for (std::uint64_t step = 0; !interrupted && failed == 0; ++step) {
      if (config.steps != 0 ? step >= config.steps : std::chrono::steady_clock::now() >= until) {
        break;
      }
      model.fill_next(step);
      if (!config.no_replay && step >= 2) {
        // The graphs of steps two apart are the same: each recorded once, then replayed as
        // one operation, answered once (its operations are counted, not timed one by one).
        if (steps[0].empty()) {
          for (std::uint64_t p = 0; p < 2; ++p) {
            steps[(step + p) % 2] =
                control.record(step_spec{"training step", model.step_graph(step + p, false)}).get();
          }
        }
        const step_outcome out = control.replay(steps[step % 2]).get();
        ops += model.ops_per_step(false);
        ++replayed;
        step_latency.observe(std::chrono::nanoseconds{out.ended_ns - out.registered_ns});
        if (out.state != op_state::completed && failed++ == 0) {
          first_failure = rt->system().render(out.cause);
        }
      } else {
        account(control.run(model.step_graph(step)).get());
      }
      ++steps_done;
      const auto now = std::chrono::steady_clock::now();
      if (!config.quiet && now - last_print > std::chrono::milliseconds{live ? 200 : 2000}) {
        last_print = now;
        const double s = std::chrono::duration<double>(now - start).count();
        std::printf("%sstep %zu%s  %.0f steps/s  %.0f ops/s  latency p99 %s us%s", live ? "\r" : "",
                    steps_done, of.c_str(), steps_done / s, ops / s,
                    us(percentile(latency, 0.99)).c_str(), live ? "   " : "\n");
        std::fflush(stdout);
      }
    }
    for (const step_handle& h : steps) {
      if (!h.empty()) (void)control.release(h).get();
    }
    model.release(control);
  } catch (const failure& f) {
    // A graph or a buffer refused: counted as the first failure, reported with the rest.
    if (failed++ == 0) first_failure = f.what();
  }
  runtime::release_calling_thread();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (live) std::printf("\n");

  // Summary.
  std::printf("\n%-34s %s\n", "steps", std::to_string(steps_done).c_str());
  std::printf("%-34s %.2f s\n", "wall time", wall_s);
  std::printf("%-34s %.1f\n", "steps/s", steps_done / wall_s);
  std::printf("%-34s %.0f\n", "ops/s", ops / wall_s);
  std::printf("%-34s %llu (from declared buffer uses)\n", "dependencies inferred",
              static_cast<unsigned long long>(inferred));
  std::printf("%-34s %s / %s us\n", "op latency p50 / p99", us(percentile(latency, 0.5)).c_str(),
              us(percentile(latency, 0.99)).c_str());
  if (replayed != 0) {
    std::printf("%-34s %zu (each one operation; step time p50 / p99 %s / %s us)\n",
                "steps replayed", replayed, us(percentile(step_latency, 0.5)).c_str(),
                us(percentile(step_latency, 0.99)).c_str());
  }
  for (const auto& family : rt->metrics().collect()) {
    if (family.name != "cudactor_poller_detection_delay_seconds") continue;
    for (const auto& m : family.metric) {
      const auto& h = m.histogram;
      if (h.sample_count == 0) continue;
      std::printf("%-34s mean %s us, p50 <= %s us, p99 <= %s us (%llu detections)\n",
                  "detection delay",
                  us(h.sample_sum / static_cast<double>(h.sample_count) * 1e9).c_str(),
                  us(histogram_quantile(h, 0.5) * 1e9).c_str(),
                  us(histogram_quantile(h, 0.99) * 1e9).c_str(),
                  static_cast<unsigned long long>(h.sample_count));
    }
  }
  print_report(*rt, wall_s);
  int rc = 0;
  if (failed != 0) {
    std::printf("\n%llu operations failed; the first: %s\n",
                static_cast<unsigned long long>(failed), first_failure.c_str());
    rc = 1;
  } else {
    constexpr std::size_t checked = 4096;  // weights per layer recomputed on the host
    const double diff = model.max_difference(steps_done, checked);
    const double sum = model.weight_sum();
    // A NaN compares false with everything: only finite weights within the bound pass.
    const bool finite = std::isfinite(diff) && std::isfinite(sum);
    std::printf(
        "\nweights: sum %.6f after %zu steps; %zu per layer recomputed on the host, largest "
        "difference from the host reference %.3g: %s\n",
        sum, steps_done, std::min(checked, shape.width), diff,
        !finite       ? "WRONG (not finite)"
        : diff == 0   ? "exact"
        : diff < 1e-5 ? "ok"
                      : "WRONG");
    if (!finite || !(diff < 1e-5)) rc = 1;
  }
  held.reset();
  rt->shutdown();
  return rc;
}
