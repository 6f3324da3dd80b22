// The union of a step's uses (actors/coordinator/recorded_step.hpp): bytes read from outside
// the step and then written are read_write, bytes written before the step reads them are a
// write (a failed replay's poison on them does not cancel the next), bytes only read are a
// read; ranges merged per buffer, buffers apart.
#define BOOST_TEST_MODULE recorded_step
#include <boost/test/unit_test.hpp>

#include "cudactor/actors/coordinator/recorded_step.hpp"

using namespace cudactor;
using cudactor::detail::byte_range;
using cudactor::detail::recorded_step;
using cudactor::detail::union_of_uses;

namespace {

recorded_step::op op_of(std::vector<std::pair<buffer_use, byte_range>> uses) {
  recorded_step::op o;
  for (auto& [u, r] : uses) {
    o.uses.push_back(u);
    o.ranges.push_back(r);
  }
  return o;
}

const buffer_id a{7, 1, 1}, b{7, 2, 1};

}  // namespace

BOOST_AUTO_TEST_CASE(a_temporary_written_first_is_a_write_and_outside_input_a_read) {
  // op 0 writes a[0, 100); op 1 reads a[0, 200) and writes b[0, 50); op 2 reads and writes
  // b[0, 100).
  std::vector<recorded_step::op> ops;
  ops.push_back(op_of({{buffer_use::write(a, 0, 100), {0, 100}}}));
  ops.push_back(
      op_of({{buffer_use::read(a, 0, 200), {0, 200}}, {buffer_use::write(b, 0, 50), {0, 50}}}));
  ops.push_back(op_of({{buffer_use::read_write(b, 0, 100), {0, 100}}}));
  const auto u = union_of_uses(ops);
  BOOST_REQUIRE(u.size() == 4u);
  // a: [0, 100) written first: write; [100, 200) read from outside: read.
  BOOST_TEST((u[0].buffer == a && u[0].access == buffer_access::write && u[0].offset == 0u &&
              u[0].bytes == 100u));
  BOOST_TEST((u[1].buffer == a && u[1].access == buffer_access::read && u[1].offset == 100u &&
              u[1].bytes == 100u));
  // b: [0, 50) written first: write; [50, 100) read from outside, then written: read_write.
  BOOST_TEST((u[2].buffer == b && u[2].access == buffer_access::write && u[2].offset == 0u &&
              u[2].bytes == 50u));
  BOOST_TEST((u[3].buffer == b && u[3].access == buffer_access::read_write && u[3].offset == 50u &&
              u[3].bytes == 50u));
}

BOOST_AUTO_TEST_CASE(an_operation_reads_before_it_writes_and_touching_ranges_merge) {
  std::vector<recorded_step::op> ops;
  ops.push_back(op_of({{buffer_use::read_write(a, 0, 10), {0, 10}}}));
  ops.push_back(op_of({{buffer_use::read_write(a, 10, 10), {10, 20}}}));
  ops.push_back(op_of({{buffer_use::read(a, 0, 20), {0, 20}}}));
  const auto u = union_of_uses(ops);
  BOOST_REQUIRE(u.size() == 1u);
  BOOST_TEST((u[0].access == buffer_access::read_write && u[0].offset == 0u && u[0].bytes == 20u));
}
