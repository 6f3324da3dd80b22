// bench/coordinator_bench.cpp
//
// Operations per second through the coordinator, register -> every end told to a listener
// actor, against driving the same backend directly in the same run (bench/common/
// host_runs.hpp: independent no-op operations over 8 streams, pipelined). Host backend, every
// operation a no-op host "kernel", so what is measured is the machinery. The coordinator runs
// with 8 streams and the runtime's shipped defaults otherwise.
//
// Shapes, each as one graph message (graph) and, for independent operations, one op per
// register message with up to 1024 in flight (single):
//  - independent: no dependencies;
//  - chain: each op after the one before (every op waits on the previous one; with the
//    load-balanced strategy successive ops land on other streams, so this is the worst case
//    for device waits);
//  - fan: blocks of 1 root -> 62 middles -> 1 sink;
//  - random: 100k ops, each after 0 to 3 ops among the 64 before it (>= 30% of edges cross
//    streams in practice).
// Latency: one op at a time with nothing else in flight, register sent -> listener told,
// back to back and after 2 ms of idleness (the poller and the CAF worker asleep).
// Timing and trace: the random graphs again in runtimes with cudactor.coordinator.timing
// (host callbacks stamp each operation's start and finish) and with a trace file written.
// The client API (actors/client.hpp) from a plain thread, beside the actor client: pipelined
// futures (up to the same depth in flight) and one future at a time.
// Buffers: the random DAG with its every dependency coming from four buffer uses per op,
// inferred by the coordinator, against the same dependencies stated explicitly, in the same
// runtime, each twice and in both orders; and a denser use of random byte ranges, the same
// way (buffer_runs below).
// Replay: the 10k-operation random DAG recorded once as a step and replayed 20 times, against
// the same graph submitted 20 times, in the same runtime, alternating which goes first
// (docs/replay.md): replay_ops_per_s, replay_graph_ops_per_s, their ratio, and the direct
// path over the replay (replay_over_direct: per operation, how much slower the replay is).
// Direct: the baseline's first run in each runtime (direct_ops_per_s, the figure issue 21's
// target was set on), and the median of three more right after it (direct_settled_*).
// Memory: the coordinator's tracked state and the process's resident memory across many
// graphs of independent ops (10M ops; 1M with --quick).
//
// Options after "--" go to every runtime started.
#include <caf/all.hpp>

#include <unistd.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <random>

#include "common/end_counter.hpp"
#include "common/host_runs.hpp"
#include "common/report.hpp"
#include "cudactor/actors/client.hpp"
#include "cudactor/actors/coordinator/buffer_uses.hpp"

namespace {

using namespace cudactor;
using bench::count_state;
using bench::counter;
using bench::fixed;
using bench::now_ns;
using bench::samples;

work noop_work() {
  return work::local([](const gpu::launch_context&) { return gpu::status{}; });
}

op_spec noop_spec(std::vector<op_id> deps = {}) {
  op_spec s;
  s.body = noop_work();
  s.deps = std::move(deps);
  return s;
}

enum class shape { independent, chain, fan, random };

const char* name_of(shape s) {
  switch (s) {
    case shape::independent: return "independent";
    case shape::chain: return "chain";
    case shape::fan: return "fan-out/fan-in";
    case shape::random: return "random DAG";
  }
  return "?";
}

graph_spec make_graph(shape s, std::size_t n, std::mt19937_64& rng) {
  graph_spec g;
  g.ops.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<std::uint32_t> after;
    switch (s) {
      case shape::independent: break;
      case shape::chain:
        if (i > 0) after.push_back(i - 1);
        break;
      case shape::fan: {
        const std::uint32_t block = i / 64 * 64, k = i % 64;
        if (k > 0 && k < 63) after.push_back(block);
        if (k == 63) {
          for (std::uint32_t m = block + 1; m < block + 63; ++m) after.push_back(m);
        }
        break;
      }
      case shape::random: {
        const std::uint32_t deps = i == 0 ? 0 : static_cast<std::uint32_t>(rng() % 4);
        for (std::uint32_t d = 0; d < deps; ++d) {
          const std::uint32_t window = std::min<std::uint32_t>(i, 64);
          const std::uint32_t dep = i - 1 - static_cast<std::uint32_t>(rng() % window);
          if (std::find(after.begin(), after.end(), dep) == after.end()) after.push_back(dep);
        }
        break;
      }
    }
    g.add(noop_spec(), std::move(after));
  }
  return g;
}

struct outcome {
  double ops_per_s = 0;
  coordinator_metrics metrics;
};

// One graph message of `n` ops; every op's end told to a counting listener.
outcome run_graph(runtime& rt, graph_spec g, const char* what) {
  const std::size_t n = g.ops.size();
  auto st = std::make_shared<count_state>();
  st->expected = n;
  auto done = st->done.get_future();
  auto listener = rt.system().spawn(counter, st);
  const auto start = now_ns();
  caf::anon_send(rt.coordinator(), submit_atom::value, std::move(g), listener);
  done.wait();
  outcome out;
  out.ops_per_s = static_cast<double>(n) / ((now_ns() - start) * 1e-9);
  caf::anon_send_exit(listener, caf::exit_reason::user_shutdown);
  if (st->not_completed != 0) {
    std::fprintf(stderr, "%s: %llu ops did not complete\n", what,
                 static_cast<unsigned long long>(st->not_completed));
    std::exit(1);
  }
  return out;
}

outcome graph_run(runtime& rt, shape s, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  return run_graph(rt, make_graph(s, n, rng), name_of(s));
}

// The buffer scenarios: each op declares four buffer uses, once as uses the coordinator infers
// the dependencies from, once as the same dependencies stated with `after` (inferred here by
// the same rules, actors/coordinator/buffer_uses.hpp), in the same runtime. Fresh buffers (9 of 4
// KiB) for each run, released after. Each graph runs twice, in the order stated, inferred,
// inferred, stated (or the reverse, every other round): a graph run second in a runtime runs slower
// than the same graph run first, so one fixed order would charge that to one side. Each
// side's figure is the mean of its two runs; the cost in each order is kept as well.
//  - random DAG (the scenario): the random shape's graph, its every dependency
//    expressed as uses. Op i writes its output slot (i mod 128: 16 slots of 256 bytes in each
//    of 8 buffers) and reads the output slots of the ops it comes after; its uses left read
//    an input buffer nothing writes (the 9th; weights, say). So the data dependencies are the
//    random DAG's, and a write of a slot also comes after the slot's last writer and its
//    readers (order only), as when activations go through a ring of buffers.
//  - dense: each use a random one of 8 buffers, a random range of up to 512 bytes, read,
//    write or read_write: about 16 dependencies per op, each buffer cut into about 80
//    segments. The stress case for the histories.
struct buffer_outcome {
  double inferred_ops_per_s = 0, explicit_ops_per_s = 0, deps_per_op = 0;
  // 1 - inferred / stated for the pair run stated then inferred, and the one run inferred
  // then stated.
  double cost_stated_first = 0, cost_inferred_first = 0;
};

enum class buffer_scenario { random_dag, dense };

constexpr std::size_t buffer_count = 8;  // written; one more is only read
constexpr std::uint64_t buffer_size = 4096;

// Op `i`'s four uses, appended to `uses`, with the index in `made` each one's buffer has.
void uses_of(buffer_scenario scenario, std::size_t i, const std::vector<std::uint32_t>& after,
             const std::vector<buffer_id>& made, std::mt19937_64& rng,
             std::vector<buffer_use>& uses, std::vector<std::size_t>& which) {
  const auto add = [&](std::size_t b, buffer_access access, std::uint64_t begin,
                       std::uint64_t bytes) {
    uses.push_back(buffer_use{made[b], access, begin, bytes});
    which.push_back(b);
  };
  if (scenario == buffer_scenario::random_dag) {
    constexpr std::uint64_t slot_bytes = 256;
    constexpr std::size_t slots_per_buffer = buffer_size / slot_bytes;
    const auto slot = [&](std::size_t op, buffer_access access) {
      const std::size_t at = op % (slots_per_buffer * buffer_count);
      add(at / slots_per_buffer, access, (at % slots_per_buffer) * slot_bytes, slot_bytes);
    };
    for (std::uint32_t a : after) slot(a, buffer_access::read);
    slot(i, buffer_access::write);
    while (uses.size() < 4) add(buffer_count, buffer_access::read, 0, buffer_size);
    return;
  }
  for (int u = 0; u < 4; ++u) {
    const std::size_t b = rng() % buffer_count;
    const std::uint64_t begin = rng() % buffer_size;
    const std::uint64_t bytes = 1 + rng() % std::min<std::uint64_t>(512, buffer_size - begin);
    const unsigned pick = static_cast<unsigned>(rng() % 10);
    const auto access = pick < 5   ? buffer_access::read
                        : pick < 8 ? buffer_access::write
                                   : buffer_access::read_write;
    add(b, access, begin, bytes);
  }
}

buffer_outcome buffer_runs(runtime& rt, buffer_scenario scenario, std::size_t n, std::uint64_t seed,
                           bool stated_first) {
  caf::scoped_actor self{rt.system()};
  std::vector<buffer_id> made;
  for (std::size_t b = 0; b <= buffer_count; ++b) {
    self->request(rt.coordinator(), caf::infinite, alloc_atom::value, buffer_size)
        .receive([&](const buffer_handle& h) { made.push_back(h.id); },
                 [](caf::error& why) {
                   std::fprintf(stderr, "alloc: %s\n", describe(why).c_str());
                   std::exit(1);
                 });
  }
  std::mt19937_64 rng{seed};
  const graph_spec dag =
      scenario == buffer_scenario::random_dag ? make_graph(shape::random, n, rng) : graph_spec{};
  static const std::vector<std::uint32_t> none;
  graph_spec inferred, stated;
  inferred.ops.reserve(n);
  stated.ops.reserve(n);
  std::vector<detail::buffer_uses> local(buffer_count + 1, detail::buffer_uses{buffer_size});
  std::vector<detail::use_edge> edges;
  std::vector<std::size_t> which;
  caf::error poisoned;
  std::size_t deps = 0;
  for (std::size_t i = 0; i < n; ++i) {
    op_spec with_uses = noop_spec();
    const auto& dag_after = dag.ops.empty() ? none : dag.ops[i].after;
    which.clear();
    uses_of(scenario, i, dag_after, made, rng, with_uses.uses, which);
    std::vector<std::uint32_t> after;
    for (std::size_t u = 0; u < which.size(); ++u) {
      const buffer_use& use = with_uses.uses[u];
      edges.clear();
      local[which[u]].infer(
          detail::byte_range{use.offset, use.offset + use.bytes}, use.access,
          [](op_id) { return true; }, edges, poisoned);
      for (const auto& e : edges) after.push_back(static_cast<std::uint32_t>(e.op.value - 1));
    }
    for (std::size_t u = 0; u < which.size(); ++u) {
      const buffer_use& use = with_uses.uses[u];
      local[which[u]].record(detail::byte_range{use.offset, use.offset + use.bytes}, use.access,
                             op_id{i + 1});
    }
    std::sort(after.begin(), after.end());
    after.erase(std::unique(after.begin(), after.end()), after.end());
    for (std::uint32_t a : dag_after) {
      // The uses must give the random DAG's dependencies, or this is another scenario.
      if (!std::binary_search(after.begin(), after.end(), a)) {
        std::fprintf(stderr, "buffer scenario: op %zu lost its dependency on %u\n", i, a);
        std::exit(1);
      }
    }
    deps += after.size();
    inferred.add(std::move(with_uses));
    stated.add(noop_spec(), std::move(after));
  }
  buffer_outcome out;
  out.deps_per_op = static_cast<double>(deps) / static_cast<double>(n);
  // Each graph's first run takes a copy, its second the graph itself.
  double s[2] = {}, f[2] = {};  // stated and inferred ops/s, first and second run of each
  const auto run_stated = [&](int k) {
    graph_spec g = k == 0 ? graph_spec{stated} : std::move(stated);
    s[k] = run_graph(rt, std::move(g), "stated buffer dependencies").ops_per_s;
  };
  const auto run_inferred = [&](int k) {
    graph_spec g = k == 0 ? graph_spec{inferred} : std::move(inferred);
    f[k] = run_graph(rt, std::move(g), "inferred from uses").ops_per_s;
  };
  if (stated_first) {
    run_stated(0);
    run_inferred(0);
    run_inferred(1);
    run_stated(1);
  } else {
    run_inferred(0);
    run_stated(0);
    run_stated(1);
    run_inferred(1);
  }
  out.explicit_ops_per_s = (s[0] + s[1]) / 2;
  out.inferred_ops_per_s = (f[0] + f[1]) / 2;
  // Stated then inferred: s[0], f[0] in the first order, s[1], f[1] in the other.
  out.cost_stated_first = 1.0 - (stated_first ? f[0] / s[0] : f[1] / s[1]);
  out.cost_inferred_first = 1.0 - (stated_first ? f[1] / s[1] : f[0] / s[0]);
  for (const buffer_id& b : made) {
    self->request(rt.coordinator(), caf::infinite, release_atom::value, b)
        .receive([](op_id) {},
                 [](caf::error& why) {
                   std::fprintf(stderr, "release: %s\n", describe(why).c_str());
                   std::exit(1);
                 });
  }
  return out;
}

struct replay_outcome {
  double graph_ops_per_s = 0;
  double replay_ops_per_s = 0;
  double record_ms = 0;
};

// The random DAG of `n` ops submitted `times` times and recorded once and replayed `times`
// times, one after another, each waiting for its end; `replay_first` alternates the order.
replay_outcome replay_runs(runtime& rt, std::size_t n, int times, std::uint64_t seed,
                           bool replay_first) {
  std::mt19937_64 rng{seed};
  const graph_spec g = make_graph(shape::random, n, rng);
  replay_outcome out;
  caf::scoped_actor self{rt.system()};
  const auto submitted = [&] {
    const auto start = now_ns();
    for (int k = 0; k < times; ++k) run_graph(rt, g, "replay's graph");
    out.graph_ops_per_s = static_cast<double>(n) * times / ((now_ns() - start) * 1e-9);
  };
  const auto replayed = [&] {
    step_handle h;
    const auto start = now_ns();
    self->request(rt.coordinator(), caf::infinite, record_atom::value, step_spec{"random DAG", g})
        .receive([&](step_handle made) { h = made; },
                 [](caf::error& why) {
                   std::fprintf(stderr, "record: %s\n", describe(why).c_str());
                   std::exit(1);
                 });
    out.record_ms = (now_ns() - start) * 1e-6;
    const auto first = now_ns();
    for (int k = 0; k < times; ++k) {
      self->request(rt.coordinator(), caf::infinite, replay_atom::value,
                    replay_request{h, {}, step_notices::none})
          .receive(
              [&](const step_outcome& o) {
                if (o.state != op_state::completed) {
                  std::fprintf(stderr, "replay: %s\n", describe(o.cause).c_str());
                  std::exit(1);
                }
              },
              [](caf::error& why) {
                std::fprintf(stderr, "replay: %s\n", describe(why).c_str());
                std::exit(1);
              });
    }
    out.replay_ops_per_s = static_cast<double>(n) * times / ((now_ns() - first) * 1e-9);
    self->request(rt.coordinator(), caf::infinite, release_atom::value, h)
        .receive([](bool) {}, [](caf::error&) {});
  };
  if (replay_first) {
    replayed();
    submitted();
  } else {
    submitted();
    replayed();
  }
  return out;
}

// One op per register message, up to bench::depth registered and not yet told.
struct pipeline_state {
  std::uint64_t total = 0, sent = 0, told = 0;
  std::promise<void> done;
};

caf::behavior pipelined_client(caf::event_based_actor* self, coordinator_actor co,
                               std::shared_ptr<pipeline_state> st) {
  auto me = caf::actor_cast<op_listener>(self);
  auto one = noop_spec();
  auto pump = [=] {
    while (st->sent < st->total && st->sent - st->told < bench::depth) {
      self->send(co, register_atom::value, one, me);
      ++st->sent;
    }
  };
  pump();
  return {
      [](op_id) {},
      [=](const std::vector<op_notice>& notices) {
        st->told += notices.size();
        if (st->told == st->total) {
          st->done.set_value();
          self->quit();
          return;
        }
        pump();
      },
  };
}

double pipelined_run(runtime& rt, std::uint64_t n) {
  auto st = std::make_shared<pipeline_state>();
  st->total = n;
  auto done = st->done.get_future();
  const auto start = now_ns();
  rt.system().spawn(pipelined_client, rt.coordinator(), st);
  done.wait();
  return static_cast<double>(n) / ((now_ns() - start) * 1e-9);
}

// One op at a time: register -> listener told, `gap` of idleness between ops.
struct latency_state {
  std::size_t samples = 0;
  std::chrono::microseconds gap{0};
  std::vector<double> us;
  std::int64_t sent_ns = 0;
  std::promise<void> done;
};

caf::behavior latency_client(caf::event_based_actor* self, coordinator_actor co,
                             std::shared_ptr<latency_state> st) {
  auto me = caf::actor_cast<op_listener>(self);
  auto one = noop_spec();
  auto next = [=] {
    st->sent_ns = now_ns();
    self->send(co, register_atom::value, one, me);
  };
  next();
  return {
      [](op_id) {},
      [=](const std::vector<op_notice>&) {
        st->us.push_back((now_ns() - st->sent_ns) * 1e-3);
        if (st->us.size() == st->samples) {
          st->done.set_value();
          self->quit();
          return;
        }
        if (st->gap.count() > 0) {
          self->delayed_send(self, st->gap, caf::tick_atom::value);
        } else {
          next();
        }
      },
      [=](caf::tick_atom) { next(); },
  };
}

// One op at a time as a run request: run -> its answer (what the client and the node use).
caf::behavior run_latency_client(caf::event_based_actor* self, coordinator_actor co,
                                 std::shared_ptr<latency_state> st) {
  auto one = noop_spec();
  auto next = std::make_shared<std::function<void()>>();
  *next = [=] {
    st->sent_ns = now_ns();
    self->request(co, caf::infinite, run_atom::value, one).then([=](const op_notice&) {
      st->us.push_back((now_ns() - st->sent_ns) * 1e-3);
      if (st->us.size() == st->samples) {
        st->done.set_value();
        self->quit();
        return;
      }
      (*next)();
    });
  };
  (*next)();
  return {[](caf::tick_atom) {}};
}

bench::percentiles run_latency_run(runtime& rt, std::size_t n) {
  auto st = std::make_shared<latency_state>();
  st->samples = n;
  auto done = st->done.get_future();
  rt.system().spawn(run_latency_client, rt.coordinator(), st);
  done.wait();
  return bench::summarize_us(st->us);
}

bench::percentiles latency_run(runtime& rt, std::size_t n, std::chrono::microseconds gap) {
  auto st = std::make_shared<latency_state>();
  st->samples = n;
  st->gap = gap;
  auto done = st->done.get_future();
  rt.system().spawn(latency_client, rt.coordinator(), st);
  done.wait();
  return bench::summarize_us(st->us);
}

// The same through cudactor::client from a plain thread: futures, up to `depth` in flight.
double client_run(runtime& rt, std::uint64_t n) {
  client c{rt};
  std::deque<std::future<op_notice>> window;
  const auto one = noop_spec();
  const auto start = now_ns();
  for (std::uint64_t i = 0; i < n; ++i) {
    if (window.size() == bench::depth) {
      (void)window.front().get();
      window.pop_front();
    }
    window.push_back(c.submit(one));
  }
  while (!window.empty()) {
    (void)window.front().get();
    window.pop_front();
  }
  return static_cast<double>(n) / ((now_ns() - start) * 1e-9);
}

// One op at a time from a plain thread: submit -> its future ready.
bench::percentiles client_latency_run(runtime& rt, std::size_t n, std::chrono::microseconds gap) {
  client c{rt};
  const auto one = noop_spec();
  std::vector<double> us;
  for (std::size_t i = 0; i < n; ++i) {
    const auto sent = now_ns();
    (void)c.submit(one).get();
    us.push_back((now_ns() - sent) * 1e-3);
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
  }
  return bench::summarize_us(us);
}

std::uint64_t resident_bytes() {
  std::ifstream statm{"/proc/self/statm"};
  std::uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

coordinator_metrics metrics_of(runtime& rt) {
  caf::scoped_actor self{rt.system()};
  coordinator_metrics out;
  self->request(rt.coordinator(), std::chrono::seconds{10}, metrics_atom::value)
      .receive([&](coordinator_metrics& m) { out = m; }, [](caf::error&) {});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const auto mode = bench::run_mode::parse(argc, argv);
  const int rounds = mode.quick ? 3 : 5;
  const std::size_t n = mode.quick ? 50'000 : 100'000;
  const std::vector<std::string> args{"--cudactor.streams=8"};

  std::map<shape, samples> graph;
  samples single, direct, direct_settled, via_client, timed, traced;
  samples chain_waits, random_waits, random_skipped, random_cross;
  samples buffer_inferred, buffer_explicit, buffer_deps, buffer_cost;
  samples buffer_cost_stated_first, buffer_cost_inferred_first;
  samples dense_inferred, dense_explicit, dense_deps, dense_cost;
  samples replay_graph, replay, replay_record_ms;
  const std::size_t step_ops = 10'000;
  const int step_times = 20;
  std::string backend;
  for (int round = 0; round < rounds; ++round) {
    runtime_config config;
    auto rt = bench::start_runtime(config, args, mode.passed_on);
    backend = rt->backend_reason();
    graph_run(*rt, shape::independent, n / 4, 1);  // warm-up
    direct.add(bench::direct_run(rt->device(), rt->poller(), 8, n / 8, 64));
    {
      // The run above is the backend's first in this runtime, and at 25-50 ms on this VM one
      // stall of a few ms moves it by a tenth or more; the graphs run warm (after the warm-up
      // graph). The same run three times more, their median: the direct path warm too.
      samples again;
      for (int k = 0; k < 3; ++k)
        again.add(bench::direct_run(rt->device(), rt->poller(), 8, n / 8, 64));
      direct_settled.add(again.median());
    }
    for (shape s : {shape::independent, shape::chain, shape::fan, shape::random}) {
      const auto before = metrics_of(*rt);
      graph[s].add(graph_run(*rt, s, n, 7 + round).ops_per_s);
      const auto after = metrics_of(*rt);
      const double waits = static_cast<double>(after.device_waits - before.device_waits);
      const double skipped =
          static_cast<double>(after.redundant_waits_skipped - before.redundant_waits_skipped);
      if (s == shape::chain) chain_waits.add(waits / n);
      if (s == shape::random) {
        random_waits.add(waits / n);
        random_skipped.add(skipped / n);
      }
    }
    {
      const auto r = replay_runs(*rt, step_ops, step_times, 21 + round, round % 2 == 0);
      replay_graph.add(r.graph_ops_per_s);
      replay.add(r.replay_ops_per_s);
      replay_record_ms.add(r.record_ms);
    }
    single.add(pipelined_run(*rt, n));
    via_client.add(client_run(*rt, n));
    // Last in this runtime: the buffers' state stays out of the figures above.
    const bool stated_first = round % 2 == 0;
    const auto buffers = buffer_runs(*rt, buffer_scenario::random_dag, n, 11 + round, stated_first);
    buffer_inferred.add(buffers.inferred_ops_per_s);
    buffer_explicit.add(buffers.explicit_ops_per_s);
    buffer_deps.add(buffers.deps_per_op);
    buffer_cost.add(1.0 - buffers.inferred_ops_per_s / buffers.explicit_ops_per_s);
    buffer_cost_stated_first.add(buffers.cost_stated_first);
    buffer_cost_inferred_first.add(buffers.cost_inferred_first);
    const auto dense = buffer_runs(*rt, buffer_scenario::dense, n, 11 + round, stated_first);
    dense_inferred.add(dense.inferred_ops_per_s);
    dense_explicit.add(dense.explicit_ops_per_s);
    dense_deps.add(dense.deps_per_op);
    dense_cost.add(1.0 - dense.inferred_ops_per_s / dense.explicit_ops_per_s);
    rt.reset();

    // The same random graphs with timing on (two host callbacks per operation), then with a
    // trace file written as well: what the profile's run times and the trace cost.
    const std::string trace_path =
        "/tmp/cudactor-coordinator-bench-" + std::to_string(::getpid()) + ".json";
    for (bool trace : {false, true}) {
      std::vector<std::string> with = args;
      with.push_back(trace ? "--cudactor.coordinator.trace=" + trace_path
                           : "--cudactor.coordinator.timing");
      runtime_config timed_config;
      auto timed_rt = bench::start_runtime(timed_config, with, mode.passed_on);
      graph_run(*timed_rt, shape::independent, n / 4, 1);  // warm-up
      (trace ? traced : timed).add(graph_run(*timed_rt, shape::random, n, 7 + round).ops_per_s);
    }
    std::remove(trace_path.c_str());
  }

  bench::table results({"path", "shape", "ops", "ops/s (median)", "range", "direct/this"});
  for (shape s : {shape::independent, shape::chain, shape::fan, shape::random}) {
    results.add({"graph", name_of(s), std::to_string(n), fixed(graph[s].median(), 0),
                 graph[s].range(), fixed(direct.median() / graph[s].median(), 2)});
  }
  const auto buffer_rows = [&](const char* shape_name, samples& stated, samples& inferred) {
    results.add({"graph, stated deps", shape_name, std::to_string(n), fixed(stated.median(), 0),
                 stated.range(), fixed(direct.median() / stated.median(), 2)});
    results.add({"graph, inferred from uses", shape_name, std::to_string(n),
                 fixed(inferred.median(), 0), inferred.range(),
                 fixed(direct.median() / inferred.median(), 2)});
  };
  buffer_rows("random DAG as uses", buffer_explicit, buffer_inferred);
  buffer_rows("dense uses", dense_explicit, dense_inferred);
  results.add({"graph x" + std::to_string(step_times), "random DAG", std::to_string(step_ops),
               fixed(replay_graph.median(), 0), replay_graph.range(),
               fixed(direct.median() / replay_graph.median(), 2)});
  results.add({"step replayed x" + std::to_string(step_times), "random DAG",
               std::to_string(step_ops), fixed(replay.median(), 0), replay.range(),
               fixed(direct.median() / replay.median(), 2)});
  results.add({"graph, timing on", "random", std::to_string(n), fixed(timed.median(), 0),
               timed.range(), fixed(direct.median() / timed.median(), 2)});
  results.add({"graph, trace file", "random", std::to_string(n), fixed(traced.median(), 0),
               traced.range(), fixed(direct.median() / traced.median(), 2)});
  results.add({"single, pipelined", "independent", std::to_string(n), fixed(single.median(), 0),
               single.range(), fixed(direct.median() / single.median(), 2)});
  results.add({"client, futures, pipelined", "independent", std::to_string(n),
               fixed(via_client.median(), 0), via_client.range(),
               fixed(direct.median() / via_client.median(), 2)});
  results.add({"direct backend", "independent", std::to_string(n), fixed(direct.median(), 0),
               direct.range(), "1.00"});
  results.add({"direct backend, settled", "independent", std::to_string(n),
               fixed(direct_settled.median(), 0), direct_settled.range(),
               fixed(direct.median() / direct_settled.median(), 2)});
  results.print("register -> end told to a listener, 8 streams, host backend, " +
                std::to_string(rounds) + " fresh runtimes (" + backend + ")");
  std::printf("step: recorded in %.1f ms (median); replay over the same graph submitted %.2fx\n",
              replay_record_ms.median(), replay.median() / replay_graph.median());
  std::printf(
      "device waits per op: chain %.2f, random %.2f (redundant ones skipped: %.2f per op)\n",
      chain_waits.median(), random_waits.median(), random_skipped.median());
  const auto percents = [](const samples& s) {
    if (s.xs.empty()) return std::string{"-"};
    auto [lo, hi] = std::minmax_element(s.xs.begin(), s.xs.end());
    return fixed(100.0 * *lo, 0) + "-" + fixed(100.0 * *hi, 0) + "%";
  };
  std::printf(
      "buffer uses, random DAG: %.2f dependencies per op; inferring them costs %.0f%% of the "
      "throughput with them stated (per run: %s; run after the stated graph %.0f%%, before it "
      "%.0f%%)\n",
      buffer_deps.median(), 100.0 * buffer_cost.median(), percents(buffer_cost).c_str(),
      100.0 * buffer_cost_stated_first.median(), 100.0 * buffer_cost_inferred_first.median());
  std::printf(
      "buffer uses, dense: %.2f dependencies per op; inferring them costs %.0f%% (per run: "
      "%s)\n",
      dense_deps.median(), 100.0 * dense_cost.median(), percents(dense_cost).c_str());

  // Latency, in a fresh runtime: back to back, then with the runtime idle between ops.
  runtime_config config;
  auto rt = bench::start_runtime(config, args, mode.passed_on);
  const std::size_t latency_samples = mode.quick ? 500 : 2000;
  latency_run(*rt, 100, std::chrono::microseconds{0});  // warm-up
  const auto hot = latency_run(*rt, latency_samples, std::chrono::microseconds{0});
  const auto run_hot = run_latency_run(*rt, latency_samples);
  const auto idle = latency_run(*rt, latency_samples / 2, std::chrono::microseconds{2000});
  bench::table latency(
      {"single op, nothing else in flight", "samples", "p50 us", "p99 us", "max us"});
  latency.add(
      {"back to back", std::to_string(hot.n), fixed(hot.p50), fixed(hot.p99), fixed(hot.max)});
  latency.add({"after 2 ms idle", std::to_string(idle.n), fixed(idle.p50), fixed(idle.p99),
               fixed(idle.max)});
  latency.add({"run request, back to back", std::to_string(run_hot.n), fixed(run_hot.p50),
               fixed(run_hot.p99), fixed(run_hot.max)});
  client_latency_run(*rt, 100, std::chrono::microseconds{0});  // warm-up
  const auto client_hot = client_latency_run(*rt, latency_samples, std::chrono::microseconds{0});
  const auto client_idle =
      client_latency_run(*rt, latency_samples / 2, std::chrono::microseconds{2000});
  latency.add({"client future, back to back", std::to_string(client_hot.n), fixed(client_hot.p50),
               fixed(client_hot.p99), fixed(client_hot.max)});
  latency.add({"client future, after 2 ms idle", std::to_string(client_idle.n),
               fixed(client_idle.p50), fixed(client_idle.p99), fixed(client_idle.max)});
  latency.print("register sent -> listener told");

  // Memory over many ops: graphs of independent ops, one after another.
  const std::size_t chunks = mode.quick ? 10 : 100;
  const std::size_t chunk = 100'000;
  std::uint64_t rss_first = 0, rss_last = 0, tracked_max = 0;
  const auto memory_start = now_ns();
  for (std::size_t c = 0; c < chunks; ++c) {
    graph_run(*rt, shape::independent, chunk, c);
    const auto m = metrics_of(*rt);
    tracked_max = std::max<std::uint64_t>(tracked_max, m.tracked);
    if (c == 0) rss_first = resident_bytes();
    rss_last = resident_bytes();
  }
  const double memory_seconds = (now_ns() - memory_start) * 1e-9;
  const auto final_metrics = metrics_of(*rt);
  std::printf(
      "\nmemory over %zu ops in %.1f s: resident %.1f MiB after the first 100k, %.1f MiB after "
      "all; coordinator state after each graph at most %llu entries; %llu completed in all\n",
      chunks * chunk, memory_seconds, rss_first / 1048576.0, rss_last / 1048576.0,
      static_cast<unsigned long long>(tracked_max),
      static_cast<unsigned long long>(final_metrics.completed));
  rt.reset();

  bench::json_line json;
  json.add("bench", std::string{"coordinator"});
  json.add("quick", mode.quick);
  json.add("graph_ops_per_s", graph[shape::random].median());
  json.add("graph_independent_ops_per_s", graph[shape::independent].median());
  json.add("graph_chain_ops_per_s", graph[shape::chain].median());
  json.add("graph_fan_ops_per_s", graph[shape::fan].median());
  json.add("buffer_inferred_ops_per_s", buffer_inferred.median());
  json.add("buffer_explicit_ops_per_s", buffer_explicit.median());
  json.add("buffer_deps_per_op", buffer_deps.median());
  json.add("buffer_inference_cost", buffer_cost.median());
  json.add("buffer_inference_cost_stated_first", buffer_cost_stated_first.median());
  json.add("buffer_inference_cost_inferred_first", buffer_cost_inferred_first.median());
  json.add("buffer_dense_inferred_ops_per_s", dense_inferred.median());
  json.add("buffer_dense_explicit_ops_per_s", dense_explicit.median());
  json.add("buffer_dense_deps_per_op", dense_deps.median());
  json.add("buffer_dense_inference_cost", dense_cost.median());
  json.add("replay_ops_per_s", replay.median());
  json.add("replay_graph_ops_per_s", replay_graph.median());
  json.add("replay_over_graph", replay.median() / replay_graph.median());
  json.add("replay_over_direct", direct.median() / replay.median());
  json.add("replay_record_ms", replay_record_ms.median());
  json.add("graph_timed_ops_per_s", timed.median());
  json.add("graph_traced_ops_per_s", traced.median());
  json.add("timing_cost_ratio", graph[shape::random].median() / timed.median());
  json.add("trace_cost_ratio", graph[shape::random].median() / traced.median());
  json.add("single_ops_per_s", single.median());
  json.add("client_ops_per_s", via_client.median());
  json.add("direct_ops_per_s", direct.median());
  json.add("direct_over_graph", direct.median() / graph[shape::random].median());
  json.add("direct_settled_ops_per_s", direct_settled.median());
  json.add("direct_settled_over_graph", direct_settled.median() / graph[shape::random].median());
  json.add("single_op_latency_p50_us", idle.p50);
  json.add("single_op_latency_p99_us", idle.p99);
  json.add("hot_latency_p50_us", hot.p50);
  json.add("hot_latency_p99_us", hot.p99);
  json.add("run_hot_latency_p50_us", run_hot.p50);
  json.add("client_latency_p50_us", client_idle.p50);
  json.add("client_latency_p99_us", client_idle.p99);
  json.add("client_hot_latency_p50_us", client_hot.p50);
  json.add("memory_ops", static_cast<double>(chunks * chunk));
  json.add("rss_first_mib", rss_first / 1048576.0);
  json.add("rss_last_mib", rss_last / 1048576.0);
  json.add("tracked_max", static_cast<double>(tracked_max));
  json.print();
  return 0;
}
