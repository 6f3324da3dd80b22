// bench/stream_bench.cpp
//
// Throughput of submit -> completion delivered to the requester, through the stream actors,
// against driving the same backend and completion poller directly, in the same run. Host
// backend; every operation is a no-op host "kernel", so what is measured is the machinery.
//
// Actor path: one client actor per stream keeps up to `depth` operations in flight. It sends
// submit (one work per message, or 64 per message) as plain messages, so the tickets come
// back as ordinary messages, and learns of completions from the stream's completion
// batches (subscribe), one message per stream per poller tick.
//
// Direct path: one thread does what the stream actor does (enqueue, signal, one watch per
// burst) for the same streams, with the same depth and batching; completions arrive through
// the poller's progress callback, which updates an atomic the thread reads. With nothing to
// submit the thread blocks on a condition variable the callback signals, as a CAF worker
// blocks between messages: no fixed sleeps, and no spinning that takes the poller's core.
//
// Options after "--" go to every runtime started, e.g. -- --cudactor.host.idle-spin=50us.
//
// Records: what one event use costs through a stream actor (record_atom, the lease released
// back to the pool in batches of 64) with 64 requests in flight, and with 64 events asked in
// one message, against the backend's record of an event made up front, on the same stream,
// in ns per use.
//
// Also: the CAF scheduler settings tried (workers, policy) for one stream, one op per message.
#include <caf/all.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/host_runs.hpp"
#include "common/report.hpp"
#include "cudactor/actors/runtime.hpp"

namespace {

using namespace cudactor;
using bench::direct_run;
using bench::fixed;
using bench::now_ns;
using bench::samples;

constexpr std::uint64_t depth = bench::depth;

work noop_work() {
  return work::local([](const gpu::launch_context&) { return gpu::status{}; });
}

// --- actor path ------------------------------------------------------------------------------

struct client_report {
  std::promise<void> done;
};

caf::behavior client(caf::event_based_actor* self, stream_actor stream, std::uint64_t total,
                     std::size_t batch, std::shared_ptr<client_report> report) {
  struct progress {
    std::uint64_t sent = 0;
    std::uint64_t completed = 0;
    timeline_point base = 0;
    bool finished = false;
  };
  auto st = std::make_shared<progress>();
  auto one = noop_work();
  auto many = std::make_shared<std::vector<work>>(batch, one);
  auto pump = [=] {
    while (st->sent < total && st->sent - st->completed + batch <= depth) {
      if (batch == 1) {
        self->send(stream, submit_atom::value, one);
      } else {
        self->send(stream, submit_atom::value, *many);
      }
      st->sent += batch;
    }
  };
  self->send(stream, subscribe_atom::value, caf::actor_cast<completion_listener>(self));
  // The stream's status says where its timeline starts for this client.
  self->request(stream, caf::infinite, status_atom::value).then([=](const stream_status& s) {
    st->base = s.accepted;
    pump();
  });
  return {
      [](const ticket&) {},
      [](const std::vector<ticket>&) {},
      [=](const completion_batch& b) {
        if (st->finished || b.reached <= st->base) return;
        st->completed = b.reached - st->base;
        if (st->completed >= total) {
          st->finished = true;
          self->send(stream, unsubscribe_atom::value, caf::actor_cast<completion_listener>(self));
          report->done.set_value();
          self->quit();
          return;
        }
        pump();
      },
  };
}

// Operations per second through `streams` stream actors of `rt`, `total` per stream.
double actor_run(runtime& rt, std::size_t streams, std::uint64_t total, std::size_t batch) {
  std::vector<std::shared_ptr<client_report>> reports;
  std::vector<std::future<void>> done;
  const auto start = now_ns();
  for (std::size_t i = 0; i < streams; ++i) {
    reports.push_back(std::make_shared<client_report>());
    done.push_back(reports.back()->done.get_future());
    rt.system().spawn(client, rt.stream(i), total, batch, reports.back());
  }
  for (auto& f : done) f.wait();
  const double seconds = (now_ns() - start) * 1e-9;
  return static_cast<double>(total * streams) / seconds;
}

}  // namespace

constexpr std::uint32_t record_window = 64;

[[noreturn]] void record_failed(runtime& rt, const char* what, const caf::error& err) {
  std::fprintf(stderr, "%s: %s\n", what, rt.system().render(err).c_str());
  std::exit(1);
}

// ns per use through stream 0's actor: one request per event, the window's requests sent
// before the first answer is taken, or (`batched`) one message for the window's events.
double actor_records(runtime& rt, std::uint32_t uses, bool batched) {
  caf::scoped_actor self{rt.system()};
  const auto stream = rt.stream(0);
  const auto on_error = [&](caf::error& err) { record_failed(rt, "record", err); };
  const auto start = now_ns();
  for (std::uint32_t done = 0; done < uses; done += record_window) {
    std::vector<event_lease> leased;
    leased.reserve(record_window);
    if (batched) {
      self->request(stream, std::chrono::seconds{10}, record_atom::value,
                    gpu::event_kind::regular, record_window)
          .receive([&](std::vector<event_lease>& es) { leased = std::move(es); }, on_error);
    } else {
      using handle = decltype(self->request(stream, std::chrono::seconds{10}, record_atom::value,
                                            gpu::event_kind::regular));
      std::vector<handle> asked;
      asked.reserve(record_window);
      for (std::uint32_t i = 0; i < record_window; ++i) {
        asked.push_back(self->request(stream, std::chrono::seconds{10}, record_atom::value,
                                      gpu::event_kind::regular));
      }
      for (auto& h : asked) h.receive([&](event_lease& e) { leased.push_back(e); }, on_error);
    }
    self->request(rt.event_pool(), std::chrono::seconds{10}, release_atom::value,
                  std::move(leased))
        .receive([] {}, [&](caf::error& err) { record_failed(rt, "release", err); });
  }
  return static_cast<double>(now_ns() - start) / uses;
}

// ns per use of the backend's record, on a stream of its own, events made up front.
double backend_records(gpu::backend& device, std::uint32_t uses) {
  auto s = device.create_stream(gpu::stream_options{"record-bench", gpu::stream_priority::normal});
  if (!s.ok()) {
    std::fprintf(stderr, "create_stream: %s\n", s.error().to_string().c_str());
    std::exit(1);
  }
  std::vector<gpu::event> events;
  for (std::uint32_t i = 0; i < record_window; ++i) {
    auto e = device.create_event(gpu::event_kind::regular);
    if (!e.ok()) std::exit(1);
    events.push_back(std::move(e.value()));
  }
  const auto start = now_ns();
  for (std::uint32_t done = 0; done < uses; ++done) {
    if (!device.record(events[done % record_window], s.value()).ok()) std::exit(1);
  }
  const double ns = static_cast<double>(now_ns() - start) / uses;
  (void)device.synchronize(s.value());
  return ns;
}

int main(int argc, char** argv) {
  const auto mode = bench::run_mode::parse(argc, argv);
  const std::uint64_t n = mode.quick ? 60'000 : 400'000;  // per stream
  const int rounds = mode.quick ? 5 : 7;
  const std::size_t b = 64;

  // The shipped defaults; the actor and direct paths take turns within each round.
  samples direct_1, actor_1, direct_b1, batch_1, direct_8, actor_8, direct_b8, batch_8;
  std::size_t workers = 0;
  std::string backend;
  for (int round = 0; round < rounds; ++round) {
    runtime_config config;
    auto rt = bench::start_runtime(config, {"--cudactor.streams=8"}, mode.passed_on);
    workers = rt->system().scheduler().num_workers();
    backend = rt->backend_reason();
    actor_run(*rt, 1, n / 4, 1);  // warm-up
    direct_run(rt->device(), rt->poller(), 1, n / 4, 1);
    direct_1.add(direct_run(rt->device(), rt->poller(), 1, n, 1));
    actor_1.add(actor_run(*rt, 1, n, 1));
    direct_b1.add(direct_run(rt->device(), rt->poller(), 1, n, b));
    batch_1.add(actor_run(*rt, 1, n, b));
    direct_8.add(direct_run(rt->device(), rt->poller(), 8, n / 4, 1));
    actor_8.add(actor_run(*rt, 8, n / 4, 1));
    direct_b8.add(direct_run(rt->device(), rt->poller(), 8, n / 4, b));
    batch_8.add(actor_run(*rt, 8, n / 4, b));
  }

  // Records, in fresh runtimes of one stream, the three paths in turn.
  samples record_backend, record_actor, record_batched;
  const std::uint32_t record_uses = mode.quick ? 20'032 : 100'032;  // whole windows
  for (int round = 0; round < rounds; ++round) {
    runtime_config config;
    auto rt = bench::start_runtime(config, {"--cudactor.streams=1"}, mode.passed_on);
    (void)actor_records(*rt, record_uses / 4, false);  // warm-up (and the pool's events)
    record_backend.add(backend_records(rt->device(), record_uses));
    record_actor.add(actor_records(*rt, record_uses, false));
    record_batched.add(actor_records(*rt, record_uses, true));
  }

  bench::table results({"path", "streams", "ops/message", "ops/s (median)", "range",
                        "direct ops/s (median)", "direct range", "direct/actor"});
  auto row = [&](int streams, int per, const samples& actor, const samples& direct) {
    results.add({"actor", std::to_string(streams), std::to_string(per), fixed(actor.median(), 0),
                 actor.range(), fixed(direct.median(), 0), direct.range(),
                 fixed(direct.median() / actor.median(), 2)});
  };
  row(1, 1, actor_1, direct_1);
  row(1, static_cast<int>(b), batch_1, direct_b1);
  row(8, 1, actor_8, direct_8);
  row(8, static_cast<int>(b), batch_8, direct_b8);
  results.print("submit -> completion delivered, pipelined (depth 1024), host backend, " +
                std::to_string(rounds) + " fresh runtimes");

  bench::table records({"record path", "uses", "ns per use (median)", "x backend"});
  records.add({"backend record", std::to_string(record_uses), fixed(record_backend.median()),
               "1.00"});
  records.add({"stream actor, 64 in flight", std::to_string(record_uses),
               fixed(record_actor.median()),
               fixed(record_actor.median() / record_backend.median(), 2)});
  records.add({"stream actor, 64 per message", std::to_string(record_uses),
               fixed(record_batched.median()),
               fixed(record_batched.median() / record_backend.median(), 2)});
  records.print("one event recorded (and its lease given back), " + std::to_string(rounds) +
                " fresh runtimes");

  // Scheduler settings, a fresh runtime per setting and round.
  bench::table sweep({"scheduler.max-threads", "scheduler.policy", "1 stream, 1 op/msg",
                      "1 stream, 64 op/msg", "8 streams, 64 op/msg"});
  bench::json_line json;
  const int sweep_rounds = mode.quick ? 2 : 3;
  for (const char* policy : {"sharing", "stealing"}) {
    for (int threads : {1, 2, 4}) {
      samples one, batched, eight;
      for (int round = 0; round < sweep_rounds; ++round) {
        runtime_config c;
        auto r = bench::start_runtime(
            c,
            {"--cudactor.streams=8", "--scheduler.max-threads=" + std::to_string(threads),
             "--scheduler.policy=" + std::string{policy}},
            mode.passed_on);
        actor_run(*r, 1, n / 4, 1);
        one.add(actor_run(*r, 1, n, 1));
        batched.add(actor_run(*r, 1, n, b));
        eight.add(actor_run(*r, 8, n / 4, b));
      }
      sweep.add({std::to_string(threads), policy, fixed(one.median(), 0),
                 fixed(batched.median(), 0), fixed(eight.median(), 0)});
      const std::string key = std::string{"sweep_"} + policy + "_" + std::to_string(threads);
      json.add(key, one.median());
      json.add(key + "_batch", batched.median());
    }
  }
  sweep.print("CAF scheduler settings tried (ops/s, median of " + std::to_string(sweep_rounds) +
              " fresh runtimes)");
  std::printf("\nruntime default: scheduler.max-threads=%zu, scheduler.policy=%s (%zu workers)\n",
              runtime_config::default_scheduler_threads,
              caf::to_string(runtime_config::default_scheduler_policy).c_str(), workers);
  std::printf("backend: %s\n", backend.c_str());

  json.add("bench", std::string{"stream_bench"});
  json.add("quick", mode.quick);
  json.add("rounds", static_cast<double>(rounds));
  json.add("actor_ops_per_s_1", actor_1.median());
  json.add("actor_ops_per_s_8", actor_8.median());
  json.add("batch_ops_per_s_1", batch_1.median());
  json.add("batch_ops_per_s_8", batch_8.median());
  json.add("direct_ops_per_s_1", direct_1.median());
  json.add("direct_batch_ops_per_s_1", direct_b1.median());
  json.add("direct_ops_per_s_8", direct_8.median());
  json.add("direct_batch_ops_per_s_8", direct_b8.median());
  json.add("actor_slowdown_1", direct_1.median() / actor_1.median());
  json.add("record_backend_ns", record_backend.median());
  json.add("record_actor_ns", record_actor.median());
  json.add("record_batched_ns", record_batched.median());
  json.add("record_actor_over_backend", record_actor.median() / record_backend.median());
  json.add("record_batched_over_backend", record_batched.median() / record_backend.median());
  json.add("batch_slowdown_1", direct_b1.median() / batch_1.median());
  json.print();
  return 0;
}
