// Room for the coordinator's per-operation values, made in chunks: values made one after
// another lie side by side, every value is destroyed exactly once, an emptied chunk is reused
// and the chunks held follow what is held, and a value kept long keeps its chunk and its
// contents while everything around it comes and goes.
#define BOOST_TEST_MODULE value_chunks
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "common/test_seed.hpp"
#include "cudactor/actors/coordinator/value_chunks.hpp"

using cudactor::detail::value_chunks;

namespace {

int alive = 0;  // values constructed and not yet destroyed

struct value {
  value() { ++alive; }
  value(const value&) = delete;
  value& operator=(const value&) = delete;
  ~value() { --alive; }
  std::uint64_t stamp = 0;
  std::vector<int> payload;  // owns memory: a value destroyed twice or never shows
  char pad[100] = {};
};

using pool = value_chunks<value>;

}  // namespace

BOOST_AUTO_TEST_CASE(values_made_one_after_another_lie_side_by_side) {
  pool p;
  std::vector<pool::pointer> held;
  for (std::size_t i = 0; i < pool::per_chunk_count(); ++i) held.push_back(p.make());
  BOOST_TEST(p.chunks() == 1u);
  const auto step = reinterpret_cast<std::uintptr_t>(held[1].get()) -
                    reinterpret_cast<std::uintptr_t>(held[0].get());
  BOOST_TEST(step >= sizeof(value));
  BOOST_TEST(step < sizeof(value) + alignof(value));
  for (std::size_t i = 1; i < held.size(); ++i) {
    BOOST_REQUIRE_EQUAL(reinterpret_cast<std::uintptr_t>(held[i].get()) -
                            reinterpret_cast<std::uintptr_t>(held[i - 1].get()),
                        step);
  }
  held.push_back(p.make());  // the next chunk
  BOOST_TEST(p.chunks() == 2u);
  held.clear();
  BOOST_TEST(alive == 0);
}

// Every value of an over-aligned type keeps its alignment, in every chunk (placement new into
// room carved by hand must honour it).
BOOST_AUTO_TEST_CASE(over_aligned_values_keep_their_alignment) {
  struct alignas(64) line_value {
    char bytes[72] = {};  // two lines' worth: the stride rounds up to 128
  };
  value_chunks<line_value> p;
  std::vector<value_chunks<line_value>::pointer> held;
  for (std::size_t i = 0; i < 3 * value_chunks<line_value>::per_chunk_count(); ++i) {
    held.push_back(p.make());
    BOOST_REQUIRE_EQUAL(reinterpret_cast<std::uintptr_t>(held.back().get()) % 64, 0u);
  }
  BOOST_TEST(p.chunks() == 3u);
}

BOOST_AUTO_TEST_CASE(emptied_chunks_are_reused_and_memory_follows_what_is_held) {
  pool p;
  const std::size_t burst = 100 * pool::per_chunk_count();
  std::vector<pool::pointer> held;
  for (std::size_t i = 0; i < burst; ++i) held.push_back(p.make());
  BOOST_TEST(p.chunks() == 100u);
  BOOST_TEST(alive == static_cast<int>(burst));
  held.clear();
  BOOST_TEST(alive == 0);
  // Kept for the next burst, which takes them again.
  BOOST_TEST(p.chunks() == 100u);
  BOOST_TEST(p.spare_chunks() == 99u);  // all but the one being filled
  for (std::size_t i = 0; i < burst; ++i) held.push_back(p.make());
  BOOST_TEST(p.chunks() == 100u);
  held.clear();
  // Then a steady trickle: what stays spare through it is given back, down to a few.
  for (int round = 0; round < 2'000'000; ++round) {
    held.push_back(p.make());
    if (held.size() > 16) held.erase(held.begin());
  }
  BOOST_TEST(p.chunks() <= 4u);
  held.clear();
}

BOOST_AUTO_TEST_CASE(an_idle_table_keeps_at_most_the_cap) {
  pool p;
  const std::size_t burst = (pool::spares_cap + 50) * pool::per_chunk_count();
  std::vector<pool::pointer> held;
  held.reserve(burst);
  for (std::size_t i = 0; i < burst; ++i) held.push_back(p.make());
  BOOST_TEST(p.chunks() == pool::spares_cap + 50);
  held.clear();
  BOOST_TEST(p.chunks() <= pool::spares_cap + 1);
  BOOST_TEST(alive == 0);
}

BOOST_AUTO_TEST_CASE(an_owner_gone_idle_sheds_every_spare_chunk_and_keeps_what_is_held) {
  pool p;
  const std::size_t burst = 40 * pool::per_chunk_count();
  std::vector<pool::pointer> held;
  for (std::size_t i = 0; i < burst; ++i) held.push_back(p.make());
  BOOST_TEST(p.made() == burst);
  // Half released (whole chunks of the oldest), half kept.
  held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(burst / 2));
  BOOST_TEST(p.spare_chunks() == 20u);
  BOOST_TEST(p.shed() == 20u);
  BOOST_TEST(p.spare_chunks() == 0u);
  BOOST_TEST(p.chunks() == 20u);
  for (std::size_t i = 0; i < held.size(); ++i) held[i]->stamp = i;  // still theirs
  held.clear();
  BOOST_TEST(p.shed() == 19u);  // all but the one being filled
  BOOST_TEST(p.chunks() == 1u);
  for (std::size_t i = 0; i < burst; ++i) held.push_back(p.make());  // and it grows again
  BOOST_TEST(p.chunks() == 40u);
  BOOST_TEST(p.made() == 2 * burst);
  held.clear();
  BOOST_TEST(alive == 0);
}

BOOST_AUTO_TEST_CASE(a_value_kept_long_keeps_its_chunk_and_its_contents) {
  pool p;
  pool::pointer old = p.make();
  old->stamp = 42;
  old->payload.assign(10, 7);
  std::vector<pool::pointer> held;
  for (int i = 0; i < 100'000; ++i) {
    held.push_back(p.make());
    held.back()->stamp = static_cast<std::uint64_t>(i);
    if (held.size() > 8) held.erase(held.begin());
  }
  BOOST_TEST(old->stamp == 42u);
  BOOST_TEST(old->payload == std::vector<int>(10, 7));
  // The old value's chunk, the one being filled, and a few spares.
  BOOST_TEST(p.chunks() <= 4u);
  old.reset();
  held.clear();
  BOOST_TEST(alive == 0);
}

BOOST_AUTO_TEST_CASE(random_makes_and_releases_keep_every_value_intact) {
  const std::uint64_t seed = cudactor::test::test_seed("value_chunks");
  std::mt19937_64 rng{seed};
  {
    pool p;
    std::vector<std::pair<pool::pointer, std::uint64_t>> held;
    std::uint64_t next = 1;
    for (int k = 0; k < 200'000; ++k) {
      if (held.empty() || rng() % 100 < 52) {
        auto v = p.make();
        BOOST_REQUIRE_EQUAL(v->stamp, 0u);  // made fresh, whatever was there before
        BOOST_REQUIRE(v->payload.empty());
        v->stamp = next;
        v->payload.assign(1 + rng() % 3, static_cast<int>(next));
        held.emplace_back(std::move(v), next++);
      } else {
        // Mostly the oldest, as operations retire; some anywhere.
        const std::size_t at = rng() % 4 == 0 ? rng() % held.size() : 0;
        BOOST_REQUIRE_EQUAL(held[at].first->stamp, held[at].second);
        BOOST_REQUIRE_EQUAL(held[at].first->payload.front(), static_cast<int>(held[at].second));
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(at));
      }
      BOOST_REQUIRE_EQUAL(alive, static_cast<int>(held.size()));
    }
    for (auto& [v, stamp] : held) BOOST_REQUIRE_EQUAL(v->stamp, stamp);
    held.clear();  // before the pool, as a table's values go before its chunks
  }
  BOOST_TEST(alive == 0);
}
