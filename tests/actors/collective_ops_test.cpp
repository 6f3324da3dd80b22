// Collectives as operations, ranks as runtimes of this process on the host backend, their
// Gloo communicators met through a memory_store and installed in each runtime's table:
// each kind and several element types in graphs with compute that writes their input and
// reads their output (ordered by the buffers alone), against values computed here; the
// communicator's collectives kept in the order given across streams; every malformed
// collective refused; an aborted rank fails the others' collective and breaks the
// communicator until a new generation replaces it. (collective_test runs ranks as node
// processes made into a communicator by the cluster.)
#define BOOST_TEST_MODULE collective_ops
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/printing.hpp"
#include "cudactor/actors/runtime.hpp"
#include "cudactor/facade/coordinator.hpp"
#include "cudactor/gpu/gloo_communicator.hpp"

using namespace cudactor;
using namespace std::chrono_literals;

namespace {

// One rank: a runtime of its own with three host streams.
struct rank_node {
  runtime_config config;
  std::unique_ptr<runtime> rt;
  std::unique_ptr<coordinator> co;

  rank_node() {
    BOOST_REQUIRE(!config.parse(
        {"--cudactor.backend=host", "--cudactor.streams=3", "--cudactor.high-priority-streams=0",
         "--cudactor.low-priority-streams=0", "--cudactor.metrics.no-exposer"}));
    auto started = runtime::start(config);
    BOOST_REQUIRE_MESSAGE(started, started.error().to_string());
    rt = std::move(started.value());
    co = std::make_unique<coordinator>(*rt);
  }
  ~rank_node() {
    co.reset();
    runtime::release_calling_thread();
    if (rt) rt->shutdown();
  }
};

struct ranks {
  std::vector<std::unique_ptr<rank_node>> nodes;
  gpu::memory_store store;

  explicit ranks(int n) {
    for (int r = 0; r < n; ++r) nodes.push_back(std::make_unique<rank_node>());
  }

  // A communicator of every rank under `name`, installed in each runtime's table.
  void connect(const std::string& name, std::uint64_t generation,
               std::chrono::milliseconds timeout = 10s) {
    const int n = static_cast<int>(nodes.size());
    std::vector<gpu::result<std::unique_ptr<gpu::communicator>>> made;
    for (int r = 0; r < n; ++r) made.emplace_back(gpu::status{gpu::status_code::cancelled, "not made"});
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        gpu::gloo_options o;
        o.name = name;
        o.generation = generation;
        o.rank = r;
        o.size = n;
        o.timeout = timeout;
        o.rendezvous_timeout = 10s;
        made[static_cast<std::size_t>(r)] = gpu::make_gloo_communicator(o, store);
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) {
      auto& m = made[static_cast<std::size_t>(r)];
      BOOST_REQUIRE_MESSAGE(m, "rank " << r << ": " << m.error().to_string());
      auto added = nodes[static_cast<std::size_t>(r)]->rt->communicators().add(
          std::shared_ptr<gpu::communicator>{std::move(m.value())});
      BOOST_REQUIRE_MESSAGE(!added, describe(added));
    }
  }

  // Runs graph(rank) on every rank at once; every rank's notices.
  std::vector<std::vector<op_notice>> run(const std::function<graph_spec(int)>& graph) {
    std::vector<std::future<std::vector<op_notice>>> pending;
    for (std::size_t r = 0; r < nodes.size(); ++r) {
      pending.push_back(nodes[r]->co->run(graph(static_cast<int>(r))));
    }
    std::vector<std::vector<op_notice>> out;
    for (auto& p : pending) out.push_back(p.get());
    return out;
  }
};

// Host memory a rank's coordinator adopted: the test reads and writes it between runs.
template <class T>
struct adopted {
  std::vector<T> data;
  buffer_handle handle;

  adopted(coordinator& co, std::size_t n, T fill = T{}) : data(n, fill) {
    handle = co.adopt(data.data(), data.size() * sizeof(T)).get();
  }
  [[nodiscard]] buffer_id id() const { return handle.id; }
};

op_collective collective(gpu::collective_kind kind, gpu::element_type type, std::uint64_t count,
                         buffer_id send, buffer_id recv, gpu::reduce_op op = gpu::reduce_op::sum,
                         std::uint32_t root = 0) {
  op_collective c;
  c.communicator = "grads";
  c.kind = kind;
  c.op = op;
  c.type = type;
  c.count = count;
  c.root = root;
  c.send = send;
  c.recv = recv;
  return c;
}

// Compute that writes `values` into a buffer, declared as a write of it.
template <class T>
op_spec fill(adopted<T>& b, std::vector<T> values) {
  T* at = b.data.data();
  op_spec s = op_spec::of(op_type::kernel, op_priority::normal, {}, "fill",
                          [at, values](const gpu::launch_context&) {
                            std::copy(values.begin(), values.end(), at);
                            return gpu::status{};
                          });
  s.uses = {buffer_use::write(b.id(), 0, values.size() * sizeof(T))};
  return s;
}

// Compute that copies a buffer's first `n` elements out, declared as a read of it.
template <class T>
op_spec copy_out(adopted<T>& b, std::size_t n, std::shared_ptr<std::vector<T>> out) {
  const T* at = b.data.data();
  op_spec s = op_spec::of(op_type::kernel, op_priority::normal, {}, "copy out",
                          [at, n, out](const gpu::launch_context&) {
                            out->assign(at, at + n);
                            return gpu::status{};
                          });
  s.uses = {buffer_use::read(b.id(), 0, n * sizeof(T))};
  return s;
}

bool all_done(const std::vector<std::vector<op_notice>>& runs, std::string& why) {
  for (std::size_t r = 0; r < runs.size(); ++r) {
    for (const auto& n : runs[r]) {
      if (n.state != op_state::completed) {
        why = "rank " + std::to_string(r) + " " + to_string(n.id) + ": " + describe(n.cause);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_all_reduce_between_compute_that_writes_and_reads_its_buffers) {
  ranks world{3};
  world.connect("grads", 1);
  constexpr std::size_t n = 1000;
  std::vector<std::unique_ptr<adopted<float>>> x, y;
  std::vector<std::shared_ptr<std::vector<float>>> seen;
  for (auto& node : world.nodes) {
    x.push_back(std::make_unique<adopted<float>>(*node->co, n));
    y.push_back(std::make_unique<adopted<float>>(*node->co, n, -1.0f));
    seen.push_back(std::make_shared<std::vector<float>>());
  }
  // No operation names another: the buffers alone order fill, all-reduce, read.
  auto runs = world.run([&](int r) {
    const auto i = static_cast<std::size_t>(r);
    std::vector<float> mine(n);
    for (std::size_t k = 0; k < n; ++k) mine[k] = static_cast<float>((r + 1) * 1000 + k);
    graph_spec g;
    g.add(fill(*x[i], mine));
    g.add(op_spec::of(collective(gpu::collective_kind::all_reduce, gpu::element_type::f32, n,
                                 x[i]->id(), y[i]->id()),
                      "all-reduce"));
    g.add(copy_out(*y[i], n, seen[i]));
    return g;
  });
  std::string why;
  BOOST_REQUIRE_MESSAGE(all_done(runs, why), why);
  for (std::size_t r = 0; r < 3; ++r) {
    BOOST_REQUIRE(seen[r]->size() == n);
    bool exact = true;
    for (std::size_t k = 0; k < n; ++k) {
      exact = exact && (*seen[r])[k] == static_cast<float>(6000 + 3 * k);
    }
    BOOST_TEST(exact, "rank " << r);
    // The collective came after the fill, the read after the collective: inferred, said.
    const auto after = [&](std::size_t later, std::size_t earlier) {
      const auto& d = runs[r][later].inferred;
      return std::any_of(d.begin(), d.end(),
                         [&](const inferred_dep& x) { return x.dep == runs[r][earlier].id; });
    };
    BOOST_TEST(after(1, 0), "rank " << r);
    BOOST_TEST(after(2, 1), "rank " << r);
  }
}

BOOST_AUTO_TEST_CASE(a_step_with_an_all_reduce_inside_is_recorded_once_and_replayed) {
  ranks world{3};
  world.connect("grads", 1);
  constexpr std::size_t n = 500;
  std::vector<std::unique_ptr<adopted<float>>> x, y;
  std::vector<std::shared_ptr<std::vector<float>>> input, seen;
  std::vector<step_handle> steps;
  for (std::size_t r = 0; r < 3; ++r) {
    auto& node = world.nodes[r];
    x.push_back(std::make_unique<adopted<float>>(*node->co, n));
    y.push_back(std::make_unique<adopted<float>>(*node->co, n, -1.0f));
    input.push_back(std::make_shared<std::vector<float>>(n));
    seen.push_back(std::make_shared<std::vector<float>>());
    // The fill reads what the test put in `input` for this round.
    float* at = x[r]->data.data();
    op_spec fill_in = op_spec::of(op_type::kernel, op_priority::normal, {}, "fill",
                                  [at, in = input[r]](const gpu::launch_context&) {
                                    std::copy(in->begin(), in->end(), at);
                                    return gpu::status{};
                                  });
    fill_in.uses = {buffer_use::write(x[r]->id())};
    graph_spec g;
    g.add(std::move(fill_in));
    g.add(op_spec::of(collective(gpu::collective_kind::all_reduce, gpu::element_type::f32, n,
                                 x[r]->id(), y[r]->id()),
                      "all-reduce"));
    g.add(copy_out(*y[r], n, seen[r]));
    steps.push_back(node->co->record(step_spec{"reduce step", std::move(g)}).get());
  }
  for (int round = 0; round < 5; ++round) {
    for (std::size_t r = 0; r < 3; ++r) {
      for (std::size_t k = 0; k < n; ++k) {
        (*input[r])[k] = static_cast<float>((r + 1) * 100 + k + round);
      }
    }
    std::vector<std::future<step_outcome>> pending;
    for (std::size_t r = 0; r < 3; ++r) pending.push_back(world.nodes[r]->co->replay(steps[r]));
    for (std::size_t r = 0; r < 3; ++r) {
      const step_outcome out = pending[r].get();
      BOOST_REQUIRE_MESSAGE(out.state == op_state::completed,
                            "rank " << r << ": " << describe(out.cause));
      BOOST_REQUIRE(seen[r]->size() == n);
      bool exact = true;
      for (std::size_t k = 0; k < n; ++k) {
        exact = exact && (*seen[r])[k] == static_cast<float>(600 + 3 * (k + round));
      }
      BOOST_TEST(exact, "rank " << r << " round " << round);
    }
  }
  for (std::size_t r = 0; r < 3; ++r) BOOST_TEST(world.nodes[r]->co->release(steps[r]).get());
}

BOOST_AUTO_TEST_CASE(every_kind_in_one_graph_in_several_element_types) {
  ranks world{3};
  world.connect("grads", 1);
  constexpr std::size_t n = 64;
  constexpr int size = 3;
  struct rank_buffers {
    std::unique_ptr<adopted<std::int32_t>> bsend, brecv;  // broadcast from rank 1
    std::unique_ptr<adopted<double>> rsend, rrecv;        // reduce max to rank 2
    std::unique_ptr<adopted<std::int64_t>> gsend, grecv;  // all-gather
    std::unique_ptr<adopted<double>> ssend, srecv;        // reduce-scatter avg
    std::unique_ptr<adopted<std::uint8_t>> usend, urecv;  // all-reduce min, u8, in place below
  };
  std::vector<rank_buffers> b(size);
  for (int r = 0; r < size; ++r) {
    auto& co = *world.nodes[static_cast<std::size_t>(r)]->co;
    auto& mine = b[static_cast<std::size_t>(r)];
    mine.bsend = std::make_unique<adopted<std::int32_t>>(co, n, 100 * r);
    mine.brecv = std::make_unique<adopted<std::int32_t>>(co, n, -1);
    mine.rsend = std::make_unique<adopted<double>>(co, n);
    mine.rrecv = std::make_unique<adopted<double>>(co, n, -1.0);
    mine.gsend = std::make_unique<adopted<std::int64_t>>(co, n);
    mine.grecv = std::make_unique<adopted<std::int64_t>>(co, n * size, -1);
    mine.ssend = std::make_unique<adopted<double>>(co, n * size);
    mine.srecv = std::make_unique<adopted<double>>(co, n, -1.0);
    mine.usend = std::make_unique<adopted<std::uint8_t>>(co, n);
    for (std::size_t k = 0; k < n; ++k) {
      mine.rsend->data[k] = static_cast<double>(r * 7 + k) * 0.5;
      mine.gsend->data[k] =
          static_cast<std::int64_t>(r) * 1000000000000LL + static_cast<std::int64_t>(k);
      mine.usend->data[k] = static_cast<std::uint8_t>((r * 31 + k * 3) % 251);
    }
    for (std::size_t k = 0; k < n * size; ++k) mine.ssend->data[k] = static_cast<double>(r + k);
  }
  using gpu::collective_kind;
  using gpu::element_type;
  using gpu::reduce_op;
  auto runs = world.run([&](int r) {
    auto& mine = b[static_cast<std::size_t>(r)];
    graph_spec g;
    g.add(op_spec::of(collective(collective_kind::broadcast, element_type::i32, n, mine.bsend->id(),
                                 mine.brecv->id(), reduce_op::sum, 1),
                      "broadcast"));
    g.add(op_spec::of(collective(collective_kind::reduce, element_type::f64, n, mine.rsend->id(),
                                 mine.rrecv->id(), reduce_op::max, 2),
                      "reduce"));
    g.add(op_spec::of(collective(collective_kind::all_gather, element_type::i64, n,
                                 mine.gsend->id(), mine.grecv->id()),
                      "all-gather"));
    g.add(op_spec::of(collective(collective_kind::reduce_scatter, element_type::f64, n,
                                 mine.ssend->id(), mine.srecv->id(), reduce_op::avg),
                      "reduce-scatter"));
    g.add(op_spec::of(collective(collective_kind::all_reduce, element_type::u8, n, mine.usend->id(),
                                 mine.usend->id(), reduce_op::min),
                      "all-reduce in place"));
    g.add(
        op_spec::of(collective(collective_kind::barrier, element_type::u8, 0, {}, {}), "barrier"));
    return g;
  });
  std::string why;
  BOOST_REQUIRE_MESSAGE(all_done(runs, why), why);
  for (int r = 0; r < size; ++r) {
    const auto& mine = b[static_cast<std::size_t>(r)];
    bool broadcast = true, reduce = true, gather = true, scatter = true, in_place = true;
    for (std::size_t k = 0; k < n; ++k) {
      broadcast = broadcast && mine.brecv->data[k] == 100;
      // Only the root's output is written.
      const double max = static_cast<double>(2 * 7 + k) * 0.5;
      reduce = reduce && mine.rrecv->data[k] == (r == 2 ? max : -1.0);
      // avg of (q + r*n + k) over q: 1 + r*n + k, exact in double.
      scatter = scatter && mine.srecv->data[k] == static_cast<double>(1 + r * n + k);
      std::uint8_t least = 255;
      for (int q = 0; q < size; ++q) {
        least = std::min(least, static_cast<std::uint8_t>((q * 31 + k * 3) % 251));
      }
      in_place = in_place && mine.usend->data[k] == least;
    }
    for (std::size_t k = 0; k < n * size; ++k) {
      const auto q = static_cast<std::int64_t>(k / n);
      gather =
          gather && mine.grecv->data[k] == q * 1000000000000LL + static_cast<std::int64_t>(k % n);
    }
    BOOST_TEST(broadcast, "rank " << r);
    BOOST_TEST(reduce, "rank " << r);
    BOOST_TEST(gather, "rank " << r);
    BOOST_TEST(scatter, "rank " << r);
    BOOST_TEST(in_place, "rank " << r);
  }
}

BOOST_AUTO_TEST_CASE(a_communicators_collectives_run_in_the_order_given_on_any_stream) {
  ranks world{2};
  world.connect("grads", 1);
  constexpr std::size_t n = 16;
  // Ten all-reduces, each of its own buffer, with nothing between them but the communicator:
  // the coordinator spreads them over three streams, and still every rank must run them in
  // the order given (Gloo pairs calls by their sequence: out of order, the sums mix).
  std::vector<std::vector<std::unique_ptr<adopted<std::int32_t>>>> bufs(2);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 10; ++i) {
      bufs[static_cast<std::size_t>(r)].push_back(std::make_unique<adopted<std::int32_t>>(
          *world.nodes[static_cast<std::size_t>(r)]->co, n, (r + 1) * 100 + i));
    }
  }
  auto runs = world.run([&](int r) {
    graph_spec g;
    for (auto& b : bufs[static_cast<std::size_t>(r)]) {
      g.add(op_spec::of(
          collective(gpu::collective_kind::all_reduce, gpu::element_type::i32, n, b->id(), b->id()),
          "all-reduce"));
    }
    return g;
  });
  std::string why;
  BOOST_REQUIRE_MESSAGE(all_done(runs, why), why);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 10; ++i) {
      const auto& b = *bufs[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
      BOOST_TEST(std::all_of(b.data.begin(), b.data.end(),
                             [i](std::int32_t v) { return v == 300 + 2 * i; }),
                 "rank " << r << " all-reduce " << i);
    }
    // Each after the one before it, by the communicator's order token.
    for (std::size_t i = 1; i < 10; ++i) {
      const auto& after = runs[static_cast<std::size_t>(r)][i].inferred;
      const op_id before = runs[static_cast<std::size_t>(r)][i - 1].id;
      BOOST_TEST(std::any_of(after.begin(), after.end(),
                             [&](const inferred_dep& d) { return d.dep == before; }),
                 "rank " << r << " all-reduce " << i);
    }
  }
}

BOOST_AUTO_TEST_CASE(malformed_collectives_are_refused_saying_why) {
  ranks world{1};
  world.connect("grads", 1);
  auto& co = *world.nodes[0]->co;
  adopted<float> small{co, 4};
  adopted<float> big{co, 64};
  const auto refusal = [&](op_spec s) -> failure {
    try {
      (void)co.add(std::move(s)).get();
    } catch (const failure& f) {
      return f;
    }
    BOOST_FAIL("taken");
    return failure{errc::none, ""};
  };
  using gpu::collective_kind;
  using gpu::element_type;
  op_collective unknown =
      collective(collective_kind::all_reduce, element_type::f32, 4, small.id(), small.id());
  unknown.communicator = "nobody";
  const failure f1 = refusal(op_spec::of(unknown, "unknown"));
  BOOST_TEST((f1.code() == errc::unknown_communicator), f1.what());
  BOOST_TEST(std::string{f1.what()}.find("'nobody'") != std::string::npos, f1.what());
  // 64 floats do not fit in 4.
  const failure f2 = refusal(op_spec::of(
      collective(collective_kind::all_reduce, element_type::f32, 64, small.id(), big.id()), "big"));
  BOOST_TEST((f2.code() == errc::out_of_range), f2.what());
  // A root past the communicator's one rank.
  const failure f3 = refusal(op_spec::of(
      collective(collective_kind::broadcast, element_type::f32, 4, small.id(), small.id(), {}, 1),
      "root"));
  BOOST_TEST((f3.code() == errc::invalid_argument), f3.what());
  // A type that is not the kind's.
  op_spec wrong = op_spec::of(
      collective(collective_kind::all_gather, element_type::f32, 4, small.id(), big.id()), "x");
  wrong.type = op_type::kernel;
  const failure f4 = refusal(std::move(wrong));
  BOOST_TEST((f4.code() == errc::invalid_argument), f4.what());
  // An all-gather type without a collective.
  op_spec bare = op_spec::of(op_type::all_gather, op_priority::normal, {}, "bare",
                             [](const gpu::launch_context&) { return gpu::status{}; });
  const failure f5 = refusal(std::move(bare));
  BOOST_TEST((f5.code() == errc::invalid_argument), f5.what());
  // No send buffer for an all-reduce.
  const failure f6 = refusal(op_spec::of(
      collective(collective_kind::all_reduce, element_type::f32, 4, {}, small.id()), "no send"));
  BOOST_TEST((f6.code() == errc::invalid_argument), f6.what());
}

BOOST_AUTO_TEST_CASE(an_aborted_rank_fails_the_others_and_a_new_generation_works) {
  ranks world{3};
  world.connect("grads", 1, 20s);
  constexpr std::size_t n = 256;
  std::vector<std::unique_ptr<adopted<float>>> x;
  for (auto& node : world.nodes) x.push_back(std::make_unique<adopted<float>>(*node->co, n, 1.0f));
  const auto all_reduce = [&](int r) {
    graph_spec g;
    const auto id = x[static_cast<std::size_t>(r)]->id();
    g.add(
        op_spec::of(collective(gpu::collective_kind::all_reduce, gpu::element_type::f32, n, id, id),
                    "all-reduce"));
    return g;
  };
  // Rank 2 loses its communicator (as when the cluster loses a peer): the other two ranks'
  // all-reduce fails long before the 20 s timeout, as Gloo's connections close.
  BOOST_TEST(world.nodes[2]->rt->communicators().remove("grads", 1, "rank 2 went away"));
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::future<std::vector<op_notice>>> pending;
  for (int r = 0; r < 2; ++r)
    pending.push_back(world.nodes[static_cast<std::size_t>(r)]->co->run(all_reduce(r)));
  for (auto& p : pending) {
    const auto ends = p.get();
    BOOST_TEST((ends[0].state == op_state::failed));
    BOOST_TEST(!describe(ends[0].cause).empty());
  }
  BOOST_TEST((std::chrono::steady_clock::now() - start < 10s));
  // Broken now: refused at once, saying why; rank 2 holds none.
  try {
    (void)world.nodes[0]->co->run(all_reduce(0)).get();
    BOOST_FAIL("a broken communicator took a collective");
  } catch (const failure& f) {
    BOOST_TEST((f.code() == errc::op_failed), f.what());
    BOOST_TEST(std::string{f.what()}.find("'grads'") != std::string::npos, f.what());
  }
  try {
    (void)world.nodes[2]->co->run(all_reduce(2)).get();
    BOOST_FAIL("a removed communicator took a collective");
  } catch (const failure& f) {
    BOOST_TEST((f.code() == errc::unknown_communicator), f.what());
  }
  // Generation 2 replaces it on every rank and works. The failed all-reduce left x poisoned
  // (docs/buffers.md): a fresh write comes first.
  world.connect("grads", 2);
  auto runs = world.run([&](int r) {
    graph_spec g = all_reduce(r);
    graph_spec out;
    out.add(fill(*x[static_cast<std::size_t>(r)], std::vector<float>(n, 2.0f)));
    out.add(std::move(g.ops[0].spec));
    return out;
  });
  std::string why;
  BOOST_REQUIRE_MESSAGE(all_done(runs, why), why);
  for (const auto& b : x) {
    BOOST_TEST(std::all_of(b->data.begin(), b->data.end(), [](float v) { return v == 6.0f; }));
  }
  const auto listed = world.nodes[0]->rt->communicators().list();
  BOOST_REQUIRE(listed.size() == 1u);
  BOOST_TEST(listed[0].generation == 2u);
  BOOST_TEST(listed[0].sequence == 1u);
  BOOST_TEST(listed[0].broken.empty());
}
