#define BOOST_TEST_MODULE runtime
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/runtime_fixture.hpp"
#include "cudactor/messaging/errc.hpp"

using namespace std::chrono_literals;
using namespace cudactor;

BOOST_AUTO_TEST_CASE(options_come_from_the_command_line_and_the_ini_file) {
  runtime_config config;
  std::istringstream ini{"[cudactor]\nstreams=3\nmax-in-flight=8\n"};
  BOOST_REQUIRE(!config.parse({"--cudactor.backend=host", "--cudactor.high-priority-streams=1",
                               "--scheduler.max-threads=2"},
                              ini));
  auto rt = runtime::start(config);
  BOOST_REQUIRE_MESSAGE(rt.ok(), rt.error().to_string());
  BOOST_TEST((*rt)->streams().size() == 3u);
  BOOST_TEST((*rt)->options().stream.max_in_flight == 8u);
  BOOST_TEST((*rt)->system().scheduler().num_workers() == 2u);
  BOOST_TEST(((*rt)->device().kind() == gpu::backend_kind::host));
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
                                    return gpu::status{gpu::errc::invalid_argument, "add: (int)"};
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

BOOST_AUTO_TEST_CASE(timing_mode_gives_device_start_and_end_times) {
  test::runtime_fixture f{{"--cudactor.streams=1", "--cudactor.timing"}};
  auto t = f.ask<ticket>(f.rt().stream(0), submit_atom::value,
                         work::local([](const gpu::launch_context&) {
                           std::this_thread::sleep_for(2ms);
                           return gpu::status{};
                         }));
  BOOST_REQUIRE(t);
  auto done = f.ask<completion>(f.rt().stream(0), await_atom::value, t->point);
  BOOST_REQUIRE_MESSAGE(done, f.why(done));
  BOOST_REQUIRE(done->timed());
  BOOST_TEST(done->ended_ns - done->started_ns >= 2'000'000);
  BOOST_TEST(done->started_ns >= done->submitted_ns - 1'000'000);
  BOOST_TEST(done->ended_ns <= done->detected_ns + 1'000'000);
}
