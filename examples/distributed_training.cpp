// examples/distributed_training.cpp
//
// A training control plane in ~200 lines: it starts N cudactor-node processes on 127.0.0.1,
// each serving its own Prometheus endpoint on its own port, connects to them, and drives them
// through training steps. Each step gives every node its shard of work (the node's `busy`
// kernel for a node-specific time, standing in for forward and backward on an uneven shard),
// then crosses a barrier across all nodes: no node starts step s+1 before every node has
// finished step s. At the end it scrapes every node's /metrics and checks that each ran
// exactly the operations it was given.
//
//   distributed_training [--nodes=3] [--steps=10] [--step-us=20000] [--node-program=PATH]
//                        [--node-backend=auto|host|cuda]
//                        [cudactor options for the control plane, e.g. --cudactor.tls.*]
#include <boost/asio.hpp>

#include <caf/all.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cudactor/actors/cluster_actor.hpp"
#include "cudactor/actors/node_client.hpp"
#include "cudactor/actors/runtime.hpp"

extern char** environ;

using namespace cudactor;
using namespace std::chrono_literals;

namespace {

// A node process, its output read through a pipe until it says where it listens.
struct node_process {
  pid_t pid = -1;
  FILE* out = nullptr;
  std::uint16_t port = 0;
  std::uint16_t metrics_port = 0;

  bool start(const std::string& program, const std::string& name, const std::string& backend) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<std::string> args{program, "--cudactor.node.name=" + name,
                                  "--cudactor.backend=" + backend, "--cudactor.metrics.port=0"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    out = fdopen(fds[0], "r");
    if (spawned != 0 || out == nullptr) return false;
    // "cudactor-node 'n0' listening on 127.0.0.1:PORT", then "...; metrics: http://H:P/metrics"
    char line[512];
    while (fgets(line, sizeof line, out) != nullptr) {
      if (const char* at = std::strstr(line, "listening on 127.0.0.1:")) {
        port = static_cast<std::uint16_t>(std::atoi(at + std::strlen("listening on 127.0.0.1:")));
      }
      if (const char* at = std::strstr(line, "metrics: http://127.0.0.1:")) {
        metrics_port =
            static_cast<std::uint16_t>(std::atoi(at + std::strlen("metrics: http://127.0.0.1:")));
        break;
      }
    }
    return port != 0 && metrics_port != 0;
  }

  // SIGTERM, then SIGKILL if it has not exited within `grace`: a node that hangs in its
  // shutdown does not hang the control plane.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds{5}) {
    if (pid > 0) {
      kill(pid, SIGTERM);
      const auto until = std::chrono::steady_clock::now() + grace;
      while (waitpid(pid, nullptr, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() >= until) {
          std::fprintf(stderr,
                       "distributed_training: node %d did not exit within %lld ms: killed\n",
                       static_cast<int>(pid), static_cast<long long>(grace.count()));
          kill(pid, SIGKILL);
          waitpid(pid, nullptr, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
      }
      pid = -1;
    }
    if (out != nullptr) fclose(out);
    out = nullptr;
  }
};

// The sum of a counter's samples in a node's /metrics.
double scrape(std::uint16_t port, const std::string& metric) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket socket{io};
  boost::system::error_code ec;
  socket.connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return -1;
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  asio::write(socket, asio::buffer(request), ec);
  std::string body;
  char chunk[4096];
  for (std::size_t n; (n = socket.read_some(asio::buffer(chunk), ec)) > 0 || !ec;)
    body.append(chunk, n);
  double sum = 0;
  std::istringstream lines{body};
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(metric, 0) == 0 && (line[metric.size()] == '{' || line[metric.size()] == ' ')) {
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return sum;
}

std::string flag(std::vector<std::string>& args, const std::string& name, std::string fallback) {
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (it->rfind("--" + name + "=", 0) == 0) {
      fallback = it->substr(name.size() + 3);
      args.erase(it);
      break;
    }
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const auto nodes_n = std::stoul(flag(args, "nodes", "3"));
  const auto steps = std::stoul(flag(args, "steps", "10"));
  const auto step_us = std::stoull(flag(args, "step-us", "20000"));
  const auto node_backend = flag(args, "node-backend", "auto");
  // --node-program, else $CUDACTOR_NODE, else cudactor-node beside this program, else the
  // one this build made.
  const auto beside = std::filesystem::path{argv[0]}.parent_path() / "cudactor-node";
  const char* from_environment = std::getenv("CUDACTOR_NODE");
  const std::string program = flag(args, "node-program",
                                   from_environment != nullptr       ? std::string{from_environment}
                                   : std::filesystem::exists(beside) ? beside.string()
                                                                     : std::string{CUDACTOR_NODE});

  runtime_config config;  // the control plane needs cudactor's types and the network
  config.enable_network();
  if (auto err = config.parse(args)) {
    std::fprintf(stderr, "distributed_training: %s\n", cudactor::describe(err).c_str());
    return 2;
  }
  std::vector<node_process> nodes(nodes_n);
  int status = 0;
  {
    caf::actor_system system{config};
    std::vector<remote_node> remotes;
    for (std::size_t i = 0; i < nodes_n && status == 0; ++i) {
      const std::string name = "worker-" + std::to_string(i);
      if (!nodes[i].start(program, name, node_backend)) {
        std::fprintf(stderr, "distributed_training: %s did not start (%s)\n", name.c_str(),
                     program.c_str());
        status = 1;
        break;
      }
      auto connected = connect_node(system, "127.0.0.1", nodes[i].port);
      if (!connected) {
        std::fprintf(stderr, "distributed_training: %s\n",
                     system.render(connected.error()).c_str());
        status = 1;
        break;
      }
      std::printf("%s: node 127.0.0.1:%u, metrics http://127.0.0.1:%u/metrics, %s\n", name.c_str(),
                  nodes[i].port, nodes[i].metrics_port, connected->info.backend.c_str());
      remotes.push_back(*connected);
    }
    if (status == 0) {
      cluster_options options;
      options.name = "training";
      options.barrier_timeout = 30s;
      auto cluster = spawn_cluster(system, remotes, options);
      caf::scoped_actor self{system};
      std::printf(
          "distributed_training: %zu steps on %zu nodes, shard i takes %llu us x (1 + i/4)\n",
          steps, nodes_n, static_cast<unsigned long long>(step_us));
      std::printf("step  slowest shard ms  barrier ms\n");
      for (std::size_t s = 1; s <= steps && status == 0; ++s) {
        std::vector<decltype(self->request(cluster->actor(), 1s, register_atom::value,
                                           std::string{}, op_spec{}))>
            shards;
        for (std::size_t i = 0; i < nodes_n; ++i) {
          op_spec shard;
          shard.description = "step " + std::to_string(s) + " shard " + std::to_string(i);
          shard.body = work::named("busy", std::uint64_t{step_us + step_us * i / 4});
          shards.push_back(self->request(cluster->actor(), 60s, register_atom::value,
                                         remotes[i].info.name, std::move(shard)));
        }
        auto barrier = self->request(cluster->actor(), 60s, synchronize_atom::value);
        double slowest_ms = 0;
        for (auto& shard : shards) {
          shard.receive(
              [&](const op_notice& end) {
                if (end.state != op_state::completed) status = 1;
                slowest_ms = std::max(slowest_ms, (end.ended_ns - end.dispatched_ns) / 1e6);
              },
              [&](caf::error& err) {
                std::fprintf(stderr, "step %zu: %s\n", s, system.render(err).c_str());
                status = 1;
              });
        }
        barrier.receive(
            [&](const cluster_crossing& c) {
              std::printf("%4zu  %16.2f  %10.2f\n", s, slowest_ms,
                          std::chrono::duration<double, std::milli>(c.duration).count());
            },
            [&](caf::error& err) {
              std::fprintf(stderr, "step %zu barrier: %s\n", s, system.render(err).c_str());
              status = 1;
            });
      }
    }  // the cluster stops here: its owner went
    runtime::release_calling_thread();
    // Every node ran exactly what it was given: its own metrics say so.
    for (std::size_t i = 0; i < nodes_n && status == 0; ++i) {
      const double done = scrape(nodes[i].metrics_port, "cudactor_operations_completed_total");
      std::printf("worker-%zu: cudactor_operations_completed_total %.0f (given %zu)\n", i, done,
                  steps);
      if (done != static_cast<double>(steps)) status = 1;
    }
  }
  for (auto& n : nodes) n.stop();
  std::printf("distributed_training: %s\n", status == 0 ? "ok" : "FAILED");
  return status;
}
