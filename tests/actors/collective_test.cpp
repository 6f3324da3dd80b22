// Communicators across node processes: cudactor-node processes on 127.0.0.1, made into a
// communicator by a cluster that is its rendezvous (the ranks' addresses travel as CAF
// messages through the control plane). Checks that 2 and 4 nodes connect and run collective
// barriers in step, interleaved with other work; that a name is refused where it cannot be a
// communicator's; that kill -9 of a rank while the others wait in a collective fails theirs
// within the bound, naming the rank and its node; and that asking again rebuilds the
// communicator as its next generation over the nodes that are left, which then works; that a
// rank of 4 killed or hung by SIGSTOP in an all-reduce fails every survivor, its ring
// neighbours and the rank opposite, within the heartbeat's bound, naming it. With
// buffers the control plane allocates on the nodes, fills and reads back: every kind and
// element type across 2 and 4 node processes against values computed here, interleaved with
// compute on the nodes' streams ordered by the buffers alone; only the owner may use buffers.
// (collective_ops_test runs ranks as runtimes of one process.)
#define BOOST_TEST_MODULE collective
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <signal.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/remote_node.hpp"
#include "common/time_scale.hpp"
#include "cudactor/actors/cluster_actor.hpp"
#include "cudactor/actors/node_client.hpp"
#include "cudactor/gpu/element_math.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

using clock_type = std::chrono::steady_clock;

struct job {
  explicit job(std::size_t n, std::chrono::nanoseconds collective_timeout = scaled(20s)) {
    for (std::size_t i = 0; i < n; ++i) {
      nodes.push_back(std::make_unique<node_process>("n" + std::to_string(i)));
    }
    std::vector<remote_node> remotes;
    for (auto& node : nodes) {
      BOOST_REQUIRE_MESSAGE(node->port != 0, "no port printed: " << read_file(node->log));
      auto connected = connect_node(cp.system, "127.0.0.1", node->port, connect_limit());
      BOOST_REQUIRE_MESSAGE(connected, cp.why(connected));
      remotes.push_back(*connected);
    }
    cluster_options options;
    options.name = "training";
    options.barrier_timeout = std::chrono::duration_cast<caf::timespan>(scaled(60s));
    options.collective_timeout = std::chrono::duration_cast<caf::timespan>(collective_timeout);
    options.rendezvous_timeout = std::chrono::duration_cast<caf::timespan>(scaled(20s));
    auto spawned = spawn_cluster(cp.system, remotes, options);
    BOOST_REQUIRE_MESSAGE(spawned, cp.why(spawned));
    owner.emplace(std::move(*spawned));
    cluster = owner->actor();
    runtime::release_calling_thread();
  }

  // A collective barrier on communicator `name`, for the node `node`.
  std::future<caf::expected<op_notice>> barrier(const std::string& node,
                                                const std::string& name = "grads") {
    op_collective c;
    c.communicator = name;
    c.kind = gpu::collective_kind::barrier;
    return std::async(std::launch::async, [this, node, c] {
      return cp.ask_for<op_notice>(scaled(60s), cluster, register_atom::value, node,
                                   op_spec::of(c, "collective barrier"));
    });
  }

  // The node's buffers, through the cluster (which owns the nodes).
  buffer_handle alloc(const std::string& node, std::uint64_t bytes) {
    auto h = cp.ask<buffer_handle>(cluster, alloc_atom::value, node, buffer_call::alloc(bytes));
    BOOST_REQUIRE_MESSAGE(h, cp.why(h));
    return *h;
  }
  void store(const std::string& node, buffer_id b, std::uint64_t offset,
             std::vector<std::uint8_t> data) {
    auto end = cp.ask<op_notice>(cluster, store_atom::value, node,
                                 buffer_call::store(b, offset, std::move(data)));
    BOOST_REQUIRE_MESSAGE(end, cp.why(end));
    BOOST_REQUIRE_MESSAGE(end->state == op_state::completed, cp.render(end->cause));
  }
  std::vector<std::uint8_t> fetch(const std::string& node, buffer_id b, std::uint64_t offset,
                                  std::uint64_t bytes) {
    auto got = cp.ask<std::vector<std::uint8_t>>(cluster, fetch_atom::value, node,
                                                 buffer_call::fetch(b, offset, bytes));
    BOOST_REQUIRE_MESSAGE(got, cp.why(got));
    return *got;
  }
  // Every node's graph at once; every node's notices.
  std::vector<std::vector<op_notice>> run(const std::function<graph_spec(std::size_t)>& graph) {
    std::vector<std::future<caf::expected<std::vector<op_notice>>>> ends;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      ends.push_back(std::async(std::launch::async, [this, i, g = graph(i)]() mutable {
        return cp.ask_for<std::vector<op_notice>>(scaled(60s), cluster, submit_atom::value,
                                                  "n" + std::to_string(i), std::move(g));
      }));
    }
    std::vector<std::vector<op_notice>> out;
    for (auto& f : ends) {
      auto got = f.get();
      BOOST_REQUIRE_MESSAGE(got, cp.why(got));
      out.push_back(std::move(*got));
    }
    return out;
  }

  control_plane cp;
  std::vector<std::unique_ptr<node_process>> nodes;
  std::optional<cudactor::cluster> owner;
  cluster_actor cluster;
};

// n0 and n1 enter a barrier n2 never joins; then n2 gets `signal`. Both must fail, saying
// each of `must_say`; how long that took from the signal.
clock_type::duration rank_2_signalled_in_a_barrier(job& j, int signal,
                                                   const std::vector<std::string>& must_say) {
  auto first = j.barrier("n0");
  auto second = j.barrier("n1");
  std::this_thread::sleep_for(scaled(500ms));
  const auto sent = clock_type::now();
  BOOST_REQUIRE(kill(j.nodes[2]->child.pid(), signal) == 0);
  for (auto* f : {&first, &second}) {
    auto end = f->get();
    BOOST_REQUIRE_MESSAGE(end, j.cp.why(end));
    BOOST_TEST((end->state == op_state::failed));
    const std::string said = j.cp.render(end->cause);
    BOOST_TEST_MESSAGE("the survivor's failure: " << said);
    for (const auto& words : must_say) BOOST_TEST(said.find(words) != std::string::npos, said);
  }
  return clock_type::now() - sent;
}

void connects_and_runs_in_step(std::size_t n) {
  job j{n};
  auto made = j.cp.ask_for<communicator_info>(scaled(60s), j.cluster, communicator_atom::value,
                                              std::string{"grads"});
  BOOST_REQUIRE_MESSAGE(made, j.cp.why(made));
  BOOST_TEST(made->generation == 1u);
  BOOST_TEST(made->engine == "gloo");
  BOOST_REQUIRE(made->members.size() == n);
  for (std::size_t i = 0; i < n; ++i) BOOST_TEST(made->members[i] == "n" + std::to_string(i));
  BOOST_TEST_MESSAGE(
      n << " ranks connected in "
        << std::chrono::duration_cast<std::chrono::milliseconds>(made->duration).count() << " ms");
  // Five barriers in a row, each node also given work of its own between them: every rank
  // passes each barrier only with every other.
  for (int round = 0; round < 5; ++round) {
    std::vector<std::future<caf::expected<op_notice>>> ends;
    std::vector<std::future<caf::expected<op_notice>>> work;
    for (std::size_t i = 0; i < n; ++i) {
      const std::string node = "n" + std::to_string(i);
      op_spec busy;
      busy.description = "busy";
      busy.body = work::named("busy", std::uint64_t{1000 * (i + 1)});
      work.push_back(std::async(std::launch::async, [&j, node, busy] {
        return j.cp.ask_for<op_notice>(scaled(60s), j.cluster, register_atom::value, node, busy);
      }));
      ends.push_back(j.barrier(node));
    }
    for (auto& f : ends) {
      auto end = f.get();
      BOOST_REQUIRE_MESSAGE(end, j.cp.why(end));
      BOOST_TEST((end->state == op_state::completed), j.cp.render(end->cause));
    }
    for (auto& f : work) {
      auto end = f.get();
      BOOST_REQUIRE_MESSAGE(end, j.cp.why(end));
      BOOST_TEST((end->state == op_state::completed));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_nodes_make_a_communicator_and_run_collectives_in_step) {
  connects_and_runs_in_step(2);
}

BOOST_AUTO_TEST_CASE(four_nodes_make_a_communicator_and_run_collectives_in_step) {
  connects_and_runs_in_step(4);
}

BOOST_AUTO_TEST_CASE(a_collective_on_a_communicator_the_node_lacks_or_a_bad_name_is_refused) {
  job j{2};
  auto bad = j.cp.ask<communicator_info>(j.cluster, communicator_atom::value, std::string{"a/b"});
  BOOST_REQUIRE(!bad);
  BOOST_TEST(is(bad.error(), errc::invalid_argument));
  auto none = j.barrier("n0", "nobody").get();
  BOOST_REQUIRE(!none);
  BOOST_TEST(is(none.error(), errc::unknown_communicator), j.cp.why(none));
  BOOST_TEST(j.cp.why(none).find("'nobody'") != std::string::npos, j.cp.why(none));
}

BOOST_AUTO_TEST_CASE(a_rank_killed_mid_collective_fails_the_others_by_name_then_a_rebuild_works) {
  job j{3};
  auto made = j.cp.ask_for<communicator_info>(scaled(60s), j.cluster, communicator_atom::value,
                                              std::string{"grads"});
  BOOST_REQUIRE_MESSAGE(made, j.cp.why(made));
  const auto took = rank_2_signalled_in_a_barrier(j, SIGKILL, {"rank 2", "node 'n2'"});
  // Well inside the collective timeout (20 s): the transport fails at once, the loss names it.
  BOOST_TEST((took < scaled(10s)));
  BOOST_TEST_MESSAGE("kill -9 failed the collective after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                     << " ms");
  BOOST_TEST(j.nodes[2]->child.wait_exit(10s).value_or(0) == -1);
  // Broken on the ranks left, until rebuilt: refused at once.
  auto refused = j.barrier("n0").get();
  BOOST_REQUIRE(!refused);
  BOOST_TEST(j.cp.why(refused).find("node 'n2'") != std::string::npos, j.cp.why(refused));
  // One call rebuilds it over the nodes that are up, as generation 2.
  auto rebuilt = j.cp.ask_for<communicator_info>(scaled(60s), j.cluster, communicator_atom::value,
                                                 std::string{"grads"});
  BOOST_REQUIRE_MESSAGE(rebuilt, j.cp.why(rebuilt));
  BOOST_TEST(rebuilt->generation == 2u);
  BOOST_TEST((rebuilt->members == std::vector<std::string>{"n0", "n1"}));
  auto a = j.barrier("n0");
  auto b = j.barrier("n1");
  for (auto* f : {&a, &b}) {
    auto end = f->get();
    BOOST_REQUIRE_MESSAGE(end, j.cp.why(end));
    BOOST_TEST((end->state == op_state::completed), j.cp.render(end->cause));
  }
}

namespace {

// Four ranks in Gloo's ring (each receives from rank - 1): n0, n1 and n3 enter an all-reduce
// that n2 never joins; then n2 gets `signal`. Every survivor must fail within `bound` of the
// signal, naming rank 2 and its node: n1 and n3 wait on n2 itself, n0, its neighbour in
// neither direction, waits on n3. The collective timeout (30 s) is far beyond the bound.
void rank_2_of_4_signalled_in_an_all_reduce(int signal, std::chrono::milliseconds bound) {
  job j{4, scaled(30s)};
  auto made = j.cp.ask_for<communicator_info>(scaled(60s), j.cluster, communicator_atom::value,
                                              std::string{"grads"});
  BOOST_REQUIRE_MESSAGE(made, j.cp.why(made));
  const pid_t signalled = j.nodes[2]->child.pid();
  // Should a check stop the test early: a stopped process would not see the SIGTERM that
  // ends the others.
  struct resume_on_exit {
    pid_t pid;
    ~resume_on_exit() { kill(pid, SIGCONT); }
  } resume{signalled};
  using ended = std::pair<caf::expected<op_notice>, clock_type::time_point>;
  std::vector<std::future<ended>> ends;
  for (std::size_t r : {0u, 1u, 3u}) {
    const std::string node = "n" + std::to_string(r);
    const auto buffer = j.alloc(node, 64 * sizeof(float));
    op_collective x;
    x.communicator = "grads";
    x.kind = gpu::collective_kind::all_reduce;
    x.type = gpu::element_type::f32;
    x.count = 64;
    x.send = buffer.id;
    x.recv = buffer.id;
    ends.push_back(std::async(std::launch::async, [&j, node, x] {
      auto end = j.cp.ask_for<op_notice>(scaled(120s), j.cluster, register_atom::value, node,
                                         op_spec::of(x, "all-reduce"));
      return ended{std::move(end), clock_type::now()};
    }));
  }
  std::this_thread::sleep_for(scaled(500ms));
  const auto sent = clock_type::now();
  BOOST_REQUIRE(kill(signalled, signal) == 0);
  std::size_t r = 0;
  for (auto& f : ends) {
    auto [end, at] = f.get();
    const auto took = at - sent;
    BOOST_REQUIRE_MESSAGE(end, j.cp.why(end));
    BOOST_TEST((end->state == op_state::failed));
    const std::string said = j.cp.render(end->cause);
    BOOST_TEST_MESSAGE("n" << (r == 2 ? 3 : r) << " failed "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                           << " ms after the signal: " << said);
    for (const std::string words : {"rank 2", "node 'n2'"}) {
      BOOST_TEST(said.find(words) != std::string::npos, said);
    }
    BOOST_TEST((took < bound), "n" << (r == 2 ? 3 : r));
    ++r;
  }
  kill(signalled, SIGKILL);
  BOOST_TEST(j.nodes[2]->child.wait_exit(10s).value_or(0) == -1);
}

// The heartbeat's bound: a node that stops answering is declared lost after
// middleman.connection-timeout (2 s, stretched in sanitized builds as liveness_args does).
std::chrono::milliseconds heartbeat_bound() { return scaled(std::chrono::milliseconds{2000}); }

}  // namespace

// kill -9: the connections close at once, so the loss comes at once; every survivor, n0 as
// well as n2's neighbours, fails well within the heartbeat's bound (it was 10 s, the
// collective timeout then, for n0).
BOOST_AUTO_TEST_CASE(a_rank_killed_mid_all_reduce_fails_every_survivor_within_the_bound) {
  rank_2_of_4_signalled_in_an_all_reduce(SIGKILL, heartbeat_bound() + scaled(2000ms));
}

// SIGSTOP: the connections stay open, so nothing fails until the heartbeat declares the node
// lost; then every survivor's call in progress is interrupted (it ran to the collective
// timeout before).
BOOST_AUTO_TEST_CASE(a_rank_hung_mid_all_reduce_fails_every_survivor_within_the_bound) {
  rank_2_of_4_signalled_in_an_all_reduce(SIGSTOP, heartbeat_bound() + scaled(3000ms));
}

namespace {

using gpu::collective_kind;
using gpu::element_type;
using gpu::reduce_op;

// Writes `v` as one element of type `t`.
void put(element_type t, double v, std::uint8_t* at) {
  const auto copy = [at](const auto x) { std::memcpy(at, &x, sizeof x); };
  switch (t) {
    case element_type::f32: copy(static_cast<float>(v)); break;
    case element_type::f64: copy(v); break;
    case element_type::f16: copy(gpu::float_to_half(static_cast<float>(v))); break;
    case element_type::bf16: copy(gpu::float_to_bf16(static_cast<float>(v))); break;
    case element_type::i32: copy(static_cast<std::int32_t>(v)); break;
    case element_type::i64: copy(static_cast<std::int64_t>(v)); break;
    case element_type::u8: copy(static_cast<std::uint8_t>(v)); break;
  }
}

bool is_integer(element_type t) {
  return t == element_type::i32 || t == element_type::i64 || t == element_type::u8;
}

// What rank r gives as element j of its input: small integers, so that every result below is
// exact in every element type (sums of 4 at most 28, products at most 16, halves, quarters).
double value(reduce_op op, std::size_t r, std::size_t j) {
  return op == reduce_op::prod ? 1.0 + static_cast<double>((r + j) % 2)
                               : 1.0 + static_cast<double>((3 * r + j) % 7);
}

// Element j reduced over `ranks` ranks; avg of integers truncates, as the engines do.
double reduced(reduce_op op, element_type t, std::size_t ranks, std::size_t j, double factor) {
  double acc = value(op, 0, j) * factor;
  for (std::size_t q = 1; q < ranks; ++q) {
    const double v = value(op, q, j) * factor;
    switch (op) {
      case reduce_op::sum:
      case reduce_op::avg: acc += v; break;
      case reduce_op::prod: acc *= v; break;
      case reduce_op::min: acc = std::min(acc, v); break;
      case reduce_op::max: acc = std::max(acc, v); break;
    }
  }
  if (op != reduce_op::avg) return acc;
  const double n = static_cast<double>(ranks);
  return is_integer(t) ? static_cast<double>(static_cast<std::int64_t>(acc / n)) : acc / n;
}

constexpr std::uint8_t sentinel = 0x5a;  // what a receive region holds before

// One collective of the matrix: where its input and output lie in the nodes' two buffers.
struct case_of {
  collective_kind kind = collective_kind::all_reduce;
  reduce_op op = reduce_op::sum;
  element_type type = element_type::f32;
  std::uint32_t root = 0;
  bool scaled = false;  // compute scales its input by 3 before, its output by 1/2 after
  std::uint64_t send_at = 0, recv_at = 0, send_bytes = 0, recv_bytes = 0;

  std::string name() const {
    return std::string{to_string(kind)} + " " + std::string{to_string(op)} + " " +
           std::string{to_string(type)} + (scaled ? " between compute" : "");
  }
};

struct matrix {
  std::size_t ranks = 0;
  std::uint64_t n = 24;  // elements per rank
  std::vector<case_of> cases;
  std::uint64_t send_total = 0, recv_total = 0;

  explicit matrix(std::size_t size) : ranks(size) {
    const element_type types[] = {element_type::f32,  element_type::f64, element_type::f16,
                                  element_type::bf16, element_type::i32, element_type::i64,
                                  element_type::u8};
    const reduce_op ops[] = {reduce_op::sum, reduce_op::prod, reduce_op::min, reduce_op::max,
                             reduce_op::avg};
    const auto root = static_cast<std::uint32_t>(size - 1);
    for (auto t : types) {
      for (auto op : ops) add({collective_kind::all_reduce, op, t, 0, false});
      add({collective_kind::broadcast, reduce_op::sum, t, root, false});
      add({collective_kind::reduce, reduce_op::max, t, 1, false});
      add({collective_kind::all_gather, reduce_op::sum, t, 0, false});
      add({collective_kind::reduce_scatter, reduce_op::sum, t, 0, false});
    }
    add({collective_kind::all_reduce, reduce_op::sum, element_type::f32, 0, true});
  }

  void add(case_of c) {
    const std::uint64_t e = gpu::element_size(c.type);
    c.send_bytes = n * e * (c.kind == collective_kind::reduce_scatter ? ranks : 1);
    c.recv_bytes = n * e * (c.kind == collective_kind::all_gather ? ranks : 1);
    c.send_at = send_total;
    c.recv_at = recv_total;
    send_total += (c.send_bytes + 15) / 16 * 16;
    recv_total += (c.recv_bytes + 15) / 16 * 16;
    cases.push_back(c);
  }

  // Rank r's input buffer.
  std::vector<std::uint8_t> input(std::size_t r) const {
    std::vector<std::uint8_t> out(send_total, 0);
    for (const auto& c : cases) {
      const std::uint64_t e = gpu::element_size(c.type);
      for (std::uint64_t j = 0; j < c.send_bytes / e; ++j) {
        put(c.type, value(c.op, r, j), out.data() + c.send_at + j * e);
      }
    }
    return out;
  }

  // What rank r's output region of `c` must hold.
  std::vector<std::uint8_t> expected(const case_of& c, std::size_t r) const {
    const std::uint64_t e = gpu::element_size(c.type);
    std::vector<std::uint8_t> out(c.recv_bytes, sentinel);
    for (std::uint64_t k = 0; k < c.recv_bytes / e; ++k) {
      double v = 0;
      switch (c.kind) {
        case collective_kind::all_reduce:
          v = reduced(c.op, c.type, ranks, k, c.scaled ? 3.0 : 1.0) * (c.scaled ? 0.5 : 1.0);
          break;
        case collective_kind::broadcast: v = value(c.op, c.root, k); break;
        case collective_kind::reduce:
          if (r != c.root) return out;  // only the root's output is written
          v = reduced(c.op, c.type, ranks, k, 1.0);
          break;
        case collective_kind::all_gather: v = value(c.op, k / n, k % n); break;
        case collective_kind::reduce_scatter:
          v = reduced(c.op, c.type, ranks, r * n + k, 1.0);
          break;
        case collective_kind::barrier: break;
      }
      put(c.type, v, out.data() + k * e);
    }
    return out;
  }
};

// Every kind and element type on `size` node processes, in one graph per node that also
// holds compute: two scalings around one all-reduce (ordered by the buffers alone) and busy
// work that uses no buffer.
void every_kind_and_type(std::size_t size) {
  job j{size};
  auto made = j.cp.ask_for<communicator_info>(scaled(60s), j.cluster, communicator_atom::value,
                                              std::string{"grads"});
  BOOST_REQUIRE_MESSAGE(made, j.cp.why(made));
  const matrix m{size};
  std::vector<buffer_handle> send, recv;
  for (std::size_t r = 0; r < size; ++r) {
    const std::string node = "n" + std::to_string(r);
    send.push_back(j.alloc(node, m.send_total));
    recv.push_back(j.alloc(node, m.recv_total));
    BOOST_TEST(send.back().address == 0u);  // the node's memory is not the peer's to know
    j.store(node, send.back().id, 0, m.input(r));
    j.store(node, recv.back().id, 0, std::vector<std::uint8_t>(m.recv_total, sentinel));
  }
  std::size_t scaled_at = 0;  // the collective between compute, in the graph
  auto runs = j.run([&](std::size_t r) {
    graph_spec g;
    for (std::size_t b = 0; b < 3; ++b) {
      g.add(named("busy", work::named("busy", std::uint64_t{500})));
    }
    for (const auto& c : m.cases) {
      op_collective x;
      x.communicator = "grads";
      x.kind = c.kind;
      x.op = c.op;
      x.type = c.type;
      x.count = m.n;
      x.root = c.root;
      x.send = send[r].id;
      x.send_offset = c.send_at;
      x.recv = recv[r].id;
      x.recv_offset = c.recv_at;
      if (c.scaled) {
        op_spec before = named("scale input", work::named("scale", 3.0f));
        before.uses = {buffer_use::read_write(send[r].id, c.send_at, c.send_bytes)};
        g.add(std::move(before));
        scaled_at = g.ops.size();
      }
      g.add(op_spec::of(x, c.name()));
      if (c.scaled) {
        op_spec after = named("scale output", work::named("scale", 0.5f));
        after.uses = {buffer_use::read_write(recv[r].id, c.recv_at, c.recv_bytes)};
        g.add(std::move(after));
      }
    }
    return g;
  });
  for (std::size_t r = 0; r < size; ++r) {
    for (std::size_t i = 0; i < runs[r].size(); ++i) {
      BOOST_REQUIRE_MESSAGE(runs[r][i].state == op_state::completed,
                            "n" << r << " graph op " << i << ": " << j.cp.render(runs[r][i].cause));
    }
    // Nothing named the scalings: the coordinator inferred them from the buffers.
    const auto after = [&](std::size_t later, std::size_t earlier) {
      const auto& d = runs[r][later].inferred;
      return std::any_of(d.begin(), d.end(),
                         [&](const inferred_dep& x) { return x.dep == runs[r][earlier].id; });
    };
    BOOST_TEST(after(scaled_at, scaled_at - 1), "n" << r);
    BOOST_TEST(after(scaled_at + 1, scaled_at), "n" << r);
    const auto out = j.fetch("n" + std::to_string(r), recv[r].id, 0, m.recv_total);
    BOOST_REQUIRE(out.size() == m.recv_total);
    std::string wrong;
    for (const auto& c : m.cases) {
      const auto want = m.expected(c, r);
      if (std::memcmp(out.data() + c.recv_at, want.data(), want.size()) != 0) {
        wrong += (wrong.empty() ? "" : "; ") + c.name();
      }
    }
    BOOST_TEST(wrong.empty(), "n" << r << " wrong: " << wrong);
  }
  BOOST_TEST_MESSAGE(size << " nodes: " << m.cases.size() << " collectives checked on every rank");
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_kind_and_element_type_across_two_node_processes) {
  every_kind_and_type(2);
}

BOOST_AUTO_TEST_CASE(every_kind_and_element_type_across_four_node_processes) {
  every_kind_and_type(4);
}

BOOST_AUTO_TEST_CASE(only_the_owner_may_allocate_or_name_a_nodes_buffers) {
  job j{2};
  const buffer_handle mine = j.alloc("n0", 64);
  // Another control plane, straight to the node: refused, whatever it says.
  control_plane other;
  auto node = connect_node(other.system, "127.0.0.1", j.nodes[0]->port, connect_limit());
  BOOST_REQUIRE_MESSAGE(node, other.why(node));
  auto alloc = other.ask<buffer_handle>(node->actor, alloc_atom::value, buffer_call::alloc(64));
  BOOST_REQUIRE(!alloc);
  BOOST_TEST(is(alloc.error(), errc::permission_denied), other.why(alloc));
  auto peek = other.ask<std::vector<std::uint8_t>>(node->actor, fetch_atom::value,
                                                   buffer_call::fetch(mine.id, 0, 64));
  BOOST_REQUIRE(!peek);
  BOOST_TEST(is(peek.error(), errc::permission_denied), other.why(peek));
  op_spec scale = named("scale", work::named("scale", 2.0f));
  scale.uses = {buffer_use::read_write(mine.id)};
  auto used = other.ask<op_notice>(node->actor, register_atom::value, scale);
  BOOST_REQUIRE(!used);
  BOOST_TEST(is(used.error(), errc::permission_denied), other.why(used));
  // The owner: a buffer it does not hold, a range outside one, a call out of shape.
  op_spec stray = named("scale", work::named("scale", 2.0f));
  stray.uses = {buffer_use::read_write(buffer_id{mine.id.owner, mine.id.slot + 1, 1})};
  auto refused = j.cp.ask<op_notice>(j.cluster, register_atom::value, std::string{"n0"}, stray);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(j.cp.why(refused).find("not a buffer of this node's owner") != std::string::npos,
             j.cp.why(refused));
  auto outside = j.cp.ask<std::vector<std::uint8_t>>(
      j.cluster, fetch_atom::value, std::string{"n0"}, buffer_call::fetch(mine.id, 60, 8));
  BOOST_REQUIRE(!outside);
  BOOST_TEST(is(outside.error(), errc::invalid_argument), j.cp.why(outside));
  auto none = j.cp.ask<buffer_handle>(j.cluster, alloc_atom::value, std::string{"n0"},
                                      buffer_call::alloc(0));
  BOOST_REQUIRE(!none);
  BOOST_TEST(is(none.error(), errc::invalid_argument), j.cp.why(none));
  // Too few buffers for an operation on buffers.
  auto bare = j.cp.ask<op_notice>(j.cluster, register_atom::value, std::string{"n0"},
                                  named("scale", work::named("scale", 2.0f)));
  BOOST_REQUIRE(!bare);
  BOOST_TEST(j.cp.why(bare).find("works on 1 buffers") != std::string::npos, j.cp.why(bare));
  // Released: answered once the memory went back; then unknown.
  auto released = j.cp.ask<op_notice>(j.cluster, release_atom::value, std::string{"n0"},
                                      buffer_call::release(mine.id));
  BOOST_REQUIRE_MESSAGE(released, j.cp.why(released));
  BOOST_TEST((released->state == op_state::completed));
  auto again = j.cp.ask<op_notice>(j.cluster, release_atom::value, std::string{"n0"},
                                   buffer_call::release(mine.id));
  BOOST_REQUIRE(!again);
  BOOST_TEST(is(again.error(), errc::invalid_argument), j.cp.why(again));
}
