// Steps replayed as backend graphs (actors/coordinator/step_graph.hpp, docs/replay.md), on the
// backend the test runs on: on CUDA a CUDA graph captured from the demo's kernels, on the host
// the same path with the nodes run in order on one stream (cudactor.coordinator.step-graphs=
// always). A replay gives the bytes of the same graph submitted; bindings are applied by
// giving the nodes they touch their work anew, in place (updates counted, one instantiation);
// a replay without bindings gives the nodes their recorded work back; and an operation that
// fails is named (at record on CUDA, where its work runs while captured; in the replay's cause
// on the host); an operation's scratch is the step's, the same memory at every replay and
// every capture anew. And,
// with a graph and communicators of the test's own: each communicator of a captured graph
// watches each of its launches once, and one that cannot fails the launch naming its
// collective.
#define BOOST_TEST_MODULE step_graph
#include <cstring>
#include <mutex>
#include <vector>

#include "common/metric_reader.hpp"
#include "coordinator_fixture.hpp"
#include "cudactor/actors/coordinator/recorded_step.hpp"
#include "cudactor/actors/coordinator/step_graph.hpp"
#include "cudactor/actors/coordinator/step_replay.hpp"
#include "kernels.hpp"

using namespace cudactor;
using namespace cudactor::test;

namespace {

constexpr std::size_t n = 4096;
constexpr std::uint64_t bytes = n * sizeof(float);

// Where "scale_through_scratch" found its scratch, run after run (it runs on the backend's
// threads).
struct scratch_seen {
  std::mutex mutex;
  std::vector<void*> blocks;
};
scratch_seen& seen_scratch() {
  static scratch_seen seen;
  return seen;
}

class graphs : public runtime_fixture {
 public:
  graphs()
      : runtime_fixture(
            {"--cudactor.streams=3", "--cudactor.coordinator.step-graphs=always"},
            [](runtime_config& config) {
              auto& ops = config.operations();
              // out = in * s
              BOOST_REQUIRE(
                  ops.add_typed_on_buffers<float>(
                         "scale", 2,
                         [](const gpu::launch_context& ctx, const buffer_spans& b, float s) {
                           return demo::scale(ctx, b[0].as<float>(), b[1].as<float>(), s, n);
                         })
                      .ok());
              // y += a * x
              BOOST_REQUIRE(
                  ops.add_typed_on_buffers<float>(
                         "axpy", 2,
                         [](const gpu::launch_context& ctx, const buffer_spans& b, float a) {
                           return demo::axpy(ctx, b[0].as<float>(), a, b[1].as<float>(), n);
                         })
                      .ok());
              // out = in * s, computed into the work's scratch and copied out of it
              BOOST_REQUIRE(
                  ops.add_typed_on_buffers<float>(
                         "scale_through_scratch", 2,
                         [](const gpu::launch_context& ctx, const buffer_spans& b, float s) {
                           auto block = ctx.scratch(bytes);
                           if (!block) return block.error();
                           {
                             std::lock_guard<std::mutex> lock{seen_scratch().mutex};
                             seen_scratch().blocks.push_back(block.value());
                           }
                           auto* tmp = static_cast<float*>(block.value());
                           if (auto bad = demo::scale(ctx, tmp, b[1].as<float>(), s, n);
                               !bad.ok()) {
                             return bad;
                           }
                           return demo::copy(ctx, b[0].as<void>(), tmp, bytes);
                         })
                      .ok());
              BOOST_REQUIRE(
                  ops.add_typed_on_buffers<bool>(
                         "refuse", 1,
                         [](const gpu::launch_context&, const buffer_spans&, bool) {
                           return gpu::status{gpu::status_code::op_failed, "refused as asked"};
                         })
                      .ok());
            }) {
    auto staging = rt().device().allocate_pinned(bytes);
    BOOST_REQUIRE(staging.ok());
    host_ = std::move(staging).value();
  }

  const coordinator_actor& co() { return rt().coordinator(); }

  buffer_handle allocate() {
    auto b = ask<buffer_handle>(co(), alloc_atom::value, bytes);
    BOOST_REQUIRE_MESSAGE(b, why(b));
    return *b;
  }
  // Copies between the buffer and host memory through the pinned staging buffer, as work.
  void put(const buffer_handle& b, const std::vector<float>& values) {
    std::memcpy(host_.data(), values.data(), bytes);
    op_spec s = spec_of(
        work::local([to = b.as<void>(), from = host_.data()](const gpu::launch_context& ctx) {
          return demo::copy(ctx, to, from, bytes);
        }));
    s.uses = {buffer_use::write(b.id)};
    auto end = ask<op_notice>(co(), run_atom::value, std::move(s));
    BOOST_REQUIRE(end && end->state == op_state::completed);
  }
  std::vector<float> get(const buffer_handle& b) {
    op_spec s = spec_of(
        work::local([to = host_.data(), from = b.as<void>()](const gpu::launch_context& ctx) {
          return demo::copy(ctx, to, from, bytes);
        }));
    s.uses = {buffer_use::read(b.id)};
    auto end = ask<op_notice>(co(), run_atom::value, std::move(s));
    BOOST_REQUIRE(end && end->state == op_state::completed);
    std::vector<float> out(n);
    std::memcpy(out.data(), host_.data(), bytes);
    return out;
  }
  caf::expected<step_outcome> replay(step_handle h, std::vector<buffer_binding> bindings = {}) {
    return ask<step_outcome>(co(), replay_atom::value,
                             replay_request{h, std::move(bindings), step_notices::all});
  }

 private:
  gpu::buffer host_;
};

op_spec named(std::string name, float value, std::vector<buffer_use> uses) {
  op_spec s;
  s.body = work::named(std::move(name), value);
  s.uses = std::move(uses);
  return s;
}

// b = 2a, c = 3a (independent), c += 0.5b, d = 0.25c: d = a, in floats.
graph_spec step_of(const buffer_handle& a, const buffer_handle& b, const buffer_handle& c,
                   const buffer_handle& d) {
  graph_spec g;
  g.add(named("scale", 2.0f, {buffer_use::write(b.id), buffer_use::read(a.id)}));
  g.add(named("scale", 3.0f, {buffer_use::write(c.id), buffer_use::read(a.id)}));
  g.add(named("axpy", 0.5f, {buffer_use::read_write(c.id), buffer_use::read(b.id)}));
  g.add(named("scale", 0.25f, {buffer_use::write(d.id), buffer_use::read(c.id)}));
  return g;
}

std::vector<float> ramp(float from) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from + 0.125f * static_cast<float>(i);
  return v;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(step_graph, graphs)

BOOST_AUTO_TEST_CASE(
    a_graph_replay_gives_the_bytes_of_the_same_graph_submitted_and_rebinds_in_place) {
  const buffer_handle a = allocate(), b = allocate(), c = allocate(), d = allocate();
  const buffer_handle a2 = allocate(), d2 = allocate();
  put(a, ramp(1.0f));
  put(a2, ramp(-3.0f));
  auto ends = ask<std::vector<op_notice>>(co(), run_atom::value, step_of(a, b, c, d));
  BOOST_REQUIRE_MESSAGE(ends, why(ends));
  for (const auto& e : *ends)
    BOOST_REQUIRE_MESSAGE(e.state == op_state::completed, render(e.cause));
  const std::vector<float> want_c = get(c), want_d = get(d);
  BOOST_TEST(want_d[7] == ramp(1.0f)[7]);  // exact in floats: 0.25 * (3a + 0.5 * 2a)

  auto h = ask<step_handle>(co(), record_atom::value, step_spec{"graph step", step_of(a, b, c, d)});
  BOOST_REQUIRE_MESSAGE(h, why(h));
  const label_map step{{"step", "graph step"}, {"gpu", gpu_label()}};
  for (int round = 0; round < 3; ++round) {
    put(c, std::vector<float>(n, 0.0f));
    put(d, std::vector<float>(n, 0.0f));
    auto out = replay(*h);
    BOOST_REQUIRE_MESSAGE(out, why(out));
    BOOST_TEST((out->state == op_state::completed), render(out->cause));
    BOOST_TEST(out->ops.size() == 4u);
    for (const auto& e : out->ops) BOOST_TEST((e.state == op_state::completed));
    BOOST_TEST((get(c) == want_c));
    BOOST_TEST((get(d) == want_d));
  }
  // Bound to other input and output: the nodes that use them get their work anew, in place.
  for (int round = 0; round < 2; ++round) {
    auto out = replay(*h, {{a.id, a2.id}, {d.id, d2.id}});
    BOOST_REQUIRE_MESSAGE(out, why(out));
    BOOST_TEST((out->state == op_state::completed), render(out->cause));
    BOOST_TEST((get(d2) == ramp(-3.0f)));
  }
  // Unbound again: the recorded work back.
  put(d, std::vector<float>(n, 0.0f));
  auto back = replay(*h);
  BOOST_REQUIRE(back);
  BOOST_TEST((back->state == op_state::completed), render(back->cause));
  BOOST_TEST((get(d) == want_d));
  const metric_reader m{rt().metrics()};
  BOOST_TEST(m.counter("cudactor_step_graph_instantiations_total", step) == 1);
  // a is read by the two scales of a, d written by the last: three nodes bound, once (the
  // second bound replay keeps them), then three given back.
  BOOST_TEST(m.counter("cudactor_step_graph_updates_total", step) == 6);
  BOOST_TEST(m.observations("cudactor_step_instantiate_seconds", step) == 1u);
}

BOOST_AUTO_TEST_CASE(an_operations_scratch_in_a_graph_is_the_steps_and_stays_put) {
  const buffer_handle a = allocate(), b = allocate();
  put(a, ramp(2.0f));
  std::vector<float> want = ramp(2.0f);
  for (float& v : want) v *= 0.5f;
  const auto through_scratch = [&] {
    graph_spec g;
    g.add(named("scale_through_scratch", 0.5f, {buffer_use::write(b.id), buffer_use::read(a.id)}));
    return g;
  };
  // Submitted: a lone run's scratch, given back after it.
  auto ends = ask<std::vector<op_notice>>(co(), run_atom::value, through_scratch());
  BOOST_REQUIRE_MESSAGE(ends, why(ends));
  BOOST_REQUIRE(ends->size() == 1u);
  BOOST_TEST((ends->front().state == op_state::completed), render(ends->front().cause));
  BOOST_TEST((get(b) == want));
  {
    std::lock_guard<std::mutex> lock{seen_scratch().mutex};
    seen_scratch().blocks.clear();
  }
  auto h = ask<step_handle>(co(), record_atom::value, step_spec{"scratch", through_scratch()});
  BOOST_REQUIRE_MESSAGE(h, why(h));
  for (int round = 0; round < 3; ++round) {
    put(b, std::vector<float>(n, 0.0f));
    auto out = replay(*h);
    BOOST_REQUIRE_MESSAGE(out, why(out));
    BOOST_TEST((out->state == op_state::completed), render(out->cause));
    BOOST_TEST((get(b) == want));
  }
  // Bound to other buffers: the node is given its work anew (on CUDA, captured again), and
  // that work's scratch is the same block; none is added.
  const buffer_handle a2 = allocate(), b2 = allocate();
  put(a2, ramp(-1.0f));
  std::vector<float> want2 = ramp(-1.0f);
  for (float& v : want2) v *= 0.5f;
  auto bound = replay(*h, {{a.id, a2.id}, {b.id, b2.id}});
  BOOST_REQUIRE_MESSAGE(bound, why(bound));
  BOOST_TEST((bound->state == op_state::completed), render(bound->cause));
  BOOST_TEST((get(b2) == want2));
  // Held by the step until it is released.
  const label_map step{{"step", "scratch"}, {"gpu", gpu_label()}};
  BOOST_TEST(metric_reader{rt().metrics()}.gauge("cudactor_step_scratch_bytes", step) ==
             static_cast<double>(bytes));
  auto released = ask<bool>(co(), release_atom::value, *h);
  BOOST_REQUIRE(released && *released);
  BOOST_TEST(metric_reader{rt().metrics()}.gauge("cudactor_step_scratch_bytes", step) == 0.0);
  std::lock_guard<std::mutex> lock{seen_scratch().mutex};
  const std::vector<void*>& blocks = seen_scratch().blocks;
  // On CUDA the work ran at record and at the rebinding, each time captured; on the host once
  // per replay.
  BOOST_TEST(blocks.size() == (on_cuda() ? 2u : 4u));
  for (void* block : blocks) BOOST_TEST(block == blocks.front());
}

BOOST_AUTO_TEST_CASE(a_failing_operation_is_named) {
  const buffer_handle a = allocate(), b = allocate();
  graph_spec g;
  g.add(named("scale", 2.0f, {buffer_use::write(b.id), buffer_use::read(a.id)}));
  op_spec bad;
  bad.body = work::named("refuse", true);
  bad.uses = {buffer_use::read_write(b.id)};
  bad.description = "the refusing one";
  g.add(std::move(bad));
  auto h = ask<step_handle>(co(), record_atom::value, step_spec{"failing", std::move(g)});
  if (on_cuda()) {
    // Its work runs while captured, at record: the step is refused there.
    BOOST_REQUIRE(!h);
    const std::string words = render(h.error());
    BOOST_TEST(words.find("step op 1 ('the refusing one')") != std::string::npos, words);
    BOOST_TEST(words.find("refused as asked") != std::string::npos, words);
    return;
  }
  BOOST_REQUIRE_MESSAGE(h, why(h));
  auto out = replay(*h);
  BOOST_REQUIRE_MESSAGE(out, why(out));
  BOOST_TEST((out->state == op_state::failed));
  const std::string words = render(out->cause);
  BOOST_TEST(words.find("step op 1 ('the refusing one')") != std::string::npos, words);
  BOOST_REQUIRE(out->ops.size() == 2u);
  BOOST_TEST((out->ops[0].state == op_state::completed));
  BOOST_TEST((out->ops[1].state == op_state::failed));
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// A graph whose nodes' work ran once at build (as CUDA's), its launches counted.
class captured_graph final : public gpu::work_graph {
 public:
  explicit captured_graph(std::size_t nodes) : nodes_(nodes) {}
  std::size_t size() const noexcept override { return nodes_; }
  bool observes_nodes() const noexcept override { return false; }
  bool captured() const noexcept override { return true; }
  gpu::status set_work(std::uint32_t, gpu::work_fn) override { return {}; }
  gpu::status launch(const gpu::launch_context&, const gpu::node_observer*) override {
    ++launches;
    return {};
  }
  int launches = 0;

 private:
  std::size_t nodes_;
};

// A communicator that counts the launches it was asked to watch, and refuses to watch with
// `refusal` once it is set.
class watching_communicator final : public gpu::communicator {
 public:
  explicit watching_communicator(std::string name) : gpu::communicator(std::move(name), 1, 0, 1) {}
  gpu::status run(const gpu::collective_call&, const gpu::launch_context&) override { return {}; }
  gpu::status watch_launch(const gpu::launch_context&) override {
    ++watched;
    return refusal;
  }
  gpu::status broken() const override { return {}; }
  void abort(const std::string&) override {}
  int watched = 0;
  gpu::status refusal;
};

}  // namespace

BOOST_AUTO_TEST_CASE(each_communicator_of_a_captured_graph_watches_each_launch_once) {
  // Ops 0 and 2 are collectives on "grads", op 1 one on "params".
  auto step = std::make_shared<detail::recorded_step>();
  step->ops.resize(3);
  auto graph = std::make_unique<captured_graph>(3);
  captured_graph& launched = *graph;
  detail::step_graph g{std::move(graph), {0, 1, 2}};
  auto grads = std::make_shared<watching_communicator>("grads");
  auto params = std::make_shared<watching_communicator>("params");
  int counted = 0;
  const auto count = [&counted](const gpu::status&) { ++counted; };
  g.add_communicator(0, grads, count);
  g.add_communicator(1, params, count);
  g.add_communicator(2, grads, count);
  const gpu::launch_context on{gpu::backend_kind::cuda, gpu::stream_ref{}, nullptr};
  for (int i = 0; i < 2; ++i) {
    detail::step_replay replay{step, step_handle{}, step_notices::none};
    const gpu::status s = g.launch(on, replay);
    BOOST_TEST(s.ok(), s.to_string());
  }
  BOOST_TEST(launched.launches == 2);
  BOOST_TEST(grads->watched == 2);
  BOOST_TEST(params->watched == 2);
  BOOST_TEST(counted == 6);  // each collective counted at each launch
  // A communicator that cannot watch fails the launch, naming its first collective; the
  // others watch all the same (the graph is on the stream).
  grads->refusal = gpu::status{gpu::status_code::backend_error, "grads: cannot be watched"};
  detail::step_replay replay{step, step_handle{}, step_notices::none};
  const gpu::status s = g.launch(on, replay);
  BOOST_TEST((s.code() == gpu::status_code::backend_error));
  BOOST_TEST(replay.first_failed() == 0u);
  BOOST_TEST(replay.first_failure().message() == "grads: cannot be watched");
  BOOST_TEST(params->watched == 3);
}
