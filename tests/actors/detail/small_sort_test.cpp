// sort_small against std::stable_sort: random vectors of every size around where it changes
// from insertion to std::sort, with many ties, sorted by a key alone, the result ordered by
// the key and holding the same items.
#define BOOST_TEST_MODULE small_sort
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "common/test_seed.hpp"
#include "cudactor/actors/detail/small_sort.hpp"

using cudactor::detail::sort_small;

namespace {

struct item {
  std::uint32_t key = 0;
  std::uint32_t tag = 0;  // unique: tells apart items of one key
};

bool by_key(const item& a, const item& b) { return a.key < b.key; }

}  // namespace

BOOST_AUTO_TEST_CASE(sorts_like_std_sort_below_and_above_its_threshold) {
  std::mt19937_64 rng{cudactor::test::test_seed("small_sort")};
  for (std::size_t n = 0; n <= 40; ++n) {
    for (int round = 0; round < 50; ++round) {
      std::vector<item> items(n);
      for (std::size_t i = 0; i < n; ++i) {
        items[i] =
            item{static_cast<std::uint32_t>(rng() % (1 + n / 3)), static_cast<std::uint32_t>(i)};
      }
      std::vector<item> expected = items;
      std::stable_sort(expected.begin(), expected.end(), by_key);
      sort_small(items, by_key);
      BOOST_TEST_CONTEXT("size " << n << ", round " << round) {
        BOOST_TEST(std::is_sorted(items.begin(), items.end(), by_key));
        const auto by_tag = [](const item& a, const item& b) { return a.tag < b.tag; };
        std::vector<item> got = items;
        std::sort(got.begin(), got.end(), by_tag);
        std::sort(expected.begin(), expected.end(), by_tag);
        BOOST_TEST(std::equal(
            got.begin(), got.end(), expected.begin(), expected.end(),
            [](const item& a, const item& b) { return a.key == b.key && a.tag == b.tag; }));
        if (n <= 16) {
          // By insertion: stable, so items of one key keep their order.
          for (std::size_t i = 1; i < n; ++i) {
            if (items[i - 1].key == items[i].key) BOOST_TEST(items[i - 1].tag < items[i].tag);
          }
        }
      }
    }
  }
}
