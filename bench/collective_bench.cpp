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
// Reports p50 per size for both and their ratio; JSON keys cudactor_allreduce_us_<size>_<n>
// and gloo_allreduce_us_<size>_<n> (p50, rank 0). --quick: 4 KiB to 4 MiB (under 30 s);
// otherwise 4 KiB to 64 MiB. Host-only figures: no GPU has run this.
#include <caf/all.hpp>

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
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

// The baseline: Gloo's all-reduce called in a loop; one line per size, p50 in microseconds.
void run_gloo(int rank, int size, const std::string& store_dir, bool quick) {
  gloo::rendezvous::FileStore files{store_dir};
  gloo::rendezvous::PrefixStore store{"direct", files};
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  attr.ai_family = AF_INET;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->connectFullMesh(store, device);
  for (const auto& c : sizes(quick)) {
    std::vector<float> data(c.bytes / sizeof(float), 0.0f);
    std::vector<double> us;
    for (std::size_t i = 0; i < warmup + c.rounds; ++i) {
      gloo::AllreduceOptions opts{context};
      opts.setOutput(data.data(), data.size());
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(1);
      const auto t0 = now_ns();
      gloo::allreduce(opts);
      if (i >= warmup) us.push_back(static_cast<double>(now_ns() - t0) / 1e3);
    }
    std::printf("gloo %llu %.3f\n", static_cast<unsigned long long>(c.bytes), summarize_us(us).p50);
    std::fflush(stdout);
  }
}

// A worker: the baseline, then a cudactor node until SIGTERM.
int worker(int argc, char** argv) {
  if (argc != 7) die("usage: --worker RANK SIZE STORE_DIR QUICK NAME");
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  const int rank = std::atoi(argv[2]);
  const int size = std::atoi(argv[3]);
  run_gloo(rank, size, argv[4], std::strcmp(argv[5], "1") == 0);

  runtime_config config;
  config.enable_network();
  // The bench's buffers start as zeros: floats that are not, summed, would time other work.
  auto zero = config.operations().add_typed_on_buffers<>(
      "zero", 1, [](const gpu::launch_context& ctx, const buffer_spans& b) {
        if (ctx.kind() != gpu::backend_kind::host) {
          return gpu::status{gpu::errc::not_supported, "zero: host backend only"};
        }
        std::memset(b[0].data, 0, b[0].bytes);
        return gpu::status{};
      });
  if (!zero.ok()) die(zero.to_string());
  if (auto err = config.parse({"--cudactor.node.name=" + std::string{argv[6]},
                               "--cudactor.backend=host", "--cudactor.metrics.no-exposer"})) {
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
  worker_process(const std::string& self, int rank, int size, const std::string& store, bool quick)
      : name("w" + std::to_string(rank)),
        log("/tmp/collective_bench." + name + "." + std::to_string(getpid()) + ".log"),
        child({self, "--worker", std::to_string(rank), std::to_string(size), store,
               quick ? "1" : "0", name},
              log) {}
  // Once every worker runs: the baseline needs them all before any serves as a node.
  void wait() { port = test::wait_for_port(log, child, "listening on 127.0.0.1:").value_or(0); }
  ~worker_process() {
    child.stop();
    std::remove(log.c_str());
  }
  // Gloo's p50 for `bytes`, from the worker's output.
  double gloo_us(std::uint64_t bytes) const {
    const std::string text = test::read_file(log);
    const std::string key = "gloo " + std::to_string(bytes) + " ";
    const auto at = text.find(key);
    return at == std::string::npos ? -1.0 : std::atof(text.c_str() + at + key.size());
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

// cudactor's p50 per all-reduce of `c` over the cluster's nodes: rank 0's intervals between
// consecutive ends.
double run_cudactor(caf::actor_system& system, const cluster_actor& cluster,
                    const std::vector<std::string>& nodes, const size_case& c) {
  std::vector<buffer_handle> buffers;
  for (const auto& node : nodes) {
    buffers.push_back(
        ask<buffer_handle>(system, cluster, alloc_atom::value, node, buffer_call::alloc(c.bytes)));
    op_spec zero;
    zero.description = "zero";
    zero.body = work::named("zero");
    zero.uses = {buffer_use::write(buffers.back().id)};
    auto end = ask<op_notice>(system, cluster, register_atom::value, node, zero);
    if (end.state != op_state::completed) die("zero: " + system.render(end.cause));
  }
  std::vector<std::future<std::vector<op_notice>>> runs;
  for (std::size_t r = 0; r < nodes.size(); ++r) {
    graph_spec g;
    for (std::size_t i = 0; i < warmup + c.rounds; ++i) {
      op_collective x;
      x.communicator = "bench";
      x.kind = gpu::collective_kind::all_reduce;
      x.type = gpu::element_type::f32;
      x.op = gpu::reduce_op::sum;
      x.count = c.bytes / sizeof(float);
      x.send = buffers[r].id;
      x.recv = buffers[r].id;
      g.add(op_spec::of(x, "all-reduce"));
    }
    runs.push_back(std::async(std::launch::async, [&system, &cluster, node = nodes[r], g] {
      return ask<std::vector<op_notice>>(system, cluster, submit_atom::value, node, g);
    }));
  }
  std::vector<std::vector<op_notice>> ends;
  for (auto& f : runs) ends.push_back(f.get());
  for (const auto& run : ends) {
    for (const auto& e : run) {
      if (e.state != op_state::completed) die("all-reduce: " + system.render(e.cause));
    }
  }
  std::vector<double> us;
  for (std::size_t i = warmup; i < ends[0].size(); ++i) {
    us.push_back(static_cast<double>(ends[0][i].ended_ns - ends[0][i - 1].ended_ns) / 1e3);
  }
  for (std::size_t r = 0; r < nodes.size(); ++r) {
    (void)ask<op_notice>(system, cluster, release_atom::value, nodes[r],
                         buffer_call::release(buffers[r].id));
  }
  return summarize_us(us).p50;
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

  table out{{"nodes", "size", "rounds", "gloo p50 us", "cudactor p50 us", "ratio", "added us"}};
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
      workers.push_back(std::make_unique<worker_process>(self, r, n, store, mode.quick));
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
      const double ours = run_cudactor(system, cluster->actor(), names, c);
      const double theirs = workers[0]->gloo_us(c.bytes);
      if (theirs <= 0) die("no Gloo figure for " + std::string{c.label});
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
