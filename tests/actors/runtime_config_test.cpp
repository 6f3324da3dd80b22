// The runtime's options as CAF parses them: from the command line and from a
// caf-application.ini, nested sections such as [cudactor.coordinator] included (CAF 0.17.6
// alone drops those), the command line winning over the file, and bad values refused with
// the option named.
#define BOOST_TEST_MODULE runtime_config
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <sstream>

#include "cudactor/actors/runtime_config.hpp"

using namespace cudactor;
using namespace std::chrono_literals;

namespace {

const char* const ini = R"([cudactor]
backend="host"
streams=5
[cudactor.coordinator]
ended-kept=3
strategy="priority"
timing=true
trace="/tmp/somewhere.json"
[cudactor.metrics]
no-exposer=true
port=9999
[cudactor.poller]
stuck-after=5s
[cudactor.host]
workers=3
[cudactor.cuda]
max-in-flight=64
)";

runtime_options settings(std::vector<std::string> args, const std::string& file) {
  runtime_config config;
  std::istringstream in{file};
  const caf::error err = config.parse(std::move(args), in);
  BOOST_REQUIRE_MESSAGE(!err, caf::to_string(err));
  auto out = config.runtime_settings();
  BOOST_REQUIRE_MESSAGE(out.ok(), out.error().to_string());
  return out.value();
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_section_of_the_file_reaches_the_options) {
  const runtime_options o = settings({}, ini);
  BOOST_TEST(o.backend == "host");
  BOOST_TEST(o.streams == 5u);
  BOOST_TEST(o.coordinator.ended_kept == 3u);
  BOOST_TEST((o.coordinator.strategy == pool_strategy::priority));
  BOOST_TEST(o.coordinator.timing);
  BOOST_TEST(o.trace_path == "/tmp/somewhere.json");
  BOOST_TEST(!o.metrics.enabled);
  BOOST_TEST(o.metrics.port == 9999u);
  BOOST_TEST((o.poller.stuck_after == std::chrono::nanoseconds{5s}));
  BOOST_TEST(o.device.host.workers == 3u);
  BOOST_TEST(o.device.cuda_max_in_flight == 64u);
}

BOOST_AUTO_TEST_CASE(the_command_line_wins_over_the_file) {
  const runtime_options o = settings(
      {"--cudactor.coordinator.ended-kept=7", "--cudactor.streams=2", "--cudactor.metrics.port=0"},
      ini);
  BOOST_TEST(o.coordinator.ended_kept == 7u);
  BOOST_TEST(o.streams == 2u);
  BOOST_TEST(o.metrics.port == 0u);
  BOOST_TEST((o.coordinator.strategy == pool_strategy::priority));  // from the file
}

BOOST_AUTO_TEST_CASE(no_file_leaves_the_defaults) {
  const runtime_options o = settings({}, "");
  BOOST_TEST(o.streams == runtime_options{}.streams);
  BOOST_TEST(o.coordinator.ended_kept == coordinator_options{}.ended_kept);
  BOOST_TEST(!o.coordinator.timing);
  BOOST_TEST(o.trace_path.empty());
  BOOST_TEST(o.device.cuda_max_in_flight == gpu::cuda_default_max_in_flight);
  BOOST_TEST(gpu::cuda_default_max_in_flight <= 512u);  // well below a CUDA stream's ~1000
}

BOOST_AUTO_TEST_CASE(a_cuda_in_flight_bound_of_zero_is_refused) {
  runtime_config config;
  std::istringstream in{""};
  BOOST_REQUIRE(!config.parse(std::vector<std::string>{"--cudactor.cuda.max-in-flight=0"}, in));
  auto out = config.runtime_settings();
  BOOST_REQUIRE(!out.ok());
  BOOST_TEST(out.error().message().find("cudactor.cuda.max-in-flight") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_host_in_flight_bound_reaches_the_backend_and_zero_is_refused) {
  {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(!config.parse(std::vector<std::string>{"--cudactor.host.max-in-flight=8"}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST(out->device.host.max_in_flight == 8u);
  }
  runtime_config config;
  std::istringstream in{""};
  BOOST_REQUIRE(!config.parse(std::vector<std::string>{"--cudactor.host.max-in-flight=0"}, in));
  auto out = config.runtime_settings();
  BOOST_REQUIRE(!out.ok());
  BOOST_TEST(out.error().message().find("cudactor.host.max-in-flight") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(keep_memory_for_reaches_the_coordinator_and_a_negative_one_is_refused) {
  {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(!config.parse(
        std::vector<std::string>{"--cudactor.coordinator.keep-memory-for=250ms"}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST(out->coordinator.keep_memory_for.count() == 250'000'000);
  }
  runtime_config config;
  std::istringstream in{""};
  BOOST_REQUIRE(!config.parse(
      std::vector<std::string>{"--cudactor.coordinator.keep-memory-for=-1s"}, in));
  auto out = config.runtime_settings();
  BOOST_REQUIRE(!out.ok());
  BOOST_TEST(out.error().message().find("keep-memory-for") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(max_buffers_reaches_the_coordinator_and_zero_is_refused) {
  {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(
        !config.parse(std::vector<std::string>{"--cudactor.coordinator.max-buffers=100"}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST(out->coordinator.max_buffers == 100u);
  }
  runtime_config config;
  std::istringstream in{""};
  BOOST_REQUIRE(
      !config.parse(std::vector<std::string>{"--cudactor.coordinator.max-buffers=0"}, in));
  auto out = config.runtime_settings();
  BOOST_REQUIRE(!out.ok());
  BOOST_TEST(out.error().message().find("max-buffers") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(max_steps_reaches_the_coordinator_and_zero_is_refused) {
  {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(
        !config.parse(std::vector<std::string>{"--cudactor.coordinator.max-steps=3"}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST(out->coordinator.max_steps == 3u);
  }
  runtime_config config;
  std::istringstream in{""};
  BOOST_REQUIRE(!config.parse(std::vector<std::string>{"--cudactor.coordinator.max-steps=0"}, in));
  auto out = config.runtime_settings();
  BOOST_REQUIRE(!out.ok());
  BOOST_TEST(out.error().message().find("max-steps") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(max_transfer_bytes_reaches_the_node_and_less_than_one_transfer_is_refused) {
  {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(
        !config.parse(std::vector<std::string>{"--cudactor.node.max-transfer-bytes=33554432"}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST(out->node.max_transfer_bytes == 33554432u);
  }
  BOOST_TEST(node_options{}.max_transfer_bytes == std::uint64_t{256} << 20);
  runtime_config config;
  std::istringstream in{""};
  BOOST_REQUIRE(
      !config.parse(std::vector<std::string>{"--cudactor.node.max-transfer-bytes=4194303"}, in));
  auto out = config.runtime_settings();
  BOOST_REQUIRE(!out.ok());
  BOOST_TEST(out.error().message().find("max-transfer-bytes") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(step_graphs_reaches_the_coordinator_and_other_words_are_refused) {
  const auto mode_of = [](const std::string& value) {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(
        !config.parse(std::vector<std::string>{"--cudactor.coordinator.step-graphs=" + value}, in));
    return config.runtime_settings();
  };
  {
    runtime_config config;
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST((out->coordinator.step_graphs == step_graph_mode::automatic));
  }
  BOOST_TEST((mode_of("always")->coordinator.step_graphs == step_graph_mode::always));
  BOOST_TEST((mode_of("never")->coordinator.step_graphs == step_graph_mode::never));
  BOOST_TEST((mode_of("auto")->coordinator.step_graphs == step_graph_mode::automatic));
  auto bad = mode_of("sometimes");
  BOOST_REQUIRE(!bad.ok());
  BOOST_TEST(bad.error().message().find("step-graphs must be auto, always or never") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(max_rendezvous_reaches_the_node_and_zero_is_refused) {
  {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(
        !config.parse(std::vector<std::string>{"--cudactor.node.max-rendezvous=90s"}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST(out->node.max_rendezvous.count() == 90'000'000'000);
  }
  runtime_config config;
  std::istringstream in{""};
  BOOST_REQUIRE(!config.parse(std::vector<std::string>{"--cudactor.node.max-rendezvous=0s"}, in));
  auto out = config.runtime_settings();
  BOOST_REQUIRE(!out.ok());
  BOOST_TEST(out.error().message().find("max-rendezvous") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(max_message_bytes_reaches_the_listener_and_is_held_to_32_bits) {
  {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(!config.parse(std::vector<std::string>{}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST(out->node_max_message_bytes == (std::uint32_t{64} << 20));
  }
  {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(
        !config.parse(std::vector<std::string>{"--cudactor.node.max-message-bytes=2097152",
                                               "--cudactor.node.max-graph-bytes=1048576"},
                      in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST(out->node_max_message_bytes == 2097152u);
  }
  for (const char* bad :
       {"--cudactor.node.max-message-bytes=1048575", "--cudactor.node.max-message-bytes=4294967296",
        "--cudactor.node.max-message-bytes=2097152"}) {
    runtime_config config;
    std::istringstream in{""};
    // The last: below twice max-graph-bytes.
    BOOST_REQUIRE(!config.parse(
        std::vector<std::string>{bad, "--cudactor.node.max-graph-bytes=1048577"}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(!out.ok());
    BOOST_TEST(out.error().message().find("max-message-bytes") != std::string::npos, bad);
  }
}

BOOST_AUTO_TEST_CASE(buffer_inference_bounds_reach_the_coordinator_and_unusable_ones_are_refused) {
  {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(
        !config.parse(std::vector<std::string>{"--cudactor.coordinator.max-buffer-segments=4096",
                                               "--cudactor.coordinator.max-inferred-edges=7",
                                               "--cudactor.coordinator.max-covered-segments=9"},
                      in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST(out->coordinator.max_buffer_segments == 4096u);
    BOOST_TEST(out->coordinator.max_inferred_edges == 7u);
    BOOST_TEST(out->coordinator.max_covered_segments == 9u);
  }
  // An empty history must take an operation with the most uses (64, two segments each).
  for (const std::string bad : {"--cudactor.coordinator.max-buffer-segments=128",
                                "--cudactor.coordinator.max-inferred-edges=0",
                                "--cudactor.coordinator.max-covered-segments=0"}) {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(!config.parse(std::vector<std::string>{bad}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE_MESSAGE(!out.ok(), bad);
    const std::string option = bad.substr(2, bad.find('=') - 2);
    BOOST_TEST(out.error().message().find(option) != std::string::npos, out.error().message());
  }
  runtime_config config;
  std::istringstream in{""};
  BOOST_REQUIRE(!config.parse(
      std::vector<std::string>{"--cudactor.coordinator.max-buffer-segments=129"}, in));
  BOOST_TEST(config.runtime_settings().ok());
}

BOOST_AUTO_TEST_CASE(a_node_owner_token_reaches_the_node_options_and_a_short_one_is_refused) {
  {
    runtime_config config;
    std::istringstream in{"[cudactor.node]\nowner-token=\"0123456789abcdef\"\n"};
    BOOST_REQUIRE(!config.parse(std::vector<std::string>{}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE(out.ok());
    BOOST_TEST(out.value().node.owner_token == "0123456789abcdef");
  }
  runtime_config config;
  std::istringstream in{""};
  BOOST_REQUIRE(!config.parse(std::vector<std::string>{"--cudactor.node.owner-token=guess"}, in));
  auto out = config.runtime_settings();
  BOOST_REQUIRE(!out.ok());
  BOOST_TEST(out.error().message().find("cudactor.node.owner-token") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_value_of_the_wrong_type_in_a_section_is_refused_by_name) {
  runtime_config config;
  std::istringstream in{"[cudactor.coordinator]\nended-kept=\"many\"\n"};
  const caf::error err = config.parse(std::vector<std::string>{}, in);
  BOOST_REQUIRE(static_cast<bool>(err));
  BOOST_TEST(caf::to_string(err).find("cudactor.coordinator.ended-kept") != std::string::npos);
}

// One set of streams: the coordinator's own stream options are gone, and a setting of one
// says where it went rather than being ignored.
BOOST_AUTO_TEST_CASE(the_removed_coordinator_stream_options_are_refused_with_their_successor) {
  for (const char* removed :
       {"--cudactor.coordinator.streams=3", "--cudactor.coordinator.max-in-flight=8",
        "--cudactor.coordinator.high-priority-streams=1"}) {
    runtime_config config;
    std::istringstream in{""};
    BOOST_REQUIRE(!config.parse(std::vector<std::string>{removed}, in));
    auto out = config.runtime_settings();
    BOOST_REQUIRE_MESSAGE(!out.ok(), removed);
    BOOST_TEST(out.error().message().find("cudactor.streams") != std::string::npos);
  }
}
