// Steps recorded once and replayed (docs/replay.md), on the host backend: a replay gives the
// bytes the same graph submitted gives; it is ordered against other work by the union of its
// uses; bindings put other buffers of the same size in place of the recorded ones; a failing
// operation fails the step naming it; what cannot be recorded, a released buffer, a released
// step and bad bindings are refused in words; a step in flight at shutdown ends shutting_down;
// and a randomized run of recorded steps with rebinding and failures against a sequential
// model of the same operations.
//
// Host backend only: the kernels read and write the buffers from host threads. Past 600 lines:
// one fixture and one kernel for every case of the feature, kept together.
// CUDACTOR_TEST_SEED=<seed> replays the randomized run.
#define BOOST_TEST_MODULE step_replay
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>

#include "common/metric_reader.hpp"
#include "common/test_seed.hpp"
#include "coordinator_fixture.hpp"

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

namespace {

// What "mix" does to the spans of its uses: a digest of every byte it reads, then every byte
// it writes set from the digest (and from the byte's old value when it also reads it). The
// kernel and the model share it.
std::uint32_t digest_of(const std::vector<std::pair<const std::uint8_t*, std::uint64_t>>& reads,
                        std::uint32_t salt) {
  std::uint32_t d = salt * 2654435761u;
  for (const auto& [p, n] : reads) {
    for (std::uint64_t i = 0; i < n; ++i) d = d * 31 + p[i];
  }
  return d;
}
void write_from(std::uint32_t d, std::uint8_t* p, std::uint64_t n, bool also_read) {
  for (std::uint64_t i = 0; i < n; ++i) {
    p[i] = static_cast<std::uint8_t>(d + i * 7 + (also_read ? p[i] : 0));
  }
}

gpu::status mix(const gpu::launch_context&, const buffer_spans& spans, std::uint32_t salt,
                bool fail) {
  std::vector<std::pair<const std::uint8_t*, std::uint64_t>> reads;
  for (const auto& s : spans) {
    if (cudactor::reads(s.access)) reads.emplace_back(s.as<std::uint8_t>(), s.bytes);
  }
  const std::uint32_t d = digest_of(reads, salt);
  if (fail) return {gpu::status_code::op_failed, "mix failed as asked"};
  for (const auto& s : spans) {
    if (writes(s.access)) write_from(d, s.as<std::uint8_t>(), s.bytes, cudactor::reads(s.access));
  }
  return {};
}

// CUDACTOR_TEST_STEP_GRAPHS=always (ctest's step_replay_graph_test) runs every case with the
// steps replayed as backend graphs: on the host, the coordinator's path that CUDA takes.
bool graphs() {
  const char* mode = std::getenv("CUDACTOR_TEST_STEP_GRAPHS");
  return mode != nullptr && std::string{mode} == "always";
}
std::vector<std::string> with_graph_mode(std::vector<std::string> args) {
  if (graphs()) args.emplace_back("--cudactor.coordinator.step-graphs=always");
  return args;
}

class steps : public runtime_fixture {
 public:
  steps()
      : runtime_fixture(with_graph_mode({"--cudactor.host.workers=4", "--cudactor.streams=4"}),
                        [](runtime_config& config) {
                          auto s = config.operations().add_typed_on_buffers<std::uint32_t, bool>(
                              "mix", 1, mix);
                          BOOST_REQUIRE(s.ok());
                        }) {}

  const coordinator_actor& co() { return rt().coordinator(); }

  buffer_handle allocate(std::uint64_t bytes) {
    auto b = ask<buffer_handle>(co(), alloc_atom::value, bytes);
    BOOST_REQUIRE_MESSAGE(b, why(b));
    std::memset(b->as<void>(), 0, bytes);
    return *b;
  }
  step_handle record(graph_spec graph, std::string name = {}) {
    auto h =
        ask<step_handle>(co(), record_atom::value, step_spec{std::move(name), std::move(graph)});
    BOOST_REQUIRE_MESSAGE(h, why(h));
    return *h;
  }
  caf::expected<step_outcome> replay(step_handle h, std::vector<buffer_binding> bindings = {},
                                     step_notices notices = step_notices::none) {
    return ask<step_outcome>(co(), replay_atom::value,
                             replay_request{h, std::move(bindings), notices});
  }
  std::vector<op_notice> run(graph_spec graph) {
    auto ends = ask<std::vector<op_notice>>(co(), run_atom::value, std::move(graph));
    BOOST_REQUIRE_MESSAGE(ends, why(ends));
    return *ends;
  }
  op_notice run(op_spec spec) {
    auto end = ask<op_notice>(co(), run_atom::value, std::move(spec));
    BOOST_REQUIRE_MESSAGE(end, why(end));
    return *end;
  }
  static std::vector<std::uint8_t> bytes_of(const buffer_handle& b) {
    const auto* p = b.as<std::uint8_t>();
    return {p, p + b.size};
  }
};

op_spec mix_op(std::uint32_t salt, std::vector<buffer_use> uses, bool fail = false,
               std::string what = {}) {
  op_spec s;
  s.body = work::named("mix", salt, fail);
  s.uses = std::move(uses);
  s.description = std::move(what);
  return s;
}

// A diamond and a tail over three buffers: a written, b and c from a on two streams' worth of
// parallel work, then c from a, b and c.
graph_spec diamond(const buffer_handle& a, const buffer_handle& b, const buffer_handle& c) {
  graph_spec g;
  g.add(mix_op(1, {buffer_use::write(a.id)}));
  g.add(mix_op(2, {buffer_use::read(a.id, 0, 512), buffer_use::write(b.id)}));
  g.add(mix_op(3, {buffer_use::read(a.id, 256), buffer_use::write(c.id, 0, 512)}));
  g.add(mix_op(4, {buffer_use::read(b.id), buffer_use::read_write(c.id, 256)}));
  g.add(mix_op(5, {buffer_use::read(a.id), buffer_use::read(b.id), buffer_use::read_write(c.id)}));
  return g;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(step_replay, steps)

BOOST_AUTO_TEST_CASE(a_replayed_step_gives_the_bytes_of_the_same_graph_submitted) {
  const buffer_handle a = allocate(1024), b = allocate(1024), c = allocate(1024);
  for (const auto& n : run(diamond(a, b, c))) {
    BOOST_REQUIRE_MESSAGE(n.state == op_state::completed, render(n.cause));
  }
  const auto want_a = bytes_of(a), want_b = bytes_of(b), want_c = bytes_of(c);
  const step_handle h = record(diamond(a, b, c));
  BOOST_TEST(!h.empty());
  for (int round = 0; round < 5; ++round) {
    // Each round starts from zeros, as the submitted graph did.
    std::memset(a.as<void>(), 0, a.size);
    std::memset(b.as<void>(), 0, b.size);
    std::memset(c.as<void>(), 0, c.size);
    auto out = replay(h);
    BOOST_REQUIRE_MESSAGE(out, why(out));
    BOOST_TEST((out->state == op_state::completed), render(out->cause));
    BOOST_TEST((out->step == h));
    BOOST_TEST(!out->op.empty());
    BOOST_TEST(out->ops.empty());  // no notices asked for
    BOOST_TEST((bytes_of(a) == want_a));
    BOOST_TEST((bytes_of(b) == want_b));
    BOOST_TEST((bytes_of(c) == want_c));
  }
  // The same with each operation pinned to a stream of its own: parts, waits and the join.
  graph_spec spread = diamond(a, b, c);
  for (std::uint32_t i = 0; i < spread.ops.size(); ++i) {
    spread.ops[i].spec.placement.pinned = true;
    spread.ops[i].spec.placement.stream = stream_id{i % 4};
  }
  const step_handle p = record(std::move(spread));
  for (int round = 0; round < 5; ++round) {
    std::memset(a.as<void>(), 0, a.size);
    std::memset(b.as<void>(), 0, b.size);
    std::memset(c.as<void>(), 0, c.size);
    auto out = replay(p);
    BOOST_REQUIRE_MESSAGE(out, why(out));
    BOOST_TEST((out->state == op_state::completed), render(out->cause));
    BOOST_TEST((bytes_of(a) == want_a));
    BOOST_TEST((bytes_of(b) == want_b));
    BOOST_TEST((bytes_of(c) == want_c));
  }
  auto all = replay(h, {}, step_notices::all);
  BOOST_REQUIRE(all);
  BOOST_TEST(all->ops.size() == 5u);
  for (std::uint32_t i = 0; i < all->ops.size(); ++i) {
    BOOST_TEST(all->ops[i].index == i);
    BOOST_TEST((all->ops[i].state == op_state::completed));
  }
  auto failures = replay(h, {}, step_notices::failures);
  BOOST_REQUIRE(failures);
  BOOST_TEST(failures->ops.empty());
}

BOOST_AUTO_TEST_CASE(a_replay_is_ordered_with_other_work_by_its_buffers) {
  const buffer_handle a = allocate(256), b = allocate(256), c = allocate(256);
  graph_spec g;
  g.add(mix_op(7, {buffer_use::read(a.id), buffer_use::write(b.id)}));
  const step_handle h = record(std::move(g));
  // A slow writer of a before the replay, a reader of b after it: both registered before the
  // replay has run, so only the inferred order keeps them apart.
  gate open;
  op_spec slow = mix_op(9, {buffer_use::write(a.id)});
  graph_spec first;
  first.add(spec_of(open.hold()));
  first.add(std::move(slow), {0});
  // All three from one actor, so they reach the coordinator in this order.
  caf::scoped_actor other{rt().system()};
  auto w = other->request(co(), scaled(10s), run_atom::value, first);
  auto r = other->request(co(), scaled(10s), replay_atom::value, replay_request{h, {}, {}});
  auto l = other->request(co(), scaled(10s), run_atom::value,
                          mix_op(11, {buffer_use::read(b.id), buffer_use::write(c.id)}));
  std::this_thread::sleep_for(scaled(50ms));
  BOOST_TEST((bytes_of(c) == std::vector<std::uint8_t>(256, 0)));  // nothing ran yet
  open.open();
  w.receive(
      [&](std::vector<op_notice>& ends) {
        for (const auto& n : ends) BOOST_TEST((n.state == op_state::completed));
      },
      [&](caf::error& e) { BOOST_FAIL(render(e)); });
  r.receive([&](step_outcome& o) { BOOST_TEST((o.state == op_state::completed), render(o.cause)); },
            [&](caf::error& e) { BOOST_FAIL(render(e)); });
  l.receive([&](op_notice& n) { BOOST_TEST((n.state == op_state::completed), render(n.cause)); },
            [&](caf::error& e) { BOOST_FAIL(render(e)); });
  // The model: a written by 9, b from a by 7, c from b by 11.
  std::vector<std::uint8_t> ma(256, 0), mb(256, 0), mc(256, 0);
  write_from(digest_of({}, 9), ma.data(), 256, false);
  write_from(digest_of({{ma.data(), 256}}, 7), mb.data(), 256, false);
  write_from(digest_of({{mb.data(), 256}}, 11), mc.data(), 256, false);
  BOOST_TEST((bytes_of(a) == ma));
  BOOST_TEST((bytes_of(b) == mb));
  BOOST_TEST((bytes_of(c) == mc));
}

BOOST_AUTO_TEST_CASE(a_failing_operation_fails_the_step_naming_it) {
  const buffer_handle a = allocate(128), b = allocate(128), c = allocate(128);
  graph_spec g;
  g.add(mix_op(1, {buffer_use::write(a.id)}));
  g.add(mix_op(2, {buffer_use::read(a.id), buffer_use::write(b.id)}, true, "the broken one"));
  g.add(mix_op(3, {buffer_use::read(b.id), buffer_use::write(c.id)}));
  const step_handle h = record(std::move(g));
  auto out = replay(h, {}, step_notices::failures);
  BOOST_REQUIRE_MESSAGE(out, why(out));
  BOOST_TEST((out->state == op_state::failed));
  const std::string words = render(out->cause);
  BOOST_TEST(words.find("step op 1") != std::string::npos, words);
  BOOST_TEST(words.find("the broken one") != std::string::npos, words);
  BOOST_TEST(words.find("mix failed as asked") != std::string::npos, words);
  BOOST_TEST(out->cause.code() == static_cast<std::uint8_t>(errc::op_failed));
  BOOST_REQUIRE(!out->ops.empty());
  BOOST_TEST(out->ops.front().index == 1u);
  BOOST_TEST((out->ops.front().state == op_state::failed));
  // What the step was to write is poisoned, as a failed operation's: a reader is cancelled.
  const op_notice reader = run(mix_op(4, {buffer_use::read(c.id), buffer_use::write(a.id)}));
  BOOST_TEST((reader.state == op_state::cancelled), render(reader.cause));
  // The step writes every byte before it reads it: its own poison does not cancel it, it runs
  // again (and fails again, by its own operation).
  auto again = replay(h);
  BOOST_REQUIRE(again);
  BOOST_TEST((again->state == op_state::failed), render(again->cause));
  BOOST_TEST(render(again->cause).find("step op 1") != std::string::npos);
  // A write without a read heals the bytes for others.
  const op_notice heal =
      run(mix_op(5, {buffer_use::write(a.id), buffer_use::write(b.id), buffer_use::write(c.id)}));
  BOOST_TEST((heal.state == op_state::completed), render(heal.cause));
  const op_notice after = run(mix_op(6, {buffer_use::read(c.id), buffer_use::write(a.id)}));
  BOOST_TEST((after.state == op_state::completed), render(after.cause));
}

BOOST_AUTO_TEST_CASE(bindings_put_other_buffers_of_the_same_size_in_place) {
  const buffer_handle a = allocate(256), b = allocate(256), b2 = allocate(256);
  const buffer_handle small = allocate(128), other = allocate(256);
  graph_spec g;
  g.add(mix_op(1, {buffer_use::write(a.id)}));
  g.add(mix_op(2, {buffer_use::read(a.id), buffer_use::write(b.id)}));
  const step_handle h = record(std::move(g), "bound step");
  auto plain = replay(h);
  BOOST_REQUIRE(plain);
  BOOST_REQUIRE((plain->state == op_state::completed));
  const auto want_b = bytes_of(b);
  std::memset(b.as<void>(), 0, b.size);
  auto bound = replay(h, {{b.id, b2.id}});
  BOOST_REQUIRE_MESSAGE(bound, why(bound));
  BOOST_TEST((bound->state == op_state::completed), render(bound->cause));
  BOOST_TEST((bytes_of(b2) == want_b));
  BOOST_TEST((bytes_of(b) == std::vector<std::uint8_t>(256, 0)));  // not touched this time
  // Swapped, the two stay distinct.
  auto swapped = replay(h, {{a.id, b.id}, {b.id, a.id}});
  BOOST_REQUIRE_MESSAGE(swapped, why(swapped));
  BOOST_TEST((swapped->state == op_state::completed), render(swapped->cause));
  const auto refused = [&](std::vector<buffer_binding> bindings, const std::string& words) {
    auto r = replay(h, std::move(bindings));
    BOOST_REQUIRE(!r);
    BOOST_TEST(r.error().code() == static_cast<std::uint8_t>(errc::invalid_argument));
    BOOST_TEST(render(r.error()).find(words) != std::string::npos, render(r.error()));
  };
  // Seen by people (counted before a replay is answered): three replays completed; the
  // binding of b resolved one operation anew, the swap both.
  {
    const metric_reader m{rt().metrics()};
    const label_map step{{"step", "bound step"}};
    label_map completed = step;
    completed["outcome"] = "completed";
    BOOST_TEST(m.counter("cudactor_step_replays_total", completed) == 3);
    BOOST_TEST(m.observations("cudactor_step_seconds", step) == 3u);
    BOOST_TEST(m.observations("cudactor_step_record_seconds", step) == 1u);
    BOOST_TEST(m.counter("cudactor_step_rebound_operations_total", step) == 3);
    if (graphs()) {
      // Built once; each node a binding changed given its work in place: the binding of b
      // one, the swap both (a node keeps its work while its buffers stay the same).
      BOOST_TEST(m.observations("cudactor_step_instantiate_seconds", step) == 1u);
      BOOST_TEST(m.counter("cudactor_step_graph_instantiations_total", step) == 1);
      BOOST_TEST(m.counter("cudactor_step_graph_updates_total", step) == 3);
    }
  }
  refused({{b.id, small.id}}, "a buffer is bound to one of the same size");
  refused({{other.id, b2.id}}, "which the step does not use");
  refused({{b.id, b2.id}, {b.id, other.id}}, "twice");
  refused({{b.id, a.id}}, "bound buffers stay distinct");
  // A local closure's memory cannot be rebound.
  graph_spec local;
  op_spec closure = spec_of(noop());
  closure.uses = {buffer_use::write(a.id)};
  local.add(std::move(closure));
  const step_handle l = record(std::move(local));
  auto r = replay(l, {{a.id, b2.id}});
  BOOST_REQUIRE(!r);
  BOOST_TEST(render(r.error()).find("local closure") != std::string::npos, render(r.error()));
}

BOOST_AUTO_TEST_CASE(a_released_buffer_invalidates_the_step_and_a_released_step_is_gone) {
  const buffer_handle a = allocate(64), b = allocate(64);
  graph_spec g;
  g.add(mix_op(1, {buffer_use::read(a.id), buffer_use::write(b.id)}));
  const step_handle h = record(std::move(g));
  auto release = ask<op_id>(co(), release_atom::value, b.id);
  BOOST_REQUIRE_MESSAGE(release, why(release));
  for (int i = 0; i < 2; ++i) {  // for good
    auto r = replay(h);
    BOOST_REQUIRE(!r);
    BOOST_TEST(r.error().code() == static_cast<std::uint8_t>(errc::invalid_state));
    BOOST_TEST(
        render(r.error()).find(to_string(b.id) + ", which was released") != std::string::npos,
        render(r.error()));
  }
  auto gone = ask<bool>(co(), release_atom::value, h);
  BOOST_REQUIRE(gone);
  BOOST_TEST(*gone);
  auto twice = ask<bool>(co(), release_atom::value, h);
  BOOST_REQUIRE(twice);
  BOOST_TEST(!*twice);
  auto r = replay(h);
  BOOST_REQUIRE(!r);
  BOOST_TEST(render(r.error()).find("is not a step recorded here") != std::string::npos);
  // Its slot goes to the next step, under another generation: the old handle stays refused.
  graph_spec next;
  next.add(mix_op(2, {buffer_use::write(a.id)}));
  const step_handle n = record(std::move(next));
  BOOST_TEST(n.slot == h.slot);
  BOOST_TEST(n.generation != h.generation);
  BOOST_TEST(!replay(h));
  auto ok = replay(n);
  BOOST_REQUIRE(ok);
  BOOST_TEST((ok->state == op_state::completed));
}

BOOST_AUTO_TEST_CASE(recording_refuses_what_cannot_be_replayed_in_words) {
  const buffer_handle a = allocate(64);
  const auto refused = [&](graph_spec g, const std::string& words) {
    auto h = ask<step_handle>(co(), record_atom::value, step_spec{{}, std::move(g)});
    BOOST_REQUIRE(!h);
    BOOST_TEST(render(h.error()).find(words) != std::string::npos, render(h.error()));
  };
  refused(graph_spec{}, "at least one operation");
  graph_spec barrier;
  op_spec b;
  b.type = op_type::barrier;
  barrier.add(mix_op(1, {buffer_use::write(a.id)}));
  barrier.add(std::move(b));
  refused(std::move(barrier), "step op 1 is a barrier");
  graph_spec manual;
  manual.add(op_spec{});
  refused(std::move(manual), "step op 0 has no work");
  const op_notice done = run(mix_op(1, {buffer_use::write(a.id)}));
  graph_spec outside;
  outside.add(spec_of(noop(), {done.id}));
  refused(std::move(outside), "names operations registered before");
  graph_spec cycle;
  cycle.add(spec_of(noop()), {1});
  cycle.add(spec_of(noop()), {0});
  refused(std::move(cycle), "cycle");
  graph_spec typed;
  op_spec s = spec_of(noop());
  s.type = op_type::step;
  typed.add(std::move(s));
  refused(std::move(typed), "only a replay of a recorded step has");
}

BOOST_AUTO_TEST_CASE(recorded_steps_are_bounded_until_released) {
  std::vector<step_handle> kept;
  const auto one = [] {
    graph_spec g;
    g.add(spec_of(noop()));
    return g;
  };
  for (std::size_t i = 0; i < coordinator_options{}.max_steps; ++i) kept.push_back(record(one()));
  auto full = ask<step_handle>(co(), record_atom::value, step_spec{{}, one()});
  BOOST_REQUIRE(!full);
  BOOST_TEST(full.error().code() == static_cast<std::uint8_t>(errc::resource_exhausted));
  BOOST_TEST(render(full.error()).find("max-steps") != std::string::npos, render(full.error()));
  BOOST_REQUIRE(*ask<bool>(co(), release_atom::value, kept.back()));
  kept.back() = record(one());
  for (const auto& h : kept) BOOST_REQUIRE(*ask<bool>(co(), release_atom::value, h));
}

BOOST_AUTO_TEST_CASE(a_replay_waits_while_a_stream_of_its_plan_is_held_for_a_caller) {
  // A caller-launched operation holds stream 1 from begin to complete: a replay whose plan
  // uses stream 1 is not dispatched meanwhile, on any of its streams (its part would queue
  // behind the hold, and the join and all after it with it).
  op_spec manual;
  manual.placement.pinned = true;
  manual.placement.stream = stream_id{1};
  auto id = ask<op_id>(co(), register_atom::value, manual);
  BOOST_REQUIRE_MESSAGE(id, why(id));
  auto lease = ask<op_lease>(co(), begin_atom::value, *id);
  BOOST_REQUIRE_MESSAGE(lease, why(lease));
  auto runs = std::make_shared<std::atomic<int>>(0);
  graph_spec g;
  // The held stream's operation first: the replay's home (its last operation's stream) is
  // stream 0, which is free.
  for (std::uint32_t s : {1u, 0u}) {
    op_spec counting = spec_of(work::local([runs](const gpu::launch_context&) {
      ++*runs;
      return gpu::status{};
    }));
    counting.placement.pinned = true;
    counting.placement.stream = stream_id{s};
    g.add(std::move(counting));
  }
  const step_handle h = record(std::move(g));
  caf::scoped_actor other{rt().system()};
  auto r = other->request(co(), scaled(10s), replay_atom::value, replay_request{h, {}, {}});
  if (graphs()) {
    // A graph runs on its home stream alone, which is free: the hold does not concern it.
    r.receive(
        [&](step_outcome& o) { BOOST_TEST((o.state == op_state::completed), render(o.cause)); },
        [&](caf::error& e) { BOOST_FAIL(render(e)); });
    BOOST_TEST(runs->load() == 2);
    auto done = ask<ticket>(co(), enqueued_atom::value, *id);
    BOOST_REQUIRE_MESSAGE(done, why(done));
    return;
  }
  std::this_thread::sleep_for(scaled(100ms));
  BOOST_TEST(runs->load() == 0);  // not even stream 0's part
  auto done = ask<ticket>(co(), enqueued_atom::value, *id);
  BOOST_REQUIRE_MESSAGE(done, why(done));
  r.receive([&](step_outcome& o) { BOOST_TEST((o.state == op_state::completed), render(o.cause)); },
            [&](caf::error& e) { BOOST_FAIL(render(e)); });
  BOOST_TEST(runs->load() == 2);
}

BOOST_AUTO_TEST_CASE(a_step_in_flight_at_shutdown_ends_shutting_down_once) {
  gate held;
  graph_spec g;
  g.add(spec_of(held.hold()));
  g.add(spec_of(noop()), {0});
  const step_handle h = record(std::move(g));
  auto p = std::make_shared<std::promise<step_outcome>>();
  auto told = std::make_shared<std::atomic<int>>(0);
  self()->send(co(), replay_atom::value, replay_request{h, {}, step_notices::all},
               step_callback{[p, told](step_outcome out) {
                 if (told->fetch_add(1) == 0) p->set_value(std::move(out));
               }});
  std::this_thread::sleep_for(scaled(50ms));
  self()->send(co(), shutdown_atom::value);
  auto f = p->get_future();
  BOOST_REQUIRE(f.wait_for(scaled(10s)) == std::future_status::ready);
  const step_outcome out = f.get();
  held.open();
  BOOST_TEST((out.state == op_state::failed));
  BOOST_TEST(out.cause.code() == static_cast<std::uint8_t>(errc::shutting_down));
  BOOST_TEST(out.ops.size() == 2u);
  std::this_thread::sleep_for(scaled(100ms));
  BOOST_TEST(told->load() == 1);
  // After it, a replay is refused.
  auto late = replay(h);
  BOOST_REQUIRE(!late);
  BOOST_TEST(late.error().code() == static_cast<std::uint8_t>(errc::shutting_down));
}

// Random steps of 1 to 24 operations over random ranges of 4 buffers, each recorded once and
// replayed 3 times with random bindings onto 4 spares (each buffer has a spare of its size),
// some operations failing: each replay ends as the sequential model says (completed, or failed
// naming one of its failing operations), and the bytes equal the model's after every replay
// that completed. After a failure every buffer is written anew (the poison healed) in both.
BOOST_AUTO_TEST_CASE(random_steps_replayed_with_rebinding_and_failures_match_a_sequential_model) {
  std::mt19937_64 rng{test_seed("step_replay")};
  constexpr std::size_t count = 4;
  const std::uint64_t sizes[count] = {64, 128, 200, 256};
  std::vector<buffer_handle> buffers, spares;
  for (std::size_t i = 0; i < count; ++i) buffers.push_back(allocate(sizes[i]));
  for (std::size_t i = 0; i < count; ++i) spares.push_back(allocate(sizes[i]));
  std::vector<buffer_handle> all = buffers;
  all.insert(all.end(), spares.begin(), spares.end());
  std::vector<std::vector<std::uint8_t>> model;
  for (const auto& b : all) model.push_back(bytes_of(b));
  const auto index_of = [&](const buffer_id& id) {
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].id == id) return i;
    }
    BOOST_FAIL("unknown buffer");
    return std::size_t{0};
  };
  const auto heal = [&] {
    graph_spec g;
    for (std::size_t i = 0; i < all.size(); ++i) {
      g.add(mix_op(static_cast<std::uint32_t>(1000 + i), {buffer_use::write(all[i].id)}));
      write_from(digest_of({}, static_cast<std::uint32_t>(1000 + i)), model[i].data(),
                 model[i].size(), false);
    }
    for (const auto& n : run(std::move(g))) BOOST_REQUIRE(n.state == op_state::completed);
  };
  std::size_t replays = 0, completed = 0, failed = 0, steps_made = 0;
  for (int s = 0; s < 60; ++s) {
    graph_spec g;
    struct op_model {
      std::vector<buffer_use> uses;
      std::uint32_t salt;
      bool fails;
    };
    std::vector<op_model> ops;
    const int n = 1 + static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i) {
      op_model m;
      m.salt = static_cast<std::uint32_t>(rng());
      m.fails = rng() % 40 == 0;
      const int uses = 1 + static_cast<int>(rng() % 3);
      std::vector<bool> taken(count, false);
      for (int u = 0; u < uses; ++u) {
        const std::size_t which = rng() % count;
        if (taken[which]) continue;
        taken[which] = true;
        const std::uint64_t size = sizes[which];
        const std::uint64_t offset = rng() % size;
        const std::uint64_t bytes = 1 + rng() % (size - offset);
        const auto access = static_cast<buffer_access>(1 + rng() % 3);
        m.uses.push_back(buffer_use{buffers[which].id, access, offset, bytes});
      }
      op_spec spec = mix_op(m.salt, m.uses, m.fails);
      if (rng() % 3 == 0) {  // pinned: small steps cross streams too
        spec.placement.pinned = true;
        spec.placement.stream = stream_id{static_cast<std::uint32_t>(rng() % 4)};
      }
      g.add(std::move(spec));
      ops.push_back(std::move(m));
    }
    const step_handle h = record(std::move(g));
    ++steps_made;
    for (int round = 0; round < 3; ++round) {
      // Bind each of the step's buffers to its spare or not, at random.
      std::vector<buffer_binding> bindings;
      std::vector<std::size_t> target(count);
      for (std::size_t i = 0; i < count; ++i) {
        target[i] = i;
        bool used = false;
        for (const auto& m : ops) {
          for (const auto& u : m.uses) used = used || u.buffer == buffers[i].id;
        }
        if (used && rng() % 2 == 0) {
          bindings.push_back({buffers[i].id, spares[i].id});
          target[i] = count + i;
        }
      }
      auto out = replay(h, bindings, step_notices::failures);
      BOOST_REQUIRE_MESSAGE(out, why(out));
      ++replays;
      // The model, in the graph's order (an order the step's inferred dependencies keep).
      std::vector<std::size_t> failing;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].fails) {
          failing.push_back(i);
          continue;
        }
        std::vector<std::pair<const std::uint8_t*, std::uint64_t>> reads;
        for (const auto& u : ops[i].uses) {
          const auto& bytes = model[target[index_of(u.buffer)]];
          if (cudactor::reads(u.access)) reads.emplace_back(bytes.data() + u.offset, u.bytes);
        }
        const std::uint32_t d = digest_of(reads, ops[i].salt);
        for (const auto& u : ops[i].uses) {
          auto& bytes = model[target[index_of(u.buffer)]];
          if (writes(u.access)) {
            write_from(d, bytes.data() + u.offset, u.bytes, cudactor::reads(u.access));
          }
        }
      }
      if (failing.empty()) {
        BOOST_TEST_REQUIRE((out->state == op_state::completed), render(out->cause));
        ++completed;
        for (std::size_t i = 0; i < all.size(); ++i) {
          BOOST_TEST_REQUIRE((bytes_of(all[i]) == model[i]), "step " << s << " round " << round
                                                                     << ": buffer " << i
                                                                     << " differs from the model");
        }
      } else {
        BOOST_TEST_REQUIRE((out->state == op_state::failed));
        ++failed;
        const std::string words = render(out->cause);
        bool named = false;
        for (std::size_t f : failing) {
          named = named || words.find("step op " + std::to_string(f) + ":") != std::string::npos;
        }
        BOOST_TEST(named, words);
        // Every operation told as failed is one that fails, and one of them is told.
        std::size_t told_failed = 0;
        for (const auto& e : out->ops) {
          if (e.state != op_state::failed) continue;
          ++told_failed;
          BOOST_TEST(ops[e.index].fails, "step op " << e.index << " failed: " << render(e.cause));
        }
        BOOST_TEST(told_failed >= 1u);
        heal();
      }
    }
    BOOST_REQUIRE(*ask<bool>(co(), release_atom::value, h));
  }
  BOOST_TEST_MESSAGE(steps_made << " steps, " << replays << " replays: " << completed
                                << " completed, " << failed << " failed");
  BOOST_TEST(completed > 0u);
  BOOST_TEST(failed > 0u);
}

BOOST_AUTO_TEST_SUITE_END()

// A stream actor takes at most cudactor.max-batch operations in one message: a pass with a
// replay's parts that holds more goes in several (before, the stream refused the pass and the
// coordinator took it for a lost device).
BOOST_AUTO_TEST_CASE(a_pass_larger_than_a_stream_takes_at_once_goes_in_several_messages) {
  runtime_fixture small{with_graph_mode(
      {"--cudactor.host.workers=2", "--cudactor.streams=2", "--cudactor.max-batch=4"})};
  auto runs = std::make_shared<std::atomic<int>>(0);
  graph_spec g;
  // A chain across the two streams: every operation a segment of its own, 20 on each.
  for (std::uint32_t i = 0; i < 40; ++i) {
    op_spec counting = spec_of(work::local([runs](const gpu::launch_context&) {
      ++*runs;
      return gpu::status{};
    }));
    counting.placement.pinned = true;
    counting.placement.stream = stream_id{i % 2};
    std::vector<std::uint32_t> after;
    if (i > 0) after.push_back(i - 1);
    g.add(std::move(counting), std::move(after));
  }
  auto h = small.ask<step_handle>(small.rt().coordinator(), record_atom::value,
                                  step_spec{"chain", std::move(g)});
  BOOST_REQUIRE_MESSAGE(h, small.why(h));
  for (int k = 1; k <= 3; ++k) {
    auto out = small.ask<step_outcome>(small.rt().coordinator(), replay_atom::value,
                                       replay_request{*h, {}, {}});
    BOOST_REQUIRE_MESSAGE(out, small.why(out));
    BOOST_TEST((out->state == op_state::completed), small.render(out->cause));
    BOOST_TEST(runs->load() == 40 * k);
  }
}

// A node cancels a departed owner's queued replays (cancel, vector<step_handle>): each one not
// yet on a stream ends cancelled, answered once, whether it waits for room in the ready queue
// or was taken from it while its home stream had none (two streams: the other had room); the
// one on its stream runs to its end.
BOOST_AUTO_TEST_CASE(a_steps_queued_replays_are_cancelled_and_the_one_on_its_stream_runs) {
  runtime_fixture f{with_graph_mode(
      {"--cudactor.host.workers=2", "--cudactor.streams=2", "--cudactor.max-in-flight=1"})};
  const coordinator_actor& co = f.rt().coordinator();
  gate g;
  graph_spec held;
  op_spec hold;
  hold.body = g.hold();
  hold.description = "held";
  held.add(std::move(hold));
  auto h = f.ask<step_handle>(co, record_atom::value, step_spec{"held", std::move(held)});
  BOOST_REQUIRE_MESSAGE(h, f.why(h));
  constexpr int replays = 8;
  struct told {
    std::mutex mutex;
    std::vector<step_outcome> outcomes;
    std::promise<void> all;
  };
  auto t = std::make_shared<told>();
  for (int i = 0; i < replays; ++i) {
    caf::anon_send(co, replay_atom::value, replay_request{*h, {}, step_notices::none},
                   step_callback{[t](step_outcome out) {
                     std::lock_guard<std::mutex> lock{t->mutex};
                     t->outcomes.push_back(std::move(out));
                     if (t->outcomes.size() == replays) t->all.set_value();
                   }});
  }
  // Once every replay is taken (a question answered after them, in order), all but the first
  // wait: it holds the home stream's one place.
  auto known = f.ask<coordinator_metrics>(co, metrics_atom::value);
  BOOST_REQUIRE(known);
  caf::anon_send(co, cancel_atom::value, std::vector<step_handle>{*h});
  auto after = f.ask<coordinator_metrics>(co, metrics_atom::value);  // the cancel was handled
  BOOST_REQUIRE(after);
  g.open();
  auto all = t->all.get_future();
  BOOST_REQUIRE(all.wait_for(scaled(std::chrono::seconds{30})) == std::future_status::ready);
  std::lock_guard<std::mutex> lock{t->mutex};
  int completed = 0, cancelled = 0;
  for (const auto& out : t->outcomes) {
    if (out.state == op_state::completed) ++completed;
    if (out.state == op_state::cancelled) {
      ++cancelled;
      BOOST_TEST(f.render(out.cause).find("was cancelled by request") != std::string::npos,
                 f.render(out.cause));
    }
  }
  BOOST_TEST(completed == 1);
  BOOST_TEST(cancelled == replays - 1);
}
