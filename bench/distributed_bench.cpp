// bench/distributed_bench.cpp
//
// What a barrier across node processes costs, against the raw CAF round trip it is built on.
// Starts 8 cudactor-node processes on 127.0.0.1 (host backend) and, for 2, 4 and 8 of them,
// alternates two rounds from one control-plane thread:
//
//   barrier   synchronize on a cluster actor over the k nodes: the cluster asks every node
//             (through connect_node's stand-in for it) to arrive, waits for all, releases
//             them and answers;
//   fan-out   one plain request (info_atom) sent to each of the same k node actors at once,
//             straight to CAF's proxy of each (no cluster, no stand-in): the raw CAF
//             equivalent.
//
// Reports p50/p99 of both and their ratio per k. The nodes are idle, so the barrier's cost
// is its messages, not waiting for work. --quick: 300 rounds each (under 30 s); otherwise
// 3000. The node program is found next to this one, else where the build put it.
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "build_tree.hpp"
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

std::string node_program(const char* argv0) {
  const auto beside = std::filesystem::path{argv0}.parent_path() / "cudactor-node";
  if (std::filesystem::exists(beside)) return beside.string();
  return build_tree::node_program();
}

struct node_process {
  node_process(const std::string& program, const std::string& name)
      : log("/tmp/distributed_bench." + name + "." + std::to_string(getpid()) + ".log"),
        child({program, "--cudactor.node.name=" + name, "--cudactor.backend=host",
               "--cudactor.metrics.no-exposer", "--cudactor.host.workers=1"},
              log) {
    port = test::wait_for_port(log, child, "listening on 127.0.0.1:").value_or(0);
  }
  ~node_process() {
    child.stop();
    std::remove(log.c_str());
  }
  std::string log;
  test::child_process child;
  std::uint16_t port = 0;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "distributed_bench: %s\n", what.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const run_mode mode = run_mode::parse(argc, argv);
  const std::size_t rounds = mode.quick ? 300 : 3000;
  const std::size_t warmup = mode.quick ? 30 : 200;
  const std::vector<std::size_t> sizes{2, 4, 8};
  const std::string program = node_program(argv[0]);

  std::vector<std::unique_ptr<node_process>> nodes;
  for (std::size_t i = 0; i < sizes.back(); ++i) {
    nodes.push_back(std::make_unique<node_process>(program, "bench-" + std::to_string(i)));
    if (nodes.back()->port == 0)
      die("node " + std::to_string(i) + " did not start: " + test::read_file(nodes.back()->log));
  }

  runtime_config config;
  config.enable_network();
  if (auto err = config.parse(mode.passed_on)) die(caf::to_string(err));
  caf::actor_system system{config};
  std::vector<remote_node> remotes;
  std::vector<node_actor> proxies;  // CAF's own handles on the same nodes: the baseline
  for (auto& n : nodes) {
    auto connected = connect_node(system, "127.0.0.1", n->port);
    if (!connected) die(system.render(connected.error()));
    remotes.push_back(*connected);
    auto proxy = system.middleman().remote_actor<node_actor>("127.0.0.1", n->port);
    if (!proxy) die(system.render(proxy.error()));
    proxies.push_back(*proxy);
  }

  table out{{"nodes", "barrier p50 us", "p99", "fan-out p50 us", "p99", "ratio p50"}};
  json_line json;
  json.add("bench", std::string{"distributed_bench"});
  json.add("quick", mode.quick);
  json.add("rounds", static_cast<double>(rounds));
  {
    caf::scoped_actor self{system};
    for (std::size_t k : sizes) {
      std::vector<remote_node> members(remotes.begin(), remotes.begin() + k);
      cluster_options options;
      options.name = "bench-" + std::to_string(k);
      auto cluster = spawn_cluster(system, members, options);
      if (!cluster) die(system.render(cluster.error()));
      std::vector<double> barrier_us;
      std::vector<double> fanout_us;
      std::string failure;
      for (std::size_t r = 0; r < warmup + rounds && failure.empty(); ++r) {
        // barrier
        auto t0 = now_ns();
        self->request(cluster->actor(), 10s, synchronize_atom::value)
            .receive([](const cluster_crossing&) {},
                     [&](caf::error& e) { failure = system.render(e); });
        auto t1 = now_ns();
        // fan-out: every request out before the first answer is awaited
        std::vector<decltype(self->request(proxies[0], 10s, info_atom::value))> pending;
        pending.reserve(k);
        for (std::size_t i = 0; i < k; ++i)
          pending.push_back(self->request(proxies[i], 10s, info_atom::value));
        for (auto& p : pending) {
          p.receive([](const node_info&) {}, [&](caf::error& e) { failure = system.render(e); });
        }
        auto t2 = now_ns();
        if (r >= warmup) {
          barrier_us.push_back((t1 - t0) / 1e3);
          fanout_us.push_back((t2 - t1) / 1e3);
        }
      }
      if (!failure.empty()) die(failure);
      cluster->stop();
      const auto b = summarize_us(barrier_us);
      const auto f = summarize_us(fanout_us);
      const double ratio = b.p50 / f.p50;
      out.add({std::to_string(k), fixed(b.p50), fixed(b.p99), fixed(f.p50), fixed(f.p99),
               fixed(ratio, 2)});
      const std::string n = std::to_string(k);
      json.add("barrier_p50_us_" + n, b.p50);
      json.add("barrier_p99_us_" + n, b.p99);
      json.add("caf_fanout_p50_us_" + n, f.p50);
      json.add("caf_fanout_p99_us_" + n, f.p99);
      json.add("ratio_p50_" + n, ratio);
    }
  }
  runtime::release_calling_thread();
  out.print("barrier across k node processes vs one CAF request to each, 127.0.0.1 (" +
            std::to_string(rounds) + " rounds each, alternated)");
  std::printf("target: barrier p50 at most 2x the fan-out p50 at 4 nodes\n");
  json.print();
  return 0;
}
