// demo/node_training.cpp
#include "node_training.hpp"

#include <boost/asio.hpp>

#include <caf/all.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "cudactor/actors/cluster_actor.hpp"
#include "cudactor/actors/node_client.hpp"
#include "cudactor/actors/runtime.hpp"
#include "data_parallel.hpp"

extern char** environ;

namespace cudactor::demo {

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
          std::fprintf(stderr, "node %d did not exit within %lld ms: killed\n",
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

// What one run holds: its nodes, their cluster, the model's buffers on each.
struct training {
  caf::actor_system& system;
  const node_training_options& o;
  std::vector<node_process> nodes;
  std::vector<remote_node> remotes;
  std::optional<cudactor::cluster> owner;
  std::vector<data_parallel::model_buffers> model;
  std::vector<step_handle> recorded;  // by node, once recorded

  training(caf::actor_system& sys, const node_training_options& options)
      : system(sys), o(options), nodes(options.nodes) {}
  ~training() {
    owner.reset();  // the cluster goes before its nodes
    for (auto& n : nodes) n.stop();
  }

  bool fail(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\n", o.name.c_str(), why.c_str());
    return false;
  }

  // Starts and connects the nodes, makes them a cluster, a communicator and the model.
  bool start(caf::scoped_actor& self) {
    for (std::size_t i = 0; i < o.nodes; ++i) {
      const std::string name = "worker-" + std::to_string(i);
      if (!nodes[i].start(o.program, name, o.backend)) {
        return fail(name + " did not start (" + o.program + ")");
      }
      auto connected = connect_node(system, "127.0.0.1", nodes[i].port);
      if (!connected) return fail(system.render(connected.error()));
      std::printf("%s: node 127.0.0.1:%u, metrics http://127.0.0.1:%u/metrics, %s\n", name.c_str(),
                  nodes[i].port, nodes[i].metrics_port, connected->info.backend.c_str());
      remotes.push_back(*connected);
    }
    cluster_options options;
    options.name = "training";
    options.barrier_timeout = 30s;
    auto spawned = spawn_cluster(system, remotes, options);
    if (!spawned) return fail(system.render(spawned.error()));
    owner.emplace(std::move(*spawned));
    communicator_info grads;
    std::string failure =
        ask(self, owner->actor(), grads, communicator_atom::value, std::string{"grads"});
    if (failure.empty()) failure = give_buffers(self, owner->actor(), remotes, o.width, model);
    if (!failure.empty()) return fail(failure);
    std::printf("communicator 'grads' (%s) of %zu ranks connected in %.1f ms\n",
                grads.engine.c_str(), grads.members.size(),
                std::chrono::duration<double, std::milli>(grads.duration).count());
    return true;
  }

  // Node i's graph of a step: the rest of the shard's work, uneven across nodes; then
  // gradient, all-reduce and optimizer, ordered by their buffers. The same every step.
  graph_spec shard_graph(std::size_t i, const std::string& what) const {
    graph_spec g;
    op_spec rest;
    rest.description = what;
    rest.body = work::named("busy", std::uint64_t{o.step_us + o.step_us * i / 4});
    g.add(std::move(rest));
    for (auto& op : data_parallel::step_graph(model[i], o.width, i, o.nodes, "grads").ops) {
      g.add(std::move(op.spec));
    }
    return g;
  }

  // After the first step: the step recorded once on every node, to be replayed.
  bool record(caf::scoped_actor& self) {
    for (std::size_t i = 0; i < o.nodes; ++i) {
      step_handle h;
      const std::string what = "shard " + std::to_string(i);
      auto bad = ask(self, owner->actor(), h, record_atom::value, remotes[i].info.name,
                     step_spec{"training step", shard_graph(i, what)});
      if (!bad.empty()) return fail("record on worker-" + std::to_string(i) + ": " + bad);
      recorded.push_back(h);
    }
    return true;
  }

  // One step on every node (a graph, or a replay of the recorded step), then the barrier
  // that ends it.
  bool step(caf::scoped_actor& self, std::size_t s) {
    bool ok = true;
    const bool replaying = !recorded.empty();
    std::vector<decltype(self->request(owner->actor(), 1s, submit_atom::value, std::string{},
                                       graph_spec{}))>
        shards;
    std::vector<decltype(self->request(owner->actor(), 1s, replay_atom::value, std::string{},
                                       replay_request{}))>
        replays;
    for (std::size_t i = 0; i < o.nodes; ++i) {
      const std::string& node = remotes[i].info.name;
      if (replaying) {
        replays.push_back(self->request(owner->actor(), 60s, replay_atom::value, node,
                                        replay_request{recorded[i], {}, step_notices::failures}));
      } else {
        const std::string what = "step " + std::to_string(s) + " shard " + std::to_string(i);
        shards.push_back(
            self->request(owner->actor(), 60s, submit_atom::value, node, shard_graph(i, what)));
      }
    }
    auto barrier = self->request(owner->actor(), 60s, synchronize_atom::value);
    double slowest_ms = 0;
    const auto failed = [&](caf::error& err) {
      ok = fail("step " + std::to_string(s) + ": " + system.render(err));
    };
    for (auto& shard : shards) {
      shard.receive(
          [&](const std::vector<op_notice>& ends) {
            for (const auto& end : ends) {
              if (end.state != op_state::completed) {
                ok = fail("step " + std::to_string(s) + ": " + system.render(end.cause));
              }
            }
            slowest_ms =
                std::max(slowest_ms, (ends.back().ended_ns - ends.front().dispatched_ns) / 1e6);
          },
          failed);
    }
    for (auto& replay : replays) {
      replay.receive(
          [&](const step_outcome& out) {
            if (out.state != op_state::completed) {
              ok = fail("step " + std::to_string(s) + ": " + system.render(out.cause));
            }
            slowest_ms = std::max(slowest_ms, (out.ended_ns - out.dispatched_ns) / 1e6);
          },
          failed);
    }
    barrier.receive(
        [&](const cluster_crossing& c) {
          std::printf("%4zu  %16.2f  %10.2f\n", s, slowest_ms,
                      std::chrono::duration<double, std::milli>(c.duration).count());
        },
        [&](caf::error& err) {
          ok = fail("step " + std::to_string(s) + " barrier: " + system.render(err));
        });
    return ok;
  }

  // Every node's weights: identical, and the single-process reference's bit for bit.
  bool check_weights(caf::scoped_actor& self) {
    const auto reference = data_parallel::reference(o.width, o.steps);
    const std::uint64_t bytes = o.width * sizeof(float);
    bool ok = true;
    for (std::size_t i = 0; i < o.nodes; ++i) {
      std::vector<std::uint8_t> got;
      auto bad = ask(self, owner->actor(), got, fetch_atom::value, remotes[i].info.name,
                     buffer_call::fetch(model[i].weights, 0, bytes));
      if (!bad.empty() || got.size() != bytes) return fail(bad.empty() ? "a short fetch" : bad);
      std::vector<float> w(o.width);
      std::memcpy(w.data(), got.data(), bytes);
      std::size_t differ = 0;
      double worst = 0;
      for (std::uint64_t j = 0; j < o.width; ++j) {
        if (std::memcmp(&w[j], &reference[j], sizeof(float)) != 0) ++differ;
        worst = std::max(worst, std::fabs(static_cast<double>(w[j]) - reference[j]));
      }
      std::printf("worker-%zu: weights %s the reference (%zu of %llu differ, largest by %g)\n", i,
                  differ == 0 ? "equal" : "DIFFER FROM", differ,
                  static_cast<unsigned long long>(o.width), worst);
      if (differ != 0) ok = false;
    }
    return ok;
  }

  // Every node ran exactly what it was given: its own metrics say so. Per step submitted:
  // the busy shard, gradient, all-reduce, optimizer; per step replayed, the replay (one
  // operation of the coordinator); and the two stores and the fetch. An all-reduce runs in
  // every step (on CUDA a replay's is counted at each launch of its graph, not at capture).
  bool check_metrics() const {
    bool ok = true;
    const std::size_t replayed = recorded.empty() ? 0 : o.steps - 1;
    for (std::size_t i = 0; i < o.nodes; ++i) {
      const double done = scrape(nodes[i].metrics_port, "cudactor_operations_completed_total");
      const double given = static_cast<double>(4 * (o.steps - replayed) + replayed + 3);
      const double reduced = scrape(nodes[i].metrics_port, "cudactor_collective_operations_total");
      const std::size_t all_reduces = o.steps;
      std::printf(
          "worker-%zu: cudactor_operations_completed_total %.0f (given %.0f), "
          "cudactor_collective_operations_total %.0f (given %zu)\n",
          i, done, given, reduced, all_reduces);
      if (done != given || reduced != static_cast<double>(all_reduces)) ok = false;
    }
    return ok;
  }
};

}  // namespace

int run_node_training(caf::actor_system& system, const node_training_options& o) {
  if (o.nodes == 0 || o.steps > data_parallel::max_steps || o.width == 0 ||
      o.width * sizeof(float) > max_buffer_transfer) {
    std::fprintf(stderr,
                 "%s: 1 node or more, at most %llu steps (the exact check's bound) and 1 to %llu "
                 "weights\n",
                 o.name.c_str(), static_cast<unsigned long long>(data_parallel::max_steps),
                 static_cast<unsigned long long>(max_buffer_transfer / sizeof(float)));
    return 2;
  }
  bool ok = true;
  {
    training t{system, o};
    caf::scoped_actor self{system};
    ok = t.start(self);
    if (ok) {
      std::printf(
          "%s: %zu steps on %zu nodes, %llu weights; shard i also takes %llu us x (1 + "
          "i/4)\n",
          o.name.c_str(), o.steps, o.nodes, static_cast<unsigned long long>(o.width),
          static_cast<unsigned long long>(o.step_us));
      std::printf("step  slowest shard ms  barrier ms\n");
    }
    for (std::size_t s = 1; s <= o.steps && ok; ++s) {
      ok = t.step(self, s);
      if (ok && s == 1 && o.replay && o.steps > 1) ok = t.record(self);
    }
    if (ok) ok = t.check_weights(self);
    if (ok) ok = t.check_metrics();
  }  // the cluster, then the nodes
  runtime::release_calling_thread();
  std::printf("%s: %s\n", o.name.c_str(), ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace cudactor::demo
