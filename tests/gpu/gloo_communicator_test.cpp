// The host backend's collective engine, ranks as threads of this process over TCP on
// 127.0.0.1, meeting through a memory_store: every collective kind, reduction and element
// type against values computed here; a rank that never comes fails the others within the
// timeout, naming the call; an abort ends a call in progress, its own rank's and the peers',
// at once and breaks the communicator; a rank that goes fails every other rank's call at once,
// its ring neighbours' and the rest; a new generation works after a broken one. (collective_test
// runs ranks as processes.)
#define BOOST_TEST_MODULE gloo_communicator
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cudactor/gpu/element_math.hpp"
#include "cudactor/gpu/gloo_communicator.hpp"
#include "cudactor/gpu/host_backend.hpp"

using namespace cudactor::gpu;
using namespace std::chrono_literals;

namespace {

// Makes `size` ranks of one group and runs body(rank, communicator) on each, in threads.
// Returns the communicators' outcomes of making, per rank.
std::vector<status> on_ranks(int size, const std::string& name, std::uint64_t generation,
                             rendezvous_store& store, std::chrono::milliseconds timeout,
                             const std::function<void(int, communicator&)>& body) {
  std::vector<status> made(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      gloo_options o;
      o.name = name;
      o.generation = generation;
      o.rank = r;
      o.size = size;
      o.timeout = timeout;
      o.rendezvous_timeout = 10s;
      auto c = make_gloo_communicator(o, store);
      if (!c) {
        made[static_cast<std::size_t>(r)] = c.error();
        return;
      }
      body(r, *c.value());
    });
  }
  for (auto& t : threads) t.join();
  return made;
}

// What the rank threads check: Boost.Test's tools are not thread-safe (two threads in
// BOOST_TEST at once corrupt its checkpoint: a length_error and an abort, 1 run in 40), so the
// ranks record here and the test's own thread reports.
class rank_checks {
 public:
  void expect(bool ok, const std::string& what) {
    std::lock_guard<std::mutex> lock{mutex_};
    ++count_;
    if (!ok && failed_.size() < 20) failed_.push_back(what);
  }
  // On the test's thread, after the ranks have joined.
  void report(std::size_t at_least) {
    BOOST_TEST(count_ >= at_least);
    for (const auto& f : failed_) BOOST_ERROR(f);
  }

 private:
  std::mutex mutex_;
  std::size_t count_ = 0;
  std::vector<std::string> failed_;
};

// A call made on this thread, as a host stream's worker makes it.
status run_here(communicator& c, const collective_call& call) {
  return c.run(call, launch_context{backend_kind::host, stream_ref{}, nullptr});
}

// Element i of rank r's input, exact in every type: small integers.
double input(int r, std::size_t i) {
  return static_cast<double>((r + 1) + static_cast<int>(i % 5));
}

void put(element_type t, void* p, std::size_t i, double v) {
  switch (t) {
    case element_type::f32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case element_type::f64: static_cast<double*>(p)[i] = v; break;
    case element_type::f16:
      static_cast<std::uint16_t*>(p)[i] = float_to_half(static_cast<float>(v));
      break;
    case element_type::bf16:
      static_cast<std::uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v));
      break;
    case element_type::i32: static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v); break;
    case element_type::i64: static_cast<std::int64_t*>(p)[i] = static_cast<std::int64_t>(v); break;
    case element_type::u8: static_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(v); break;
  }
}

double get(element_type t, const void* p, std::size_t i) {
  switch (t) {
    case element_type::f32: return static_cast<const float*>(p)[i];
    case element_type::f64: return static_cast<const double*>(p)[i];
    case element_type::f16: return half_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case element_type::bf16: return bf16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case element_type::i32: return static_cast<const std::int32_t*>(p)[i];
    case element_type::i64: return static_cast<double>(static_cast<const std::int64_t*>(p)[i]);
    case element_type::u8: return static_cast<const std::uint8_t*>(p)[i];
  }
  return 0;
}

bool is_integer(element_type t) {
  return t == element_type::i32 || t == element_type::i64 || t == element_type::u8;
}

// The reduction over ranks 0..size-1 of element i, as the engine must compute it: floats
// exactly (every value and partial result is a small integer or half of one), integers in
// their own width (u8 products wrap modulo 256, as the engine's do at every step).
template <class T>
T combine(reduce_op op, T acc, T v) {
  switch (op) {
    case reduce_op::sum:
    case reduce_op::avg: return acc + v;
    case reduce_op::prod: return acc * v;
    case reduce_op::min: return std::min(acc, v);
    case reduce_op::max: return std::max(acc, v);
  }
  return acc;
}

double reduced(reduce_op op, element_type t, int size, std::size_t i) {
  if (is_integer(t)) {
    auto acc = static_cast<std::int64_t>(input(0, i));
    for (int r = 1; r < size; ++r) {
      acc = combine(op, acc, static_cast<std::int64_t>(input(r, i)));
      if (t == element_type::u8) acc &= 0xff;
    }
    if (op == reduce_op::avg) acc /= size;
    return static_cast<double>(acc);
  }
  double acc = input(0, i);
  for (int r = 1; r < size; ++r) acc = combine(op, acc, input(r, i));
  if (op == reduce_op::avg) acc /= size;
  return acc;
}

constexpr element_type all_types[] = {element_type::f32,  element_type::f64, element_type::f16,
                                      element_type::bf16, element_type::i32, element_type::i64,
                                      element_type::u8};
constexpr reduce_op all_ops[] = {reduce_op::sum, reduce_op::prod, reduce_op::min, reduce_op::max,
                                 reduce_op::avg};

}  // namespace

BOOST_AUTO_TEST_CASE(every_kind_op_and_type_equals_the_values_computed_here) {
  constexpr int size = 4;
  constexpr std::size_t count = 37;  // not a multiple of anything Gloo segments by
  memory_store store;
  std::vector<std::string> wrong[size];
  std::size_t checked[size] = {};
  const auto made = on_ranks(size, "kinds", 1, store, 10s, [&](int r, communicator& c) {
    auto& bad = wrong[r];
    auto expect = [&](bool ok, const std::string& what) {
      if (!ok && bad.size() < 10) bad.push_back(what);
      ++checked[r];
    };
    for (element_type t : all_types) {
      const std::size_t es = element_size(t);
      std::vector<char> send(count * size * es), recv(count * size * es);
      for (std::size_t i = 0; i < count * size; ++i) put(t, send.data(), i, input(r, i % count));
      const std::string ty{to_string(t)};
      for (reduce_op op : all_ops) {
        const std::string name = ty + " " + std::string{to_string(op)};
        // all_reduce, out of place then in place
        collective_call call{
            collective_kind::all_reduce, op, t, send.data(), recv.data(), count, 0};
        auto s = run_here(c, call);
        expect(s.ok(), "all_reduce " + name + ": " + s.to_string());
        for (std::size_t i = 0; i < count; ++i) {
          expect(get(t, recv.data(), i) == reduced(op, t, size, i), "all_reduce " + name);
        }
        std::vector<char> inplace(send.begin(), send.begin() + static_cast<long>(count * es));
        call.send = call.recv = inplace.data();
        s = run_here(c, call);
        expect(s.ok(), "in-place all_reduce " + name + ": " + s.to_string());
        for (std::size_t i = 0; i < count; ++i) {
          expect(get(t, inplace.data(), i) == reduced(op, t, size, i), "in-place " + name);
        }
        // reduce to root 2: the root's output only
        std::fill(recv.begin(), recv.end(), 0);
        call = collective_call{collective_kind::reduce, op, t, send.data(), recv.data(), count, 2};
        s = run_here(c, call);
        expect(s.ok(), "reduce " + name + ": " + s.to_string());
        for (std::size_t i = 0; i < count && r == 2; ++i) {
          expect(get(t, recv.data(), i) == reduced(op, t, size, i), "reduce " + name);
        }
        for (std::size_t i = 0; i < count && r != 2; ++i) {
          expect(get(t, recv.data(), i) == 0, "reduce " + name + " wrote a non-root's output");
        }
        // reduce_scatter: this rank's part of the reduction of count x size elements
        call = collective_call{
            collective_kind::reduce_scatter, op, t, send.data(), recv.data(), count, 0};
        s = run_here(c, call);
        expect(s.ok(), "reduce_scatter " + name + ": " + s.to_string());
        for (std::size_t i = 0; i < count; ++i) {
          const std::size_t whole = static_cast<std::size_t>(r) * count + i;
          expect(get(t, recv.data(), i) == reduced(op, t, size, whole % count),
                 "reduce_scatter " + name);
        }
      }
      // broadcast from root 1, in place on every rank
      std::vector<char> b(count * es);
      for (std::size_t i = 0; i < count; ++i) put(t, b.data(), i, r == 1 ? input(1, i) : 0);
      auto s =
          run_here(c, {collective_kind::broadcast, reduce_op::sum, t, nullptr, b.data(), count, 1});
      expect(s.ok(), "broadcast " + ty + ": " + s.to_string());
      for (std::size_t i = 0; i < count; ++i) {
        expect(get(t, b.data(), i) == input(1, i), "broadcast " + ty);
      }
      // all_gather: rank q's elements at q x count
      s = run_here(
          c, {collective_kind::all_gather, reduce_op::sum, t, send.data(), recv.data(), count, 0});
      expect(s.ok(), "all_gather " + ty + ": " + s.to_string());
      for (int q = 0; q < size; ++q) {
        for (std::size_t i = 0; i < count; ++i) {
          expect(get(t, recv.data(), static_cast<std::size_t>(q) * count + i) == input(q, i),
                 "all_gather " + ty);
        }
      }
    }
    const auto s = run_here(
        c, {collective_kind::barrier, reduce_op::sum, element_type::f32, nullptr, nullptr, 0, 0});
    expect(s.ok(), "barrier: " + s.to_string());
    // Every rank ran the same calls: the sequences agree.
    expect(c.sequence() == 7 * (5 * 4 + 2) + 1, "sequence " + std::to_string(c.sequence()));
  });
  for (int r = 0; r < size; ++r) {
    BOOST_TEST_INFO("rank " << r);
    BOOST_TEST(made[r].ok(), made[r].to_string());
    // Per type: 5 reductions x (2 all_reduce, reduce, reduce_scatter), broadcast, all_gather;
    // then the barrier and the sequence.
    BOOST_TEST(checked[r] == 7 * (5 * (4 + 4 * count) + (1 + count) + (1 + size * count)) + 2);
    for (const auto& w : wrong[r]) BOOST_ERROR("rank " << r << ": " << w);
  }
}

BOOST_AUTO_TEST_CASE(bad_calls_are_refused_before_anything_is_sent) {
  memory_store store;
  rank_checks k;
  on_ranks(2, "bad", 1, store, 5s, [&](int, communicator& c) {
    float x[4] = {};
    auto refused = [&](const collective_call& call, const char* what) {
      k.expect(run_here(c, call).code() == status_code::invalid_argument, what);
    };
    refused({collective_kind::all_reduce, reduce_op::sum, element_type::f32, x, x, 0, 0},
            "no element");
    refused({collective_kind::broadcast, reduce_op::sum, element_type::f32, x, x, 4, 2},
            "a root outside the group");
    refused({collective_kind::all_gather, reduce_op::sum, element_type::f32, x, x, 2, 0},
            "an in-place all_gather");
    refused({collective_kind::all_reduce, static_cast<reduce_op>(9), element_type::f32, x, x, 4, 0},
            "an unknown reduction");
    // Refused calls start nothing: the ranks are still in step.
    k.expect(c.sequence() == 0u, "refused calls counted");
    k.expect(c.broken().ok(), "broken by a refused call");
    k.expect(
        run_here(c, {collective_kind::all_reduce, reduce_op::sum, element_type::f32, x, x, 4, 0})
            .ok(),
        "a good call after the refused ones");
  });
  k.report(14);
  gloo_options o;
  o.name = "a/b";
  BOOST_TEST((make_gloo_communicator(o, store).error().code() == status_code::invalid_argument));
  o.name = "ok";
  o.rank = 2;
  o.size = 2;
  BOOST_TEST((make_gloo_communicator(o, store).error().code() == status_code::invalid_argument));
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_comes_fails_the_rendezvous_within_its_limit) {
  memory_store store;
  gloo_options o;
  o.name = "alone";
  o.rank = 0;
  o.size = 2;
  o.rendezvous_timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  auto made = make_gloo_communicator(o, store);
  const status why = made ? status{} : made.error();
  const auto took = std::chrono::steady_clock::now() - start;
  BOOST_REQUIRE(!why.ok());
  BOOST_TEST((why.code() == status_code::timeout || why.code() == status_code::op_failed), why.to_string());
  BOOST_TEST(why.to_string().find("alone") != std::string::npos, why.to_string());
  BOOST_TEST((took < 10s));
}

BOOST_AUTO_TEST_CASE(a_rank_that_stops_calling_fails_the_others_and_a_new_generation_works) {
  memory_store store;
  std::vector<status> outcome(3);
  std::vector<status> after(3);
  rank_checks k;
  on_ranks(3, "group", 1, store, 500ms, [&](int r, communicator& c) {
    float x[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const collective_call call{
        collective_kind::all_reduce, reduce_op::sum, element_type::f32, x, x, 8, 0};
    const bool first = run_here(c, call).ok();
    k.expect(first, "the first all_reduce");
    if (!first || r == 2) return;  // rank 2 does not take part in the second call
    const auto start = std::chrono::steady_clock::now();
    outcome[static_cast<std::size_t>(r)] = run_here(c, call);
    k.expect((std::chrono::steady_clock::now() - start) < 10s, "the failure took 10 s or more");
    // Broken now: the next call fails at once with the same cause.
    after[static_cast<std::size_t>(r)] = run_here(c, call);
  });
  k.report(5);
  for (int r = 0; r < 2; ++r) {
    BOOST_TEST(!outcome[r].ok());
    BOOST_TEST(outcome[r].to_string().find("all_reduce #2") != std::string::npos,
               outcome[r].to_string());
    BOOST_TEST(after[r].to_string() == outcome[r].to_string());
  }
  // The group rebuilt: generation 2 meets under its own keys and runs.
  rank_checks k2;
  on_ranks(3, "group", 2, store, 5s, [&](int, communicator& c) {
    std::int64_t x[3] = {1, 2, 3};
    k2.expect(
        run_here(c, {collective_kind::all_reduce, reduce_op::sum, element_type::i64, x, x, 3, 0})
            .ok(),
        "generation 2's all_reduce");
    k2.expect(x[0] == 3 && x[2] == 9, "generation 2's values");
    k2.expect(c.generation() == 2u, "generation 2");
  });
  k2.report(9);
}

BOOST_AUTO_TEST_CASE(an_abort_fails_the_peers_call_and_every_later_call_here) {
  memory_store store;
  std::promise<void> finished;
  auto finished_ready = finished.get_future();
  std::vector<status> outcome(2);
  std::chrono::steady_clock::duration took{};
  on_ranks(2, "abort", 1, store, 20s, [&](int r, communicator& c) {
    double x[4] = {};
    const collective_call call{
        collective_kind::all_reduce, reduce_op::sum, element_type::f64, x, x, 4, 0};
    if (r == 0) {
      // Aborted before it takes part: rank 1's all_reduce, waiting for it, fails when the
      // connections close, long before its 20 s timeout. Rank 0 keeps the communicator
      // object until then: only the abort ends rank 1's call.
      std::this_thread::sleep_for(200ms);
      c.abort("the test stopped it");
      outcome[0] = run_here(c, call);
      finished_ready.wait();
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    outcome[1] = run_here(c, call);
    took = std::chrono::steady_clock::now() - start;
    finished.set_value();
  });
  BOOST_TEST((took < 10s));  // well before the 20 s timeout
  BOOST_TEST((outcome[0].code() == status_code::cancelled), outcome[0].to_string());
  BOOST_TEST(outcome[0].to_string().find("the test stopped it") != std::string::npos);
  BOOST_TEST(!outcome[1].ok());
  BOOST_TEST(outcome[1].to_string().find("rank 1 of 'abort': all_reduce #1") != std::string::npos,
             outcome[1].to_string());
}

// A rank that is hung (its connections open, it never calls), as the cluster sees a node
// stopped by SIGSTOP: the cluster aborts the survivors' communicators when it declares the
// node lost. The abort must end the call in progress on each aborted rank itself, also the one
// waiting on the hung rank alone (rank 1 sends to it), not leave it to its timeout.
BOOST_AUTO_TEST_CASE(an_abort_ends_the_call_in_progress_on_its_own_rank_at_once) {
  memory_store store;
  std::promise<void> finished;
  auto finished_ready = finished.get_future().share();
  std::vector<status> outcome(3);
  std::vector<std::chrono::steady_clock::duration> took(3);
  std::atomic<int> ended{0};
  on_ranks(3, "hung", 1, store, 20s, [&](int r, communicator& c) {
    if (r == 2) {  // hung: keeps its connections open until the others have ended
      finished_ready.wait();
      return;
    }
    std::thread aborter{[&c, r] {
      std::this_thread::sleep_for(r == 0 ? 300ms : 400ms);
      c.abort("rank 2 lost");
    }};
    aborter.detach();  // ends 400 ms in at most; c outlives it (this thread waits `finished`)
    double x[64] = {};
    const collective_call call{
        collective_kind::all_reduce, reduce_op::sum, element_type::f64, x, x, 64, 0};
    const auto start = std::chrono::steady_clock::now();
    outcome[static_cast<std::size_t>(r)] = run_here(c, call);
    took[static_cast<std::size_t>(r)] = std::chrono::steady_clock::now() - start;
    if (++ended == 2) finished.set_value();
    finished_ready.wait();
  });
  for (int r = 0; r < 2; ++r) {
    BOOST_TEST_MESSAGE(
        "rank " << r << " failed after "
                << std::chrono::duration_cast<std::chrono::milliseconds>(took[r]).count()
                << " ms: " << outcome[r].to_string());
    BOOST_TEST(!outcome[r].ok());
    BOOST_TEST((took[r] < 10s));  // the timeout is 20 s
  }
  for (int r = 0; r < 2; ++r) {
    BOOST_TEST(outcome[r].to_string().find("aborted: rank 2 lost") != std::string::npos,
               outcome[r].to_string());
  }
}

// Four ranks in Gloo's ring (each receives from rank - 1): rank 2 goes (its connections
// close) while 0, 1 and 3 are in an all-reduce. 1 and 3 read that at once; rank 0, which
// waits on 3, must learn it from 3 closing its connections as its call fails, not at its own
// timeout.
BOOST_AUTO_TEST_CASE(a_lost_rank_fails_the_ranks_that_are_not_its_neighbours_at_once_too) {
  memory_store store;
  std::promise<void> finished;
  auto finished_ready = finished.get_future().share();
  std::vector<status> outcome(4);
  std::vector<std::chrono::steady_clock::duration> took(4);
  std::atomic<int> ended{0};
  on_ranks(4, "ring", 1, store, 20s, [&](int r, communicator& c) {
    if (r == 2) {
      std::this_thread::sleep_for(300ms);
      c.abort("gone");  // as its process ending would: every connection closes
      finished_ready.wait();
      return;
    }
    float x[256] = {};
    const collective_call call{
        collective_kind::all_reduce, reduce_op::sum, element_type::f32, x, x, 256, 0};
    const auto start = std::chrono::steady_clock::now();
    outcome[static_cast<std::size_t>(r)] = run_here(c, call);
    took[static_cast<std::size_t>(r)] = std::chrono::steady_clock::now() - start;
    if (++ended == 3) finished.set_value();
    finished_ready.wait();
  });
  for (int r : {0, 1, 3}) {
    BOOST_TEST_MESSAGE(
        "rank " << r << " failed after "
                << std::chrono::duration_cast<std::chrono::milliseconds>(took[r]).count()
                << " ms: " << outcome[r].to_string());
    BOOST_TEST(!outcome[r].ok(), "rank " << r);
    BOOST_TEST((took[r] < 10s), "rank " << r);  // the timeout is 20 s
  }
}

// A collective as a stream's work: on each rank's own host backend, the work before it on the
// stream has written its input, the work after it reads its output, and a failed collective
// is the stream's failure at that point while the stream goes on.
BOOST_AUTO_TEST_CASE(collectives_run_in_stream_order_on_host_streams) {
  constexpr int size = 3;
  constexpr std::size_t count = 1000;
  memory_store store;
  std::vector<std::string> wrong(size);
  std::vector<status> failed_sync(size), later_sync(size);
  std::vector<std::thread> ranks;
  for (int r = 0; r < size; ++r) {
    ranks.emplace_back([&, r] {
      auto fail = [&](const std::string& what) {
        if (wrong[r].empty()) wrong[r] = what;
      };
      gloo_options o;
      o.name = "streams";
      o.rank = r;
      o.size = size;
      o.timeout = 5s;
      auto made = make_gloo_communicator(o, store);
      if (!made) return fail(made.error().to_string());
      std::shared_ptr<communicator> comm = std::move(made.value());
      host_backend device;
      auto s = device.create_stream({"rank-" + std::to_string(r)});
      if (!s) return fail(s.error().to_string());
      std::vector<float> data(count), seen(count);
      // Written by the stream's work before the collective, read by its work after.
      (void)device.enqueue(s.value().ref(), [&](const launch_context&) {
        for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>(r + 1) * (i % 7);
        return status{};
      });
      (void)device.enqueue(
          s.value().ref(),
          collective_work(comm, {collective_kind::all_reduce, reduce_op::sum, element_type::f32,
                                 data.data(), data.data(), count, 0}));
      (void)device.enqueue(s.value().ref(), [&](const launch_context&) {
        seen = data;
        return status{};
      });
      if (auto done = device.synchronize(s.value().ref()); !done.ok()) {
        return fail(done.to_string());
      }
      for (std::size_t i = 0; i < count; ++i) {
        // (1 + 2 + 3) x (i % 7)
        if (seen[i] != 6.0f * static_cast<float>(i % 7))
          return fail("element " + std::to_string(i));
      }
      // Rank 2 aborts: the others' next collective fails, as does its own; the work after
      // it on each stream still runs.
      if (r == 2) comm->abort("rank 2 leaves");
      bool after = false;
      (void)device.enqueue(s.value().ref(),
                           collective_work(comm, {collective_kind::barrier, reduce_op::sum,
                                                  element_type::f32, nullptr, nullptr, 0, 0}));
      // The stream reports a failed work at its next point.
      auto point = device.signal(s.value().ref());
      if (!point) return fail(point.error().to_string());
      (void)device.enqueue(s.value().ref(), [&](const launch_context&) {
        after = true;
        return status{};
      });
      auto later = device.signal(s.value().ref());
      if (!later) return fail(later.error().to_string());
      if (auto done = device.synchronize(s.value().ref()); !done.ok()) {
        return fail(done.to_string());
      }
      auto timeline = device.timeline_of(s.value().ref());
      if (!timeline) return fail(timeline.error().to_string());
      failed_sync[r] = timeline.value()->query(point.value()).error;
      later_sync[r] = timeline.value()->query(later.value()).error;
      if (!after) fail("the work after a failed collective did not run");
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < size; ++r) {
    BOOST_TEST_INFO("rank " << r);
    BOOST_TEST(wrong[r].empty(), wrong[r]);
    BOOST_TEST(!failed_sync[r].ok());
    const std::string why = failed_sync[r].to_string();
    BOOST_TEST((why.find("barrier #2") != std::string::npos ||
                why.find("rank 2 leaves") != std::string::npos),
               why);
    BOOST_TEST(later_sync[r].ok(), later_sync[r].to_string());
  }
}

BOOST_AUTO_TEST_CASE(gloo_refuses_a_cuda_stream) {
  memory_store store;
  status s;
  on_ranks(1, "cuda", 1, store, 1s, [&](int, communicator& c) {
    float x[2] = {};
    s = c.run({collective_kind::all_reduce, reduce_op::sum, element_type::f32, x, x, 2, 0},
              launch_context{backend_kind::cuda, stream_ref{}, nullptr});
  });
  BOOST_TEST((s.code() == status_code::not_supported), s.to_string());
}

BOOST_AUTO_TEST_CASE(half_floats_round_to_nearest_even) {
  BOOST_TEST(half_to_float(float_to_half(1.0f)) == 1.0f);
  BOOST_TEST(half_to_float(float_to_half(65504.0f)) == 65504.0f);
  BOOST_TEST(std::isinf(half_to_float(float_to_half(65520.0f))));
  BOOST_TEST(half_to_float(float_to_half(1.0f + 1.0f / 2048)) == 1.0f);  // tie: to even
  BOOST_TEST(half_to_float(float_to_half(1.0f + 3.0f / 2048)) == 1.0f + 2.0f / 1024);
  BOOST_TEST(half_to_float(float_to_half(5.960464477539063e-08f)) == 5.960464477539063e-08f);
  BOOST_TEST(half_to_float(float_to_half(-2.5f)) == -2.5f);
  BOOST_TEST(bf16_to_float(float_to_bf16(3.0f)) == 3.0f);
  BOOST_TEST(bf16_to_float(float_to_bf16(1.0f + 1.0f / 256)) == 1.0f);  // tie: to even
  BOOST_TEST(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
}
