// The profile behind report_atom, fed directly: busy time as the union of a stream's
// outstanding spans, run times only when stamped, and per-name totals.
#define BOOST_TEST_MODULE op_profile
#include <boost/test/unit_test.hpp>

#include <map>

#include "cudactor/actors/coordinator/op_profile.hpp"

using namespace cudactor;
using namespace cudactor::detail;

namespace {

profiled_op on(std::uint32_t stream, const std::string& name, std::int64_t dispatched,
               std::int64_t ended, op_type type = op_type::kernel) {
  profiled_op p;
  p.name = &name;
  p.type = type;
  p.on_stream = true;
  p.stream = stream;
  p.registered_ns = dispatched - 5;
  p.dispatched_ns = dispatched;
  p.ended_ns = ended;
  return p;
}

}  // namespace

BOOST_AUTO_TEST_CASE(busy_time_is_the_union_of_the_outstanding_spans) {
  op_profile profile{0, 16};
  profile.streams(2);
  const std::string k = "k";
  profile.add(on(0, k, 100, 200));
  profile.add(on(0, k, 150, 260));  // overlaps the first: adds 60
  profile.add(on(0, k, 300, 350));  // after a gap: adds 50
  profile.add(on(0, k, 310, 350));  // ended in the same batch: adds nothing
  const auto r = profile.report(1000, false);
  BOOST_REQUIRE(r.streams.size() == 2u);
  BOOST_TEST(r.streams[0].busy_ns == 100 + 60 + 50);
  BOOST_TEST(r.streams[0].ops == 4u);
  BOOST_TEST(r.streams[1].ops == 0u);
  BOOST_TEST(r.streams[1].busy_ns == 0);
  BOOST_TEST(r.streams[1].stream.value == 1u);
}

BOOST_AUTO_TEST_CASE(run_times_come_only_from_stamps) {
  op_profile profile{0, 16};
  const std::string copy = "copy", gemm = "gemm", failed = "failed";
  auto a = on(0, gemm, 100, 400);
  a.started_ns = 120;
  a.finished_ns = 320;
  profile.add(a);
  auto b = on(1, gemm, 100, 400);  // not stamped
  profile.add(b);
  profile.add(on(1, copy, 500, 600, op_type::memory_transfer));
  auto c = on(1, failed, 700, 800);
  c.state = op_state::failed;
  profile.add(c);
  profiled_op never;  // cancelled before it reached a stream
  never.name = &failed;
  never.state = op_state::cancelled;
  never.registered_ns = 10;
  never.ended_ns = 20;
  profile.add(never);

  const auto r = profile.report(1000, true);
  BOOST_TEST(r.timed);
  BOOST_TEST(r.streams[0].run_ns == 200);
  BOOST_TEST(r.streams[1].run_ns == 0);
  BOOST_TEST(r.streams[1].kernels == 2u);
  BOOST_TEST(r.streams[1].transfers == 1u);
  BOOST_TEST(r.streams[1].failed == 1u);
  BOOST_REQUIRE(r.operations.size() == 3u);
  const auto& g = r.operations[0];  // the most time first
  BOOST_TEST(g.name == "gemm");
  BOOST_TEST(g.count == 2u);
  BOOST_TEST(g.run_ns == 200);
  BOOST_TEST(g.max_run_ns == 200);
  BOOST_TEST(g.on_stream_ns == 600);
  BOOST_TEST(g.queued_ns == 10);
  for (const auto& n : r.operations) {
    if (n.name == "failed") {
      BOOST_TEST(n.count == 2u);
      BOOST_TEST(n.failed == 2u);
      BOOST_TEST(n.queued_ns == 5);  // the one never dispatched adds none
    }
  }
}

BOOST_AUTO_TEST_CASE(an_operation_without_a_description_counts_under_its_type) {
  op_profile profile{0, 16};
  const std::string none;
  profile.add(on(0, none, 1, 2, op_type::all_reduce));
  const auto r = profile.report(10, false);
  BOOST_REQUIRE(r.operations.size() == 1u);
  BOOST_TEST(r.operations[0].name == std::string{to_string(op_type::all_reduce)});
}

BOOST_AUTO_TEST_CASE(a_timed_report_orders_by_run_time_alone) {
  // A failed operation has no run time, however long it waited on its stream: when the report
  // is timed it comes after one that ran, not before (it did in CI under ASan's load).
  op_profile profile{0, 16};
  const std::string ran = "matmul";
  const std::string failed = "bad";
  auto a = on(0, ran, 100, 400);
  a.started_ns = 150;
  a.finished_ns = 350;
  profile.add(a);
  auto b = on(1, failed, 100, 90'000);
  b.state = op_state::failed;
  profile.add(b);
  const auto timed = profile.report(100'000, true);
  BOOST_REQUIRE(timed.operations.size() == 2u);
  BOOST_TEST(timed.operations[0].name == ran);
  BOOST_TEST(timed.operations[1].name == failed);
  // Untimed, time on stream is the measure.
  const auto untimed = profile.report(100'000, false);
  BOOST_TEST(untimed.operations[0].name == failed);
}

// Names are counted in runs (the last one's figures are kept at hand): a run, a switch back to
// an earlier name, names past the limit summed under one entry, and an earlier name still its
// own after the limit was reached, each operation counted once where it belongs.
BOOST_AUTO_TEST_CASE(names_in_runs_and_past_the_limit_count_each_operation_once) {
  op_profile profile{0, 2};
  const std::string a = "a", b = "b", c = "c", d = "d";
  // Copies of "a" at other addresses: the name's text is the key, not where it lies.
  const std::string a2 = "a", a3 = "a";
  for (const std::string* name : {&a, &a2, &a3, &b, &c, &c, &a, &d, &c, &b}) {
    profile.add(on(0, *name, 1, 2));
  }
  const auto r = profile.report(10, false);
  std::map<std::string, std::uint64_t> counts;
  for (const auto& op : r.operations) counts[op.name] = op.count;
  BOOST_TEST(counts.size() == 3u);
  BOOST_TEST(counts["a"] == 4u);
  BOOST_TEST(counts["b"] == 2u);
  BOOST_TEST(counts["(other names)"] == 4u);
}
