// examples/distributed_training.cpp
//
// A data-parallel training control plane: it starts N cudactor-node processes on 127.0.0.1,
// each serving its own Prometheus endpoint on its own port, connects to them, makes them a
// communicator (the cluster is its rendezvous: Gloo on the host backend, NCCL on CUDA),
// gives each the model's buffers, and drives them through training steps. In each step every
// node computes the gradient of its own shard of the samples, the gradients are all-reduced
// across the nodes, and every node applies the optimizer to its own copy of the weights
// (demo/data_parallel.hpp), with a busy kernel of a node-specific length standing in for the
// rest of an uneven shard's work; then a barrier across all nodes ends the step. At the end
// every node's weights are read back: they must be identical, and equal to a single-process
// reference bit for bit (the data are chosen so that every sum is exact in any order). Then it
// scrapes every node's /metrics and checks that each ran exactly the operations it was given.
//
//   distributed_training [--nodes=3] [--steps=10] [--step-us=20000] [--width=16384]
//                        [--node-program=PATH] [--node-backend=auto|host|cuda]
//                        [cudactor options for the control plane, e.g. --cudactor.tls.*]
#include <boost/asio.hpp>

#include <caf/all.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
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
#include "data_parallel.hpp"

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

// Asks the cluster and waits; the error in words, or "".
template <class T, class... Ts>
std::string ask(caf::scoped_actor& self, const cluster_actor& cluster, T& out, Ts&&... xs) {
  std::string failure;
  self->request(cluster, 60s, std::forward<Ts>(xs)...)
      .receive([&](T& x) { out = std::move(x); },
               [&](caf::error& err) { failure = self->system().render(err); });
  return failure;
}

// The model's buffers on every node, the targets and zero weights stored in them.
std::string give_buffers(caf::scoped_actor& self, const cluster_actor& cluster,
                         const std::vector<remote_node>& remotes, std::uint64_t width,
                         std::vector<demo::data_parallel::model_buffers>& out) {
  const std::uint64_t bytes = width * sizeof(float);
  for (const auto& node : remotes) {
    buffer_id* ids[4];
    auto& b = out.emplace_back();
    ids[0] = &b.weights;
    ids[1] = &b.targets;
    ids[2] = &b.scratch;
    ids[3] = &b.gradient;
    for (buffer_id* id : ids) {
      buffer_handle h;
      auto bad =
          ask(self, cluster, h, alloc_atom::value, node.info.name, buffer_call::alloc(bytes));
      if (!bad.empty()) return bad;
      *id = h.id;
    }
    op_notice stored;
    for (auto [id, data] : {std::pair{b.weights, std::vector<std::uint8_t>(bytes, 0)},
                            std::pair{b.targets, demo::data_parallel::target_bytes(width)}}) {
      auto bad = ask(self, cluster, stored, store_atom::value, node.info.name,
                     buffer_call::store(id, 0, std::move(data)));
      if (!bad.empty()) return bad;
      if (stored.state != op_state::completed) return self->system().render(stored.cause);
    }
  }
  return {};
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
  const auto width = std::stoull(flag(args, "width", "16384"));
  if (steps > demo::data_parallel::max_steps || width == 0 ||
      width * sizeof(float) > max_buffer_transfer) {
    std::fprintf(stderr,
                 "distributed_training: at most %llu steps (the exact check's bound) and 1 to "
                 "%llu weights\n",
                 static_cast<unsigned long long>(demo::data_parallel::max_steps),
                 static_cast<unsigned long long>(max_buffer_transfer / sizeof(float)));
    return 2;
  }
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
      communicator_info grads;
      std::vector<demo::data_parallel::model_buffers> model;
      std::string failure =
          ask(self, cluster->actor(), grads, communicator_atom::value, std::string{"grads"});
      if (failure.empty()) failure = give_buffers(self, cluster->actor(), remotes, width, model);
      if (!failure.empty()) {
        std::fprintf(stderr, "distributed_training: %s\n", failure.c_str());
        status = 1;
      } else {
        std::printf("communicator 'grads' (%s) of %zu ranks connected in %.1f ms\n",
                    grads.engine.c_str(), grads.members.size(),
                    std::chrono::duration<double, std::milli>(grads.duration).count());
      }
      std::printf(
          "distributed_training: %zu steps on %zu nodes, %llu weights; shard i also takes %llu "
          "us x (1 + i/4)\n",
          steps, nodes_n, static_cast<unsigned long long>(width),
          static_cast<unsigned long long>(step_us));
      std::printf("step  slowest shard ms  barrier ms\n");
      for (std::size_t s = 1; s <= steps && status == 0; ++s) {
        std::vector<decltype(self->request(cluster->actor(), 1s, submit_atom::value, std::string{},
                                           graph_spec{}))>
            shards;
        for (std::size_t i = 0; i < nodes_n; ++i) {
          // The rest of the shard's work, uneven across nodes; then gradient, all-reduce and
          // optimizer, ordered by their buffers.
          graph_spec g;
          op_spec rest;
          rest.description = "step " + std::to_string(s) + " shard " + std::to_string(i);
          rest.body = work::named("busy", std::uint64_t{step_us + step_us * i / 4});
          g.add(std::move(rest));
          for (auto& op : demo::data_parallel::step_graph(model[i], width, i, nodes_n, "grads").ops)
            g.add(std::move(op.spec));
          shards.push_back(self->request(cluster->actor(), 60s, submit_atom::value,
                                         remotes[i].info.name, std::move(g)));
        }
        auto barrier = self->request(cluster->actor(), 60s, synchronize_atom::value);
        double slowest_ms = 0;
        for (auto& shard : shards) {
          shard.receive(
              [&](const std::vector<op_notice>& ends) {
                for (const auto& end : ends) {
                  if (end.state != op_state::completed) {
                    std::fprintf(stderr, "step %zu: %s\n", s, system.render(end.cause).c_str());
                    status = 1;
                  }
                }
                slowest_ms =
                    std::max(slowest_ms, (ends.back().ended_ns - ends.front().dispatched_ns) / 1e6);
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
      // Every node's weights: identical, and the single-process reference's bit for bit.
      const auto reference = demo::data_parallel::reference(width, steps);
      for (std::size_t i = 0; i < nodes_n && status == 0; ++i) {
        std::vector<std::uint8_t> got;
        auto bad = ask(self, cluster->actor(), got, fetch_atom::value, remotes[i].info.name,
                       buffer_call::fetch(model[i].weights, 0, width * sizeof(float)));
        if (!bad.empty()) {
          std::fprintf(stderr, "distributed_training: %s\n", bad.c_str());
          status = 1;
          break;
        }
        std::vector<float> w(width);
        std::memcpy(w.data(), got.data(), std::min<std::size_t>(got.size(), width * sizeof(float)));
        std::size_t differ = 0;
        double worst = 0;
        for (std::uint64_t j = 0; j < width; ++j) {
          if (std::memcmp(&w[j], &reference[j], sizeof(float)) != 0) ++differ;
          worst = std::max(worst, std::fabs(static_cast<double>(w[j]) - reference[j]));
        }
        std::printf("worker-%zu: weights %s the reference (%zu of %llu differ, largest by %g)\n", i,
                    differ == 0 ? "equal" : "DIFFER FROM", differ,
                    static_cast<unsigned long long>(width), worst);
        if (differ != 0 || got.size() != width * sizeof(float)) status = 1;
      }
    }  // the cluster stops here: its owner went
    runtime::release_calling_thread();
    // Every node ran exactly what it was given: its own metrics say so. Per step: the busy
    // shard, gradient, all-reduce, optimizer; and the two stores and the fetch.
    for (std::size_t i = 0; i < nodes_n && status == 0; ++i) {
      const double done = scrape(nodes[i].metrics_port, "cudactor_operations_completed_total");
      const double given = static_cast<double>(4 * steps + 3);
      const double reduced = scrape(nodes[i].metrics_port, "cudactor_collective_operations_total");
      std::printf(
          "worker-%zu: cudactor_operations_completed_total %.0f (given %.0f), "
          "cudactor_collective_operations_total %.0f (given %zu)\n",
          i, done, given, reduced, steps);
      if (done != given || reduced != static_cast<double>(steps)) status = 1;
    }
  }
  for (auto& n : nodes) n.stop();
  std::printf("distributed_training: %s\n", status == 0 ? "ok" : "FAILED");
  return status;
}
