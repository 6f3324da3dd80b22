#define BOOST_TEST_MODULE runtime
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/gate.hpp"
#include "common/runtime_fixture.hpp"
#include "common/test_backend.hpp"
#include "cudactor/messaging/errc.hpp"
#include "kernels.hpp"

using namespace std::chrono_literals;
using namespace cudactor;

BOOST_AUTO_TEST_CASE(options_come_from_the_command_line_and_the_ini_file) {
  runtime_config config;
  std::istringstream ini{"[cudactor]\nstreams=3\nmax-in-flight=8\n"};
  BOOST_REQUIRE(!config.parse({test::backend_option(), "--cudactor.metrics.port=0",
                               "--cudactor.high-priority-streams=1", "--scheduler.max-threads=2",
                               "--cudactor.host.idle-spin=25us", "--cudactor.poller.fixed-spin"},
                              ini));
  auto rt = runtime::start(config);
  BOOST_REQUIRE_MESSAGE(rt.ok(), rt.error().to_string());
  BOOST_TEST((*rt)->streams().size() == 3u);
  BOOST_TEST((*rt)->options().device.host.idle_spin.count() == 25);
  BOOST_TEST(!(*rt)->options().poller.adaptive_spin);
  BOOST_TEST((*rt)->options().stream.max_in_flight == 8u);
  BOOST_TEST((*rt)->system().scheduler().num_workers() == 2u);
  BOOST_TEST(((*rt)->device().kind() ==
              (test::on_cuda() ? gpu::backend_kind::cuda : gpu::backend_kind::host)));
  {
    caf::scoped_actor self{(*rt)->system()};
    self->request((*rt)->stream(0), 5s, status_atom::value)
        .receive(
            [](const stream_status& st) {
              BOOST_TEST((st.priority == gpu::stream_priority::high));
              BOOST_TEST(st.max_in_flight == 8u);
            },
            [](caf::error& err) { BOOST_FAIL(caf::to_string(err)); });
  }
  (*rt)->shutdown();
  (*rt)->shutdown();  // idempotent
}

BOOST_AUTO_TEST_CASE(the_poller_spins_only_while_it_pays_unless_told_otherwise) {
  runtime_config config;
  BOOST_REQUIRE(!config.parse({test::backend_option(), "--cudactor.metrics.no-exposer"}));
  auto rt = runtime::start(config);
  BOOST_REQUIRE_MESSAGE(rt.ok(), rt.error().to_string());
  BOOST_TEST((*rt)->options().poller.adaptive_spin);
  (*rt)->shutdown();
}

BOOST_AUTO_TEST_CASE(a_bad_option_is_refused_by_name) {
  runtime_config config;
  BOOST_REQUIRE(!config.parse({"--cudactor.backend=quantum"}));
  auto rt = runtime::start(config);
  BOOST_REQUIRE(!rt.ok());
  BOOST_TEST(rt.error().message().find("cudactor.backend") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(named_operations_run_from_the_registry) {
  auto hits = std::make_shared<std::atomic<int>>(0);
  test::runtime_fixture f{{"--cudactor.streams=1"}, [hits](runtime_config& config) {
                            auto added = config.operations().add(
                                "add",
                                [hits](const gpu::launch_context&, const caf::message& args) {
                                  if (!args.match_elements<int>()) {
                                    return gpu::status{gpu::status_code::invalid_argument, "add: (int)"};
                                  }
                                  hits->fetch_add(args.get_as<int>(0));
                                  return gpu::status{};
                                });
                            BOOST_REQUIRE(added.ok());
                          }};
  auto t = f.ask<ticket>(f.rt().stream(0), submit_atom::value, work::named("add", 5));
  BOOST_REQUIRE_MESSAGE(t, f.why(t));
  BOOST_REQUIRE(f.ask<completion>(f.rt().stream(0), await_atom::value, t->point));
  BOOST_TEST(hits->load() == 5);
  auto wrong = f.ask<ticket>(f.rt().stream(0), submit_atom::value, work::named("add", 1.5));
  BOOST_REQUIRE(wrong);
  auto failed = f.ask<completion>(f.rt().stream(0), await_atom::value, wrong->point);
  BOOST_TEST((failed.error() == errc::op_failed));  // the work failed on the stream
  BOOST_TEST(f.render(failed.error()).find("add: (int)") != std::string::npos);
  auto unknown = f.ask<ticket>(f.rt().stream(0), submit_atom::value, work::named("nope"));
  BOOST_TEST((unknown.error() == errc::unknown_operation));
}

BOOST_AUTO_TEST_CASE(typed_operations_refuse_ill_typed_arguments_before_they_run) {
  auto sum = std::make_shared<std::atomic<std::uint64_t>>(0);
  test::runtime_fixture f{
      {"--cudactor.streams=1"}, [sum](runtime_config& config) {
        auto added = config.operations().add_typed<std::uint64_t, std::string>(
            "scaled", [sum](const gpu::launch_context&, std::uint64_t n, const std::string& unit) {
              sum->fetch_add(unit == "k" ? n * 1000 : n);
              return gpu::status{};
            });
        BOOST_REQUIRE(added.ok());
      }};
  auto t = f.ask<ticket>(f.rt().stream(0), submit_atom::value,
                         work::named("scaled", std::uint64_t{7}, std::string{"k"}));
  BOOST_REQUIRE_MESSAGE(t, f.why(t));
  BOOST_REQUIRE(f.ask<completion>(f.rt().stream(0), await_atom::value, t->point));
  BOOST_TEST(sum->load() == 7000u);
  // Refused when submitted, naming what the operation takes: nothing reaches the stream.
  auto wrong = f.ask<ticket>(f.rt().stream(0), submit_atom::value, work::named("scaled", 7, 1.5));
  BOOST_REQUIRE(!wrong);
  BOOST_TEST((wrong.error() == errc::invalid_argument));
  BOOST_TEST(f.render(wrong.error()).find("takes (uint64, string)") != std::string::npos,
             f.render(wrong.error()));
  BOOST_TEST(f.rt().operations().names() == std::vector<std::string>{"scaled"});
}

namespace {

// Work busy for `us` microseconds (a kernel on CUDA) on stream 0, awaited: its ticket and the
// completion the await answered.
std::pair<ticket, completion> busy_and_awaited(test::runtime_fixture& f, int us) {
  auto t = f.ask<ticket>(
      f.rt().stream(0), submit_atom::value,
      work::local([us](const gpu::launch_context& ctx) { return demo::busy(ctx, us); }));
  BOOST_REQUIRE_MESSAGE(t, f.why(t));
  auto done = f.ask<completion>(f.rt().stream(0), await_atom::value, t->point);
  BOOST_REQUIRE_MESSAGE(done, f.why(done));
  return {*t, *done};
}

}  // namespace

BOOST_AUTO_TEST_CASE(timing_mode_gives_device_start_and_end_times) {
  test::runtime_fixture f{{"--cudactor.streams=1", "--cudactor.timing"}};
  const completion done = busy_and_awaited(f, 2000).second;
  BOOST_REQUIRE(done.timed());
  BOOST_TEST(done.ended_ns - done.started_ns >= 2'000'000);
  BOOST_TEST(done.started_ns >= done.issued_ns - 1'000'000);
  BOOST_TEST(done.ended_ns <= done.detected_ns + 1'000'000);
}

// An await or a synchronize that comes after the point was reached answers with the times
// recorded when it was (they were zeros: only an await already waiting got them).
BOOST_AUTO_TEST_CASE(a_late_await_or_synchronize_answers_with_the_recorded_times) {
  test::runtime_fixture f{{"--cudactor.streams=1", "--cudactor.timing"}};
  const auto [t, first] = busy_and_awaited(f, 1000);
  BOOST_REQUIRE(first.timed());
  auto late = f.ask<completion>(f.rt().stream(0), await_atom::value, t.point);
  BOOST_REQUIRE_MESSAGE(late, f.why(late));
  BOOST_TEST(late->op.point == t.point);
  BOOST_TEST(late->issued_ns == first.issued_ns);
  BOOST_TEST(late->detected_ns == first.detected_ns);
  BOOST_TEST(late->started_ns == first.started_ns);
  BOOST_TEST(late->ended_ns == first.ended_ns);
  auto synced = f.ask<completion>(f.rt().stream(0), synchronize_atom::value);
  BOOST_REQUIRE_MESSAGE(synced, f.why(synced));
  BOOST_TEST(synced->op.point == t.point);
  BOOST_TEST(synced->ended_ns == first.ended_ns);
  BOOST_TEST(synced->issued_ns == first.issued_ns);
  // Untimed, the host times are kept all the same.
  test::runtime_fixture plain{{"--cudactor.streams=1"}};
  auto u = plain.ask<ticket>(plain.rt().stream(0), submit_atom::value,
                             work::local([](const gpu::launch_context&) { return gpu::status{}; }));
  BOOST_REQUIRE(u);
  auto once = plain.ask<completion>(plain.rt().stream(0), synchronize_atom::value);
  BOOST_REQUIRE_MESSAGE(once, plain.why(once));
  auto again = plain.ask<completion>(plain.rt().stream(0), await_atom::value, u->point);
  BOOST_REQUIRE_MESSAGE(again, plain.why(again));
  BOOST_TEST(again->issued_ns != 0);
  BOOST_TEST(again->detected_ns != 0);
  BOOST_TEST(again->detected_ns == once->detected_ns);
  BOOST_TEST(!again->timed());
}

BOOST_AUTO_TEST_CASE(every_request_is_answered_once_shutdown_begins) {
  runtime_config config;
  BOOST_REQUIRE(!config.parse({test::backend_option(), "--cudactor.metrics.port=0",
                               "--cudactor.streams=2", "--cudactor.max-in-flight=2"}));
  auto started = runtime::start(config);
  BOOST_REQUIRE_MESSAGE(started.ok(), started.error().to_string());
  auto rt = std::move(started.value());

  // The work waits for this gate (on the device on CUDA), which opens only after every
  // request was answered: the answers must come from shutdown, not from the work finishing.
  auto held = std::make_shared<test::gate>();
  constexpr int submits = 16;
  constexpr int syncs = 8;
  constexpr int expected = submits * 2 + syncs;  // a ticket and an await per submit
  struct tally {
    std::mutex mutex;
    int tickets = 0;
    int shutting_down = 0;
    std::vector<std::string> other;
    int answers() const { return tickets + shutting_down + static_cast<int>(other.size()); }
    std::promise<void> armed;  // every await and synchronize was sent
    std::promise<void> all;    // every request was answered
  };
  auto t = std::make_shared<tally>();
  auto stream = rt->stream(0);
  auto& system = rt->system();
  system.spawn([=, &system](caf::event_based_actor* self) {
    auto answered = [=, &system](const caf::error* err) {
      std::lock_guard<std::mutex> lock{t->mutex};
      if (err == nullptr) {
        ++t->tickets;
      } else if (*err == errc::shutting_down) {
        ++t->shutting_down;
      } else {
        t->other.push_back(system.render(*err));
      }
      if (t->answers() == expected) {
        t->all.set_value();
        self->quit();
      }
    };
    auto sent = std::make_shared<int>(0);
    auto sent_one = [=] {
      if (++*sent == submits) {
        for (int i = 0; i < syncs; ++i) {
          self->request(stream, caf::infinite, synchronize_atom::value)
              .then([=](const completion&) { answered(nullptr); },
                    [=](caf::error& err) { answered(&err); });
        }
        t->armed.set_value();
      }
    };
    for (int i = 0; i < submits; ++i) {
      work w = held->hold();
      self->request(stream, caf::infinite, submit_atom::value, std::move(w))
          .then(
              [=](const ticket& tk) {
                answered(nullptr);
                self->request(stream, caf::infinite, await_atom::value, tk.point)
                    .then([=](const completion&) { answered(nullptr); },
                          [=](caf::error& err) { answered(&err); });
                sent_one();
              },
              [=](caf::error& err) {
                answered(&err);
                sent_one();
              });
    }
  });

  BOOST_REQUIRE((t->armed.get_future().wait_for(10s) == std::future_status::ready));
  {
    // Everything the client sent is in the stream's mailbox before this request.
    caf::scoped_actor self{system};
    bool holding = false;
    for (int tries = 0; tries < 100 && !holding; ++tries) {
      self->request(stream, 5s, status_atom::value)
          .receive([&](const stream_status& st) { holding = st.awaiting == submits + syncs; },
                   [](caf::error&) {});
      if (!holding) std::this_thread::sleep_for(10ms);
    }
    BOOST_REQUIRE(holding);
  }
  stream = nullptr;
  // This thread spawned the client and a scoped_actor; shutdown runs on another thread.
  runtime::release_calling_thread();

  auto stopped = std::async(std::launch::async, [&rt] { rt->shutdown(); });
  const bool all_answered = t->all.get_future().wait_for(20s) == std::future_status::ready;
  held->open();  // the backend's destruction runs what it still holds
  const bool in_time = stopped.wait_for(30s) == std::future_status::ready;
  BOOST_REQUIRE_MESSAGE(in_time, "runtime shutdown hung");
  BOOST_REQUIRE(all_answered);
  std::lock_guard<std::mutex> lock{t->mutex};
  BOOST_TEST(t->tickets == submits);
  BOOST_TEST(t->shutting_down == submits + syncs);
  BOOST_TEST(t->other.empty(), (t->other.empty() ? std::string{} : t->other.front()));
}
