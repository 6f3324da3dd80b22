// The union of a step's uses (actors/coordinator/recorded_step.hpp): bytes read from outside
// the step and then written are read_write, bytes written before the step reads them are a
// write (a failed replay's poison on them does not cancel the next), bytes only read are a
// read; ranges merged per buffer, buffers apart.
#define BOOST_TEST_MODULE recorded_step
#include <boost/test/unit_test.hpp>

#include <random>
#include <vector>

#include "common/test_seed.hpp"
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

// Random steps of small uses over two buffers against a byte-by-byte reference: each byte's
// access in the union is read_write when the step read it from outside and wrote it, write
// when it wrote it first, read when it only read it; each buffer's uses come together, in
// byte order, none touching another of the same access.
BOOST_AUTO_TEST_CASE(random_steps_match_a_byte_by_byte_reference) {
  std::mt19937_64 rng{test::test_seed("random_steps_match_a_byte_by_byte_reference")};
  constexpr std::uint64_t size = 96;
  const buffer_id ids[] = {a, b};
  for (int round = 0; round < 300; ++round) {
    std::vector<recorded_step::op> ops;
    bool outside[2][size] = {}, written[2][size] = {};
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      std::vector<std::pair<buffer_use, byte_range>> uses;
      const int m = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < m; ++j) {
        const int which = static_cast<int>(rng() % 2);
        const std::uint64_t begin = rng() % size;
        const std::uint64_t end = begin + 1 + rng() % std::min<std::uint64_t>(size - begin, 12);
        const auto access = static_cast<buffer_access>(1 + rng() % 3);
        uses.push_back(
            {buffer_use{ids[which], access, begin, end - begin}, byte_range{begin, end}});
      }
      // An operation reads before it writes: all of its reads first.
      for (const auto& [u, r] : uses) {
        if (u.access == buffer_access::write) continue;
        const int which = u.buffer == a ? 0 : 1;
        for (std::uint64_t i = r.begin; i < r.end; ++i) {
          if (!written[which][i]) outside[which][i] = true;
        }
      }
      for (const auto& [u, r] : uses) {
        if (u.access == buffer_access::read) continue;
        const int which = u.buffer == a ? 0 : 1;
        for (std::uint64_t i = r.begin; i < r.end; ++i) written[which][i] = true;
      }
      ops.push_back(op_of(std::move(uses)));
    }
    const auto u = union_of_uses(ops);
    buffer_access got[2][size] = {};
    int last_buffer = -1;
    bool seen[2] = {};
    std::uint64_t next_byte = 0;
    for (std::size_t k = 0; k < u.size(); ++k) {
      const int which = u[k].buffer == a ? 0 : 1;
      if (which != last_buffer) {
        BOOST_TEST_REQUIRE(!seen[which], "round " << round << ": buffer " << which << " apart");
        seen[which] = true;
        last_buffer = which;
        next_byte = 0;
      } else {
        const bool touches_alike =
            u[k - 1].offset + u[k - 1].bytes == u[k].offset && u[k - 1].access == u[k].access;
        BOOST_TEST(!touches_alike, "round " << round << ": use " << k << " not merged");
      }
      BOOST_TEST_REQUIRE(u[k].offset >= next_byte, "round " << round << ": use " << k);
      next_byte = u[k].offset + u[k].bytes;
      for (std::uint64_t i = u[k].offset; i < u[k].offset + u[k].bytes; ++i) {
        got[which][i] = u[k].access;
      }
    }
    for (int which = 0; which < 2; ++which) {
      for (std::uint64_t i = 0; i < size; ++i) {
        const buffer_access want = outside[which][i] && written[which][i]
                                       ? buffer_access::read_write
                                   : written[which][i] ? buffer_access::write
                                   : outside[which][i] ? buffer_access::read
                                                       : buffer_access::none;
        BOOST_TEST_REQUIRE((got[which][i] == want),
                           "round " << round << ": buffer " << which << " byte " << i);
      }
    }
  }
}
