// The client API for code that is not an actor: futures, functions and Asio tokens, each
// told exactly once, from many threads, through stops and shutdowns.
#define BOOST_TEST_MODULE client
#include <boost/test/unit_test.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <thread>

#include "actors/coordinator_fixture.hpp"
#include "common/gate.hpp"
#include "common/time_scale.hpp"
#include "cudactor/actors/client.hpp"
#include "cudactor/actors/client_asio.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

template <class T>
T get_within(std::future<T>& f, std::chrono::seconds limit = 10s) {
  BOOST_REQUIRE_MESSAGE(f.wait_for(scaled(limit)) == std::future_status::ready,
                        "no answer in time");
  return f.get();
}

work failing() {
  return work::local([](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "on purpose"};
  });
}

bool is(const caf::error& e, errc code) {
  return e && e.category() == caf::atom("cudactor") && e.code() == static_cast<std::uint8_t>(code);
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(an_operation_ends_in_its_future, runtime_fixture) {
  client c{rt()};
  auto f = c.submit(spec_of(noop()));
  const op_notice n = get_within(f);
  BOOST_TEST(n.state == op_state::completed);
  BOOST_TEST(!n.id.empty());
  BOOST_TEST(n.point > 0u);
  BOOST_TEST(n.ended_ns >= n.registered_ns);
  auto g = c.submit(spec_of(failing()));
  const op_notice failed = get_within(g);
  BOOST_TEST(failed.state == op_state::failed);
  BOOST_TEST(!failed.id.empty());
  BOOST_TEST(render(failed.cause).find("on purpose") != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(a_graph_ends_once_in_order_after_its_dependencies, runtime_fixture) {
  client c{rt()};
  auto log = std::make_shared<work_log>(4);
  graph_spec g;
  const auto a = g.add(spec_of(log->record(0, 200us)));
  const auto b = g.add(spec_of(log->record(1)), {a});
  const auto d = g.add(spec_of(log->record(2)), {a});
  g.add(spec_of(log->record(3)), {b, d});
  auto f = c.submit(std::move(g));
  const auto ends = get_within(f);
  BOOST_REQUIRE_EQUAL(ends.size(), 4u);
  BOOST_TEST(all_completed(ends));
  for (std::size_t i = 1; i < 4; ++i) BOOST_TEST(ends[i].id.value == ends[0].id.value + i);
  BOOST_TEST(log->started(1) >= log->ended(0));
  BOOST_TEST(log->started(2) >= log->ended(0));
  BOOST_TEST(log->started(3) >= log->ended(1));
  BOOST_TEST(log->started(3) >= log->ended(2));
}

BOOST_FIXTURE_TEST_CASE(a_refused_operation_or_graph_is_told_why, runtime_fixture) {
  client c{rt()};
  // A dependency the coordinator never registered.
  auto f = c.submit(spec_of(noop(), {op_id{987654321}}));
  const op_notice n = get_within(f);
  BOOST_TEST(n.state == op_state::failed);
  BOOST_TEST(n.id.empty());
  BOOST_TEST(static_cast<bool>(n.cause));
  // A graph whose op waits on a later one: refused as a whole.
  graph_spec cyclic;
  cyclic.add(spec_of(noop()), {1});
  cyclic.add(spec_of(noop()), {0});
  auto g = c.submit(std::move(cyclic));
  const auto ends = get_within(g);
  BOOST_REQUIRE_EQUAL(ends.size(), 2u);
  for (const auto& e : ends) {
    BOOST_TEST(e.state == op_state::failed);
    BOOST_TEST(static_cast<bool>(e.cause));
  }
  auto empty = c.submit(graph_spec{});
  BOOST_TEST(get_within(empty).empty());
}

BOOST_FIXTURE_TEST_CASE(an_op_refused_by_a_failed_dependency_is_told_once, runtime_fixture) {
  client c{rt()};
  auto first = c.submit(spec_of(failing()));
  const op_notice failed = get_within(first);
  BOOST_REQUIRE(failed.state == op_state::failed);
  // Ends inside the handler that registers it: its end can come before its id.
  std::atomic<int> told{0};
  std::promise<op_notice> p;
  c.submit(spec_of(noop(), {failed.id}), [&](op_notice n) {
    if (told++ == 0) p.set_value(std::move(n));
  });
  auto f = p.get_future();
  const op_notice n = get_within(f);
  // The coordinator refuses it at registration.
  BOOST_TEST(n.state == op_state::failed);
  BOOST_TEST(is(n.cause, errc::dependency_failed), render(n.cause));
  // Nothing more comes.
  auto after = c.submit(spec_of(noop()));
  (void)get_within(after);
  BOOST_TEST(told == 1);
}

BOOST_FIXTURE_TEST_CASE(many_threads_each_told_exactly_once, runtime_fixture) {
  constexpr int threads = 4;
  constexpr int each = 2000;
  client c{rt()};
  std::vector<std::atomic<int>> told(threads * each);
  std::atomic<int> completed{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::vector<std::future<op_notice>> futures;
      for (int i = 0; i < each; ++i) {
        const int k = t * each + i;
        if (i % 2 == 0) {
          c.submit(spec_of(noop()), [&, k](op_notice n) {
            ++told[k];
            if (n.state == op_state::completed) ++completed;
          });
        } else {
          futures.push_back(c.submit(spec_of(noop())));
        }
      }
      for (auto& f : futures) {
        if (f.wait_for(scaled(20s)) == std::future_status::ready &&
            f.get().state == op_state::completed) {
          ++completed;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  const auto deadline = std::chrono::steady_clock::now() + scaled(20s);
  while (completed < threads * each && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  BOOST_TEST(completed == threads * each);
  for (int k = 0; k < threads * each; k += 2) BOOST_TEST(told[k] == 1);
}

BOOST_FIXTURE_TEST_CASE(stopping_tells_what_is_pending_shutting_down, runtime_fixture) {
  gate g;
  auto c = std::make_unique<client>(rt());
  auto held = c->submit(spec_of(g.hold()));
  graph_spec two;
  two.add(spec_of(g.hold()));
  two.add(spec_of(noop()), {0});
  auto behind = c->submit(std::move(two));
  std::this_thread::sleep_for(scaled(20ms));  // all registered, the holders running
  c->stop();
  const op_notice a = get_within(held);
  const auto b = get_within(behind);
  // Told at stop(), before its end: the client hears an operation only at its end (a run
  // request), so the notice carries the cause and no id.
  BOOST_TEST(a.state == op_state::failed);
  BOOST_TEST(is(a.cause, errc::shutting_down), render(a.cause));
  BOOST_REQUIRE_EQUAL(b.size(), 2u);
  BOOST_TEST(is(b[0].cause, errc::shutting_down));
  BOOST_TEST(is(b[1].cause, errc::shutting_down));
  auto late = c->submit(spec_of(noop()));
  BOOST_TEST(is(get_within(late).cause, errc::shutting_down));
  g.open();
}

BOOST_AUTO_TEST_CASE(a_runtime_shut_down_under_a_client_ends_everything_and_does_not_hang) {
  runtime_config config;
  BOOST_REQUIRE(
      !config.parse(std::vector<std::string>{backend_option(), "--cudactor.metrics.no-exposer"}));
  auto started = runtime::start(config);
  BOOST_REQUIRE_MESSAGE(started.ok(), started.error().to_string());
  auto rt = std::move(started.value());
  gate g;
  client c{*rt};
  auto held = c.submit(spec_of(g.hold()));
  std::vector<std::future<op_notice>> queued;
  for (int i = 0; i < 50; ++i) queued.push_back(c.submit(spec_of(noop())));
  // Shut down from another thread than the one that made the client, while this one lives.
  std::thread opener{[&] {
    std::this_thread::sleep_for(50ms);
    g.open();
  }};
  std::thread stopper{[&] { rt->shutdown(); }};
  stopper.join();
  opener.join();
  (void)get_within(held);
  for (auto& q : queued) (void)get_within(q);
  auto late = c.submit(spec_of(noop()));
  BOOST_TEST(get_within(late).state == op_state::failed);
}

BOOST_FIXTURE_TEST_CASE(asio_handlers_run_on_their_executor, runtime_fixture) {
  client c{rt()};
  boost::asio::io_context io;
  std::thread::id ran_on;
  op_notice got;
  async_submit(c, spec_of(noop()), boost::asio::bind_executor(io, [&](op_notice n) {
                 ran_on = std::this_thread::get_id();
                 got = std::move(n);
               }));
  std::vector<op_notice> graph_ends;
  graph_spec gs;
  gs.add(spec_of(noop()));
  gs.add(spec_of(noop()), {0});
  async_submit(c, std::move(gs), boost::asio::bind_executor(io, [&](std::vector<op_notice> e) {
                 graph_ends = std::move(e);
               }));
  // run() returns once both handlers ran: the work guards kept it from returning early.
  io.run();
  BOOST_TEST((ran_on == std::this_thread::get_id()));
  BOOST_TEST(got.state == op_state::completed);
  BOOST_REQUIRE_EQUAL(graph_ends.size(), 2u);
  BOOST_TEST(all_completed(graph_ends));

  auto fut = async_submit(c, spec_of(noop()), boost::asio::use_future);
  BOOST_TEST(get_within(fut).state == op_state::completed);
}
