// Work sent to a stream actor in another process, over CAF's network layer (caf::io).
//
// The test runs itself twice: the parent process starts a copy of this program with
// --serve, which starts a runtime, publishes stream 0 on 127.0.0.1 (port 0), prints the port
// and serves until its stdin closes. Two processes are needed: connecting to one's own
// published port hands back the local actor, and then nothing is serialized at all.
#define BOOST_TEST_MODULE remote_work
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "common/runtime_fixture.hpp"
#include "cudactor/actors/runtime.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/message_types.hpp"

extern char** environ;

using namespace std::chrono_literals;
using namespace cudactor;

namespace {

std::string self_path;

// The serving side: a runtime with two named operations, published until stdin closes.
int serve() {
  runtime_config config;
  config.enable_network();
  if (auto err = config.parse(
          {test::backend_option(), "--cudactor.streams=1", "--cudactor.metrics.port=0"})) {
    std::fprintf(stderr, "serve: %s\n", caf::to_string(err).c_str());
    return 1;
  }
  auto nop = config.operations().add(
      "nop", [](const gpu::launch_context&, const caf::message&) { return gpu::status{}; });
  // Fails on purpose, quoting what arrived: the test reads its arguments back this way.
  auto quote = config.operations().add("quote", [](const gpu::launch_context&,
                                                   const caf::message& args) {
    if (!args.match_elements<std::string, int>()) {
      return gpu::status{gpu::status_code::invalid_argument, "quote: (string, int)"};
    }
    return gpu::status{gpu::status_code::op_failed, "received '" + args.get_as<std::string>(0) + "' and " +
                                                 std::to_string(args.get_as<int>(1))};
  });
  if (!nop.ok() || !quote.ok()) return 1;
  auto started = runtime::start(config);
  if (!started.ok()) {
    std::fprintf(stderr, "serve: %s\n", started.error().to_string().c_str());
    return 1;
  }
  auto& rt = *started.value();
  auto port = rt.system().middleman().publish(rt.stream(0), 0, "127.0.0.1", true);
  if (!port) {
    std::fprintf(stderr, "serve: publish: %s\n", rt.system().render(port.error()).c_str());
    return 1;
  }
  std::printf("%u\n", static_cast<unsigned>(*port));
  std::fflush(stdout);
  char buffer[64];
  while (::read(STDIN_FILENO, buffer, sizeof buffer) > 0) {
  }
  rt.shutdown();
  return 0;
}

// The child process, always reaped: closing its stdin asks it to stop; SIGKILL if it does not.
class server_process {
 public:
  server_process() {
    int to_child[2];
    int from_child[2];
    BOOST_REQUIRE(::pipe2(to_child, O_CLOEXEC) == 0);
    BOOST_REQUIRE(::pipe2(from_child, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
    std::string serve_flag = "--serve";
    char* argv[] = {self_path.data(), serve_flag.data(), nullptr};
    const int spawned = ::posix_spawn(&pid_, self_path.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_child[0]);
    ::close(from_child[1]);
    stdin_ = to_child[1];
    stdout_ = from_child[0];
    if (spawned != 0) pid_ = -1;
    BOOST_REQUIRE_MESSAGE(spawned == 0, "posix_spawn: " << std::strerror(spawned));
  }

  ~server_process() {
    if (stdin_ >= 0) ::close(stdin_);
    if (stdout_ >= 0) ::close(stdout_);
    if (pid_ <= 0) return;
    for (int i = 0; i < 500; ++i) {  // up to 10 s for a clean exit
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(20ms);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }

  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  // The port line the server prints once it is published; 0 when it died first.
  std::uint16_t port() {
    std::string line;
    char c;
    while (::read(stdout_, &c, 1) == 1 && c != '\n') line.push_back(c);
    return line.empty() ? 0 : static_cast<std::uint16_t>(std::stoul(line));
  }

  [[nodiscard]] bool running() const { return ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
};

struct client_config : caf::actor_system_config {
  client_config() {
    cudactor::add_message_types(*this);
    load<caf::io::middleman>();
  }
};

// A client process of its own: no runtime, only CAF and cudactor's message types.
struct remote_fixture {
  server_process server;
  client_config config;
  caf::actor_system system{config};
  std::optional<caf::scoped_actor> self;
  stream_actor stream;

  remote_fixture() {
    const auto port = server.port();
    BOOST_REQUIRE_MESSAGE(port != 0, "the server did not publish its stream");
    auto connected = system.middleman().remote_actor<stream_actor>("127.0.0.1", port);
    BOOST_REQUIRE_MESSAGE(connected, (connected ? "" : system.render(connected.error())));
    stream = *connected;
    self.emplace(system);
  }
  ~remote_fixture() {
    stream = nullptr;
    self.reset();
  }

  template <class T, class... Ts>
  caf::expected<T> ask(Ts&&... xs) {
    caf::expected<T> out{caf::sec::request_timeout};
    (*self)
        ->request(stream, 10s, std::forward<Ts>(xs)...)
        .receive([&](T& value) { out = std::move(value); },
                 [&](caf::error& err) { out = std::move(err); });
    return out;
  }
  std::string why(const caf::error& err) { return system.render(err); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(remote_work, remote_fixture)

BOOST_AUTO_TEST_CASE(named_work_crosses_the_process_boundary) {
  BOOST_REQUIRE((stream->node() != system.node()));  // really another process
  auto t = ask<ticket>(submit_atom::value, work::named("nop"));
  BOOST_REQUIRE_MESSAGE(t, (t ? std::string{} : why(t.error())));
  auto done = ask<completion>(await_atom::value, t->point);
  BOOST_REQUIRE_MESSAGE(done, (done ? std::string{} : why(done.error())));
  BOOST_TEST(done->op.point == t->point);

  // The arguments arrive intact: the operation quotes them back in its failure.
  auto quoted = ask<ticket>(submit_atom::value, work::named("quote", std::string{"hello"}, 42));
  BOOST_REQUIRE(quoted);
  auto failed = ask<completion>(await_atom::value, quoted->point);
  BOOST_REQUIRE(!failed);
  BOOST_TEST((failed.error() == errc::op_failed));
  BOOST_TEST(why(failed.error()).find("received 'hello' and 42") != std::string::npos,
             why(failed.error()));

  // cudactor's errors cross the wire as cudactor errors, rendered on this side.
  auto unknown = ask<ticket>(submit_atom::value, work::named("not-registered", 1));
  BOOST_REQUIRE(!unknown);
  BOOST_TEST((unknown.error() == errc::unknown_operation));
  BOOST_TEST(why(unknown.error()).find("not-registered") != std::string::npos,
             why(unknown.error()));
}

BOOST_AUTO_TEST_CASE(a_local_closure_sent_to_another_process_fails_cleanly) {
  work local = work::local([](const gpu::launch_context&) { return gpu::status{}; });

  // Asked before sending: the clear cudactor error.
  auto refused = check_sendable(local, system.node(), stream->node());
  BOOST_TEST((refused == errc::local_only));
  BOOST_TEST(why(refused).find("local-only") != std::string::npos, why(refused));
  BOOST_TEST(!check_sendable(work::named("nop"), system.node(), stream->node()));
  BOOST_TEST(!check_sendable(local, system.node(), system.node()));

  // Sent anyway: CAF cannot serialize it and answers the request with an error at once;
  // nothing is sent, neither process crashes.
  const auto before = std::chrono::steady_clock::now();
  auto sent = ask<ticket>(submit_atom::value, local);
  BOOST_REQUIRE(!sent);
  BOOST_TEST((sent.error() != caf::sec::request_timeout));
  BOOST_TEST_MESSAGE("a local closure sent to another process: " << why(sent.error()));
  BOOST_TEST((std::chrono::steady_clock::now() - before < 5s));
  auto callback = ask<ticket>(callback_atom::value, stream_callback{[](const caf::error&) {}});
  BOOST_REQUIRE(!callback);
  BOOST_TEST((callback.error() != caf::sec::request_timeout));

  // The connection and the remote stream are still fine.
  BOOST_TEST(server.running());
  auto t = ask<ticket>(submit_atom::value, work::named("nop"));
  BOOST_REQUIRE_MESSAGE(t, (t ? std::string{} : why(t.error())));
  auto st = ask<stream_status>(status_atom::value);
  BOOST_REQUIRE(st);
  BOOST_TEST(st->failures == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

int main(int argc, char* argv[]) {
  if (argc > 1 && std::strcmp(argv[1], "--serve") == 0) return serve();
  self_path = argv[0];
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
