// Buffers in the coordinator, on either backend: dependencies inferred from declared uses
// (what each comes after, said by describe and the notice, and kept on the device by the times
// the work recorded where it ran), disjoint ranges that order nothing, a failed writer's
// poison until a write without a read, graphs ordered by their uses, histories that graphs
// alone keep small, every bad use refused, and a release after the last use on every stream,
// its memory then reused.
#define BOOST_TEST_MODULE coordinator_buffers
#include "coordinator_fixture.hpp"

#include <set>

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

namespace {

op_spec using_(work w, std::vector<buffer_use> uses, std::vector<op_id> deps = {}) {
  op_spec s = spec_of(std::move(w), std::move(deps));
  s.uses = std::move(uses);
  return s;
}

// The inferred dependencies of `id` as (dep, order only) pairs.
std::set<std::pair<std::uint64_t, bool>> inferred_of(const op_info& info) {
  std::set<std::pair<std::uint64_t, bool>> out;
  for (const auto& d : info.inferred) out.emplace(d.dep.value, d.order_only);
  return out;
}

buffer_handle allocate(coordinator_fixture& fx, std::uint64_t bytes) {
  auto b = fx.ask<buffer_handle>(fx.co(), alloc_atom::value, bytes);
  BOOST_REQUIRE_MESSAGE(b, fx.why(b));
  BOOST_TEST(!b->id.empty());
  BOOST_TEST(b->size == bytes);
  BOOST_TEST(b->address != 0u);
  return *b;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(coordinator_buffers, four_streams)

BOOST_AUTO_TEST_CASE(a_read_comes_after_the_last_write_and_a_write_after_the_reads_since) {
  const buffer_handle b = allocate(*this, 1024);
  auto log = std::make_shared<work_log>(4);
  // Nothing ends before the checks: the first writer waits for a gate.
  gate g;
  const op_id held = add(spec_of(g.hold()));
  const op_id w = add(using_(log->record(0, 3ms), {buffer_use::write(b.id)}, {held}));
  const op_id r1 = add(using_(log->record(1, 1ms), {buffer_use::read(b.id, 0, 512)}));
  const op_id r2 = add(using_(log->record(2, 1ms), {buffer_use::read(b.id, 512)}));
  const op_id w2 = add(using_(log->record(3), {buffer_use::write(b.id, 256, 512)}));
  auto r1_info = ask<op_info>(co(), describe_atom::value, r1);
  BOOST_REQUIRE_MESSAGE(r1_info, why(r1_info));
  BOOST_TEST((inferred_of(*r1_info) == std::set<std::pair<std::uint64_t, bool>>{{w.value, false}}));
  BOOST_TEST((r1_info->inferred.front().buffer == b.id));
  BOOST_TEST(std::count(r1_info->deps.begin(), r1_info->deps.end(), w) == 1);
  auto w2_info = ask<op_info>(co(), describe_atom::value, w2);
  BOOST_REQUIRE_MESSAGE(w2_info, why(w2_info));
  BOOST_TEST((inferred_of(*w2_info) == std::set<std::pair<std::uint64_t, bool>>{
                                           {w.value, true}, {r1.value, true}, {r2.value, true}}));
  g.open();
  auto told = collect({held, w, r1, r2, w2});
  for (const auto& [id, n] : told) {
    BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
  }
  BOOST_TEST(told.at(w2.value).inferred.size() == 3u);  // the notice says it too
  BOOST_TEST(log->ended(0) <= log->started(1));
  BOOST_TEST(log->ended(0) <= log->started(2));
  BOOST_TEST(log->ended(1) <= log->started(3));
  BOOST_TEST(log->ended(2) <= log->started(3));
}

BOOST_AUTO_TEST_CASE(disjoint_ranges_of_one_buffer_order_nothing) {
  const buffer_handle b = allocate(*this, 4096);
  gate g;
  const op_id held = add(spec_of(g.hold()));
  const op_id low = add(using_(noop(), {buffer_use::write(b.id, 0, 2048)}, {held}));
  const op_id high = add(using_(noop(), {buffer_use::write(b.id, 2048, 2048)}, {held}));
  const op_id both = add(using_(noop(), {buffer_use::read(b.id, 2047, 2)}));
  auto high_info = ask<op_info>(co(), describe_atom::value, high);
  BOOST_REQUIRE(high_info);
  BOOST_TEST(high_info->inferred.empty());
  auto both_info = ask<op_info>(co(), describe_atom::value, both);
  BOOST_REQUIRE(both_info);
  BOOST_TEST((inferred_of(*both_info) ==
              std::set<std::pair<std::uint64_t, bool>>{{low.value, false}, {high.value, false}}));
  g.open();
  for (const auto& [id, n] : collect({held, low, high, both})) {
    BOOST_TEST((n.state == op_state::completed), "op " << id);
  }
}

BOOST_AUTO_TEST_CASE(a_failed_writer_poisons_what_it_was_to_write_until_it_is_rewritten) {
  const buffer_handle b = allocate(*this, 256);
  auto log = std::make_shared<work_log>(8);
  const op_id bad = add(using_(log->record(0, 2ms, true), {buffer_use::write(b.id, 0, 128)}));
  const op_id reader = add(using_(log->record(1), {buffer_use::read(b.id, 64, 64)}));
  // Only comes after the failed write: it goes on.
  const op_id rewrite = add(using_(log->record(2), {buffer_use::write(b.id, 0, 64)}));
  auto first = collect({bad, reader, rewrite});
  BOOST_TEST((first.at(bad.value).state == op_state::failed));
  BOOST_TEST((first.at(reader.value).state == op_state::cancelled));
  BOOST_TEST((first.at(rewrite.value).state == op_state::completed),
             render(first.at(rewrite.value).cause));
  // Registered after the failure ended: bytes 64..127 are still poisoned, 0..63 rewritten.
  const op_id late = add(using_(log->record(3), {buffer_use::read(b.id, 100, 8)}));
  const op_id clean = add(using_(log->record(4), {buffer_use::read(b.id, 0, 64)}));
  const op_id mixed = add(using_(log->record(5), {buffer_use::read_write(b.id, 60, 8)}));
  auto second = collect({late, clean, mixed});
  BOOST_TEST((second.at(late.value).state == op_state::cancelled));
  BOOST_TEST(render(second.at(late.value).cause).find("left unwritten") != std::string::npos);
  BOOST_TEST(render(second.at(late.value).cause).find("kernel 0 failed") != std::string::npos,
             render(second.at(late.value).cause));
  BOOST_TEST((second.at(clean.value).state == op_state::completed));
  BOOST_TEST((second.at(mixed.value).state == op_state::cancelled));
  // A write without a read clears it.
  const op_id heal = add(using_(log->record(6), {buffer_use::write(b.id, 0, 256)}));
  const op_id after = add(using_(log->record(7), {buffer_use::read(b.id)}));
  auto third = collect({heal, after});
  BOOST_TEST((third.at(after.value).state == op_state::completed),
             render(third.at(after.value).cause));
}

BOOST_AUTO_TEST_CASE(a_graph_is_ordered_by_its_uses_in_its_own_order) {
  const buffer_handle b = allocate(*this, 512);
  auto log = std::make_shared<work_log>(4);
  gate held;
  const op_id hold = add(spec_of(held.hold()));
  graph_spec g;
  // No `after` at all: the order comes from the uses, in the graph's order.
  g.add(using_(log->record(0, 2ms), {buffer_use::write(b.id)}, {hold}));
  g.add(using_(log->record(1, 1ms), {buffer_use::read(b.id, 0, 256)}));
  g.add(using_(log->record(2, 1ms), {buffer_use::read(b.id, 256)}));
  g.add(using_(log->record(3), {buffer_use::read_write(b.id)}));
  auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
  BOOST_REQUIRE_MESSAGE(ids, why(ids));
  held.open();
  for (const auto& [id, n] : collect(*ids)) {
    BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
  }
  BOOST_TEST(log->ended(0) <= log->started(1));
  BOOST_TEST(log->ended(0) <= log->started(2));
  BOOST_TEST(log->ended(1) <= log->started(3));
  BOOST_TEST(log->ended(2) <= log->started(3));
  auto last = ask<op_info>(co(), describe_atom::value, (*ids)[3]);
  BOOST_REQUIRE(last);
  BOOST_TEST((inferred_of(*last) ==
              std::set<std::pair<std::uint64_t, bool>>{
                  {(*ids)[0].value, false}, {(*ids)[1].value, true}, {(*ids)[2].value, true}}));
  // An `after` against the order of the uses is a cycle, named, and nothing is registered.
  graph_spec backwards;
  const auto first = backwards.add(using_(noop(), {buffer_use::write(b.id)}));
  const auto second = backwards.add(using_(noop(), {buffer_use::read(b.id)}));
  backwards.ops[first].after.push_back(second);
  auto refused = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(backwards));
  BOOST_REQUIRE(!refused);
  BOOST_TEST((refused.error() == errc::dependency_cycle));
  BOOST_TEST(why(refused).find("by the buffers they use") != std::string::npos, why(refused));
}

BOOST_AUTO_TEST_CASE(uses_of_one_operation_that_overlap_or_repeat_infer_as_declared_apart) {
  // A graph infers and records each use of an op in one search where the op's uses allow it;
  // uses that overlap in one buffer must still be inferred before any of them is recorded,
  // and a use repeated exactly must count once. The same ops registered one by one (always
  // inferred first, then recorded), on buffers of their own, must come out the same.
  const auto ops = [](const buffer_id& b, const buffer_id& c) {
    std::vector<op_spec> out;
    out.push_back(using_(noop(), {buffer_use::write(b, 0, 256)}));
    // Its write would hide the first op from its read if recorded first: it must read after
    // that write as data, not only come after it.
    out.push_back(using_(noop(), {buffer_use::write(b, 0, 256), buffer_use::read(b, 0, 256)}));
    out.push_back(using_(
        noop(), {buffer_use::read(b, 0, 128), buffer_use::read(b, 0, 128), buffer_use::read(c)}));
    out.push_back(using_(noop(), {buffer_use::write(b, 0, 256), buffer_use::read(c)}));
    return out;
  };
  using deps = std::set<std::pair<std::uint64_t, bool>>;
  const auto check = [&](const std::vector<op_id>& id, const char* how) {
    const std::vector<deps> want{
        {},
        {{id[0].value, false}},
        {{id[1].value, false}},
        {{id[1].value, true}, {id[2].value, true}},
    };
    for (std::size_t i = 0; i < id.size(); ++i) {
      auto info = ask<op_info>(co(), describe_atom::value, id[i]);
      BOOST_REQUIRE_MESSAGE(info, why(info));
      BOOST_TEST((inferred_of(*info) == want[i]), how << " op " << i);
    }
  };
  gate g;
  const op_id hold = add(spec_of(g.hold()));
  const buffer_handle b = allocate(*this, 512);
  const buffer_handle c = allocate(*this, 64);
  graph_spec graph;
  for (op_spec& s : ops(b.id, c.id)) graph.add(std::move(s));
  graph.ops[0].spec.deps.push_back(hold);
  auto in_graph = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(graph), me());
  BOOST_REQUIRE_MESSAGE(in_graph, why(in_graph));
  check(*in_graph, "graph");
  const buffer_handle b2 = allocate(*this, 512);
  const buffer_handle c2 = allocate(*this, 64);
  std::vector<op_id> alone;
  for (op_spec& s : ops(b2.id, c2.id)) {
    if (alone.empty()) s.deps.push_back(hold);
    alone.push_back(add(std::move(s)));
  }
  check(alone, "alone");
  g.open();
  std::vector<op_id> all{hold};
  all.insert(all.end(), in_graph->begin(), in_graph->end());
  all.insert(all.end(), alone.begin(), alone.end());
  for (const auto& [id, n] : collect(all)) {
    BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
  }
}

BOOST_AUTO_TEST_CASE(graphs_alone_do_not_pile_up_ended_users_in_a_history) {
  // A buffer only read, by graph after graph: every read adds a reader, and only a
  // compaction drops the readers that ended. Graphs record into copies of the histories;
  // once installed, those are compacted when due, as after an operation's uses.
  const buffer_handle b = allocate(*this, 256);
  constexpr std::size_t graphs = 30, per_graph = 100;
  for (std::size_t k = 0; k < graphs; ++k) {
    graph_spec g;
    for (std::size_t i = 0; i < per_graph; ++i) g.add(using_(noop(), {buffer_use::read(b.id)}));
    auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
    BOOST_REQUIRE_MESSAGE(ids, why(ids));
    for (const auto& [id, n] : collect(*ids)) {
      BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
    }
  }
  auto m = ask<coordinator_metrics>(co(), metrics_atom::value);
  BOOST_REQUIRE(m);
  // Every reader of the last graph may still be held, and those since the last compaction:
  // a few graphs' worth, never all 3000.
  BOOST_TEST(m->buffer_users <= 4 * per_graph, m->buffer_users << " users held");
  BOOST_TEST(m->buffer_users >= 1u);
}

BOOST_AUTO_TEST_CASE(a_compaction_keeps_a_writer_that_never_ran_for_those_after_it) {
  // `ghost` writes bytes 0..127 after `a`, but is cancelled before it reaches a stream (it
  // waits for a caller-launched op never begun): users after it come after what it came
  // after, `a`, which is still held. The history is compacted meanwhile (hundreds of reads
  // of other bytes): it must keep the ghost, or a later write of those bytes would not wait
  // for `a`.
  const buffer_handle b = allocate(*this, 256);
  gate g;
  const op_id hold = add(spec_of(g.hold()));
  const op_id a = add(using_(noop(), {buffer_use::write(b.id, 0, 128)}, {hold}));
  const op_id never = add(spec_of({}));  // manual, not begun
  const op_id ghost = add(using_(noop(), {buffer_use::write(b.id, 0, 128)}, {never}));
  auto cancelled = ask<op_state>(co(), cancel_atom::value, ghost);
  BOOST_REQUIRE_MESSAGE(cancelled, why(cancelled));
  BOOST_TEST((told(ghost).state == op_state::cancelled));
  // Some may queue behind `a` on its stream: they end once the gate opens.
  std::vector<op_id> rest{hold, a};
  for (int i = 0; i < 200; ++i) rest.push_back(add(using_(noop(), {buffer_use::read(b.id, 128)})));
  const op_id late = add(using_(noop(), {buffer_use::write(b.id, 0, 64)}));
  auto info = ask<op_info>(co(), describe_atom::value, late);
  BOOST_REQUIRE_MESSAGE(info, why(info));
  std::string said;
  for (op_id d : info->deps) said += " " + std::to_string(d.value);
  BOOST_TEST(std::count(info->deps.begin(), info->deps.end(), a) == 1,
             "the late write comes after " << a.value << " through the ghost; deps:" << said);
  g.open();
  rest.push_back(late);
  for (const auto& [id, n] : collect(rest)) {
    BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
  }
  BOOST_TEST(ask<op_state>(co(), cancel_atom::value, never));
  collect({never});
}

BOOST_AUTO_TEST_CASE(what_comes_after_a_ghost_waits_for_the_tail_it_came_after_in_one_cascade) {
  // One failure ends, in one batch, `ghost` (it never reaches a stream: it also waits for a
  // caller-launched op never begun) and `tail` (on its stream, where its work still runs), the
  // cascade reaching the ghost first. `late` overwrites the bytes both write: it comes after
  // the ghost, so after what the ghost came after, the tail. It must not start before the
  // tail's work ended. (It did, when the ghost was handed over before the tail was known: the
  // random buffer test found it, 1 run in 20 under load.)
  const buffer_handle b = allocate(*this, 256);
  auto log = std::make_shared<work_log>(3);
  gate g;
  const op_id held = add(spec_of(g.hold()));
  const op_id bad = add(spec_of(log->record(0, 0us, true), {held}));
  const op_id between = add(spec_of(noop(), {bad}));
  const op_id tail =
      add(using_(log->record(1, 200ms), {buffer_use::write(b.id, 0, 128)}, {between}));
  const op_id never = add(spec_of({}));  // manual, not begun
  const op_id ghost = add(using_(noop(), {buffer_use::write(b.id, 0, 128)}, {bad, never}));
  const op_id late = add(using_(log->record(2), {buffer_use::write(b.id, 0, 128)}));
  g.open();
  auto told = collect({held, bad, between, tail, ghost, late});
  BOOST_TEST((told.at(bad.value).state == op_state::failed));
  BOOST_TEST((told.at(tail.value).state == op_state::cancelled));
  BOOST_TEST((told.at(ghost.value).state == op_state::cancelled));
  BOOST_TEST((told.at(late.value).state == op_state::completed), render(told.at(late.value).cause));
  // The tail's work runs, cancelled or not; its notice came when the cascade ended it.
  const auto limit = std::chrono::steady_clock::now() + scaled(10s);
  while (log->ended(1) == 0 && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(1ms);
  }
  BOOST_REQUIRE(log->ended(1) != 0);
  BOOST_TEST(log->ended(1) <= log->started(2), "the late write started "
                                                   << (log->ended(1) - log->started(2)) / 1000
                                                   << " us before the tail's work ended");
  BOOST_TEST(ask<op_state>(co(), cancel_atom::value, never));
  collect({never});
}

BOOST_AUTO_TEST_CASE(bad_uses_are_refused_with_what_is_wrong) {
  const buffer_handle b = allocate(*this, 64);
  const buffer_handle other = allocate(*this, 64);
  auto refused = [&](buffer_use u, errc code, const std::string& says) {
    auto id = ask<op_id>(co(), register_atom::value, using_(noop(), {u}));
    BOOST_REQUIRE(!id);
    BOOST_TEST((id.error() == code), why(id));
    BOOST_TEST(why(id).find(says) != std::string::npos, why(id));
    graph_spec g;
    g.add(using_(noop(), {buffer_use::read(other.id)}));
    g.add(using_(noop(), {u}));
    auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g));
    BOOST_REQUIRE(!ids);
    BOOST_TEST(why(ids).find("graph op 1") != std::string::npos, why(ids));
  };
  refused(buffer_use::read(b.id, 60, 8), errc::out_of_range, "which has 64 bytes");
  refused(buffer_use::read(b.id, 64), errc::out_of_range, "which has 64 bytes");
  refused(buffer_use::read(buffer_id{b.id.owner + 1, b.id.slot, b.id.generation}),
          errc::foreign_handle, "not this coordinator's");
  refused(buffer_use::read(buffer_id{b.id.owner, b.id.slot + 7, 1}), errc::invalid_argument,
          "never allocated");
  refused(buffer_use{b.id, buffer_access::none, 0, 0}, errc::invalid_argument,
          "declares no access");
  auto slow = std::make_shared<work_log>(1);
  const op_id user = add(using_(slow->record(0, 50ms), {buffer_use::read(b.id)}));
  auto release = ask<op_id>(co(), release_atom::value, b.id);
  BOOST_REQUIRE_MESSAGE(release, why(release));
  refused(buffer_use::write(b.id), errc::invalid_state, "was released");
  auto again = ask<op_id>(co(), release_atom::value, b.id);
  BOOST_REQUIRE(!again);
  BOOST_TEST(why(again).find("was released") != std::string::npos, why(again));
  auto withdrawn = ask<op_state>(co(), cancel_atom::value, *release);
  BOOST_REQUIRE(!withdrawn);  // a release is not withdrawn (its user still runs)
  BOOST_TEST(why(withdrawn).find("cannot be withdrawn") != std::string::npos, why(withdrawn));
  BOOST_TEST((told(user).state == op_state::completed));
  auto empty = ask<buffer_handle>(co(), alloc_atom::value, std::uint64_t{0});
  BOOST_TEST(!empty);
}

BOOST_AUTO_TEST_CASE(a_release_comes_after_every_use_on_every_stream_then_the_memory_is_reused) {
  const buffer_handle b = allocate(*this, 1 << 16);
  auto log = std::make_shared<work_log>(4);
  std::vector<op_id> users;
  gate g;
  const op_id held = add(spec_of(g.hold()));
  // A writer of the whole buffer, then readers of a quarter each on every stream, held, then
  // the release.
  users.push_back(add(using_(noop(), {buffer_use::write(b.id)}, {held})));
  for (std::uint32_t s = 0; s < 4; ++s) {
    op_spec r = using_(log->record(s, 3ms), {buffer_use::read(b.id, s << 14, 1 << 14)}, {held});
    r.placement.pinned = true;
    r.placement.stream = stream_id{s};
    users.push_back(add(std::move(r)));
  }
  auto release = ask<op_id>(co(), release_atom::value, b.id);
  BOOST_REQUIRE_MESSAGE(release, why(release));
  auto info = ask<op_info>(co(), describe_atom::value, *release);
  BOOST_REQUIRE(info);
  BOOST_TEST((info->type == op_type::release));
  // Each user once, the writer too although four ranges name it since.
  std::vector<op_id> deps = info->deps;
  std::sort(deps.begin(), deps.end());
  std::vector<op_id> expected = users;
  std::sort(expected.begin(), expected.end());
  BOOST_TEST(deps == expected, boost::test_tools::per_element());
  g.open();
  auto notice = ask<op_notice>(co(), await_atom::value, *release, wait_limit{});
  BOOST_REQUIRE_MESSAGE(notice, why(notice));
  BOOST_TEST((notice->state == op_state::completed));
  BOOST_TEST((notice->stream == b.stream));  // freed in the order of its stream
  for (std::uint32_t s = 0; s < 4; ++s) BOOST_TEST(log->ended(s) != 0);
  // The stream's allocator takes the memory back once it passed the free, then hands it out
  // again for a buffer of the same size on the same stream. The buffers made meanwhile are
  // kept: released at once, each would be the newest free block and be handed out next in
  // its place (the allocator takes the newest), so that a first round that came too early
  // failed the test under load. Work on the stream moves it on past the free.
  bool reused = false;
  std::vector<buffer_id> kept;
  for (int i = 0; i < 200 && !reused; ++i) {
    auto next = ask<buffer_handle>(co(), alloc_atom::value, b.stream, std::uint64_t{1} << 16);
    BOOST_REQUIRE_MESSAGE(next, why(next));
    reused = next->address == b.address;
    BOOST_TEST((next->id != b.id));
    kept.push_back(next->id);
    if (reused) break;
    op_spec tick = using_(noop(), {});
    tick.placement.pinned = true;
    tick.placement.stream = b.stream;
    const op_id t = add(std::move(tick));
    (void)collect({t});
    std::this_thread::sleep_for(1ms);
  }
  BOOST_TEST(reused, "in " << kept.size() << " rounds");
  for (const buffer_id& id : kept) {
    auto gone = ask<op_id>(co(), release_atom::value, id);
    BOOST_REQUIRE(gone);
    (void)ask<op_notice>(co(), await_atom::value, *gone, wait_limit{});
  }
}

BOOST_AUTO_TEST_CASE(adopted_memory_is_ordered_and_never_freed) {
  std::vector<std::uint8_t> mine(128, 0);
  auto b =
      ask<buffer_handle>(co(), adopt_atom::value,
                         static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(mine.data())),
                         std::uint64_t{128});
  BOOST_REQUIRE_MESSAGE(b, why(b));
  BOOST_TEST(b->adopted);
  const op_id w = add(using_(noop(), {buffer_use::write(b->id)}));
  auto release = ask<op_id>(co(), release_atom::value, b->id);
  BOOST_REQUIRE(release);
  auto info = ask<op_info>(co(), describe_atom::value, *release);
  BOOST_REQUIRE(info);
  const auto n = collect({w});
  BOOST_TEST((n.at(w.value).state == op_state::completed));
  auto ended = ask<op_notice>(co(), await_atom::value, *release, wait_limit{});
  BOOST_REQUIRE(ended);
  BOOST_TEST((ended->state == op_state::completed));
  auto refused = ask<buffer_handle>(co(), adopt_atom::value, std::uint64_t{0}, std::uint64_t{8});
  BOOST_TEST(!refused);
}

BOOST_AUTO_TEST_CASE(a_dependent_waits_once_on_a_stream_where_its_highest_point_covers_the_rest) {
  // Two operations on stream 0, held behind a gate, and one on stream 1 after both, through
  // its uses: one device wait on stream 0 does, unless the higher point is only an order one
  // (a write after a read) and the lower one data. Each case with buffers of its own.
  struct one_case {
    const char* name;
    bool first_writes, second_writes;  // what the ops on stream 0 do with their buffer
    std::uint64_t waits;
  };
  const one_case cases[] = {{"data, data", true, true, 1},
                            {"data, then order only", true, false, 2},
                            {"order only, then data", false, true, 1}};
  const auto pinned = [](op_spec s, std::uint32_t stream) {
    s.placement.pinned = true;
    s.placement.stream = stream_id{stream};
    return s;
  };
  for (const one_case& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      const buffer_handle x = allocate(*this, 256);
      const buffer_handle y = allocate(*this, 256);
      auto log = std::make_shared<work_log>(3);
      gate g;
      const op_id held = add(pinned(spec_of(g.hold()), 0));
      const auto use_of = [](const buffer_handle& b, bool write) {
        return write ? buffer_use::write(b.id) : buffer_use::read(b.id);
      };
      const op_id a1 = add(pinned(using_(log->record(0, 1ms), {use_of(x, c.first_writes)}), 0));
      const op_id a2 = add(pinned(using_(log->record(1, 1ms), {use_of(y, c.second_writes)}), 0));
      (void)placed(a1);
      (void)placed(a2);
      const auto before = metrics().device_waits;
      // b comes after each one that wrote what it reads (data) or read what it writes (order).
      const op_id b = add(pinned(
          using_(log->record(2), {use_of(x, !c.first_writes), use_of(y, !c.second_writes)}), 1));
      (void)placed(b);
      BOOST_TEST(metrics().device_waits - before == c.waits);
      g.open();
      auto notices = collect({held, a1, a2, b});
      for (const auto& [id, n] : notices) BOOST_TEST((n.state == op_state::completed));
      BOOST_TEST(notices.at(b.value).stream.value == 1u);
      BOOST_TEST(log->started(2) >= log->ended(1));
      BOOST_TEST(log->started(2) >= log->ended(0));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// An ended operation is described from the ring of ended ones: with the inferred dependencies
// its notice carried, however often the ring's slots have been reused by operations with more
// or fewer of them.
struct three_kept_four_streams : coordinator_fixture {
  three_kept_four_streams()
      : coordinator_fixture({"--cudactor.streams=4", "--cudactor.coordinator.ended-kept=3"}) {}
};

BOOST_FIXTURE_TEST_CASE(an_ended_operation_is_described_with_its_own_inferred_dependencies,
                        three_kept_four_streams) {
  const buffer_handle b = allocate(*this, 256);
  for (const std::size_t readers : {3u, 1u, 2u}) {
    gate g;
    const op_id held = add(spec_of(g.hold()));
    const op_id w = add(using_(noop(), {buffer_use::write(b.id)}, {held}));
    std::vector<op_id> all{held, w};
    std::set<std::pair<std::uint64_t, bool>> expected{{w.value, true}};
    for (std::size_t k = 0; k < readers; ++k) {
      all.push_back(add(using_(noop(), {buffer_use::read(b.id, 0, 16)})));
      expected.emplace(all.back().value, true);
    }
    // After the write and every read since, so it ends last: the ring still holds it.
    const op_id last = add(using_(noop(), {buffer_use::write(b.id)}));
    all.push_back(last);
    g.open();
    const auto told = collect(all);
    BOOST_TEST((told.at(last.value).state == op_state::completed));
    std::set<std::pair<std::uint64_t, bool>> in_notice;
    for (const auto& d : told.at(last.value).inferred) {
      in_notice.emplace(d.dep.value, d.order_only);
      BOOST_TEST((d.buffer == b.id));
    }
    BOOST_TEST((in_notice == expected), "readers " << readers);
    auto info = ask<op_info>(co(), describe_atom::value, last);
    BOOST_REQUIRE_MESSAGE(info, why(info));
    BOOST_TEST((info->state == op_state::completed));
    BOOST_TEST((inferred_of(*info) == expected), "readers " << readers);
    BOOST_TEST(info->uses.size() == 1u);
    BOOST_TEST(std::count(info->deps.begin(), info->deps.end(), w) == 1);
  }
}

// Buffer inference under small bounds (coordinator_options::max_buffer_segments,
// max_inferred_edges, max_covered_segments), each refusal named.
struct small_inference_bounds : coordinator_fixture {
  small_inference_bounds()
      : coordinator_fixture({"--cudactor.streams=4",
                             "--cudactor.coordinator.max-buffer-segments=200",
                             "--cudactor.coordinator.max-inferred-edges=100",
                             "--cudactor.coordinator.max-covered-segments=1000"}) {}
};

BOOST_FIXTURE_TEST_CASE(a_history_full_of_uses_in_flight_refuses_more_until_they_end,
                        small_inference_bounds) {
  const buffer_handle b = allocate(*this, 1024);
  gate g;
  const op_id held = add(spec_of(g.hold()));
  // Every other byte written by an operation of its own, all held: each cuts two segments.
  std::vector<op_id> in_flight{held};
  caf::error refusal;
  std::uint64_t at = 0;
  for (; at < 1024; at += 2) {
    auto id = ask<op_id>(co(), register_atom::value,
                         using_(noop(), {buffer_use::write(b.id, at, 1)}, {held}), me());
    if (!id) {
      refusal = id.error();
      break;
    }
    in_flight.push_back(*id);
  }
  BOOST_REQUIRE_MESSAGE(refusal, "1024 bytes written apart, none refused");
  BOOST_TEST((refusal == errc::resource_exhausted));
  const std::string said = render(refusal);
  BOOST_TEST(said.find("max_buffer_segments") != std::string::npos, said);
  BOOST_TEST(said.find(to_string(b.id)) != std::string::npos, said);
  BOOST_TEST(said.find("the operation") != std::string::npos, said);
  // 2 segments per write (the first, at byte 0, cuts once and leaves two), and room for 2 more
  // before each: 100 writes (a history of 200 segments) at most.
  BOOST_TEST(in_flight.size() - 1 == 100u);
  // Asked again while nothing ended: refused each time, the same way (the history is not gone
  // through again: buffer_uses_test checks that).
  for (int again = 0; again < 3; ++again) {
    auto id = ask<op_id>(co(), register_atom::value,
                         using_(noop(), {buffer_use::write(b.id, at, 1)}, {held}), me());
    BOOST_REQUIRE_MESSAGE(!id, "a write past a full history was taken");
    BOOST_TEST((id.error() == errc::resource_exhausted));
    BOOST_TEST(render(id.error()) == said);
  }
  // Once they end, their segments go: the same write is taken.
  g.open();
  for (const auto& [id, n] : collect(in_flight)) {
    BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
  }
  const op_id later = add(using_(noop(), {buffer_use::write(b.id, at, 1)}));
  BOOST_TEST((collect({later}).at(later.value).state == op_state::completed));
}

BOOST_FIXTURE_TEST_CASE(a_graph_past_an_inference_bound_is_refused_whole_naming_it,
                        small_inference_bounds) {
  const auto refused_graph = [&](graph_spec g) {
    auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
    BOOST_REQUIRE_MESSAGE(!ids, "a graph past a bound was registered");
    return ids.error();
  };
  const auto interleaved = [&](buffer_id buffer, std::size_t writers, std::size_t reads,
                               buffer_access first) {
    graph_spec g;
    for (std::size_t i = 0; i < writers; ++i) {
      g.add(using_(noop(), {buffer_use{buffer, first, 2 * i, 1}}));
    }
    for (std::size_t r = 0; r < reads; ++r) g.add(using_(noop(), {buffer_use::read(buffer)}));
    return g;
  };
  const auto before = ask<coordinator_metrics>(co(), metrics_atom::value);
  BOOST_REQUIRE(before);
  // The history: 2 segments per write; the 101st write could take it past 200.
  const buffer_handle b = allocate(*this, 1024);
  caf::error full = refused_graph(interleaved(b.id, 101, 0, buffer_access::write));
  BOOST_TEST((full == errc::resource_exhausted));
  BOOST_TEST(render(full).find("graph op 100: ") != std::string::npos, render(full));
  BOOST_TEST(render(full).find("max_buffer_segments") != std::string::npos, render(full));
  // 40 writers, then reads of the whole buffer that each come after all 40: the third read
  // takes the graph past 100 inferred dependencies.
  caf::error edges = refused_graph(interleaved(b.id, 40, 3, buffer_access::write));
  BOOST_TEST((edges == errc::invalid_argument));
  BOOST_TEST(render(edges).find("graph op 42, at its use 0 (" + to_string(b.id) + "): ") !=
                 std::string::npos,
             render(edges));
  BOOST_TEST(render(edges).find("max_inferred_edges") != std::string::npos, render(edges));
  // 20 readers of a byte each (40 segments), then reads of the whole buffer: no dependency at
  // all (reads order nothing), but each goes through every segment; the 25th read takes the
  // graph past 1000 (1 copied + 20 + 40 per read).
  caf::error covered = refused_graph(interleaved(b.id, 20, 30, buffer_access::read));
  BOOST_TEST((covered == errc::invalid_argument));
  BOOST_TEST(render(covered).find("graph op 44, at its use 0 (" + to_string(b.id) + "): ") !=
                 std::string::npos,
             render(covered));
  BOOST_TEST(render(covered).find("max_covered_segments") != std::string::npos, render(covered));
  // Nothing of them was registered. The largest of each is taken and runs (each on a buffer
  // of its own: the segments a history holds count for the next graph's work).
  auto after = ask<coordinator_metrics>(co(), metrics_atom::value);
  BOOST_REQUIRE(after);
  BOOST_TEST(after->total == before->total);
  for (auto g : {interleaved(b.id, 100, 0, buffer_access::write),
                 interleaved(allocate(*this, 1024).id, 40, 2, buffer_access::write),
                 interleaved(allocate(*this, 1024).id, 20, 24, buffer_access::read)}) {
    auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
    BOOST_REQUIRE_MESSAGE(ids, why(ids));
    for (const auto& [id, n] : collect(*ids)) {
      BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
    }
  }
  // Segments left by users that ended do not count: 45 writers that ended leave 90 segments
  // (under half the bound, so not compacted when the next graph copies the history), and the
  // next graph's 90 writers elsewhere in the buffer (2 segments each) fit once the full copy
  // is compacted. Before, the copy was never compacted: refused at graph op 55.
  const buffer_handle used = allocate(*this, 1024);
  graph_spec after_ended;
  for (std::size_t i = 0; i < 90; ++i) {
    after_ended.add(using_(noop(), {buffer_use{used.id, buffer_access::write, 300 + 2 * i, 1}}));
  }
  for (auto g : {interleaved(used.id, 45, 0, buffer_access::write), std::move(after_ended)}) {
    auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
    BOOST_REQUIRE_MESSAGE(ids, why(ids));
    for (const auto& [id, n] : collect(*ids)) {
      BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
    }
  }
}

// The bounds are checked after each use, not each operation: one operation's 64 uses could
// each take as much work as a whole history. The refusal names the use that crossed a bound
// (the check after each use is what can name it).
BOOST_FIXTURE_TEST_CASE(an_inference_bound_is_checked_at_each_use_and_names_it,
                        small_inference_bounds) {
  // 4 buffers with 40 writers each, a byte apart; then one operation reading all 4: 40
  // dependencies per read, so its third use (index 2) takes it past 100.
  std::vector<buffer_handle> bufs;
  for (int i = 0; i < 4; ++i) bufs.push_back(allocate(*this, 1024));
  std::vector<buffer_use> reads;
  for (const buffer_handle& b : bufs) reads.push_back(buffer_use::read(b.id));
  const std::string crossed = "at its use 2 (" + to_string(bufs[2].id) + "): ";
  graph_spec g;
  for (const buffer_handle& b : bufs) {
    for (std::uint64_t i = 0; i < 40; ++i) g.add(using_(noop(), {buffer_use::write(b.id, 2 * i, 1)}));
  }
  g.add(using_(noop(), reads));
  auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
  BOOST_REQUIRE_MESSAGE(!ids, "a graph past max_inferred_edges was registered");
  std::string said = render(ids.error());
  BOOST_TEST((ids.error() == errc::invalid_argument));
  BOOST_TEST(said.find("graph op 160, " + crossed) != std::string::npos, said);
  BOOST_TEST(said.find("max_inferred_edges") != std::string::npos, said);
  // The same as lone operations: the writers held in flight, then the reads.
  gate hold;
  const op_id held = add(spec_of(hold.hold()));
  std::vector<op_id> writers{held};
  for (const buffer_handle& b : bufs) {
    for (std::uint64_t i = 0; i < 40; ++i) {
      writers.push_back(add(using_(noop(), {buffer_use::write(b.id, 2 * i, 1)}, {held})));
    }
  }
  auto lone = ask<op_id>(co(), register_atom::value, using_(noop(), reads), me());
  BOOST_REQUIRE_MESSAGE(!lone, "an operation past max_inferred_edges was registered");
  said = render(lone.error());
  BOOST_TEST(said.find("the operation, " + crossed) != std::string::npos, said);
  BOOST_TEST(said.find("max_inferred_edges") != std::string::npos, said);
  // Three reads infer 120: taken once the writers ended (none is waited for then).
  hold.open();
  for (const auto& [id, n] : collect(writers)) {
    BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
  }
  const op_id later = add(using_(noop(), reads));
  BOOST_TEST((collect({later}).at(later.value).state == op_state::completed));
}
