#define BOOST_TEST_MODULE input_check
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <string>

#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

using namespace cudactor;
using namespace std::chrono_literals;

namespace {

// What a peer may have sent: enums carry any byte, as CAF 0.17 deserializes them.
template <class E>
E raw(std::uint8_t value) {
  return static_cast<E>(value);
}

op_spec named_op(std::string name = "noop") {
  op_spec op;
  op.body = work::named(std::move(name));
  return op;
}

bool says(const caf::error& err, const std::string& part) {
  const std::string text = error_context(err);
  BOOST_TEST_MESSAGE(text);
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_valid_operation_and_graph_pass) {
  const input_limits limits;
  BOOST_TEST(!check_input(named_op(), limits));
  graph_spec g;
  const auto a = g.add(named_op());
  g.add(named_op(), {a});
  BOOST_TEST(!check_input(g, limits));
  const barrier_call call{"job", 1, 100ms, {}};
  BOOST_TEST(!check_input(call, limits));
}

BOOST_AUTO_TEST_CASE(every_enum_field_is_checked_against_its_range) {
  const input_limits limits;
  for (int field = 0; field < 8; ++field) {
    for (unsigned value : {12u, 13u, 200u, 255u}) {
      op_spec op = named_op();
      if (field == 0) op.type = raw<op_type>(static_cast<std::uint8_t>(value));
      if (field == 1) op.priority = raw<op_priority>(static_cast<std::uint8_t>(value));
      if (field == 2) op.workload = raw<op_workload>(static_cast<std::uint8_t>(value));
      if (field == 3) op.barrier.mode = raw<barrier_mode>(static_cast<std::uint8_t>(value));
      if (field == 4) {
        op.uses.push_back(buffer_use::read(buffer_id{1, 0, 1}));
        op.uses.back().access = raw<buffer_access>(static_cast<std::uint8_t>(value));
      }
      const auto v = static_cast<std::uint8_t>(value);
      if (field == 5) op.collective.kind = raw<gpu::collective_kind>(v);
      if (field == 6) op.collective.op = raw<gpu::reduce_op>(v);
      if (field == 7) op.collective.type = raw<gpu::element_type>(v);
      const char* names[] = {"op_",          "op_",           "op_",
                             "barrier_mode", "buffer_access", "collective_kind",
                             "reduce_op",    "element_type"};
      const auto err = check_input(op, limits);
      BOOST_TEST((err == errc::invalid_argument));
      BOOST_TEST(says(err, std::string{"is not a valid "} + names[field]));
      graph_spec g;
      g.add(op);
      BOOST_TEST(says(check_input(g, limits), "graph op 0"));
    }
  }
  // The last value of each passes (a barrier carries no work).
  op_spec edge;
  edge.type = op_type::barrier;
  edge.priority = op_priority::cleanup;
  edge.workload = op_workload::coordination;
  edge.barrier.mode = barrier_mode::device;
  BOOST_TEST(!check_input(edge, limits));
}

BOOST_AUTO_TEST_CASE(buffer_uses_say_how_they_access_and_are_bounded) {
  input_limits limits;
  limits.max_uses = 2;
  op_spec op = named_op();
  op.uses.push_back(buffer_use::read(buffer_id{1, 0, 1}, 0, 8));
  op.uses.push_back(buffer_use::write(buffer_id{1, 1, 1}));
  BOOST_TEST(!check_input(op, limits));
  op.uses.push_back(buffer_use::read_write(buffer_id{1, 2, 1}));
  BOOST_TEST(says(check_input(op, limits), "limit max-uses"));
  op.uses.pop_back();
  op.uses[1].access = buffer_access::none;
  BOOST_TEST(says(check_input(op, limits), "declares no access"));
  op_spec barrier;
  barrier.type = op_type::barrier;
  barrier.uses.push_back(buffer_use::read(buffer_id{1, 0, 1}));
  BOOST_TEST(says(check_input(barrier, limits), "declares no buffer uses"));
  op_spec release = named_op();
  release.type = op_type::release;
  BOOST_TEST(says(check_input(release, limits), "release_atom"));
}

BOOST_AUTO_TEST_CASE(only_a_barrier_names_streams_and_a_barrier_carries_no_work) {
  const input_limits limits;
  op_spec barrier;
  barrier.type = op_type::barrier;
  barrier.barrier.streams = {stream_id{0}, stream_id{2}};
  barrier.barrier.mode = barrier_mode::host;
  BOOST_TEST(!check_input(barrier, limits));
  barrier.body = work::named("noop");
  BOOST_TEST(says(check_input(barrier, limits), "is a barrier: it carries no work"));
  op_spec kernel = named_op();
  kernel.barrier.streams = {stream_id{1}};
  BOOST_TEST(says(check_input(kernel, limits), "not a barrier"));
  kernel.barrier.streams.clear();
  kernel.barrier.mode = barrier_mode::host;
  graph_spec g;
  g.add(kernel);
  BOOST_TEST(says(check_input(g, limits), "graph op 0 is a kernel, not a barrier"));
  barrier.body = work{};
  barrier.placement.pinned = true;
  BOOST_TEST(says(check_input(barrier, limits), "takes no placement"));
}

BOOST_AUTO_TEST_CASE(a_placement_strategy_and_bare_enums_are_checked_for_range) {
  op_spec op = named_op();
  op.placement.own_strategy = true;
  op.placement.strategy = pool_strategy::adaptive;
  BOOST_TEST(!check_input(op, input_limits{}));
  op.placement.strategy = static_cast<pool_strategy>(5);
  BOOST_TEST(says(check_input(op, input_limits{}), "5 is not a valid pool_strategy (0 to 4)"));
  BOOST_TEST(!check_input(op_priority::cleanup));
  BOOST_TEST(says(check_input(static_cast<op_priority>(5)), "op_priority"));
  BOOST_TEST(says(check_input(static_cast<op_workload>(4)), "op_workload"));
}

BOOST_AUTO_TEST_CASE(a_graph_is_bounded_in_operations_edges_and_bytes) {
  input_limits limits;
  limits.max_graph_ops = 10;
  limits.max_graph_edges = 20;
  limits.max_graph_bytes = 1000;
  graph_spec empty;
  BOOST_TEST(says(check_input(empty, limits), "max-graph-ops"));
  graph_spec big;
  for (int i = 0; i < 11; ++i) big.add(named_op());
  BOOST_TEST(says(check_input(big, limits), "max-graph-ops"));
  graph_spec dense;
  for (std::uint32_t i = 0; i < 10; ++i) {
    std::vector<std::uint32_t> after;
    for (std::uint32_t j = 0; j < i; ++j) after.push_back(j);
    dense.add(named_op(), after);  // 45 edges
  }
  BOOST_TEST(says(check_input(dense, limits), "max-graph-edges"));
  graph_spec heavy;
  for (int i = 0; i < 5; ++i) {
    op_spec op = named_op();
    op.description = std::string(250, 'x');
    heavy.add(op);
  }
  BOOST_TEST(says(check_input(heavy, limits), "max-graph-bytes"));
  graph_spec beyond;
  beyond.add(named_op(), {7});
  BOOST_TEST(says(check_input(beyond, limits), "beyond the graph"));
}

BOOST_AUTO_TEST_CASE(strings_arguments_and_durations_are_bounded) {
  input_limits limits;
  op_spec long_description = named_op();
  long_description.description = std::string(limits.max_description + 1, 'd');
  BOOST_TEST(says(check_input(long_description, limits), "max-description"));
  op_spec long_name = named_op(std::string(limits.max_name + 1, 'n'));
  BOOST_TEST(says(check_input(long_name, limits), "operation name"));
  op_spec huge_string = named_op();
  huge_string.description = std::string(limits.max_string + 1, 's');
  BOOST_TEST(says(check_input(huge_string, limits), "a string of"));
  op_spec many_args;
  many_args.body = work::named("busy", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17);
  BOOST_TEST(says(check_input(many_args, limits), "max-args"));
  limits.max_string = 100;
  op_spec big_arg;
  big_arg.body = work::named("fail", std::string(1000, 'a'));
  BOOST_TEST(says(check_input(big_arg, limits), "arguments of"));

  const input_limits defaults;
  BOOST_TEST(says(check_input(barrier_call{"job", 1, -1ns, {}}, defaults), "duration"));
  BOOST_TEST(says(check_input(barrier_call{"job", 1, 25h, {}}, defaults), "duration"));
  BOOST_TEST(
      says(check_input(barrier_call{"job", 0, 1s, {}}, defaults), "generations count from 1"));
  BOOST_TEST(says(check_input(barrier_call{"job", 1, 1s, std::string(257, 't')}, defaults),
                  "owner token"));
  BOOST_TEST(!check_input(barrier_call{"job", 1, 1s, std::string(256, 't')}, defaults));
  BOOST_TEST(says(check_input(barrier_call{"", 1, 1s, {}}, defaults), "barrier's name"));
  BOOST_TEST(says(check_input(barrier_call{std::string(300, 'b'), 1, 1s, {}}, defaults),
                  "barrier's name"));
}

BOOST_AUTO_TEST_CASE(what_a_node_says_it_is_is_checked_by_the_control_plane) {
  const input_limits defaults;
  node_info info{"n1", "host", 4, {"busy", "noop"}, defaults};
  BOOST_TEST(!check_input(info, defaults));
  info.name = "";
  BOOST_TEST(says(check_input(info, defaults), "node's name"));
  info.name = std::string(300, 'n');
  BOOST_TEST(says(check_input(info, defaults), "node's name"));
  info.name = "n1";
  info.operations.push_back("");
  BOOST_TEST(says(check_input(info, defaults), "operation's name"));
  info.operations = {"noop"};
  info.backend = std::string(defaults.max_string + 1, 'b');
  BOOST_TEST(says(check_input(info, defaults), "node info"));
  // The longest rendezvous it takes: a duration like any other, never negative nor past the
  // limit max-duration.
  info.backend = "host";
  BOOST_TEST(!check_input(info, defaults));
  info.max_rendezvous = -1s;
  BOOST_TEST(says(check_input(info, defaults), "node info"));
  info.max_rendezvous = defaults.max_duration + 1s;
  BOOST_TEST(says(check_input(info, defaults), "node info"));
}

BOOST_AUTO_TEST_CASE(a_peer_text_is_quoted_by_a_bounded_printable_prefix) {
  const std::string huge(100 << 20, 'A');
  const std::string quoted = quote_peer_text(huge);
  BOOST_TEST(quoted.size() < 100u);
  BOOST_TEST(quoted.find("104857600 bytes") != std::string::npos);
  BOOST_TEST(quote_peer_text(std::string("a\nb\0c", 5)) == "'a?b?c'");
  BOOST_TEST(quote_peer_text("short") == "'short'");
}

BOOST_AUTO_TEST_CASE(a_collective_is_checked_as_a_whole) {
  const input_limits limits;
  op_collective c;
  c.communicator = "grads";
  c.count = 16;
  c.send = buffer_id{1, 0, 1};
  c.recv = buffer_id{1, 1, 1};
  BOOST_TEST(!check_input(op_spec::of(c, "all-reduce"), limits));
  const auto with = [&](auto&& change) {
    op_spec s = op_spec::of(c, "x");
    change(s);
    return check_input(s, limits);
  };
  BOOST_TEST(says(with([](op_spec& s) { s.type = op_type::kernel; }), "not all_reduce"));
  BOOST_TEST(says(with([](op_spec& s) { s.body = work::named("noop"); }), "body must be empty"));
  BOOST_TEST(says(with([](op_spec& s) { s.collective.count = 0; }), "1 to 2^40 elements"));
  BOOST_TEST(says(with([](op_spec& s) { s.collective.count = max_collective_count + 1; }),
                  "1 to 2^40 elements"));
  BOOST_TEST(
      says(with([](op_spec& s) { s.collective.root = max_collective_root + 1; }), "past any rank"));
  BOOST_TEST(says(with([](op_spec& s) { s.collective.recv = {}; }), "no buffer to receive"));
  BOOST_TEST(says(with([](op_spec& s) { s.collective.send = {}; }), "no buffer to send"));
  BOOST_TEST(
      says(with([&](op_spec& s) { s.collective.communicator.assign(limits.max_name + 1, 'c'); }),
           "communicator's name"));
  // A broadcast's non-root ranks need not send; a barrier moves nothing.
  op_collective b = c;
  b.kind = gpu::collective_kind::broadcast;
  b.send = {};
  BOOST_TEST(!check_input(op_spec::of(b, "broadcast"), limits));
  op_collective none;
  none.communicator = "grads";
  none.kind = gpu::collective_kind::barrier;
  BOOST_TEST(!check_input(op_spec::of(none, "barrier"), limits));
  none.count = 1;
  BOOST_TEST(says(check_input(op_spec::of(none, "barrier"), limits), "moves no data"));
  // The collectives' own types mean nothing without one.
  op_spec bare = named_op();
  bare.type = op_type::reduce_scatter;
  BOOST_TEST(says(check_input(bare, limits), "without a collective"));
}

BOOST_AUTO_TEST_CASE(a_buffer_call_carries_what_its_verb_needs_and_nothing_else) {
  const input_limits limits;
  const buffer_id b{1, 2, 3};
  BOOST_TEST(!check_input(buffer_call::alloc(64), buffer_verb::alloc, limits));
  BOOST_TEST(!check_input(buffer_call::store(b, 8, {1, 2, 3}), buffer_verb::store, limits));
  BOOST_TEST(!check_input(buffer_call::fetch(b, 8, 3), buffer_verb::fetch, limits));
  BOOST_TEST(!check_input(buffer_call::release(b), buffer_verb::release, limits));
  BOOST_TEST(says(check_input(buffer_call::alloc(0), buffer_verb::alloc, limits), "at least 1"));
  buffer_call named = buffer_call::alloc(64);
  named.buffer = b;
  BOOST_TEST(says(check_input(named, buffer_verb::alloc, limits), "names a buffer"));
  BOOST_TEST(says(check_input(buffer_call::store({}, 0, {1}), buffer_verb::store, limits),
                  "no buffer named"));
  BOOST_TEST(
      says(check_input(buffer_call::store(b, 0, {}), buffer_verb::store, limits), "1 to 4194304"));
  BOOST_TEST(says(
      check_input(buffer_call::fetch(b, 0, max_buffer_transfer + 1), buffer_verb::fetch, limits),
      "1 to 4194304"));
  BOOST_TEST(
      says(check_input(buffer_call::fetch(b, ~std::uint64_t{0}, 1), buffer_verb::fetch, limits),
           "past any buffer's end"));
  buffer_call extra = buffer_call::release(b);
  extra.bytes = 1;
  BOOST_TEST(says(check_input(extra, buffer_verb::release, limits), "nothing else"));
  BOOST_TEST(says(check_input(buffer_call::alloc(64, std::string(max_owner_token + 1, 't')),
                              buffer_verb::alloc, limits),
                  "owner token"));
  // A store past what one message may carry is refused by the walker or the bound.
  buffer_call big = buffer_call::store(b, 0, std::vector<std::uint8_t>(max_buffer_transfer + 1));
  BOOST_TEST(static_cast<bool>(check_input(big, buffer_verb::store, limits)));
}

BOOST_AUTO_TEST_CASE(a_step_type_and_a_replay_request_are_checked) {
  const input_limits limits;
  op_spec op = named_op();
  op.type = op_type::step;  // a replay's own
  BOOST_TEST(says(check_input(op, limits), "only a replay of a recorded step has"));
  replay_request r;
  BOOST_TEST(!check_input(r, limits));
  r.notices = raw<step_notices>(3);
  BOOST_TEST(says(check_input(r, limits), "is not a valid step_notices"));
  r.notices = step_notices::all;
  input_limits few = limits;
  few.max_graph_ops = 2;
  r.bindings.resize(3);
  BOOST_TEST(says(check_input(r, few), "at most 2 bindings"));
}
