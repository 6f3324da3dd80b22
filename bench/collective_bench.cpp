// bench/collective_bench.cpp
//
// What an all-reduce costs through cudactor, against Gloo called directly by the same
// processes in the same run. For 2 and 4 processes on 127.0.0.1 (host backend), this program
// starts itself as workers. Each worker first runs the baseline: Gloo's own all-reduce
// (gloo::allreduce, sum of floats, TCP on 127.0.0.1, met through a file store) called in a
// loop, each call timed. Then it serves as a cudactor node, and the control plane here makes
// the workers a communicator through a cluster (the cluster is the rendezvous), allocates a
// buffer on each, and submits to each node one graph of back-to-back all-reduces of it in
// place (ordered by the communicator; on the node's streams, seen by its poller). cudactor's
// time per all-reduce is the interval between the ends of consecutive ones as the node's
// coordinator saw them: Gloo's time plus what cudactor adds per collective (dispatch, the
// stream's order, the completion's way back).
//
// The baseline runs in the same processes, alternating with cudactor's rounds: each worker
// keeps a Gloo context of its own (met through a file store, not through cudactor) and a named
// operation `gloo_direct` only starts its loop of gloo::allreduce calls and writes their p50
// into a buffer the control plane reads. Gloo's time is taken around each call, so cudactor
// plays no part in it; both see the same processes, threads and machine load.
//
// Reports the median over the alternations of each side's p50, and their ratio; JSON keys
// cudactor_allreduce_us_<size>_<n> and gloo_allreduce_us_<size>_<n> (rank 0). --quick: 4 KiB
// to 4 MiB (under 30 s); otherwise 4 KiB to 64 MiB. Host-only figures: no GPU has run this.
#include <caf/all.hpp>

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "common/child_process.hpp"
#include "common/log_file.hpp"
#include "common/report.hpp"
#include "cudactor/actors/cluster_actor.hpp"
#include "cudactor/actors/node_client.hpp"
#include "cudactor/actors/runtime.hpp"

using namespace cudactor;
using namespace cudactor::bench;
using namespace std::chrono_literals;

namespace {

struct size_case {
  std::uint64_t bytes;
  const char* label;
  std::size_t rounds;
};

std::vector<size_case> sizes(bool quick) {
  if (quick) {
    return {{4 << 10, "4kib", 200},
            {64 << 10, "64kib", 100},
            {1 << 20, "1mib", 30},
            {4 << 20, "4mib", 10}};
  }
  return {{4 << 10, "4kib", 1000},
          {64 << 10, "64kib", 400},
          {1 << 20, "1mib", 100},
          {16 << 20, "16mib", 12},
          {64 << 20, "64mib", 6}};
}

constexpr std::size_t warmup = 3;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "collective_bench: %s\n", what.c_str());
  std::exit(1);
}

// The baseline's context: made once per worker, before the node starts.
std::shared_ptr<gloo::rendezvous::Context> direct;

void connect_gloo(int rank, int size, const std::string& store_dir) {
  gloo::rendezvous::FileStore files{store_dir};
  gloo::rendezvous::PrefixStore store{"direct", files};
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  attr.ai_family = AF_INET;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  direct = std::make_shared<gloo::rendezvous::Context>(rank, size);
  direct->connectFullMesh(store, device);
}

// Gloo's all-reduce of `bytes` called `rounds` times (after a warm-up): the p50 in us.
double gloo_p50(std::uint64_t bytes, std::uint64_t rounds) {
  std::vector<float> data(bytes / sizeof(float), 0.0f);
  std::vector<double> us;
  for (std::size_t i = 0; i < warmup + rounds; ++i) {
    gloo::AllreduceOptions opts{direct};
    opts.setOutput(data.data(), data.size());
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTag(1);
    const auto t0 = now_ns();
    gloo::allreduce(opts);
    if (i >= warmup) us.push_back(static_cast<double>(now_ns() - t0) / 1e3);
  }
  return summarize_us(us).p50;
}

// A worker: the baseline, then a cudactor node until SIGTERM.
int worker(int argc, char** argv) {
  if (argc != 6) die("usage: --worker RANK SIZE STORE_DIR NAME");
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  connect_gloo(std::atoi(argv[2]), std::atoi(argv[3]), argv[4]);

  runtime_config config;
  config.enable_network();
  // The bench's buffers start as zeros: floats that are not, summed, would time other work.
  auto zero = config.operations().add_typed_on_buffers<>(
      "zero", 1, [](const gpu::launch_context& ctx, const buffer_spans& b) {
        if (ctx.kind() != gpu::backend_kind::host) {
          return gpu::status{gpu::status_code::not_supported, "zero: host backend only"};
        }
        std::memset(b[0].data, 0, b[0].bytes);
        return gpu::status{};
      });
  if (!zero.ok()) die(zero.to_string());
  // The baseline's trigger: its result (a double) goes to the one buffer it declares.
  auto baseline = config.operations().add_typed_on_buffers<std::uint64_t, std::uint64_t>(
      "gloo_direct", 1,
      [](const gpu::launch_context&, const buffer_spans& b, std::uint64_t bytes,
         std::uint64_t rounds) {
        if (b[0].bytes < sizeof(double)) {
          return gpu::status{gpu::status_code::invalid_argument, "gloo_direct: 8 bytes of result"};
        }
        const double p50 = gloo_p50(bytes, rounds);
        std::memcpy(b[0].data, &p50, sizeof p50);
        return gpu::status{};
      });
  if (!baseline.ok()) die(baseline.to_string());
  if (auto err =
          config.parse({"--cudactor.node.name=" + std::string{argv[5]}, "--cudactor.backend=host",
                        "--cudactor.metrics.no-exposer", "--cudactor.host.workers=1"})) {
    die(caf::to_string(err));
  }
  auto started = runtime::start(config);
  if (!started) die(started.error().to_string());
  auto port = started.value()->publish_node();
  if (!port) die(port.error().to_string());
  std::printf("listening on 127.0.0.1:%u\n", static_cast<unsigned>(*port));
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop, &signal);
  started.value()->shutdown();
  return 0;
}

struct worker_process {
  worker_process(const std::string& self, int rank, int size, const std::string& store)
      : name("w" + std::to_string(rank)),
        log("/tmp/collective_bench." + name + "." + std::to_string(getpid()) + ".log"),
        child({self, "--worker", std::to_string(rank), std::to_string(size), store, name}, log) {}
  // Once every worker runs: the baseline needs them all before any serves as a node.
  void wait() { port = test::wait_for_port(log, child, "listening on 127.0.0.1:").value_or(0); }
  ~worker_process() {
    child.stop();
    std::remove(log.c_str());
  }
  std::string name;
  std::string log;
  test::child_process child;
  std::uint16_t port = 0;
};

template <class T, class... Ts>
T ask(caf::actor_system& system, const cluster_actor& to, Ts&&... xs) {
  caf::scoped_actor self{system};
  T out;
  std::string failure;
  self->request(to, 120s, std::forward<Ts>(xs)...)
      .receive([&](T& x) { out = std::move(x); },
               [&](caf::error& e) { failure = system.render(e); });
  if (!failure.empty()) die(failure);
  return out;
}

// One size on the cluster's nodes: a buffer each (zeroed) and one for the baseline's result.
struct size_run {
  caf::actor_system& system;
  const cluster_actor& cluster;
  const std::vector<std::string>& nodes;
  const size_case& c;
  std::vector<buffer_handle> data, result;

  size_run(caf::actor_system& sys, const cluster_actor& cl, const std::vector<std::string>& ns,
           const size_case& sc)
      : system(sys), cluster(cl), nodes(ns), c(sc) {
    for (const auto& node : nodes) {
      data.push_back(ask<buffer_handle>(system, cluster, alloc_atom::value, node,
                                        buffer_call::alloc(c.bytes)));
      result.push_back(ask<buffer_handle>(system, cluster, alloc_atom::value, node,
                                          buffer_call::alloc(sizeof(double))));
      op_spec zero;
      zero.description = "zero";
      zero.body = work::named("zero");
      zero.uses = {buffer_use::write(data.back().id)};
      auto end = ask<op_notice>(system, cluster, register_atom::value, node, zero);
      if (end.state != op_state::completed) die("zero: " + system.render(end.cause));
    }
  }
  ~size_run() {
    for (std::size_t r = 0; r < nodes.size(); ++r) {
      for (auto* b : {&data[r], &result[r]}) {
        (void)ask<op_notice>(system, cluster, release_atom::value, nodes[r],
                             buffer_call::release(b->id));
      }
    }
  }

  // Every node's graph at once; rank 0's notices.
  std::vector<op_notice> run(const std::function<graph_spec(std::size_t)>& graph) {
    std::vector<std::future<std::vector<op_notice>>> runs;
    for (std::size_t r = 0; r < nodes.size(); ++r) {
      runs.push_back(std::async(std::launch::async, [this, node = nodes[r], g = graph(r)] {
        return ask<std::vector<op_notice>>(system, cluster, submit_atom::value, node, g);
      }));
    }
    std::vector<std::vector<op_notice>> ends;
    for (auto& f : runs) ends.push_back(f.get());
    for (const auto& run : ends) {
      for (const auto& e : run) {
        if (e.state != op_state::completed)
          die(std::string{c.label} + ": " + system.render(e.cause));
      }
    }
    return ends[0];
  }

  // cudactor's p50: rank 0's intervals between the ends of consecutive all-reduces.
  double cudactor_p50() {
    auto ends = run([this](std::size_t r) {
      graph_spec g;
      for (std::size_t i = 0; i < warmup + c.rounds; ++i) {
        op_collective x;
        x.communicator = "bench";
        x.kind = gpu::collective_kind::all_reduce;
        x.type = gpu::element_type::f32;
        x.op = gpu::reduce_op::sum;
        x.count = c.bytes / sizeof(float);
        x.send = data[r].id;
        x.recv = data[r].id;
        g.add(op_spec::of(x, "all-reduce"));
      }
      return g;
    });
    std::vector<double> us;
    for (std::size_t i = warmup; i < ends.size(); ++i) {
      us.push_back(static_cast<double>(ends[i].ended_ns - ends[i - 1].ended_ns) / 1e3);
    }
    return summarize_us(us).p50;
  }

  // Gloo's p50, called directly by the same processes: rank 0's.
  double gloo_p50() {
    (void)run([this](std::size_t r) {
      graph_spec g;
      op_spec direct;
      direct.description = "gloo direct";
      direct.body = work::named("gloo_direct", c.bytes, std::uint64_t{c.rounds});
      direct.uses = {buffer_use::write(result[r].id)};
      g.add(std::move(direct));
      return g;
    });
    const auto bytes =
        ask<std::vector<std::uint8_t>>(system, cluster, fetch_atom::value, nodes[0],
                                       buffer_call::fetch(result[0].id, 0, sizeof(double)));
    double p50 = 0;
    std::memcpy(&p50, bytes.data(), sizeof p50);
    return p50;
  }
};

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--worker") == 0) return worker(argc, argv);
  const run_mode mode = run_mode::parse(argc, argv);
  const std::string self = std::filesystem::canonical("/proc/self/exe").string();

  runtime_config config;
  config.enable_network();
  if (auto err = config.parse(mode.passed_on)) die(caf::to_string(err));
  caf::actor_system system{config};

  table out{{"nodes", "size", "rounds x 3", "gloo p50 us", "cudactor p50 us", "ratio", "added us"}};
  json_line json;
  json.add("bench", std::string{"collective_bench"});
  json.add("quick", mode.quick);
  for (int n : {2, 4}) {
    const std::string store =
        "/tmp/collective_bench.store." + std::to_string(getpid()) + "." + std::to_string(n);
    std::filesystem::remove_all(store);
    std::filesystem::create_directories(store);
    std::vector<std::unique_ptr<worker_process>> workers;
    for (int r = 0; r < n; ++r) {
      workers.push_back(std::make_unique<worker_process>(self, r, n, store));
    }
    std::vector<remote_node> remotes;
    std::vector<std::string> names;
    for (auto& w : workers) {
      w->wait();
      if (w->port == 0) die(w->name + " did not start: " + test::read_file(w->log));
      auto connected = connect_node(system, "127.0.0.1", w->port);
      if (!connected) die(system.render(connected.error()));
      remotes.push_back(*connected);
      names.push_back(w->name);
    }
    cluster_options options;
    options.name = "bench-" + std::to_string(n);
    auto cluster = spawn_cluster(system, remotes, options);
    if (!cluster) die(system.render(cluster.error()));
    (void)ask<communicator_info>(system, cluster->actor(), communicator_atom::value,
                                 std::string{"bench"});
    for (const auto& c : sizes(mode.quick)) {
      size_run run{system, cluster->actor(), names, c};
      std::vector<double> gloo_runs, cudactor_runs;
      for (int alternation = 0; alternation < 3; ++alternation) {
        gloo_runs.push_back(run.gloo_p50());
        cudactor_runs.push_back(run.cudactor_p50());
      }
      const double ours = median(cudactor_runs);
      const double theirs = median(gloo_runs);
      out.add({std::to_string(n), c.label, std::to_string(c.rounds), fixed(theirs), fixed(ours),
               fixed(ours / theirs, 2), fixed(ours - theirs)});
      const std::string key = std::string{c.label} + "_" + std::to_string(n);
      json.add("cudactor_allreduce_us_" + key, ours);
      json.add("gloo_allreduce_us_" + key, theirs);
      json.add("ratio_" + key, ours / theirs);
    }
    cluster->stop();
    workers.clear();
    std::filesystem::remove_all(store);
  }
  runtime::release_calling_thread();
  out.print(
      "all-reduce (sum, f32, in place) across node processes on 127.0.0.1, host backend: "
      "Gloo called directly vs through cudactor (p50)");
  std::printf("targets: ratio at most 1.1 at 1 MiB and above; at most 50 us added at 4 KiB\n");
  json.print();
  return 0;
}
