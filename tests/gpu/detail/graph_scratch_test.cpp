// A graph's scratch (gpu/detail/graph_scratch.hpp) with a counting allocator: the same blocks
// for the same requests run after run; a run that asks for fewer, then more again, allocates
// nothing new; a request its last block cannot serve gets the smallest free fit, never a
// block the run already holds; a run not kept leaves the node's order alone (and restore puts
// an order back); a failed allocation counts nothing.
#define BOOST_TEST_MODULE graph_scratch
#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <memory>
#include <vector>

#include "common/printing.hpp"
#include "cudactor/gpu/detail/graph_scratch.hpp"

using namespace cudactor::gpu;
using namespace cudactor::gpu::detail;

namespace {

struct counting_allocator {
  std::vector<std::unique_ptr<std::byte[]>> made;
  bool refuse = false;

  graph_scratch::allocator fn() {
    return [this](std::size_t bytes) -> result<void*> {
      if (refuse) return status{status_code::out_of_memory, "refused by the test"};
      made.push_back(std::make_unique<std::byte[]>(bytes));
      return static_cast<void*>(made.back().get());
    };
  }
};

// One run of `node` asking for `sizes` in order; the blocks it got.
std::vector<void*> run(graph_scratch& g, std::uint32_t node, const std::vector<std::size_t>& sizes,
                       bool kept = true) {
  scratch_source& source = g.begin(node);
  std::vector<void*> got;
  for (const std::size_t bytes : sizes) {
    auto block = source.take(bytes);
    BOOST_REQUIRE(block.ok());
    got.push_back(block.value());
  }
  g.settle(kept);
  return got;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_same_requests_get_the_same_blocks_and_nodes_never_share) {
  counting_allocator a;
  graph_scratch g{2, a.fn()};
  const auto first = run(g, 0, {100, 50});
  const auto other = run(g, 1, {100, 50});
  BOOST_TEST((run(g, 0, {100, 50}) == first));
  BOOST_TEST((run(g, 1, {100, 50}) == other));
  BOOST_TEST(first[0] != other[0]);
  BOOST_TEST(first[1] != other[1]);
  BOOST_TEST(a.made.size() == 4u);
  BOOST_TEST(g.bytes() == 300u);
  BOOST_TEST(g.blocks().size() == 4u);
}

BOOST_AUTO_TEST_CASE(a_run_that_asks_for_fewer_then_more_allocates_nothing_new) {
  counting_allocator a;
  graph_scratch g{1, a.fn()};
  const auto both = run(g, 0, {100, 50});
  for (int i = 0; i < 5; ++i) {
    const auto one = run(g, 0, {100});
    BOOST_TEST(one[0] == both[0]);
    BOOST_TEST((run(g, 0, {100, 50}) == both));
  }
  BOOST_TEST(a.made.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_request_its_block_cannot_serve_gets_the_smallest_free_fit) {
  counting_allocator a;
  graph_scratch g{1, a.fn()};
  const auto small = run(g, 0, {100, 50});   // A(100), B(50)
  const auto grown = run(g, 0, {200, 100});  // C(200) new; then B too small: A, not C
  BOOST_TEST(grown[0] != small[0]);
  BOOST_TEST(grown[0] != small[1]);
  BOOST_TEST(grown[1] == small[0]);
  BOOST_TEST(a.made.size() == 3u);
  BOOST_TEST(g.bytes() == 350u);
  // Twice the size of A: C serves the first, and the second is new (no block twice in a run).
  const auto twice = run(g, 0, {150, 150});
  BOOST_TEST(twice[0] == grown[0]);
  BOOST_TEST(twice[1] != twice[0]);
  BOOST_TEST(a.made.size() == 4u);
  // Smaller requests again: the blocks of last time serve them, nothing new.
  BOOST_TEST((run(g, 0, {100, 50}) == twice));
  BOOST_TEST(a.made.size() == 4u);
}

BOOST_AUTO_TEST_CASE(a_run_not_kept_leaves_the_order_and_restore_puts_one_back) {
  counting_allocator a;
  graph_scratch g{1, a.fn()};
  const auto kept = run(g, 0, {100, 100});  // A, B
  const auto swapped = run(g, 0, {50}, false);
  BOOST_TEST(swapped[0] == kept[0]);
  BOOST_TEST((run(g, 0, {100, 100}) == kept));
  const std::vector<std::size_t> before = g.order(0);
  (void)run(g, 0, {300});  // a new block, kept: the order is now that run's
  BOOST_TEST(g.order(0) != before);
  g.restore(0, before);
  BOOST_TEST((run(g, 0, {100, 100}) == kept));
}

BOOST_AUTO_TEST_CASE(a_failed_allocation_counts_nothing) {
  counting_allocator a;
  graph_scratch g{1, a.fn()};
  const auto first = run(g, 0, {64});
  a.refuse = true;
  scratch_source& source = g.begin(0);
  BOOST_TEST(source.take(64).value() == first[0]);  // no allocation needed
  const auto refused = source.take(64);
  BOOST_TEST((refused.code() == status_code::out_of_memory));
  g.settle(false);
  BOOST_TEST(g.bytes() == 64u);
  BOOST_TEST(g.blocks().size() == 1u);
}
