// Random graphs over a few buffers, every dependency inferred from declared uses, against a
// sequential execution of the same operations in submission order. Each graph holds 1 to 24
// operations over random byte ranges of 4 buffers, placed by the coordinator on 4 streams; the
// host "kernels" really transform the bytes (a digest of everything they read goes into every
// byte they write), take random time, and some fail (1.5%, after reading, before writing). A
// few graphs add explicit dependencies too. Checked: every operation ends as the sequential
// model says (completed, failed, or cancelled for reading bytes a failed writer left
// unwritten, or by an explicit dependency that did not complete); the final contents equal
// the model's wherever the model knows them (bytes no failure left unwritten); and no
// operation ran while one it conflicts with and comes after was in flight, by stamps the
// kernels took. Then the reclamation check: memory released while readers on other streams
// still run is filled with a pattern by its next owner, and no reader ever sees it.
//
// Host backend only (the kernels read and write the buffers from host threads).
// CUDACTOR_GRAPHS sets the number of graphs (default 10000); CUDACTOR_TEST_SEED=<seed> replays
// a run.
#define BOOST_TEST_MODULE buffer_random
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>

#include "common/test_seed.hpp"
#include "coordinator_fixture.hpp"

using namespace std::chrono_literals;
using namespace cudactor;
using namespace cudactor::test;

namespace {

constexpr std::size_t buffers = 4;
constexpr std::uint8_t pattern = 0xEE;

std::uint64_t seed_of() { return cudactor::test::test_seed("buffer_random"); }

std::size_t graphs_of() {
  const char* text = std::getenv("CUDACTOR_GRAPHS");
  return text != nullptr ? std::strtoull(text, nullptr, 10) : 10000;
}

// One operation of the test: its uses (resolved ranges), its salt, whether it fails.
struct test_op {
  std::vector<buffer_use> uses;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // [begin, end) per use
  std::vector<std::size_t> which;                               // buffer index per use
  std::vector<std::uint32_t> after;                             // explicit, in its graph
  std::uint32_t salt = 0;
  bool fails = false;
  std::chrono::microseconds busy{0};
};

// What a kernel does to `memory` (one byte array per buffer): a digest of every byte it
// reads, then every byte it writes set from it (a read_write byte from its old value too).
// The test's kernels and the model share it.
bool transform_bytes(const test_op& op, const std::vector<std::uint8_t*>& memory) {
  std::uint32_t digest = op.salt;
  for (std::size_t u = 0; u < op.uses.size(); ++u) {
    if (!reads(op.uses[u].access)) continue;
    for (std::uint64_t i = op.ranges[u].first; i < op.ranges[u].second; ++i) {
      digest = digest * 31u + memory[op.which[u]][i];
    }
  }
  if (op.fails) return false;
  for (std::size_t u = 0; u < op.uses.size(); ++u) {
    if (!writes(op.uses[u].access)) continue;
    const bool rw = op.uses[u].access == buffer_access::read_write;
    for (std::uint64_t i = op.ranges[u].first; i < op.ranges[u].second; ++i) {
      const std::uint8_t old = memory[op.which[u]][i];
      std::uint8_t next = static_cast<std::uint8_t>((digest >> 8) + i * 7u + (rw ? old : 0u));
      if (next == pattern) next = 0;  // the reclamation check's pattern never comes from work
      memory[op.which[u]][i] = next;
    }
  }
  return true;
}

struct stamps {
  explicit stamps(std::size_t n) : start(n), end(n) {}
  std::vector<std::atomic<std::int64_t>> start, end;
};

std::int64_t now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The sequential model: per byte, whether a failure left it unwritten.
struct model {
  std::vector<std::vector<std::uint8_t>> bytes;
  std::vector<std::vector<bool>> poisoned;

  // The state `op` ends in, given how its explicit dependencies ended.
  op_state run(const test_op& op, bool explicit_dep_failed) {
    bool reads_poison = false;
    for (std::size_t u = 0; u < op.uses.size() && !reads_poison; ++u) {
      if (!reads(op.uses[u].access)) continue;
      for (std::uint64_t i = op.ranges[u].first; i < op.ranges[u].second; ++i) {
        if (poisoned[op.which[u]][i]) {
          reads_poison = true;
          break;
        }
      }
    }
    const bool writes_nothing = explicit_dep_failed || reads_poison || op.fails;
    if (!writes_nothing) {
      std::vector<std::uint8_t*> memory;
      for (auto& b : bytes) memory.push_back(b.data());
      (void)transform_bytes(op, memory);
    }
    for (std::size_t u = 0; u < op.uses.size(); ++u) {
      if (!writes(op.uses[u].access)) continue;
      for (std::uint64_t i = op.ranges[u].first; i < op.ranges[u].second; ++i) {
        poisoned[op.which[u]][i] = writes_nothing;
      }
    }
    if (explicit_dep_failed || reads_poison) return op_state::cancelled;
    return op.fails ? op_state::failed : op_state::completed;
  }
};

}  // namespace

namespace {

// Four streams; describe remembers every operation of a run (for what a failure says).
struct four_streams_kept : coordinator_fixture {
  four_streams_kept()
      : coordinator_fixture({"--cudactor.streams=4", "--cudactor.coordinator.ended-kept=400000"}) {}
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(buffer_random, four_streams_kept)

BOOST_AUTO_TEST_CASE(random_graphs_match_a_sequential_execution) {
  const std::uint64_t seed = seed_of();
  const std::size_t graph_count = graphs_of();
  std::mt19937_64 rng{seed};
  std::vector<buffer_handle> handles;
  model m;
  for (std::size_t b = 0; b < buffers; ++b) {
    const std::uint64_t size = 16 + rng() % 500;
    auto h = ask<buffer_handle>(co(), alloc_atom::value, size);
    BOOST_REQUIRE_MESSAGE(h, why(h));
    handles.push_back(*h);
    m.bytes.emplace_back(size, 0);
    m.poisoned.emplace_back(size, false);
  }
  std::vector<std::uint8_t*> memory;
  for (const auto& h : handles) memory.push_back(h.as<std::uint8_t>());
  // Every op of the run, in submission order, with its id and how it ended.
  std::vector<test_op> ops;
  std::vector<op_id> ids;
  std::vector<std::size_t> graph_first;
  constexpr std::size_t max_ops = 24;
  auto marks = std::make_shared<stamps>(graph_count * max_ops + buffers);
  auto kernel = [&](std::size_t index) {
    return work::local([marks, index, op = ops[index], memory](const gpu::launch_context&) {
      marks->start[index] = now();
      const auto until = std::chrono::steady_clock::now() + op.busy;
      while (std::chrono::steady_clock::now() < until) {
      }
      const bool wrote = transform_bytes(op, memory);
      marks->end[index] = now();
      return wrote ? gpu::status{} : gpu::status{gpu::status_code::op_failed, "planned failure"};
    });
  };
  // First a graph that writes every buffer (the model starts from zeros too).
  {
    graph_spec g;
    graph_first.push_back(ops.size());
    for (std::size_t b = 0; b < buffers; ++b) {
      test_op zero;
      zero.uses.push_back(buffer_use::write(handles[b].id));
      zero.ranges.emplace_back(0, handles[b].size);
      zero.which.push_back(b);
      zero.salt = 0;
      ops.push_back(zero);
      op_spec s = spec_of(kernel(ops.size() - 1));
      s.uses = zero.uses;
      g.add(std::move(s));
    }
    auto got = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
    BOOST_REQUIRE_MESSAGE(got, why(got));
    ids.insert(ids.end(), got->begin(), got->end());
  }
  std::size_t in_flight_from = 0;  // ids before this have been told
  for (std::size_t k = 0; k < graph_count; ++k) {
    const std::size_t n = 1 + rng() % max_ops;
    const std::size_t first = ops.size();
    graph_first.push_back(first);
    graph_spec g;
    for (std::size_t i = 0; i < n; ++i) {
      test_op op;
      // Now and then a graph opens by rewriting a whole buffer (what failures poisoned heals).
      const bool heal = i == 0 && rng() % 2 == 0;
      const std::size_t uses = heal ? 1 : 1 + rng() % 3;
      for (std::size_t u = 0; u < uses; ++u) {
        const std::size_t b = rng() % buffers;
        const std::uint64_t size = handles[b].size;
        const std::uint64_t begin = heal && u == 0 ? 0 : rng() % size;
        const std::uint64_t bytes =
            heal && u == 0 ? size : 1 + rng() % std::min<std::uint64_t>(size - begin, 96);
        const unsigned pick = static_cast<unsigned>(rng() % 100);
        const auto access = heal && u == 0 ? buffer_access::write
                            : pick < 40    ? buffer_access::read
                            : pick < 75    ? buffer_access::write
                                           : buffer_access::read_write;
        op.uses.push_back(buffer_use{handles[b].id, access, begin, bytes});
        op.ranges.emplace_back(begin, begin + bytes);
        op.which.push_back(b);
      }
      if (i > 0 && rng() % 10 == 0) op.after.push_back(static_cast<std::uint32_t>(rng() % i));
      op.salt = static_cast<std::uint32_t>(rng());
      op.fails = rng() % 1000 < 15;
      op.busy = std::chrono::microseconds{rng() % 4 == 0 ? rng() % 200 : 0};
      ops.push_back(op);
      op_spec s = spec_of(kernel(ops.size() - 1));
      s.uses = op.uses;
      g.add(std::move(s), op.after);
    }
    auto got = ask<std::vector<op_id>>(co(), submit_atom::value, std::move(g), me());
    BOOST_REQUIRE_MESSAGE(got, "graph " << k << ": " << why(got));
    ids.insert(ids.end(), got->begin(), got->end());
    // At most a few graphs in flight: the coordinator's histories stay small, the test too.
    if (ids.size() - in_flight_from > 8 * max_ops) {
      (void)collect(std::vector<op_id>(ids.begin() + in_flight_from, ids.end() - n));
      in_flight_from = ids.size() - n;
    }
  }
  const auto told = collect(ids, 120s);
  // Cancelled operations already on a stream still run there: the stamps are complete once
  // every stream has passed everything.
  for (const auto& s : rt().streams()) {
    // Answered when the stream got there, with the newest failure if there was one.
    (void)ask<completion>(s, synchronize_atom::value);
  }
  // How each op must end, in submission order.
  std::size_t wrong_end = 0, graph = 0;
  std::vector<op_state> expected(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    while (graph + 1 < graph_first.size() && graph_first[graph + 1] <= i) ++graph;
    bool dep_failed = false;
    for (std::uint32_t a : ops[i].after) {
      dep_failed = dep_failed || expected[graph_first[graph] + a] != op_state::completed;
    }
    expected[i] = m.run(ops[i], dep_failed);
    const op_notice& n = told.at(ids[i].value);
    if (n.state != expected[i]) {
      if (++wrong_end <= 5) {
        BOOST_ERROR("op " << i << " (" << ids[i].value << ") ended " << to_string(n.state)
                          << ", the model says " << to_string(expected[i]) << ": "
                          << render(n.cause));
      }
    }
  }
  BOOST_TEST(wrong_end == 0u);
  // The contents, where the model knows them.
  std::size_t wrong_bytes = 0;
  for (std::size_t b = 0; b < buffers; ++b) {
    for (std::size_t i = 0; i < m.bytes[b].size(); ++i) {
      if (!m.poisoned[b][i] && memory[b][i] != m.bytes[b][i]) ++wrong_bytes;
    }
  }
  BOOST_TEST(wrong_bytes == 0u);
  // No op ran while one it comes after by a conflicting use was in flight: per byte, the last
  // writer and the readers since, in submission order, of the ops that ran.
  std::size_t overlaps = 0;
  std::vector<std::vector<std::int64_t>> writer_end(buffers);
  std::vector<std::vector<std::int64_t>> readers_end(buffers);  // the latest end among them
  std::vector<std::vector<std::size_t>> writer_of(buffers), reader_of(buffers);  // who, to say
  for (std::size_t b = 0; b < buffers; ++b) {
    writer_end[b].assign(m.bytes[b].size(), 0);
    readers_end[b].assign(m.bytes[b].size(), 0);
    writer_of[b].assign(m.bytes[b].size(), 0);
    reader_of[b].assign(m.bytes[b].size(), 0);
  }
  auto say = [&](std::size_t i) {
    const op_notice& n = told.at(ids[i].value);
    return "op " + std::to_string(i) + " (" + std::to_string(ids[i].value) + ", " +
           std::string{to_string(n.state)} +
           (n.dispatched_ns == 0 ? std::string{", never dispatched"}
                                 : " on stream " + std::to_string(n.stream.value) + " at " +
                                       std::to_string(n.point)) +
           ")";
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::int64_t start = marks->start[i], end = marks->end[i];
    if (start == 0) continue;  // never ran (cancelled before it was dispatched)
    for (std::size_t u = 0; u < ops[i].uses.size(); ++u) {
      const std::size_t b = ops[i].which[u];
      for (std::uint64_t x = ops[i].ranges[u].first; x < ops[i].ranges[u].second; ++x) {
        std::int64_t before = writer_end[b][x];
        std::size_t other = writer_of[b][x];
        if (writes(ops[i].uses[u].access) && readers_end[b][x] > before) {
          before = readers_end[b][x];
          other = reader_of[b][x];
        }
        if (start < before && ++overlaps <= 1) {
          std::string inferred, between;
          for (const auto& d : told.at(ids[i].value).inferred) {
            inferred += " " + std::to_string(d.dep.value) + (d.order_only ? "o" : "d");
          }
          for (std::size_t k = other; k < i; ++k) {
            for (std::size_t v = 0; v < ops[k].uses.size(); ++v) {
              if (ops[k].which[v] == b && ops[k].ranges[v].first <= x &&
                  x < ops[k].ranges[v].second) {
                between += "\n  " + say(k) + " " + std::string{to_string(ops[k].uses[v].access)} +
                           (marks->start[k] != 0 ? " ran" : " never ran");
              }
            }
          }
          std::string deps;
          if (auto info = ask<op_info>(co(), describe_atom::value, ids[i])) {
            for (op_id d : info->deps) deps += " " + std::to_string(d.value);
          }
          for (std::size_t k = other; k < i; ++k) {
            if (auto info = ask<op_info>(co(), describe_atom::value, ids[k])) {
              deps += "\n  " + std::to_string(ids[k].value) + " after";
              for (op_id d : info->deps) deps += " " + std::to_string(d.value);
              for (const auto& d : info->inferred) {
                deps += " [" + std::to_string(d.dep.value) + (d.order_only ? "o]" : "d]");
              }
            }
          }
          BOOST_ERROR(say(i) << " started " << (before - start) << " ns before " << say(other)
                             << " ended, on buffer " << b << " byte " << x << "; it came after"
                             << inferred << ", its dependencies" << deps
                             << "; users of the byte:" << between);
        }
      }
    }
    for (std::size_t u = 0; u < ops[i].uses.size(); ++u) {
      const std::size_t b = ops[i].which[u];
      for (std::uint64_t x = ops[i].ranges[u].first; x < ops[i].ranges[u].second; ++x) {
        if (writes(ops[i].uses[u].access)) {
          writer_end[b][x] = end;
          writer_of[b][x] = i;
          readers_end[b][x] = 0;
        } else if (end > readers_end[b][x]) {
          readers_end[b][x] = end;
          reader_of[b][x] = i;
        }
      }
    }
  }
  BOOST_TEST(overlaps == 0u);
  std::size_t failed = 0, cancelled = 0;
  for (op_state s : expected) {
    failed += s == op_state::failed ? 1 : 0;
    cancelled += s == op_state::cancelled ? 1 : 0;
  }
  std::printf(
      "buffer_random: %zu graphs, %zu ops (%zu failed, %zu cancelled), %zu wrong ends, "
      "%zu wrong bytes, %zu conflicting overlaps\n",
      graph_count, ops.size(), failed, cancelled, wrong_end, wrong_bytes, overlaps);
  BOOST_TEST(failed > 0u);     // the run exercised failures
  BOOST_TEST(cancelled > 0u);  // and the poison they leave
}

BOOST_AUTO_TEST_CASE(released_memory_is_never_seen_by_a_user_of_the_buffer_before) {
  const std::uint64_t seed = seed_of();
  std::mt19937_64 rng{seed};
  std::atomic<std::uint64_t> saw_pattern{0}, reads{0};
  std::size_t reused = 0, reused_after_wait = 0;
  constexpr std::uint64_t size = 4096;
  // 100 rounds, and more (up to 400) until one has reused the memory: a stream hands out its
  // oldest freed block of a size first (the blocks of earlier rounds), and on a loaded machine
  // 100 rounds once saw no reuse of the block just released at all.
  int rounds = 0;
  for (int round = 0; round < 100 || (reused == 0 && round < 400); ++round, ++rounds) {
    const stream_id home{static_cast<std::uint32_t>(rng() % 4)};
    auto a = ask<buffer_handle>(co(), alloc_atom::value, home, size);
    BOOST_REQUIRE_MESSAGE(a, why(a));
    const auto* bytes = a->as<std::uint8_t>();
    op_spec fill = spec_of(work::local([mine = a->as<std::uint8_t>()](const gpu::launch_context&) {
      std::memset(mine, 0x5A, size);
      return gpu::status{};
    }));
    fill.uses.push_back(buffer_use::write(a->id));
    std::vector<op_id> users{add(std::move(fill))};
    // Readers on every stream, slow, checking every byte again and again.
    for (std::uint32_t s = 0; s < 4; ++s) {
      const auto busy = std::chrono::microseconds{rng() % 400};
      op_spec r =
          spec_of(work::local([bytes, busy, &saw_pattern, &reads](const gpu::launch_context&) {
            const auto until = std::chrono::steady_clock::now() + busy;
            do {
              for (std::uint64_t i = 0; i < size; ++i) {
                if (bytes[i] == pattern) ++saw_pattern;
              }
              ++reads;
            } while (std::chrono::steady_clock::now() < until);
            return gpu::status{};
          }));
      r.uses.push_back(buffer_use::read(a->id));
      r.placement.pinned = true;
      r.placement.stream = stream_id{s};
      users.push_back(add(std::move(r)));
    }
    auto release = ask<op_id>(co(), release_atom::value, a->id);
    BOOST_REQUIRE_MESSAGE(release, why(release));
    // The next owner of the same size on the same stream writes the pattern at once. Asked
    // for at a random moment: sometimes while the readers still run (the memory must not come
    // back yet), sometimes after the release (it may). Every fourth round waits for the
    // release to end and for its stream to pass the free that follows it, so that the memory
    // is reusable in some rounds however slow the machine is.
    const bool waited = round % 4 == 3;
    if (waited) {
      BOOST_REQUIRE(ask<op_notice>(co(), await_atom::value, *release, wait_limit{}));
      BOOST_REQUIRE(ask<completion>(rt().stream(home.value), synchronize_atom::value));
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds{rng() % 1500});
    }
    auto b = ask<buffer_handle>(co(), alloc_atom::value, home, size);
    BOOST_REQUIRE_MESSAGE(b, why(b));
    if (b->address == a->address) {
      ++reused;
      if (waited) ++reused_after_wait;
    }
    op_spec stomp =
        spec_of(work::local([theirs = b->as<std::uint8_t>()](const gpu::launch_context&) {
          std::memset(theirs, pattern, size);
          return gpu::status{};
        }));
    stomp.uses.push_back(buffer_use::write(b->id));
    users.push_back(add(std::move(stomp)));
    for (const auto& [id, n] : collect(users)) {
      BOOST_TEST((n.state == op_state::completed), "op " << id << ": " << render(n.cause));
    }
    auto gone = ask<op_id>(co(), release_atom::value, b->id);
    BOOST_REQUIRE(gone);
    auto ended = ask<op_notice>(co(), await_atom::value, *gone, wait_limit{});
    BOOST_REQUIRE(ended);
    // The first buffer's release has ended by now: the second came after its memory was
    // reclaimed (or was new memory).
    auto first = ask<op_notice>(co(), await_atom::value, *release, wait_limit{});
    BOOST_REQUIRE(first);
    BOOST_TEST((first->state == op_state::completed));
  }
  std::printf(
      "reclamation: %zu of %d rounds reused the released memory (%zu of those that waited "
      "for it), %llu reads, %llu saw the pattern\n",
      reused, rounds, reused_after_wait, static_cast<unsigned long long>(reads.load()),
      static_cast<unsigned long long>(saw_pattern.load()));
  BOOST_TEST(saw_pattern.load() == 0u);
  BOOST_TEST(reads.load() >= 400u);
  BOOST_TEST(reused > 0u);  // the memory did come back: the check could have failed
}

BOOST_AUTO_TEST_SUITE_END()
