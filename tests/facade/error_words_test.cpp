// Errors in words, always: every cudactor::errc, however deep it nests, whatever carries it
// (an operation's end, another process's answer, the device layer's status) and through every
// facade object and the graph path, reads "cudactor::<code>: <what failed>", never CAF's
// error(24, 'cudactor', (...)) tuple.
#define BOOST_TEST_MODULE facade_error_words
#include <boost/test/unit_test.hpp>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cudactor/facade/barrier.hpp"
#include "cudactor/facade/coordinator.hpp"
#include "cudactor/facade/event_pool.hpp"
#include "cudactor/facade/host_memory.hpp"
#include "cudactor/facade/stream.hpp"
#include "facade/facade_fixture.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

constexpr auto last_code = static_cast<std::uint8_t>(errc::unknown_communicator);

std::vector<errc> every_code() {
  std::vector<errc> codes;
  for (std::uint8_t c = 1; c <= last_code; ++c) codes.push_back(static_cast<errc>(c));
  return codes;
}

std::vector<gpu::status_code> every_device_code() {
  std::vector<gpu::status_code> codes;
  for (auto c = static_cast<std::uint8_t>(gpu::status_code::invalid_argument);
       c <= static_cast<std::uint8_t>(gpu::status_code::cancelled); ++c) {
    codes.push_back(static_cast<gpu::status_code>(c));
  }
  // `cancelled` is the last code: one added after it would have a name, and be left out here.
  const auto past =
      static_cast<gpu::status_code>(static_cast<std::uint8_t>(gpu::status_code::cancelled) + 1);
  BOOST_REQUIRE_MESSAGE(gpu::to_string(past) == "unknown_status_code",
                        "a device code after cancelled: " << gpu::to_string(past));
  return codes;
}

std::string name_of(errc code) { return std::string{to_string(code)}; }

// What a failure must read like: its code's name first, then words; none of CAF's tuple.
void check_words(const std::string& text, errc code, const std::string& where) {
  BOOST_TEST_INFO(where << ": " << text);
  BOOST_TEST(text.rfind("cudactor::" + name_of(code), 0) == 0u);
  BOOST_TEST(text.find("error(") == std::string::npos);
  BOOST_TEST(text.find("'cudactor'") == std::string::npos);
  BOOST_TEST(text.find("@error") == std::string::npos);
}

void check_words(const failure& f, errc code, const std::string& where) {
  BOOST_TEST((f.code() == code), where << ": " << f.what());
  check_words(std::string{f.what()}, code, where);
}

// The error as another process would receive it: serialized and read back.
caf::error across_the_wire(caf::actor_system& sys, const caf::error& err) {
  std::vector<char> bytes;
  caf::binary_serializer sink{sys, bytes};
  caf::error copy;
  if (auto bad = sink(const_cast<caf::error&>(err))) BOOST_FAIL("serialize: " << describe(bad));
  caf::binary_deserializer source{sys, bytes};
  if (auto bad = source(copy)) BOOST_FAIL("deserialize: " << describe(bad));
  return copy;
}

op_spec op_of(gpu::work_fn fn, std::vector<op_id> deps = {}) {
  op_spec s;
  s.body = work::local(std::move(fn));
  s.deps = std::move(deps);
  return s;
}

gpu::work_fn failing_with(gpu::status_code code) {
  return [code](const gpu::launch_context&) {
    return gpu::status{code, "the work gave up (" + std::string{gpu::to_string(code)} + ")"};
  };
}

gpu::status ok(const gpu::launch_context&) { return {}; }

}  // namespace

BOOST_FIXTURE_TEST_SUITE(facade_error_words, facade_fixture)

BOOST_AUTO_TEST_CASE(every_code_has_a_name_of_its_own) {
  std::set<std::string> names;
  for (errc code : every_code()) {
    BOOST_TEST(name_of(code) != "unknown", int(code));
    names.insert(name_of(code));
  }
  BOOST_TEST(names.size() == every_code().size());
  // The walk covers every code: the one after the last has no name.
  BOOST_TEST(name_of(static_cast<errc>(last_code + 1)) == "unknown");
}

BOOST_AUTO_TEST_CASE(every_code_reads_in_words_however_it_nests_and_wherever_it_comes_from) {
  for (errc code : every_code()) {
    const std::string name = name_of(code);
    const caf::error leaf = make_error(code, "what failed");
    const failure plain{leaf};
    check_words(plain, code, "plain " + name);
    BOOST_TEST(std::string{plain.what()} == "cudactor::" + name + ": what failed");
    // A cause inside another error's context: described where it sits.
    const caf::error wrapped{static_cast<std::uint8_t>(errc::invalid_state), error_category,
                             caf::make_message(std::string{"the operation"}, leaf)};
    const failure outer{wrapped};
    check_words(outer, errc::invalid_state, "wrapped " + name);
    BOOST_TEST(std::string{outer.what()} ==
               "cudactor::invalid_state: the operation: because cudactor::" + name +
                   ": what failed");
    // Two deep, and a CAF error beside it.
    const caf::error deeper{static_cast<std::uint8_t>(errc::dependency_failed), error_category,
                            caf::make_message(std::string{"op 7 cancelled"}, wrapped,
                                              caf::make_error(caf::sec::request_timeout))};
    const failure deep{deeper};
    check_words(deep, errc::dependency_failed, "deeper " + name);
    BOOST_TEST(mentions(deep, "because cudactor::" + name + ": what failed"), deep.what());
    BOOST_TEST(mentions(deep, "caf::request_timeout"), deep.what());
    // From another process: the same words after the wire.
    const failure remote{across_the_wire(rt().system(), deeper)};
    BOOST_TEST(std::string{remote.what()} == std::string{deep.what()});
    // The end of an operation carries its cause.
    op_notice notice;
    notice.state = op_state::failed;
    notice.cause = wrapped;
    check_words(failure{notice.cause}, errc::invalid_state, "notice " + name);
    // The actor system's own rendering (logs, caf::to_string through the system) agrees.
    BOOST_TEST(render(wrapped).find("error(") == std::string::npos, render(wrapped));
  }
  // CAF's own errors read as the cudactor code they mean, CAF's name after it.
  check_words(failure{caf::make_error(caf::sec::request_receiver_down)}, errc::shutting_down,
              "receiver down");
  check_words(failure{caf::make_error(caf::sec::request_timeout)}, errc::timeout, "timeout");
  check_words(failure{caf::make_error(caf::exit_reason::user_shutdown)}, errc::shutting_down,
              "exit");
}

BOOST_AUTO_TEST_CASE(every_device_status_reads_in_words_with_its_finer_name) {
  for (gpu::status_code code : every_device_code()) {
    const std::string gpu_name{gpu::to_string(code)};
    const failure f{to_error(gpu::status{code, "stream 3: what the device said"})};
    check_words(f, to_errc(code), "device " + gpu_name);
    BOOST_TEST(mentions(f, "stream 3: what the device said"), f.what());
    BOOST_TEST(mentions(f, gpu_name), f.what());  // not_recorded stays named as such
  }
}

BOOST_AUTO_TEST_CASE(every_facade_object_fails_in_words) {
  cudactor::coordinator c{rt()};
  cudactor::stream s{rt(), 0};
  cudactor::stream s1{rt(), 1};
  cudactor::event_pool pool{rt()};
  // stream: an index the runtime has no stream for, told to a callable.
  std::promise<outcome<stream_status>> told;
  cudactor::stream{rt(), 7}.status([&](outcome<stream_status> r) { told.set_value(std::move(r)); });
  auto ft = told.get_future();
  const outcome<stream_status> nowhere = get_within(ft);
  BOOST_REQUIRE(!nowhere.ok());
  check_words(nowhere.error(), errc::unknown_stream, "stream 7");
  // stream: work that fails, heard where its point is awaited.
  auto submitted = s.submit(failing_with(gpu::status_code::op_failed));
  const ticket t = get_within(submitted);
  auto awaited = s.await(t.point, 5s);
  check_words(failure_of(awaited), errc::op_failed, "stream await");
  // stream: a negative limit.
  auto negative = s.synchronize(-1ms);
  check_words(failure_of(negative), errc::invalid_argument, "stream synchronize");
  // event pool: a release twice, and timing asked of regular events.
  auto fa = pool.acquire(gpu::event_kind::regular, 1);
  const std::vector<event_lease> leased = get_within(fa);
  auto back = pool.release(leased);
  get_within(back);
  auto twice = pool.release(leased);
  check_words(failure_of(twice), errc::stale_event, "release twice");
  auto fr1 = s.record();
  const owned_event r1 = get_within(fr1);
  auto fr2 = s.record();
  const owned_event r2 = get_within(fr2);
  auto untimed = pool.elapsed(r1, r2);
  check_words(failure_of(untimed), errc::not_timing, "elapsed");
  // barrier: a member that does not arrive in time.
  auto held = std::make_shared<std::promise<void>>();
  auto slow = s1.submit([opened = held->get_future().share()](const gpu::launch_context&) {
    opened.wait();  // until the barrier below has timed out
    return gpu::status{};
  });
  get_within(slow);
  cudactor::barrier b{rt(), {0, 1}};
  auto late = b.synchronize(barrier_mode::host, 20ms);
  const failure timed_out = failure_of(late);
  check_words(timed_out, errc::timeout, "barrier");
  BOOST_TEST(mentions(timed_out, "did not arrive"), timed_out.what());
  held->set_value();
  try {
    cudactor::barrier bad{rt(), {0, 9}};
    BOOST_FAIL("a barrier over a stream the runtime does not have");
  } catch (const failure& f) {
    check_words(f, f.code(), "barrier member");
  }
  // coordinator: an unknown id, and a lease used past its hold.
  auto unknown = c.describe(op_id{987654});
  check_words(failure_of(unknown), errc::unknown_op, "describe");
  op_spec manual;
  auto fm = c.add(manual);
  const op_id m = get_within(fm);
  auto begun = c.begin(m);
  const launch_lease lease = get_within(begun);
  auto done = lease.complete();
  get_within(done);
  auto past = lease.launch(ok);
  check_words(failure_of(past), errc::invalid_state, "lease");
  // An operation's end and its dependent's, through the facade's notices.
  auto fo = c.add(op_of(failing_with(gpu::status_code::op_failed)));
  const op_id failed_op = get_within(fo);
  auto failed_end = c.on_end(failed_op);
  const failure ef{get_within(failed_end).cause};
  check_words(ef, errc::op_failed, "failed op");
  auto dependent = c.run(op_of(ok, {failed_op}));  // registered after the failure: refused
  const failure df = failure_of(dependent);
  check_words(df, errc::dependency_failed, "dependent");
  BOOST_TEST(mentions(df, "the work gave up"), df.what());
  // host memory: nothing to allocate.
  try {
    (void)allocate_pinned(rt(), 0);
    BOOST_FAIL("zero bytes of pinned memory");
  } catch (const failure& f) {
    check_words(f, errc::invalid_argument, "allocate_pinned");
  }
  stop();
  auto gone = s.status();
  check_words(failure_of(gone), errc::shutting_down, "after stop");
}

BOOST_AUTO_TEST_CASE(a_graph_names_its_operation_in_words_for_every_refusal) {
  cudactor::coordinator c{rt()};
  auto check_refused = [&](graph_spec g, errc code, const std::string& words) {
    auto refused = c.submit(std::move(g));
    const failure f = failure_of(refused);
    check_words(f, code, words);
    BOOST_TEST(mentions(f, "graph op "), f.what());
    BOOST_TEST(mentions(f, words), f.what());
  };
  graph_spec unknown_dep;
  unknown_dep.add(op_of(ok, {op_id{987654}}));
  check_refused(std::move(unknown_dep), errc::unknown_op, "never registered");
  graph_spec cycle;
  cycle.add(op_of(ok), {1});
  cycle.add(op_of(ok), {0});
  check_refused(std::move(cycle), errc::dependency_cycle, "graph op 0 -> graph op 1");
  auto fb = c.allocate(64);
  const buffer_handle buf = get_within(fb);
  auto fr = c.release(buf.id);
  auto released = c.on_end(get_within(fr));
  get_within(released);
  graph_spec uses_released;
  uses_released.add(op_of(ok));
  op_spec use = op_of(ok);
  use.uses = {buffer_use::read(buf.id)};
  uses_released.add(use);
  check_refused(std::move(uses_released), errc::invalid_state, "graph op 1: buffer");
}

BOOST_AUTO_TEST_CASE(every_device_failure_reads_in_words_through_a_graph_run) {
  cudactor::coordinator c{rt()};
  for (gpu::status_code code : every_device_code()) {
    graph_spec g;
    g.add(op_of(failing_with(code)));
    g.add(op_of(ok), {0});
    auto ran = c.run(std::move(g));
    const std::vector<op_notice> ends = get_within(ran);
    BOOST_REQUIRE_EQUAL(ends.size(), 2u);
    const std::string where{gpu::to_string(code)};
    BOOST_TEST((ends[0].state == op_state::failed), where);
    // Work that fails fails its operation (op_failed), whatever its code: device_lost too (the
    // device is lost only when the backend says so, not when a work does); the work's own code
    // is named after.
    const failure own{ends[0].cause};
    check_words(own, errc::op_failed, "graph op 0 " + where);
    BOOST_TEST(mentions(own, where + ": the work gave up (" + where + ")"), own.what());
    BOOST_TEST((ends[1].state == op_state::cancelled), where);
    const failure dep{ends[1].cause};
    check_words(dep, errc::dependency_failed, "graph op 1 " + where);
    BOOST_TEST(mentions(dep, "the work gave up (" + where + ")"), dep.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
