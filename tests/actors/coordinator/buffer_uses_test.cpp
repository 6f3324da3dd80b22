// One buffer's use history on its own: what a read and a write come after, disjoint ranges,
// poison and its clearing, compaction, and a randomized run against a byte-by-byte reference.
#define BOOST_TEST_MODULE buffer_uses
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "common/test_seed.hpp"
#include "cudactor/actors/coordinator/buffer_uses.hpp"
#include "cudactor/messaging/errc.hpp"

using namespace cudactor;
using detail::buffer_uses;
using detail::byte_range;
using detail::use_edge;

namespace {

op_id id(std::uint64_t v) { return op_id{v}; }

struct inference {
  std::map<std::uint64_t, bool> edges;  // op -> order only
  caf::error poisoned;
};

// What op `op` using `r` with `a` comes after, every earlier op still waited for; then it is
// recorded.
inference use(buffer_uses& b, byte_range r, buffer_access a, std::uint64_t op,
              const std::set<std::uint64_t>& done = {}) {
  std::vector<use_edge> out;
  inference got;
  b.infer(
      r, a, [&](op_id x) { return done.count(x.value) == 0; }, out, got.poisoned);
  for (const auto& e : out) {
    BOOST_TEST(got.edges.count(e.op.value) == 0u);  // each once
    got.edges[e.op.value] = e.order_only;
  }
  b.record(r, a, id(op));
  return got;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_read_follows_the_last_write_and_a_write_follows_every_read_since) {
  buffer_uses b{100};
  BOOST_TEST(use(b, {0, 100}, buffer_access::write, 1).edges.empty());
  const auto r2 = use(b, {0, 50}, buffer_access::read, 2);
  BOOST_TEST((r2.edges == std::map<std::uint64_t, bool>{{1, false}}));
  const auto r3 = use(b, {40, 60}, buffer_access::read, 3);
  BOOST_TEST((r3.edges == std::map<std::uint64_t, bool>{{1, false}}));  // reads do not order reads
  const auto w4 = use(b, {45, 55}, buffer_access::write, 4);
  // After the last write and both reads of those bytes, none of whose results it reads.
  BOOST_TEST((w4.edges == std::map<std::uint64_t, bool>{{1, true}, {2, true}, {3, true}}));
  const auto rw5 = use(b, {50, 52}, buffer_access::read_write, 5);
  BOOST_TEST((rw5.edges == std::map<std::uint64_t, bool>{{4, false}}));
  const auto r6 = use(b, {0, 100}, buffer_access::read, 6);
  BOOST_TEST((r6.edges == std::map<std::uint64_t, bool>{{1, false}, {4, false}, {5, false}}));
}

BOOST_AUTO_TEST_CASE(disjoint_ranges_order_nothing) {
  buffer_uses b{64};
  (void)use(b, {0, 32}, buffer_access::write, 1);
  BOOST_TEST(use(b, {32, 64}, buffer_access::write, 2).edges.empty());
  BOOST_TEST(use(b, {32, 64}, buffer_access::read, 3).edges.size() == 1u);
  BOOST_TEST(use(b, {0, 1}, buffer_access::read_write, 4).edges.size() == 1u);  // only 1
  BOOST_TEST(b.segments() == 3u);  // [0,1) [1,32) [32,64)
}

BOOST_AUTO_TEST_CASE(users_no_longer_waited_for_are_left_out_and_compacted_away) {
  buffer_uses b{16};
  (void)use(b, {0, 16}, buffer_access::write, 1);
  for (std::uint64_t op = 2; op < 18; ++op) (void)use(b, {op - 2, op - 1}, buffer_access::read, op);
  BOOST_TEST(b.segments() == 16u);
  BOOST_TEST(b.entries() == 32u);
  std::set<std::uint64_t> done;
  for (std::uint64_t op = 1; op < 18; ++op) done.insert(op);
  BOOST_TEST(use(b, {0, 16}, buffer_access::read, 18, done).edges.empty());
  b.compact([&](op_id x) { return done.count(x.value) == 0; }, done.size());
  BOOST_TEST(b.segments() == 1u);  // every segment alike again: read by 18 only
  BOOST_TEST(b.entries() == 1u);
}

// A full history whose users are all still waited for is asked again and again (each refusal
// of a lone operation compacts first): compacting once more with nothing let go, recorded,
// poisoned or renamed since goes through nothing.
BOOST_AUTO_TEST_CASE(compacting_again_with_nothing_changed_goes_through_nothing) {
  buffer_uses b{16};
  for (std::uint64_t op = 1; op <= 8; ++op) {
    (void)use(b, {2 * (op - 1), 2 * (op - 1) + 1}, buffer_access::write, op);
  }
  const std::size_t segments = b.segments();
  BOOST_TEST(segments == 16u);
  std::set<std::uint64_t> done;
  std::size_t asked = 0;  // users looked at
  const auto waited = [&](op_id x) {
    ++asked;
    return done.count(x.value) == 0;
  };
  BOOST_TEST(b.compaction_may_drop(0));
  b.compact(waited, 0);
  BOOST_TEST(asked == 8u);
  BOOST_TEST(b.segments() == segments);  // every writer still waited for
  BOOST_TEST(!b.compaction_may_drop(0));
  asked = 0;
  b.compact(waited, 0);
  BOOST_TEST(asked == 0u);
  // Something let go: gone through, and what ended goes.
  for (std::uint64_t op = 1; op <= 4; ++op) done.insert(op);
  BOOST_TEST(b.compaction_may_drop(done.size()));
  b.compact(waited, done.size());
  BOOST_TEST(asked == 8u);
  BOOST_TEST(b.segments() < segments);
  BOOST_TEST(!b.compaction_may_drop(done.size()));
  // A record, a poison or a rename since: due again at the same count.
  (void)use(b, {15, 16}, buffer_access::read, 9, done);
  BOOST_TEST(b.compaction_may_drop(done.size()));
  b.compact(waited, done.size());
  BOOST_TEST(!b.compaction_may_drop(done.size()));
  b.poison({0, 16}, id(8), make_error(errc::op_failed, "op 8 failed"));
  BOOST_TEST(b.compaction_may_drop(done.size()));
  b.compact(waited, done.size());
  BOOST_TEST(!b.compaction_may_drop(done.size()));
  b.rename([](op_id x) { return op_id{x.value + 100}; });
  BOOST_TEST(b.compaction_may_drop(done.size()));
  // A copy (a graph's scratch history) keeps what its original knows.
  b.compact([](op_id) { return true; }, done.size());
  const buffer_uses copy{b};
  BOOST_TEST(!copy.compaction_may_drop(done.size()));
}

BOOST_AUTO_TEST_CASE(a_failed_writer_poisons_its_bytes_until_they_are_written_without_a_read) {
  buffer_uses b{10};
  (void)use(b, {0, 10}, buffer_access::write, 1);
  (void)use(b, {5, 10}, buffer_access::write, 2);
  b.poison({0, 10}, id(1), make_error(errc::op_failed, "op 1 failed"));
  // Only the bytes 1 still was the last writer of.
  BOOST_TEST(!static_cast<bool>(use(b, {5, 10}, buffer_access::read, 3).poisoned));
  BOOST_TEST(static_cast<bool>(use(b, {4, 6}, buffer_access::read, 4).poisoned));
  BOOST_TEST(static_cast<bool>(
      use(b, {0, 2}, buffer_access::read_write, 5).poisoned));  // it reads them too
  (void)use(b, {0, 5}, buffer_access::write, 6);
  BOOST_TEST(
      !static_cast<bool>(use(b, {0, 10}, buffer_access::read, 7).poisoned));  // written again
}

BOOST_AUTO_TEST_CASE(every_user_is_visited_for_a_release) {
  buffer_uses b{8};
  (void)use(b, {0, 4}, buffer_access::write, 1);
  (void)use(b, {0, 8}, buffer_access::read, 2);
  (void)use(b, {4, 8}, buffer_access::read, 3);
  std::set<std::uint64_t> users;
  b.for_each_user([&](op_id x) { users.insert(x.value); });
  BOOST_TEST((users == std::set<std::uint64_t>{1, 2, 3}));
}

// The history against a reference that keeps, per byte, its last writer, the readers since
// and whether a failed writer left it unwritten: for random uses, the edges and the poison
// seen must be exactly the reference's. `ops` uses per round; `compacting`: whether the
// history is compacted now and then (without, a long one packs its readers' arena instead).
void against_reference(std::mt19937_64& rng, int rounds, std::uint64_t ops, std::uint64_t most,
                       bool compacting) {
  for (int round = 0; round < rounds; ++round) {
    const std::uint64_t size = 1 + rng() % most;
    buffer_uses b{size};
    std::vector<std::uint64_t> writer(size, 0);
    std::vector<std::set<std::uint64_t>> readers(size);
    std::vector<bool> poisoned(size, false);
    std::set<std::uint64_t> done;
    for (std::uint64_t op = 1; op <= ops; ++op) {
      const std::uint64_t begin = rng() % size;
      const std::uint64_t end = begin + 1 + rng() % std::min<std::uint64_t>(size - begin, 16);
      const auto access = static_cast<buffer_access>(1 + rng() % 3);
      std::map<std::uint64_t, bool> expected;
      bool expect_poison = false;
      auto want = [&](std::uint64_t x, bool order) {
        if (x == 0 || done.count(x) != 0) return;
        auto [at, added] = expected.emplace(x, order);
        if (!added) at->second = at->second && order;
      };
      for (std::uint64_t i = begin; i < end; ++i) {
        if (reads(access)) {
          want(writer[i], false);
          expect_poison = expect_poison || poisoned[i];
        }
        if (writes(access)) {
          want(writer[i], !reads(access));
          for (std::uint64_t r : readers[i]) want(r, true);
        }
      }
      const auto got = use(b, {begin, end}, access, op, done);
      BOOST_TEST((got.edges == expected), "round " << round << " op " << op);
      BOOST_TEST(static_cast<bool>(got.poisoned) == expect_poison,
                 "round " << round << " op " << op);
      for (std::uint64_t i = begin; i < end; ++i) {
        if (writes(access)) {
          writer[i] = op;
          readers[i].clear();
          poisoned[i] = false;
        } else {
          readers[i].insert(op);
        }
      }
      if (rng() % 4 == 0) done.insert(1 + rng() % op);  // some end
      if (const std::uint64_t failed = 1 + rng() % op; rng() % 16 == 0 && done.count(failed) == 0) {
        // A writer fails as it ends: the bytes it is still the last writer of are poisoned.
        b.poison({0, size}, id(failed), make_error(errc::op_failed, "failed"));
        done.insert(failed);
        for (std::uint64_t i = 0; i < size; ++i) {
          if (writer[i] == failed) poisoned[i] = true;
        }
      }
      if (compacting && rng() % 8 == 0) {
        b.compact([&](op_id x) { return done.count(x.value) == 0; }, done.size());
      }
    }
    // Every user still in the reference is still in the history.
    std::set<std::uint64_t> users, listed;
    for (std::uint64_t i = 0; i < size; ++i) {
      if (writer[i] != 0 && done.count(writer[i]) == 0) users.insert(writer[i]);
      for (std::uint64_t r : readers[i]) {
        if (done.count(r) == 0) users.insert(r);
      }
    }
    b.for_each_user([&](op_id x) { listed.insert(x.value); });
    for (std::uint64_t u : users) BOOST_TEST(listed.count(u) == 1u, "round " << round);
  }
}

std::uint64_t seed_of_run() { return cudactor::test::test_seed("buffer_uses random"); }

BOOST_AUTO_TEST_CASE(random_uses_match_a_byte_by_byte_reference) {
  std::mt19937_64 rng{seed_of_run()};
  against_reference(rng, 200, 60, 64, true);
}

// Thousands of uses with nothing compacted, as in one large graph: blocks of readers move as
// they grow and the arena is packed again several times; no user may be lost or invented.
BOOST_AUTO_TEST_CASE(a_long_history_packs_its_readers_and_keeps_every_user) {
  std::mt19937_64 rng{seed_of_run()};
  against_reference(rng, 4, 5000, 256, false);
}

BOOST_AUTO_TEST_CASE(renamed_users_are_the_ones_inferred_after) {
  buffer_uses b{32};
  (void)use(b, {0, 32}, buffer_access::write, 100);
  (void)use(b, {0, 16}, buffer_access::read, 101);
  (void)use(b, {8, 32}, buffer_access::read, 102);
  b.rename([](op_id x) { return id(x.value - 99); });  // 100 -> 1, 101 -> 2, 102 -> 3
  const auto w = use(b, {4, 12}, buffer_access::write, 4);
  BOOST_TEST((w.edges == std::map<std::uint64_t, bool>{{1, true}, {2, true}, {3, true}}));
}
