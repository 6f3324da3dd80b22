#define BOOST_TEST_MODULE message_types
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <vector>

#include "cudactor/messaging/barrier_protocol.hpp"
#include "cudactor/messaging/coordinator_protocol.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/message_types.hpp"
#include "cudactor/messaging/stream_protocol.hpp"

using namespace cudactor;

namespace {

struct system_fixture {
  system_fixture() : sys(init(cfg)) {}
  static caf::actor_system_config& init(caf::actor_system_config& c) {
    add_message_types(c);
    return c;
  }
  caf::actor_system_config cfg;
  caf::actor_system sys;

  // Serializes `x` inside a message (as the network layer does) and reads it back.
  template <class T>
  T round_trip(const T& x) {
    std::vector<char> buffer;
    caf::binary_serializer sink{sys, buffer};
    auto msg = caf::make_message(x);
    auto err = caf::inspect(sink, msg);
    BOOST_REQUIRE_MESSAGE(!err, sys.render(err));
    caf::message back;
    caf::binary_deserializer source{sys, buffer};
    err = caf::inspect(source, back);
    BOOST_REQUIRE_MESSAGE(!err, sys.render(err));
    BOOST_REQUIRE(back.match_elements<T>());
    return back.get_as<T>(0);
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(message_types, system_fixture)

BOOST_AUTO_TEST_CASE(the_coordinators_values_survive_serialization) {
  graph_spec g;
  op_spec first;
  first.type = op_type::all_reduce;
  first.priority = op_priority::critical;
  first.deps = {op_id{4}, op_id{5}};
  first.description = "reduce";
  first.workload = op_workload::coordination;
  first.body = work::named("saxpy", 2.0f, std::uint64_t{128});
  first.placement.pinned = true;
  first.placement.stream = stream_id{2};
  first.placement.strict = true;
  first.placement.own_strategy = true;
  first.placement.strategy = pool_strategy::workload;
  g.add(first);
  g.add(op_spec{}, {0});  // manual: no work
  op_spec barrier;
  barrier.type = op_type::barrier;
  barrier.barrier.streams = {stream_id{3}, stream_id{1}};
  barrier.barrier.mode = barrier_mode::host;
  g.add(barrier, {1});
  auto g2 = round_trip(g);
  BOOST_REQUIRE_EQUAL(g2.ops.size(), 3u);
  const op_spec& barrier_back = g2.ops[2].spec;
  BOOST_TEST(barrier_back.is_barrier());
  BOOST_TEST(!barrier_back.is_manual());
  BOOST_TEST((barrier_back.barrier.streams == std::vector<stream_id>{stream_id{3}, stream_id{1}}));
  BOOST_TEST((barrier_back.barrier.mode == barrier_mode::host));
  const op_spec& back = g2.ops[0].spec;
  BOOST_TEST((back.type == op_type::all_reduce && back.priority == op_priority::critical));
  BOOST_TEST((back.deps == std::vector<op_id>{op_id{4}, op_id{5}}));
  BOOST_TEST(back.description == "reduce");
  BOOST_TEST((back.placement.pinned && back.placement.stream.value == 2u &&
              back.placement.strict && back.placement.own_strategy &&
              back.placement.strategy == pool_strategy::workload));
  BOOST_TEST((back.workload == op_workload::coordination));
  BOOST_TEST(back.body.name() == "saxpy");
  const bool typed_args = back.body.args().match_elements<float, std::uint64_t>();
  BOOST_TEST(typed_args);
  BOOST_TEST(g2.ops[1].spec.body.empty());
  BOOST_TEST((g2.ops[1].after == std::vector<std::uint32_t>{0}));

  op_notice n;
  n.id = op_id{7};
  n.state = op_state::cancelled;
  n.cause = make_error(errc::dependency_failed, "op 7 cancelled: op 3 failed");
  n.stream = stream_id{2};
  n.point = 11;
  n.registered_ns = 1;
  n.dispatched_ns = 2;
  n.ended_ns = 3;
  n.arrivals.push_back({1, "stream-1", 9, 40, stream_id{1}});
  auto notices = round_trip(std::vector<op_notice>{n});
  BOOST_REQUIRE_EQUAL(notices.size(), 1u);
  BOOST_TEST((notices[0].id == op_id{7} && notices[0].state == op_state::cancelled));
  BOOST_TEST((notices[0].cause == n.cause));
  BOOST_TEST((notices[0].point == 11 && notices[0].ended_ns == 3));
  BOOST_REQUIRE_EQUAL(notices[0].arrivals.size(), 1u);
  BOOST_TEST((notices[0].arrivals[0].point == 9 && notices[0].arrivals[0].arrived_ns == 40));
  BOOST_TEST(notices[0].arrivals[0].stream.value == 1u);

  deadlock_report r;
  r.cycles.push_back({op_id{1}, op_id{2}, op_id{1}});
  r.stalls.push_back({op_id{3}, op_state::pending, 5, op_id{1}, {op_id{2}, op_id{1}}, "waiting"});
  auto r2 = round_trip(r);
  BOOST_TEST(r2.cycles.size() == 1u);
  BOOST_TEST((r2.stalls.at(0).waiting_on == op_id{1}));
  BOOST_TEST((r2.stalls.at(0).chain == std::vector<op_id>{op_id{2}, op_id{1}}));
  BOOST_TEST(r2.stalls.at(0).reason == "waiting");

  coordinator_metrics m;
  m.total = 10;
  m.redundant_waits_skipped = 4;
  auto m2 = round_trip(m);
  BOOST_TEST((m2.total == 10u && m2.redundant_waits_skipped == 4u));
  op_lease l{op_id{8}, stream_id{1}};
  BOOST_TEST(round_trip(l).op.value == 8u);
  BOOST_TEST(round_trip(l).stream.value == 1u);
}

BOOST_AUTO_TEST_CASE(a_barriers_values_survive_serialization) {
  barrier_crossing c;
  c.generation = 7;
  c.mode = barrier_mode::device;
  c.duration = caf::timespan{1234};
  c.began_ns = 99;
  c.members.push_back({2, "stream-2", 41, 1000, stream_id{5}});
  c.device_waits = 6;
  auto c2 = round_trip(c);
  BOOST_TEST(c2.generation == 7u);
  BOOST_TEST((c2.mode == barrier_mode::device));
  BOOST_TEST(c2.duration.count() == 1234);
  BOOST_TEST(c2.began_ns == 99);
  BOOST_REQUIRE(c2.members.size() == 1u);
  BOOST_TEST(c2.members[0].member == 2u);
  BOOST_TEST(c2.members[0].name == "stream-2");
  BOOST_TEST(c2.members[0].point == 41u);
  BOOST_TEST(c2.members[0].arrived_ns == 1000);
  BOOST_TEST(c2.members[0].stream.value == 5u);
  BOOST_TEST(c2.device_waits == 6u);

  barrier_status s;
  s.name = "step";
  s.members = {"a", "b"};
  s.timeout = caf::timespan{5};
  s.generations = 3;
  s.timed_out = 1;
  s.pending = 2;
  auto s2 = round_trip(s);
  BOOST_TEST(s2.name == "step");
  BOOST_TEST(s2.members.size() == 2u);
  BOOST_TEST(s2.timeout.count() == 5);
  BOOST_TEST((s2.generations == 3u && s2.timed_out == 1u && s2.pending == 2u));
  BOOST_TEST(to_string(barrier_mode::host) == "host");
}

BOOST_AUTO_TEST_CASE(a_local_closure_in_an_op_spec_is_refused_not_sent_empty) {
  op_spec local;
  local.body = work::local([](const gpu::launch_context&) { return gpu::status{}; });
  std::vector<char> buffer;
  caf::binary_serializer sink{sys, buffer};
  auto msg = caf::make_message(local);
  auto err = caf::inspect(sink, msg);
  BOOST_TEST(err.code() == static_cast<std::uint8_t>(errc::local_only));
}

BOOST_AUTO_TEST_CASE(every_value_type_survives_serialization) {
  const ticket t{stream_id{3}, 42};
  BOOST_TEST((round_trip(t) == t));
  BOOST_TEST(round_trip(stream_id{9}).value == 9u);

  completion c{t, 1, 2, 3, 4};
  auto c2 = round_trip(c);
  BOOST_TEST((c2.op == t));
  BOOST_TEST(c2.issued_ns == 1);
  BOOST_TEST(c2.detected_ns == 2);
  BOOST_TEST(c2.started_ns == 3);
  BOOST_TEST(c2.ended_ns == 4);

  completion_batch b;
  b.stream = stream_id{1};
  b.reached = 77;
  b.failures.push_back({70, make_error(errc::op_failed, "kernel x failed")});
  b.detected_ns = 5;
  b.timed.push_back(c);
  b.ops.push_back({cudactor::op_id{9}, 76});
  auto b2 = round_trip(b);
  BOOST_TEST(b2.reached == 77u);
  BOOST_REQUIRE_EQUAL(b2.ops.size(), 1u);
  BOOST_TEST(b2.ops[0].op.value == 9u);
  BOOST_TEST(b2.ops[0].point == 76u);
  BOOST_REQUIRE_EQUAL(b2.failures.size(), 1u);
  BOOST_TEST(b2.failures[0].point == 70u);
  BOOST_TEST((b2.failures[0].error == errc::op_failed));
  BOOST_TEST(error_context(b2.failures[0].error) == "kernel x failed");
  BOOST_TEST(b2.timed.size() == 1u);

  event_lease e{5, 7, gpu::event_kind::timing, stream_id{2}, 11};
  auto e2 = round_trip(e);
  BOOST_TEST(e2.slot == 5u);
  BOOST_TEST(e2.generation == 7u);
  BOOST_TEST((e2.kind == gpu::event_kind::timing));
  BOOST_TEST(e2.point == 11u);

  buffer_ref buf{stream_id{1}, 3, 0x1000, 64};
  auto buf2 = round_trip(buf);
  BOOST_TEST(buf2.address == 0x1000u);
  BOOST_TEST(buf2.size == 64u);

  stream_status s;
  s.name = "copy-0";
  s.priority = gpu::stream_priority::high;
  s.accepted = 10;
  s.completed = 8;
  s.timing = true;
  auto s2 = round_trip(s);
  BOOST_TEST(s2.name == "copy-0");
  BOOST_TEST((s2.priority == gpu::stream_priority::high));
  BOOST_TEST(s2.completed == 8u);
  BOOST_TEST(s2.timing);

  pool_utilization u{1, 2, 3, 4};
  auto u2 = round_trip(u);
  BOOST_TEST(u2.available == 1u);
  BOOST_TEST(u2.timing_available == 2u);
  BOOST_TEST(u2.in_use == 3u);
  BOOST_TEST(u2.capacity == 4u);
}

BOOST_AUTO_TEST_CASE(a_named_operation_crosses_with_its_arguments) {
  auto w = round_trip(work::named("saxpy", 2.5f, std::uint64_t{1024}));
  BOOST_TEST(w.name() == "saxpy");
  BOOST_TEST(!w.is_local());
  BOOST_REQUIRE((w.args().match_elements<float, std::uint64_t>()));
  BOOST_TEST(w.args().get_as<float>(0) == 2.5f);
  BOOST_TEST(w.args().get_as<std::uint64_t>(1) == 1024u);
}

BOOST_AUTO_TEST_CASE(a_local_closure_refuses_to_be_serialized) {
  std::vector<char> buffer;
  caf::binary_serializer sink{sys, buffer};
  auto msg =
      caf::make_message(work::local([](const gpu::launch_context&) { return gpu::status{}; }));
  auto err = caf::inspect(sink, msg);
  BOOST_REQUIRE(err);
  BOOST_TEST((err == errc::local_only));
  BOOST_TEST(sys.render(err).find("local-only") != std::string::npos);

  std::vector<char> other;
  caf::binary_serializer sink2{sys, other};
  auto cb = caf::make_message(stream_callback{[](const caf::error&) {}});
  BOOST_TEST((caf::inspect(sink2, cb) == errc::local_only));
}

BOOST_AUTO_TEST_CASE(check_sendable_names_the_problem_before_a_send) {
  auto local = work::local([](const gpu::launch_context&) { return gpu::status{}; });
  const caf::node_id here = *caf::make_node_id(1, "0123456789abcdef0123456789abcdef01234567");
  const caf::node_id there = *caf::make_node_id(2, "0123456789abcdef0123456789abcdef01234567");
  BOOST_TEST(!check_sendable(local, here, here));
  BOOST_TEST(!check_sendable(work::named("x"), here, there));
  BOOST_TEST((check_sendable(local, here, there) == errc::local_only));
}

BOOST_AUTO_TEST_SUITE_END()
