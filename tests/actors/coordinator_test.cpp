// The coordinator through its messages, on either backend: the seed patterns with their order
// checked by the times the work recorded where it ran, failure and cancellation, priority
// under contention, caller-launched operations, subscriptions, describe, deadlock reports and
// the pool's queries. What needs the host backend's faults is in coordinator_faults_test,
// barrier operations in coordinator_barriers_test.
#define BOOST_TEST_MODULE coordinator
#include "coordinator_fixture.hpp"

#include <set>
#include <thread>

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

namespace {

std::vector<std::string> streams(int n, std::string strategy = "load_balanced") {
  return {"--cudactor.streams=" + std::to_string(n), "--cudactor.coordinator.strategy=" + strategy};
}

struct one_stream : coordinator_fixture {
  one_stream() : coordinator_fixture(streams(1)) {}
};

struct one_narrow_stream : coordinator_fixture {
  one_narrow_stream()
      : coordinator_fixture({"--cudactor.streams=1", "--cudactor.max-in-flight=2"}) {}
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(coordinator, four_streams)

BOOST_AUTO_TEST_CASE(sequential_operations_run_one_after_another) {
  constexpr std::size_t n = 40;
  auto log = std::make_shared<work_log>(n);
  std::vector<op_id> ids;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<op_id> deps;
    if (i > 0) deps.push_back(ids.back());
    ids.push_back(add(spec_of(log->record(i, 20us), deps)));
  }
  auto notices = collect(ids);
  std::set<std::uint32_t> used;
  for (std::size_t i = 0; i < n; ++i) {
    BOOST_TEST((notices.at(ids[i].value).state == op_state::completed));
    used.insert(notices.at(ids[i].value).stream.value);
    if (i > 0) BOOST_TEST(log->started(i) >= log->ended(i - 1));
  }
  const auto m = metrics();
  BOOST_TEST(m.completed == n);
  BOOST_TEST(m.live == 0u);
  // A chain spread over streams waits on the device, never twice for what is covered.
  BOOST_TEST(m.device_waits <= n);
  BOOST_TEST_MESSAGE("chain of " << n << " used " << used.size() << " streams, " << m.device_waits
                                 << " device waits");
}

// One stream namespace and one timeline: a notice's stream id names, through rt.stream(), the
// stream actor the operation ran on; work submitted to that actor directly goes on the same
// timeline after it and stays in order.
BOOST_AUTO_TEST_CASE(a_notices_stream_id_names_the_stream_actor_it_ran_on) {
  for (int round = 0; round < 4; ++round) {
    gate g;
    const op_id held = add(spec_of(g.hold()));
    const op_info where = placed(held);  // its ticket is back: describe says where
    const stream_actor& s = rt().stream(where.stream.value);
    auto status = ask<stream_status>(s, status_atom::value);
    BOOST_REQUIRE_MESSAGE(status, why(status));
    BOOST_TEST(status->id == where.stream);
    BOOST_TEST(status->accepted >= where.point);  // that stream took the operation's point
    BOOST_TEST(status->completed < where.point);   // and holds it: the gate is closed
    // Direct work on the same stream: a later point of the same timeline, run after it.
    auto log = std::make_shared<work_log>(1);
    auto after = ask<ticket>(s, submit_atom::value, log->record(0, 0us));
    BOOST_REQUIRE_MESSAGE(after, why(after));
    BOOST_TEST(after->point > where.point);
    BOOST_TEST(log->rank(0) == -1);
    g.open();
    const op_notice notice = told(held);
    BOOST_TEST((notice.state == op_state::completed));
    BOOST_TEST(notice.stream == where.stream);
    BOOST_TEST(notice.point == where.point);
    auto reached =
        ask<completion>(rt().stream(notice.stream.value), await_atom::value, notice.point);
    BOOST_REQUIRE_MESSAGE(reached, why(reached));
    BOOST_TEST(reached->op.stream == notice.stream);
    auto direct = ask<completion>(s, await_atom::value, after->point);
    BOOST_REQUIRE_MESSAGE(direct, why(direct));
    BOOST_TEST(log->rank(0) == 0);
  }
}

BOOST_AUTO_TEST_CASE(a_parallel_pipeline_prepares_computes_and_reduces_in_order) {
  // N preparations -> one compute per stream after all of them -> one all-reduce after all.
  constexpr std::size_t prep = 8, computes = 4;
  const std::size_t total = prep + computes + 1;
  auto log = std::make_shared<work_log>(total);
  graph_spec g;
  std::vector<std::uint32_t> preps, comps;
  for (std::size_t i = 0; i < prep; ++i) {
    preps.push_back(g.add(
        spec_of(log->record(i, 200us), {}, op_priority::normal, op_workload::memory, "prepare")));
  }
  for (std::size_t i = 0; i < computes; ++i) {
    comps.push_back(g.add(spec_of(log->record(prep + i, 300us), {}, op_priority::high,
                                  op_workload::compute, "compute"),
                          preps));
  }
  auto reduce = g.add(spec_of(log->record(total - 1), {}, op_priority::critical,
                              op_workload::coordination, "all-reduce"),
                      comps);
  g.ops[reduce].spec.type = op_type::all_reduce;
  auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, g, me());
  BOOST_REQUIRE_MESSAGE(ids, why(ids));
  BOOST_REQUIRE_EQUAL(ids->size(), total);
  auto notices = collect(*ids);
  std::int64_t last_prep_end = 0, last_compute_end = 0;
  for (std::size_t i = 0; i < prep; ++i) last_prep_end = std::max(last_prep_end, log->ended(i));
  std::set<std::uint32_t> compute_streams;
  for (std::size_t i = 0; i < computes; ++i) {
    BOOST_TEST(log->started(prep + i) >= last_prep_end);
    last_compute_end = std::max(last_compute_end, log->ended(prep + i));
    compute_streams.insert(notices.at((*ids)[prep + i].value).stream.value);
  }
  BOOST_TEST(log->started(total - 1) >= last_compute_end);
  BOOST_TEST(compute_streams.size() > 1u);  // the computes ran side by side
  for (auto& [id, n] : notices) BOOST_TEST((n.state == op_state::completed));
  auto info = ask<op_info>(co(), describe_atom::value, (*ids)[reduce]);
  BOOST_REQUIRE_MESSAGE(info, why(info));
  BOOST_TEST(info->description == "all-reduce");
  BOOST_TEST((info->type == op_type::all_reduce));
  BOOST_TEST(info->deps.size() == computes);
  BOOST_TEST((info->state == op_state::completed));
  BOOST_TEST(info->on_stream);
  BOOST_TEST(info->dispatched_ns >= info->registered_ns);
  BOOST_TEST(info->ended_ns >= info->dispatched_ns);
}

BOOST_AUTO_TEST_CASE(a_failure_cancels_its_dependents_and_the_rest_goes_on) {
  auto log = std::make_shared<work_log>(5);
  gate g;
  auto held = add(spec_of(g.hold()));
  auto bad = add(spec_of(log->record(0, 0us, true), {held}));
  auto child = add(spec_of(log->record(1), {bad}));
  auto grandchild = add(spec_of(log->record(2), {child}));
  auto other = add(spec_of(log->record(3), {held}));
  g.open();
  auto notices = collect({held, bad, child, grandchild, other});
  BOOST_TEST((notices.at(bad.value).state == op_state::failed));
  BOOST_TEST(render(notices.at(bad.value).cause).find("kernel 0 failed") != std::string::npos);
  for (op_id dependent : {child, grandchild}) {
    const auto& n = notices.at(dependent.value);
    BOOST_TEST((n.state == op_state::cancelled));
    BOOST_TEST(n.cause.code() == static_cast<std::uint8_t>(errc::dependency_failed));
    BOOST_TEST(render(n.cause).find("kernel 0 failed") != std::string::npos);
  }
  BOOST_TEST((notices.at(other.value).state == op_state::completed));
  // A dependency on the failed op is refused with its cause.
  auto late = ask<op_id>(co(), register_atom::value, spec_of(noop(), {bad}));
  BOOST_REQUIRE(!late);
  BOOST_TEST(late.error().code() == static_cast<std::uint8_t>(errc::dependency_failed));
  const auto m = metrics();
  BOOST_TEST(m.failed == 1u);
  BOOST_TEST(m.cancelled >= 1u);  // child and grandchild, unless they already ran
}

// Cost linear in edges: a graph of the same operations with 8x the dependencies takes about
// 8x as long to submit, not 64x (a search per dependency made it quadratic per operation, and
// 8 million edges kept the coordinator busy for 23 s). The bound leaves room for a loaded
// machine while still telling linear from quadratic; the best of three runs is compared.
BOOST_AUTO_TEST_CASE(graph_submission_cost_grows_linearly_with_edges) {
  constexpr std::uint32_t ops = 4000;
  auto dense = [&](std::uint32_t per_op) {
    graph_spec g;
    for (std::uint32_t i = 0; i < ops; ++i) {
      std::vector<std::uint32_t> after;
      for (std::uint32_t k = 0; k < per_op && k < i; ++k) after.push_back(i - 1 - k);
      g.add(spec_of(noop()), std::move(after));
    }
    return g;
  };
  auto best_of_three = [&](std::uint32_t per_op) {
    const graph_spec g = dense(per_op);
    auto best = std::chrono::steady_clock::duration::max();
    for (int run = 0; run < 3; ++run) {
      const auto began = std::chrono::steady_clock::now();
      auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, g);
      best = std::min(best, std::chrono::steady_clock::now() - began);
      BOOST_REQUIRE_MESSAGE(ids, (ids ? std::string{} : render(ids.error())));
    }
    return std::chrono::duration<double, std::milli>(best).count();
  };
  const double sparse_ms = best_of_three(32);  // 128k edges
  const double dense_ms = best_of_three(256);  // 1M edges: a node's default limit
  BOOST_TEST_MESSAGE("4000 ops: 128k edges " << sparse_ms << " ms, 1M edges " << dense_ms
                                             << " ms, ratio " << dense_ms / sparse_ms);
  BOOST_TEST(dense_ms / sparse_ms < 24.0);
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused_with_a_clear_error_and_nothing_registered) {
  const auto before = metrics().total;
  auto unknown = ask<op_id>(co(), register_atom::value, spec_of(noop(), {op_id{999999}}));
  BOOST_REQUIRE(!unknown);
  BOOST_TEST(unknown.error().code() == static_cast<std::uint8_t>(errc::unknown_op));
  BOOST_TEST(render(unknown.error()).find("never registered") != std::string::npos);
  auto zero = ask<op_id>(co(), register_atom::value, spec_of(noop(), {op_id{}}));
  BOOST_TEST(!zero);
  auto named = ask<op_id>(co(), register_atom::value, spec_of(work::named("no-such-op")));
  BOOST_REQUIRE(!named);
  BOOST_TEST(named.error().code() == static_cast<std::uint8_t>(errc::unknown_operation));

  graph_spec cyclic;
  auto a = cyclic.add(spec_of(noop()));
  auto b = cyclic.add(spec_of(noop()), {a});
  auto c = cyclic.add(spec_of(noop()), {b});
  cyclic.ops[a].after.push_back(c);
  auto refused = ask<std::vector<op_id>>(co(), submit_atom::value, cyclic);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.error().code() == static_cast<std::uint8_t>(errc::dependency_cycle));
  BOOST_TEST_MESSAGE(render(refused.error()));
  BOOST_TEST(render(refused.error()).find("graph op 0") != std::string::npos);

  graph_spec out_of_range;
  out_of_range.add(spec_of(noop()), {7});
  BOOST_TEST(!ask<std::vector<op_id>>(co(), submit_atom::value, out_of_range));
  graph_spec bad_external;  // a valid first op, then one with an unknown dependency
  bad_external.add(spec_of(noop()));
  bad_external.add(spec_of(noop(), {op_id{123456}}));
  auto partial = ask<std::vector<op_id>>(co(), submit_atom::value, bad_external);
  BOOST_REQUIRE(!partial);
  BOOST_TEST(render(partial.error()).find("graph op 1") != std::string::npos);
  BOOST_TEST(metrics().total == before);  // all or nothing
  auto empty = ask<std::vector<op_id>>(co(), submit_atom::value, graph_spec{});
  BOOST_TEST(!empty);
  // And the coordinator still serves.
  auto fine = add(spec_of(noop()));
  BOOST_TEST((told(fine).state == op_state::completed));
}

BOOST_AUTO_TEST_CASE(a_dependency_that_closes_a_cycle_is_refused_naming_it) {
  auto root = add(spec_of({}));  // manual, never begun: holds everything below
  auto a = add(spec_of(noop(), {root}));
  auto b = add(spec_of(noop(), {a}));
  auto c = add(spec_of(noop(), {b}));
  auto refused = ask<op_state>(co(), depend_atom::value, a, c);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.error().code() == static_cast<std::uint8_t>(errc::dependency_cycle));
  const std::string text = render(refused.error());
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.find("op " + std::to_string(a.value) + " -> op " + std::to_string(c.value)) !=
             std::string::npos);
  auto fine = ask<op_state>(co(), depend_atom::value, c, a);  // already implied: accepted
  BOOST_TEST(fine);
  for (op_id id : {root, a, b, c}) BOOST_TEST(ask<op_state>(co(), cancel_atom::value, id));
  collect({root, a, b, c});
}

BOOST_AUTO_TEST_CASE(cancelling_withdraws_what_has_not_reached_a_stream) {
  auto root = add(spec_of({}));  // manual, not begun
  auto waiting = add(spec_of(noop(), {root}));
  auto after = add(spec_of(noop(), {waiting}));
  auto cancelled = ask<op_state>(co(), cancel_atom::value, waiting);
  BOOST_REQUIRE_MESSAGE(cancelled, why(cancelled));
  BOOST_TEST((*cancelled == op_state::cancelled));
  auto notices = collect({waiting, after});
  BOOST_TEST((notices.at(waiting.value).state == op_state::cancelled));
  BOOST_TEST(notices.at(waiting.value).cause.code() == static_cast<std::uint8_t>(errc::cancelled));
  BOOST_TEST((notices.at(after.value).state == op_state::cancelled));
  // Cancelling again answers the state it ended in; an unknown id is an error.
  auto again = ask<op_state>(co(), cancel_atom::value, waiting);
  BOOST_TEST((again && *again == op_state::cancelled));
  BOOST_TEST(!ask<op_state>(co(), cancel_atom::value, op_id{424242}));
  // Work already on a stream cannot be withdrawn.
  gate g;
  auto running = add(spec_of(g.hold()));
  std::this_thread::sleep_for(20ms);
  auto refused = ask<op_state>(co(), cancel_atom::value, running);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.error().code() == static_cast<std::uint8_t>(errc::invalid_state));
  g.open();
  BOOST_TEST((told(running).state == op_state::completed));
  BOOST_TEST(ask<op_state>(co(), cancel_atom::value, root));
  told(root);
}

// Many at once (a node cancelling a departed control plane's work): a chain whose later
// link the first one's cancellation ends with it (the graph forgets it before its record
// goes), work on a stream, an unknown id, all in one message: the pending ones cancelled, the
// rest left, the coordinator still serving.
BOOST_AUTO_TEST_CASE(cancelling_many_at_once_withdraws_the_pending_and_leaves_the_rest) {
  auto root = add(spec_of({}));  // manual, not begun
  auto first = add(spec_of(noop(), {root}));
  auto second = add(spec_of(noop(), {first}));
  auto third = add(spec_of(noop(), {second}));
  gate g;
  auto running = add(spec_of(g.hold()));
  std::this_thread::sleep_for(20ms);
  caf::scoped_actor self{rt().system()};
  self->send(co(), cancel_atom::value,
             std::vector<op_id>{first, second, running, op_id{424242}, third});
  auto notices = collect({first, second, third});
  for (op_id id : {first, second, third}) {
    BOOST_TEST((notices.at(id.value).state == op_state::cancelled), id.value);
  }
  g.open();
  BOOST_TEST((told(running).state == op_state::completed));
  BOOST_TEST(ask<op_state>(co(), cancel_atom::value, root));
  told(root);
}

BOOST_AUTO_TEST_CASE(a_caller_launched_operation_holds_its_stream_from_begin_to_complete) {
  auto log = std::make_shared<work_log>(2);
  auto manual = add(spec_of({}, {}, op_priority::normal, op_workload::compute, "hand-made"));
  auto after = add(spec_of(log->record(1), {manual}));
  auto lease = ask<op_lease>(co(), begin_atom::value, manual);
  BOOST_REQUIRE_MESSAGE(lease, why(lease));
  BOOST_TEST(lease->op == manual);
  BOOST_TEST(!ask<op_lease>(co(), begin_atom::value, manual));  // once
  auto info = ask<op_info>(co(), describe_atom::value, manual);
  BOOST_TEST((info && info->state == op_state::running && info->manual));
  // The caller enqueues its own work on the stream it was handed.
  auto enqueued = rt().device().enqueue(rt().backend_stream(lease->stream), log->launch(0, 5ms));
  BOOST_REQUIRE(enqueued.ok());
  auto done = ask<ticket>(co(), enqueued_atom::value, manual);
  BOOST_REQUIRE_MESSAGE(done, why(done));
  BOOST_TEST(done->stream == lease->stream);
  auto notices = collect({manual, after});
  BOOST_TEST((notices.at(manual.value).state == op_state::completed));
  BOOST_TEST((notices.at(after.value).state == op_state::completed));
  BOOST_TEST(log->started(1) >= log->ended(0));
  BOOST_TEST(!ask<ticket>(co(), enqueued_atom::value, manual));  // ended: nothing to complete
  auto automatic = add(spec_of(noop()));
  BOOST_TEST(!ask<op_lease>(co(), begin_atom::value, automatic));  // carries its own work
  told(automatic);
}

BOOST_AUTO_TEST_CASE(begin_is_answered_once_the_dependencies_are_submitted) {
  auto first = add(spec_of({}));
  auto second = add(spec_of({}, {first}));
  auto second_lease = ask_later<op_lease>(begin_atom::value, second);
  std::this_thread::sleep_for(20ms);  // the begin is waiting inside the coordinator
  auto lease = ask<op_lease>(co(), begin_atom::value, first);
  BOOST_REQUIRE_MESSAGE(lease, why(lease));
  auto failed = ask<op_state>(co(), enqueued_atom::value, first,
                              make_error(errc::op_failed, "the caller's launch failed"));
  BOOST_TEST((failed && *failed == op_state::failed));
  auto notices = collect({first, second});
  BOOST_TEST((notices.at(second.value).state == op_state::cancelled));
  auto answer = second_lease.get();  // the waiting begin is answered with the cancellation
  BOOST_REQUIRE(!answer);
  BOOST_TEST(answer.error().code() == static_cast<std::uint8_t>(errc::dependency_failed));
}

// run: registered like submit, answered once all of it has ended, each end in the graph's
// order; refused as submit refuses, with nothing registered; a single operation alike.
BOOST_AUTO_TEST_CASE(a_run_is_answered_once_everything_in_it_has_ended) {
  auto log = std::make_shared<work_log>(3);
  graph_spec g;
  const auto first = g.add(spec_of(log->record(0, 200us)));
  const auto bad = g.add(spec_of(log->record(1, 0us, true)), {first});
  g.add(spec_of(log->record(2)), {bad});
  auto ends = ask<std::vector<op_notice>>(co(), run_atom::value, std::move(g));
  BOOST_REQUIRE_MESSAGE(ends, why(ends));
  BOOST_REQUIRE_EQUAL(ends->size(), 3u);
  BOOST_TEST(((*ends)[0].state == op_state::completed));
  BOOST_TEST(((*ends)[1].state == op_state::failed));
  BOOST_TEST(render((*ends)[1].cause).find("kernel 1 failed") != std::string::npos);
  BOOST_TEST(((*ends)[2].state == op_state::cancelled));
  BOOST_TEST(log->started(1) >= log->ended(0));
  std::set<std::uint64_t> ids;
  for (const auto& n : *ends) ids.insert(n.id.value);
  BOOST_TEST(ids.size() == 3u);  // three operations, each told once
  BOOST_TEST(silent_for(50ms));  // a run has no listener: nothing else is sent

  auto one = ask<op_notice>(co(), run_atom::value, spec_of(noop()));
  BOOST_REQUIRE_MESSAGE(one, why(one));
  BOOST_TEST((one->state == op_state::completed));
  BOOST_TEST(!one->id.empty());

  const auto live_before = metrics().live;
  graph_spec cyclic;
  cyclic.add(spec_of(noop()), {1});
  cyclic.add(spec_of(noop()), {0});
  auto refused = ask<std::vector<op_notice>>(co(), run_atom::value, std::move(cyclic));
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.error().code() == static_cast<std::uint8_t>(errc::dependency_cycle));
  auto failed_dep = ask<op_notice>(co(), run_atom::value, spec_of(noop(), {(*ends)[1].id}));
  BOOST_REQUIRE(!failed_dep);
  BOOST_TEST(failed_dep.error().code() == static_cast<std::uint8_t>(errc::dependency_failed));
  BOOST_TEST(metrics().live == live_before);  // nothing of them was registered
}

BOOST_AUTO_TEST_CASE(subscribers_hear_each_end_exactly_once) {
  auto other = caf::actor_cast<op_listener>(self());
  auto quiet = add(spec_of(noop()), false);  // nobody listens to it
  BOOST_TEST(silent_for(50ms));
  auto late = ask<op_state>(co(), subscribe_atom::value, quiet, me());
  BOOST_REQUIRE_MESSAGE(late, why(late));
  BOOST_TEST((*late == op_state::completed));
  BOOST_TEST((told(quiet).state == op_state::completed));  // told at once, once
  // Subscribed to all as well as to one op: still told once.
  self()->send(co(), subscribe_atom::value, other);
  auto both = add(spec_of(noop()));
  told(both);
  BOOST_TEST(silent_for(100ms));
  self()->send(co(), unsubscribe_atom::value, other);
  auto after = add(spec_of(noop()), false);
  BOOST_TEST(silent_for(100ms));
  (void)after;
  BOOST_TEST(!ask<op_state>(co(), subscribe_atom::value, op_id{999999}, me()));
}

BOOST_AUTO_TEST_CASE(deadlock_detection_names_what_holds_operations_up) {
  auto root = add(spec_of({}, {}, op_priority::normal, op_workload::compute, "never begun"));
  auto a = add(spec_of(noop(), {root}));
  auto b = add(spec_of(noop(), {a}));
  auto none = ask<deadlock_report>(co(), deadlocks_atom::value, caf::timespan{1h});
  BOOST_REQUIRE(none);
  BOOST_TEST(none->empty());
  std::this_thread::sleep_for(5ms);
  auto report = ask<deadlock_report>(co(), deadlocks_atom::value, caf::timespan{1ms});
  BOOST_REQUIRE_MESSAGE(report, why(report));
  BOOST_TEST(report->cycles.empty());
  BOOST_REQUIRE_EQUAL(report->stalls.size(), 3u);
  for (const auto& stall : report->stalls) {
    BOOST_TEST_MESSAGE(stall.reason);
    if (stall.id != root) {
      BOOST_TEST(stall.waiting_on == root);
      BOOST_TEST(stall.reason.find("has not begun") != std::string::npos);
    } else {
      BOOST_TEST(stall.waiting_on == root);  // its own root, never "op 0"
      BOOST_TEST(stall.chain.empty());
    }
  }
  // The links, in order: b waits on a, which waits on the root.
  BOOST_TEST((report->stalls.at(2).chain == std::vector<op_id>{a, root}));
  BOOST_TEST((report->stalls.at(1).chain == std::vector<op_id>{root}));
  BOOST_TEST(metrics().deadlock_detections == 1u);
  for (op_id id : {root, a, b}) (void)ask<op_state>(co(), cancel_atom::value, id);
  collect({root, a, b});
}

BOOST_AUTO_TEST_CASE(an_operation_waiting_on_a_hung_one_on_a_stream_names_it) {
  // The hung operation is on a stream (its work never ends); what waits on it, directly or
  // through another, is pending or already on a stream waiting on the device: each names it.
  gate g;
  auto hung = add(spec_of(g.hold()));
  auto direct = add(spec_of(noop(), {hung}));
  auto through = add(spec_of(noop(), {direct}));
  std::this_thread::sleep_for(20ms);
  auto report = ask<deadlock_report>(co(), deadlocks_atom::value, caf::timespan{1ms});
  BOOST_REQUIRE_MESSAGE(report, why(report));
  BOOST_REQUIRE_EQUAL(report->stalls.size(), 3u);
  const auto& h = report->stalls.at(0);
  BOOST_TEST(h.id == hung);
  BOOST_TEST(h.reason.find("is on stream") != std::string::npos, h.reason);
  const auto& d = report->stalls.at(1);
  BOOST_TEST(d.waiting_on == hung);
  BOOST_TEST((d.chain == std::vector<op_id>{hung}));
  BOOST_TEST(d.reason.find(to_string(hung) + ", which is on stream") != std::string::npos,
             d.reason);
  const auto& t = report->stalls.at(2);
  BOOST_TEST(t.waiting_on == hung);
  BOOST_TEST((t.chain == std::vector<op_id>{direct, hung}));
  g.open();
  collect({hung, direct, through});
}

BOOST_AUTO_TEST_CASE(wait_for_any_ready_answers_when_a_stream_goes_idle_or_times_out) {
  auto idle = ask<bool>(co(), ready_streams_atom::value);
  BOOST_TEST((idle && *idle));
  auto now = ask<stream_id>(co(), wait_ready_atom::value, caf::timespan{1s});
  BOOST_TEST(now);
  std::vector<gate> gates(4);
  std::vector<op_id> held;
  for (auto& g : gates) held.push_back(add(spec_of(g.hold())));
  std::this_thread::sleep_for(20ms);
  auto busy = ask<bool>(co(), ready_streams_atom::value);
  BOOST_TEST((busy && !*busy));
  auto timed_out = ask<stream_id>(co(), wait_ready_atom::value, caf::timespan{30ms});
  BOOST_REQUIRE(!timed_out);
  BOOST_TEST(timed_out.error().code() == static_cast<std::uint8_t>(errc::timeout));
  BOOST_TEST(render(timed_out.error()).find("stream 3: 1 in flight") != std::string::npos);
  auto woke = ask_later<stream_id>(wait_ready_atom::value, caf::timespan{5s});
  std::this_thread::sleep_for(20ms);
  gates[2].open();
  auto freed = woke.get();
  BOOST_REQUIRE_MESSAGE(freed, why(freed));
  BOOST_TEST(freed->value == told(held[2]).stream.value);
  for (std::size_t i : {0, 1, 3}) gates[i].open();
  collect(held);
}

BOOST_AUTO_TEST_CASE(work_after_shutdown_is_refused_clearly) {
  auto root = add(spec_of({}));
  self()->send(co(), shutdown_atom::value);
  auto refused = ask<op_id>(co(), register_atom::value, spec_of(noop()));
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.error().code() == static_cast<std::uint8_t>(errc::shutting_down));
  BOOST_TEST((told(root).state == op_state::failed));  // every op still ends once
}

// A graph need not list its operations in dependency order: here each comes after the one
// listed after it. Ids are issued in an order that works (each after what it comes after), the
// answer's ids are still by graph index, and the work runs in dependency order.
BOOST_AUTO_TEST_CASE(a_graph_listed_out_of_dependency_order_runs_in_dependency_order) {
  constexpr std::size_t n = 6;
  auto log = std::make_shared<work_log>(n);
  graph_spec g;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::uint32_t> after;
    if (i + 1 < n) after.push_back(static_cast<std::uint32_t>(i + 1));
    g.add(spec_of(log->record(i, 50us)), std::move(after));
  }
  auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
  BOOST_REQUIRE_MESSAGE(ids, why(ids));
  BOOST_REQUIRE_EQUAL(ids->size(), n);
  auto notices = collect(*ids);
  for (std::size_t i = 0; i + 1 < n; ++i) {
    BOOST_TEST((*ids)[i].value > (*ids)[i + 1].value);  // issued after what it comes after
    BOOST_TEST(log->started(i) >= log->ended(i + 1));
    BOOST_TEST((notices.at((*ids)[i].value).state == op_state::completed));
  }
  auto info = ask<op_info>(co(), describe_atom::value, (*ids)[0]);
  BOOST_REQUIRE_MESSAGE(info, why(info));
  BOOST_REQUIRE_EQUAL(info->deps.size(), 1u);
  BOOST_TEST(info->deps[0].value == (*ids)[1].value);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(contention, one_stream)

BOOST_AUTO_TEST_CASE(ready_operations_go_out_in_priority_order) {
  // One stream, held by a caller-launched op: everything registered meanwhile is ready and
  // waits; on complete they go out by priority, then in the order they became ready.
  auto holder = add(spec_of({}));
  auto lease = ask<op_lease>(co(), begin_atom::value, holder);
  BOOST_REQUIRE_MESSAGE(lease, why(lease));
  const std::vector<op_priority> order{op_priority::cleanup,  op_priority::normal,
                                       op_priority::critical, op_priority::low,
                                       op_priority::high,     op_priority::normal};
  auto log = std::make_shared<work_log>(order.size());
  std::vector<op_id> ids;
  for (std::size_t i = 0; i < order.size(); ++i) {
    ids.push_back(add(spec_of(log->record(i), {}, order[i])));
  }
  BOOST_TEST(silent_for(20ms));  // nothing ran: the stream is held
  BOOST_REQUIRE(ask<ticket>(co(), enqueued_atom::value, holder));
  ids.push_back(holder);
  collect(ids);
  // critical(2), high(4), normal(1), normal(5), low(3), cleanup(0)
  const std::vector<std::size_t> expected{2, 4, 1, 5, 3, 0};
  for (std::size_t k = 0; k < expected.size(); ++k) {
    BOOST_TEST(log->rank(expected[k]) == static_cast<int>(k));
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(narrow_stream, one_narrow_stream)

// The stream actor answers a pass once all of it is on the stream; with its cap taken by work
// of someone else's, the first operations of the pass may be reached, and reported, before
// the last is issued and the tickets come back. Their failures are theirs all the same (the
// report came before the coordinator knew their points: an op that failed was told
// completed, found by the random DAG test under ASan).
BOOST_AUTO_TEST_CASE(an_operation_reached_before_its_ticket_came_back_keeps_its_failure) {
  auto log = std::make_shared<work_log>(3);
  gate g;
  auto held = ask<ticket>(rt().stream(0), submit_atom::value, g.hold());
  BOOST_REQUIRE_MESSAGE(held, why(held));
  graph_spec spec;
  spec.add(spec_of(log->record(0, 0us, true)));  // on the stream beside the gate's work
  spec.add(spec_of(log->record(1)));             // over the cap: issued once the first ended
  spec.add(spec_of(log->record(2)));
  auto ids = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(spec), me());
  BOOST_REQUIRE_MESSAGE(ids, why(ids));
  BOOST_TEST(silent_for(20ms));  // the gate holds the stream
  g.open();
  auto notices = collect(*ids);
  const auto& bad = notices.at((*ids)[0].value);
  BOOST_TEST((bad.state == op_state::failed), render(bad.cause));
  BOOST_TEST(render(bad.cause).find("kernel 0 failed") != std::string::npos);
  for (std::size_t i = 1; i < 3; ++i) {
    BOOST_TEST((notices.at((*ids)[i].value).state == op_state::completed));
  }
  BOOST_TEST(log->started(1) >= log->ended(0));  // one stream: in order
}

BOOST_AUTO_TEST_SUITE_END()

// describe answers for the newest `ended-kept` ended operations, the oldest forgotten first,
// however many times the ring of them has gone round.
struct three_kept : coordinator_fixture {
  three_kept() : coordinator_fixture({"--cudactor.coordinator.ended-kept=3"}) {}
};

BOOST_FIXTURE_TEST_SUITE(coordinator_ended_kept, three_kept)

BOOST_AUTO_TEST_CASE(describe_knows_the_newest_ended_operations_only) {
  constexpr std::size_t n = 8;
  std::vector<op_id> ids;
  for (std::size_t i = 0; i < n; ++i) {
    ids.push_back(add(spec_of(noop(), {}, op_priority::normal, op_workload::compute,
                              "op number " + std::to_string(i))));
    (void)told(ids.back());  // ended in this order
  }
  for (std::size_t i = 0; i < n; ++i) {
    auto info = ask<op_info>(co(), describe_atom::value, ids[i]);
    if (i + 3 < n) {
      BOOST_TEST(!info, "op " << i << " is still described");
      if (!info) BOOST_TEST(info.error().code() == static_cast<std::uint8_t>(errc::unknown_op));
    } else {
      BOOST_REQUIRE_MESSAGE(info, why(info));
      BOOST_TEST(info->id.value == ids[i].value);
      BOOST_TEST(info->description == "op number " + std::to_string(i));
      BOOST_TEST((info->state == op_state::completed));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// Per-operation state comes from chunks kept across graphs; once the coordinator has held
// nothing for cudactor.coordinator.keep-memory-for the kept ones are freed, and a graph after
// that grows them again. With 0 they stay (up to their bound).
namespace {

std::uint64_t state_chunks_after_graph(coordinator_fixture& f, std::size_t n) {
  graph_spec g;
  for (std::size_t i = 0; i < n; ++i) g.add(spec_of(noop()));
  auto ends = f.ask<std::vector<op_notice>>(f.co(), run_atom::value, std::move(g));
  BOOST_REQUIRE_MESSAGE(ends, f.why(ends));
  BOOST_REQUIRE(ends->size() == n);
  auto m = f.ask<coordinator_metrics>(f.co(), metrics_atom::value);
  BOOST_REQUIRE(m);
  BOOST_TEST(m->tracked == 0u);
  return m->state_chunks;
}

std::uint64_t state_chunks_within(coordinator_fixture& f, std::chrono::milliseconds limit,
                                   std::uint64_t at_most) {
  const auto until = std::chrono::steady_clock::now() + limit;
  std::uint64_t chunks = 0;
  do {
    auto m = f.ask<coordinator_metrics>(f.co(), metrics_atom::value);
    BOOST_REQUIRE(m);
    chunks = m->state_chunks;
    if (chunks <= at_most) break;
    std::this_thread::sleep_for(10ms);
  } while (std::chrono::steady_clock::now() < until);
  return chunks;
}

struct sheds_soon : coordinator_fixture {
  sheds_soon() : coordinator_fixture({"--cudactor.coordinator.keep-memory-for=100ms"}) {}
};

struct keeps_memory : coordinator_fixture {
  keeps_memory() : coordinator_fixture({"--cudactor.coordinator.keep-memory-for=0s"}) {}
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(an_idle_coordinator_gives_back_the_memory_kept_for_the_next_graph,
                        sheds_soon) {
  const auto kept = state_chunks_after_graph(*this, 20'000);
  BOOST_TEST(kept > 100u);  // 20k records and nodes, about 100 per chunk or fewer
  // Two chunks at most stay: the one each table is filling.
  BOOST_TEST(state_chunks_within(*this, 5s, 2) <= 2u);
  BOOST_TEST(state_chunks_after_graph(*this, 20'000) > 100u);
  BOOST_TEST(state_chunks_within(*this, 5s, 2) <= 2u);
}

BOOST_FIXTURE_TEST_CASE(with_keep_memory_for_zero_the_chunks_stay, keeps_memory) {
  const auto kept = state_chunks_after_graph(*this, 20'000);
  BOOST_TEST(kept > 100u);
  std::this_thread::sleep_for(300ms);
  BOOST_TEST(state_chunks_within(*this, 0ms, 2) == kept);
}
