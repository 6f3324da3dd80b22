// The coordinator facade: operations and graphs registered, ordered and run from plain C++;
// the end of an existing operation heard once by a callable; caller-launched work; a nested
// failure rendered in words; bad ids named; shutting_down once the runtime has gone.
#define BOOST_TEST_MODULE facade_coordinator
#include <boost/test/unit_test.hpp>

#include <array>
#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "cudactor/actors/client.hpp"
#include "cudactor/facade/coordinator.hpp"
#include "facade/facade_fixture.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

op_spec op_of(gpu::work_fn fn, std::vector<op_id> deps = {}, std::string what = {}) {
  op_spec s;
  s.body = work::local(std::move(fn));
  s.deps = std::move(deps);
  s.description = std::move(what);
  return s;
}

gpu::status ok(const gpu::launch_context&) { return {}; }

}  // namespace

BOOST_FIXTURE_TEST_SUITE(facade_coordinator, facade_fixture)

BOOST_AUTO_TEST_CASE(operations_registered_in_a_row_keep_their_order_and_dependencies) {
  cudactor::coordinator c{rt()};
  auto order = std::make_shared<std::vector<int>>();
  auto mutex = std::make_shared<std::mutex>();
  auto step = [order, mutex](int i) {
    return [order, mutex, i](const gpu::launch_context&) {
      std::lock_guard<std::mutex> lock{*mutex};
      order->push_back(i);
      return gpu::status{};
    };
  };
  // A manual operation holds the first back until it is launched: the rest must wait for it.
  op_spec gate;
  gate.description = "gate";
  auto fg = c.add(gate);
  const op_id g = get_within(fg);
  auto fa = c.add(op_of(step(1), {g}, "first"));
  const op_id a = get_within(fa);
  auto fb = c.add(op_of(step(2), {g}, "second"));
  const op_id b = get_within(fb);
  // Asked without waiting: the dependency is in place before the coordinator hears the run.
  auto dep = c.depend(b, a);
  auto end_b = c.on_end(b);
  BOOST_TEST((get_within(dep) == op_state::pending));
  auto lease = c.begin(g);
  const launch_lease l = get_within(lease);
  BOOST_TEST((l.op() == g));
  auto launched = c.complete_launch(g);
  get_within(launched);
  const op_notice nb = get_within(end_b);
  BOOST_TEST((nb.state == op_state::completed));
  BOOST_REQUIRE(order->size() == 2u);
  BOOST_TEST((*order)[0] == 1);
  BOOST_TEST((*order)[1] == 2);
  // Heard again after its end: told at once, still exactly once.
  std::atomic<int> calls{0};
  std::promise<op_state> heard;
  c.on_end(a, [&](outcome<op_notice> n) {
    ++calls;
    heard.set_value(n->state);
  });
  auto fh = heard.get_future();
  BOOST_TEST((get_within(fh) == op_state::completed));
  auto info = c.describe(a);
  BOOST_TEST(get_within(info).description == "first");
  auto m = c.metrics();
  BOOST_TEST(get_within(m).completed >= 3u);
  std::this_thread::sleep_for(scaled(50ms));
  BOOST_TEST(calls.load() == 1);
}

BOOST_AUTO_TEST_CASE(a_graph_runs_and_a_failure_reads_in_words_down_to_its_root) {
  cudactor::coordinator c{rt()};
  graph_spec graph;
  const auto first = graph.add(op_of([](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "the kernel found a NaN"};
  }));
  graph.add(op_of(ok), {first});
  auto f = c.run(graph);
  const std::vector<op_notice> ends = get_within(f);
  BOOST_REQUIRE(ends.size() == 2u);
  BOOST_TEST((ends[0].state == op_state::failed));
  BOOST_TEST((ends[1].state == op_state::cancelled));
  const failure why{ends[1].cause};
  BOOST_TEST_MESSAGE(why.what());
  BOOST_TEST((why == errc::dependency_failed));
  BOOST_TEST(mentions(why, "the kernel found a NaN"));
  BOOST_TEST(mentions(why, "cudactor::op_failed"));
  BOOST_TEST(!mentions(why, "error("));  // never CAF's tuple form
  auto report = c.report();
  BOOST_TEST(get_within(report).streams.size() == 2u);
  auto chosen = c.choose(op_priority::high, op_workload::memory);
  BOOST_TEST(get_within(chosen).value < 2u);
  auto ready = c.ready_streams();
  BOOST_TEST(get_within(ready));
}

// A graph goes to the coordinator without a copy on the way: the work of each operation is
// copied exactly as often through the facade as through cudactor::client, which sends the
// graph in one message from the calling thread (measured: a 100k-operation graph ran 1.4x
// slower through the facade when the lane's job and its request each copied it).
BOOST_AUTO_TEST_CASE(a_graph_reaches_the_coordinator_with_no_more_copies_than_through_the_client) {
  struct counted {
    std::shared_ptr<std::atomic<int>> copies;
    explicit counted(std::shared_ptr<std::atomic<int>> c) : copies(std::move(c)) {}
    counted(const counted& other) : copies(other.copies) { ++*copies; }
    counted(counted&&) noexcept = default;
    gpu::status operator()(const gpu::launch_context&) const { return {}; }
  };
  const auto copies_of = [](auto run) {
    auto copies = std::make_shared<std::atomic<int>>(0);
    graph_spec graph;
    for (int i = 0; i < 8; ++i) graph.add(op_of(counted{copies}));
    const int before = copies->load();
    const std::vector<op_notice> ends = run(std::move(graph));
    BOOST_REQUIRE(ends.size() == 8u);
    for (const auto& e : ends) BOOST_TEST((e.state == op_state::completed));
    return copies->load() - before;
  };
  cudactor::coordinator c{rt()};
  client direct{rt()};
  const int by_facade = copies_of([&](graph_spec g) {
    auto f = c.run(std::move(g));
    return get_within(f);
  });
  const int by_client = copies_of([&](graph_spec g) {
    auto f = direct.submit(std::move(g));
    return get_within(f);
  });
  BOOST_TEST(by_facade == by_client);
}

BOOST_AUTO_TEST_CASE(buffers_order_their_users_and_are_released_after_the_last) {
  cudactor::coordinator c{rt()};
  auto fb = c.allocate(256);
  const buffer_handle b = get_within(fb);
  auto order = std::make_shared<std::vector<int>>();
  auto mutex = std::make_shared<std::mutex>();
  auto step = [order, mutex](int i, std::chrono::microseconds busy) {
    return [order, mutex, i, busy](const gpu::launch_context&) {
      std::this_thread::sleep_for(busy);
      std::lock_guard<std::mutex> lock{*mutex};
      order->push_back(i);
      return gpu::status{};
    };
  };
  // No dependency stated: the write, then the read, by their uses. The write waits for a
  // manual operation launched only once the read is registered, so that it is still to come
  // when the read's uses are inferred, on any backend: on CUDA a step runs when it is
  // launched, and the write once ended before the read arrived (2026-11-27, an H200).
  op_spec hold;
  hold.description = "hold";
  auto fh = c.add(hold);
  const op_id h = get_within(fh);
  op_spec write = op_of(step(1, 2ms), {h}, "write");
  write.uses = {buffer_use::write(b.id)};
  op_spec read = op_of(step(2, 0us), {}, "read");
  read.uses = {buffer_use::read(b.id, 0, 128)};
  auto fw = c.add(write);
  const op_id w = get_within(fw);
  auto end_r = c.run(read);  // registered before the launch below: one sender, in order
  auto lease = c.begin(h);
  BOOST_TEST((get_within(lease).op() == h));
  auto launched = c.complete_launch(h);
  get_within(launched);
  const op_notice nr = get_within(end_r);
  BOOST_TEST((nr.state == op_state::completed));
  BOOST_REQUIRE_EQUAL(nr.inferred.size(), 1u);
  BOOST_TEST((nr.inferred[0].dep == w));
  BOOST_TEST((nr.inferred[0].buffer == b.id));
  BOOST_REQUIRE(order->size() == 2u);
  BOOST_TEST((*order)[0] == 1);
  auto fr = c.release(b.id);
  auto released = c.on_end(get_within(fr));
  BOOST_TEST((get_within(released).state == op_state::completed));
  // Released: a use is refused, in words.
  op_spec late = op_of(ok);
  late.uses = {buffer_use::read(b.id)};
  auto refused = c.add(late);
  const failure why = failure_of(refused);
  BOOST_TEST_MESSAGE(why.what());
  BOOST_TEST((why == errc::invalid_state));
  BOOST_TEST(mentions(why, "the operation: buffer"));
  BOOST_TEST(mentions(why, "was released and its memory reclaimed"));
  BOOST_TEST(!mentions(why, "error("));  // never CAF's tuple form
  // The same use inside a graph names the graph's operation, in words too.
  graph_spec with_late;
  with_late.add(op_of(ok));
  with_late.add(late);
  auto refused_graph = c.submit(with_late);
  const failure graph_why = failure_of(refused_graph);
  BOOST_TEST_MESSAGE(graph_why.what());
  BOOST_TEST((graph_why == errc::invalid_state));
  BOOST_TEST(mentions(graph_why, "graph op 1: buffer"));
  BOOST_TEST(mentions(graph_why, "was released and its memory reclaimed"));
  BOOST_TEST(!mentions(graph_why, "error("));
  // Memory of the caller's, and a buffer on a named stream.
  std::vector<std::uint8_t> mine(64);
  auto fa = c.adopt(mine.data(), mine.size());
  const buffer_handle a = get_within(fa);
  BOOST_TEST(a.adopted);
  BOOST_TEST(a.address == reinterpret_cast<std::uintptr_t>(mine.data()));
  auto fr2 = c.release(a.id);
  auto adopted_back = c.on_end(get_within(fr2));
  BOOST_TEST((get_within(adopted_back).state == op_state::completed));
  auto fs = c.allocate(64, stream_id{0});
  BOOST_TEST((get_within(fs).stream == stream_id{0}));
}

BOOST_AUTO_TEST_CASE(a_step_is_recorded_once_and_replayed_from_plain_code) {
  cudactor::coordinator c{rt()};
  // Three operations, each counting its runs; the third after the first two.
  auto runs = std::make_shared<std::array<std::atomic<int>, 3>>();
  for (auto& r : *runs) r = 0;
  auto counting = [runs](int i) {
    return [runs, i](const gpu::launch_context&) {
      ++(*runs)[i];
      return gpu::status{};
    };
  };
  graph_spec g;
  const auto a = g.add(op_of(counting(0)));
  const auto b = g.add(op_of(counting(1)));
  g.add(op_of(counting(2)), {a, b});
  auto recorded = c.record(step_spec{"facade step", g});
  const step_handle h = get_within(recorded);
  for (int k = 1; k <= 3; ++k) {
    auto replayed = c.replay(h);
    const step_outcome out = get_within(replayed);
    BOOST_TEST((out.state == op_state::completed), describe(out.cause));
    BOOST_TEST(!out.op.empty());
    // On CUDA a step replays as a CUDA graph: a work is a launcher, run once when the step is
    // captured at record; its replays run what it launched (docs/replay.md). On the host each
    // replay runs the work.
    const int want = on_cuda() ? 1 : k;
    for (int i = 0; i < 3; ++i) BOOST_TEST((*runs)[i].load() == want);
  }
  // The same through the client, with every operation's end asked for.
  client cl{rt()};
  auto from_client = cl.replay(replay_request{h, {}, step_notices::all});
  BOOST_REQUIRE(from_client.wait_for(10s) == std::future_status::ready);
  const step_outcome all = from_client.get();
  BOOST_TEST((all.state == op_state::completed));
  BOOST_TEST(all.ops.size() == 3u);
  auto gone = c.release(h);
  BOOST_TEST(get_within(gone));
  auto refused = c.replay(h);
  const failure f = failure_of(refused);
  BOOST_TEST_MESSAGE(f.what());
  BOOST_TEST((f == errc::invalid_argument));
  BOOST_TEST(std::string{f.what()}.find("not a step recorded here") != std::string::npos);
  auto again = cl.record(step_spec{"client step", g});
  BOOST_REQUIRE(again.wait_for(10s) == std::future_status::ready);
  BOOST_TEST(!again.get().empty());
}

BOOST_AUTO_TEST_CASE(unknown_ids_and_impossible_requests_are_named) {
  cudactor::coordinator c{rt()};
  auto nobody = c.on_end(op_id{987654});
  const failure unknown = failure_of(nobody);
  BOOST_TEST_MESSAGE(unknown.what());
  BOOST_TEST((unknown == errc::unknown_op));
  auto d = c.describe(op_id{987654});
  BOOST_TEST((failure_of(d) == errc::unknown_op));
  op_spec manual;
  auto fm = c.add(manual);
  const op_id m = get_within(fm);
  auto self_dep = c.depend(m, m);
  BOOST_TEST((failure_of(self_dep) == errc::dependency_cycle));
  auto waiting = c.on_end(m);
  auto cancelled = c.cancel(m);
  BOOST_TEST((get_within(cancelled) == op_state::cancelled));
  BOOST_TEST((get_within(waiting).state == op_state::cancelled));
  auto negative = c.wait_ready(-1ms);
  const failure n = failure_of(negative);
  BOOST_TEST_MESSAGE(n.what());
  BOOST_TEST((n == errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(an_end_waited_for_when_the_runtime_stops_is_told_shutting_down) {
  cudactor::coordinator c{rt()};
  op_spec manual;  // never launched: it cannot end before the runtime stops
  auto fm = c.add(manual);
  const op_id m = get_within(fm);
  std::promise<outcome<op_notice>> heard;
  c.on_end(m, [&](outcome<op_notice> n) { heard.set_value(std::move(n)); });
  stop();
  // Either the coordinator ended it as it stopped (the listener heard that end), or the end
  // could no longer come: shutting_down both ways, never a completion and never silence.
  auto fh = heard.get_future();
  const outcome<op_notice> end = get_within(fh);
  const failure f = end ? failure{end->cause} : end.error();
  BOOST_TEST_MESSAGE(f.what());
  if (end) BOOST_TEST((end->state != op_state::completed));
  BOOST_TEST((f == errc::shutting_down));
  auto late = c.add(op_of(ok));
  BOOST_TEST((failure_of(late) == errc::shutting_down));
}

BOOST_AUTO_TEST_SUITE_END()

namespace {
struct eight_buffers : runtime_fixture {
  eight_buffers()
      : runtime_fixture({"--cudactor.streams=2", "--cudactor.coordinator.max-buffers=8"}) {}
};
}  // namespace

// Buffers still being made count against the bound, and the refusal says so (it said "holds
// 0 buffers, its most" while every one of them was on its way).
BOOST_FIXTURE_TEST_CASE(buffers_being_made_count_against_the_bound_in_words, eight_buffers) {
  cudactor::coordinator c{rt()};
  std::vector<std::future<buffer_handle>> asked;
  for (int i = 0; i < 16; ++i) asked.push_back(c.allocate(1));  // none waited for
  int made = 0;
  int refused = 0;
  for (auto& f : asked) {
    BOOST_REQUIRE(f.wait_for(scaled(10s)) == std::future_status::ready);
    try {
      (void)f.get();
      ++made;
    } catch (const failure& why) {
      ++refused;
      BOOST_TEST((why == errc::resource_exhausted));
      BOOST_TEST(mentions(why, "is making"), why.what());
      BOOST_TEST(mentions(why, "8 in all at most"), why.what());
    }
  }
  BOOST_TEST(made == 8);
  BOOST_TEST(refused == 8);
}
