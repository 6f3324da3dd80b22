// What the communicator table counts (cudactor_collective_*): a collective's run through its
// work, counted once with its bytes; the same work run to be captured into a graph
// (launch_context::captured) is not counted, since it runs nothing now; each launch of the
// graph is counted by the table's counter instead, with its failures; a counter outliving its
// communicator counts nothing.
#define BOOST_TEST_MODULE communicator_table
#include <boost/test/unit_test.hpp>

#include <memory>

#include "common/metric_reader.hpp"
#include "cudactor/actors/communicator_table.hpp"

using namespace cudactor;
using namespace cudactor::test;

namespace {

// A communicator of one rank whose calls do nothing and succeed, counting how many ran.
class idle_communicator final : public gpu::communicator {
 public:
  idle_communicator() : gpu::communicator("idle", 1, 0, 1) {}
  gpu::status run(const gpu::collective_call&, const gpu::launch_context&) override {
    (void)next_sequence();
    ++runs;
    return {};
  }
  gpu::status watch_launch(const gpu::launch_context&) override { return {}; }
  gpu::status broken() const override { return {}; }
  void abort(const std::string&) override {}
  int runs = 0;
};

gpu::collective_call all_reduce() {
  gpu::collective_call call;
  call.kind = gpu::collective_kind::all_reduce;
  call.op = gpu::reduce_op::sum;
  call.type = gpu::element_type::f32;
  call.count = 16;
  return call;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_captured_run_is_not_counted_and_each_launch_of_its_graph_is) {
  auto registry = std::make_shared<metrics::registry>();
  communicator_table table{registry};
  auto comm = std::make_shared<idle_communicator>();
  BOOST_REQUIRE(!table.add(comm));
  const label_map labels{{"communicator", "idle"}, {"kind", "all_reduce"}};
  const auto counted = [&] {
    return metric_reader{*registry}.counter("cudactor_collective_operations_total", labels);
  };
  const auto bytes = [&] {
    return metric_reader{*registry}.counter("cudactor_collective_bytes_total", labels);
  };
  const auto failed = [&] {
    return metric_reader{*registry}.counter("cudactor_collective_failures_total", labels);
  };

  gpu::work_fn work = table.work(comm, all_reduce());
  BOOST_TEST(work(gpu::launch_context{gpu::backend_kind::host, gpu::stream_ref{}, nullptr}).ok());
  BOOST_TEST(counted() == 1);
  const double one_run = bytes();
  BOOST_TEST(one_run > 0);
  // Captured: it runs (so that its launches are recorded) but counts nothing.
  BOOST_TEST(
      work(gpu::launch_context{gpu::backend_kind::cuda, gpu::stream_ref{}, nullptr, true}).ok());
  BOOST_TEST(comm->runs == 2);
  BOOST_TEST(counted() == 1);
  // The graph's launches, by the counter: one each, a failed one as a failure.
  auto launch = table.counter(comm, all_reduce());
  launch(gpu::status{});
  launch(gpu::status{gpu::status_code::op_failed, "a launch refused"});
  BOOST_TEST(counted() == 3);
  BOOST_TEST(failed() == 1);
  BOOST_TEST(bytes() == 2 * one_run);
  // A counter outliving its communicator counts nothing.
  BOOST_TEST(table.remove("idle", 1, "made anew"));
  comm.reset();
  work = {};
  launch(gpu::status{});
  BOOST_TEST(counted() == 3);
}
