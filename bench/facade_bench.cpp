// bench/facade_bench.cpp
//
// The facade README recommends (`cudactor::coordinator::run(graph)`, facade/coordinator.hpp)
// against `cudactor::client::submit(graph)` (actors/client.hpp), the same graph, the same
// runtime, from the same plain thread, both answered through a std::future once every
// operation of the graph has ended. Host backend, every operation a no-op host "kernel", 8
// streams, the runtime's shipped defaults otherwise; no allocator tunable (run it with
// GLIBC_TUNABLES set to see what the allocator costs).
//
// Each round starts a fresh runtime, runs a warm-up graph, then each shape through both paths,
// the order alternated round by round (a graph run second in a runtime runs a little
// slower). Shapes: 100k independent operations (50k with --quick) and the random DAG of
// bench/coordinator_bench.cpp (each op after 0 to 3 of the 64 before it).
// Also: one operation at a time, after 2 ms idle, through both paths (run(op) and
// submit(op)), whose difference is the facade's lane (actors/front_door.hpp).
//
// Options after "--" go to every runtime started.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <random>
#include <thread>

#include "common/host_runs.hpp"
#include "common/report.hpp"
#include "cudactor/actors/client.hpp"
#include "cudactor/facade/coordinator.hpp"

namespace {

using namespace cudactor;
using bench::fixed;
using bench::now_ns;
using bench::samples;

op_spec noop_spec() {
  op_spec s;
  s.body = work::local([](const gpu::launch_context&) { return gpu::status{}; });
  return s;
}

enum class shape { independent, random };

graph_spec make_graph(shape s, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  graph_spec g;
  g.ops.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<std::uint32_t> after;
    if (s == shape::random && i > 0) {
      const auto deps = static_cast<std::uint32_t>(rng() % 4);
      for (std::uint32_t d = 0; d < deps; ++d) {
        const std::uint32_t window = std::min<std::uint32_t>(i, 64);
        const std::uint32_t dep = i - 1 - static_cast<std::uint32_t>(rng() % window);
        if (std::find(after.begin(), after.end(), dep) == after.end()) after.push_back(dep);
      }
    }
    g.add(noop_spec(), std::move(after));
  }
  return g;
}

// Page faults of the whole process so far (minor: memory the system hands back zeroed).
std::int64_t faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

struct timed {
  double ops_per_s = 0;
  double faults_per_op = 0;
};

void check(const std::vector<op_notice>& ends, std::size_t n, const char* what) {
  const auto completed = std::count_if(
      ends.begin(), ends.end(), [](const op_notice& e) { return e.state == op_state::completed; });
  if (ends.size() != n || static_cast<std::size_t>(completed) != n) {
    std::fprintf(stderr, "%s: %zu of %zu ops completed\n", what,
                 static_cast<std::size_t>(completed), n);
    std::exit(1);
  }
}

// The graph is built before the clock starts; both paths take it by value (moved in).
template <class Run>
timed through(graph_spec g, const char* what, Run run) {
  const std::size_t n = g.ops.size();
  const auto faulted = faults();
  const auto start = now_ns();
  auto ends = run(std::move(g));
  const auto took = now_ns() - start;
  const auto faulted_after = faults();
  check(ends, n, what);
  return {static_cast<double>(n) / (took * 1e-9),
          static_cast<double>(faulted_after - faulted) / static_cast<double>(n)};
}

timed through_client(client& c, graph_spec g) {
  return through(std::move(g), "client",
                 [&](graph_spec x) { return c.submit(std::move(x)).get(); });
}

timed through_facade(const coordinator& c, graph_spec g) {
  return through(std::move(g), "facade", [&](graph_spec x) { return c.run(std::move(x)).get(); });
}

// One op at a time after `gap` of idleness: submitted -> its future ready, in µs.
template <class Submit>
std::vector<double> lone_ops(std::size_t count, std::chrono::microseconds gap, Submit submit) {
  std::vector<double> us;
  for (std::size_t i = 0; i < count; ++i) {
    std::this_thread::sleep_for(gap);
    const auto start = now_ns();
    const op_notice end = submit();
    us.push_back((now_ns() - start) * 1e-3);
    if (end.state != op_state::completed) {
      std::fprintf(stderr, "a lone op did not complete\n");
      std::exit(1);
    }
  }
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const auto mode = bench::run_mode::parse(argc, argv);
  const int rounds = mode.quick ? 3 : 5;
  const std::size_t n = mode.quick ? 50'000 : 100'000;
  const std::vector<std::string> args{"--cudactor.streams=8"};

  samples facade[2], via_client[2], faults_per_op;
  std::string backend;
  for (int round = 0; round < rounds; ++round) {
    runtime_config config;
    auto rt = bench::start_runtime(config, args, mode.passed_on);
    backend = rt->backend_reason();
    client cl{*rt};
    coordinator co{*rt};
    (void)through_client(cl, make_graph(shape::independent, n / 4, 1));  // warm-up
    for (shape s : {shape::independent, shape::random}) {
      const auto i = static_cast<std::size_t>(s);
      const auto seed = 7 + static_cast<std::uint64_t>(round);
      const auto by_facade = [&] {
        const auto t = through_facade(co, make_graph(s, n, seed));
        facade[i].add(t.ops_per_s);
        faults_per_op.add(t.faults_per_op);
      };
      const auto by_client = [&] {
        const auto t = through_client(cl, make_graph(s, n, seed));
        via_client[i].add(t.ops_per_s);
        faults_per_op.add(t.faults_per_op);
      };
      if (round % 2 == 0) {
        by_facade();
        by_client();
      } else {
        by_client();
        by_facade();
      }
    }
  }

  bench::table results({"path", "shape", "ops", "ops/s (median)", "range", "client/this"});
  const char* names[] = {"independent", "random DAG"};
  for (std::size_t i = 0; i < 2; ++i) {
    results.add({"client::submit(graph)", names[i], std::to_string(n),
                 fixed(via_client[i].median(), 0), via_client[i].range(), "1.00"});
    results.add({"coordinator::run(graph)", names[i], std::to_string(n),
                 fixed(facade[i].median(), 0), facade[i].range(),
                 fixed(via_client[i].median() / facade[i].median(), 2)});
  }
  results.print("one graph, submitted -> every end in a std::future, 8 streams, " +
                std::to_string(rounds) + " fresh runtimes (" + backend + ")");
  const auto [fewest, most] = std::minmax_element(faults_per_op.xs.begin(), faults_per_op.xs.end());
  std::printf("page faults per operation while a graph ran: %.4f (median; %.4f-%.4f)\n",
              faults_per_op.median(), *fewest, *most);

  runtime_config config;
  auto rt = bench::start_runtime(config, args, mode.passed_on);
  client cl{*rt};
  coordinator co{*rt};
  const std::size_t count = mode.quick ? 300 : 1000;
  const auto gap = std::chrono::microseconds{2000};
  const auto by_client = [&] { return cl.submit(noop_spec()).get(); };
  const auto by_facade = [&] { return co.run(noop_spec()).get(); };
  (void)lone_ops(50, std::chrono::microseconds{0}, by_client);  // warm-up
  (void)lone_ops(50, std::chrono::microseconds{0}, by_facade);
  // Alternated in blocks, so that a slow stretch of the VM falls on both.
  std::vector<double> client_us, facade_us;
  for (int block = 0; block < 4; ++block) {
    for (double x : lone_ops(count / 4, gap, by_client)) client_us.push_back(x);
    for (double x : lone_ops(count / 4, gap, by_facade)) facade_us.push_back(x);
  }
  const auto lone_client = bench::summarize_us(client_us);
  const auto lone_facade = bench::summarize_us(facade_us);
  bench::table latency({"one op after 2 ms idle", "samples", "p50 us", "p99 us", "max us"});
  latency.add({"client::submit(op)", std::to_string(lone_client.n), fixed(lone_client.p50),
               fixed(lone_client.p99), fixed(lone_client.max)});
  latency.add({"coordinator::run(op)", std::to_string(lone_facade.n), fixed(lone_facade.p50),
               fixed(lone_facade.p99), fixed(lone_facade.max)});
  latency.print("submitted -> its future ready");

  bench::json_line json;
  json.add("bench", std::string{"facade"});
  json.add("quick", mode.quick);
  json.add("client_independent_ops_per_s", via_client[0].median());
  json.add("facade_independent_ops_per_s", facade[0].median());
  json.add("client_over_facade_independent", via_client[0].median() / facade[0].median());
  json.add("client_random_ops_per_s", via_client[1].median());
  json.add("facade_random_ops_per_s", facade[1].median());
  json.add("client_over_facade_random", via_client[1].median() / facade[1].median());
  json.add("faults_per_op", faults_per_op.median());
  json.add("client_lone_p50_us", lone_client.p50);
  json.add("facade_lone_p50_us", lone_facade.p50);
  json.add("facade_over_client_lone_p50", lone_facade.p50 / lone_client.p50);
  json.print();
}
