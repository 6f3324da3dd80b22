// TLS between a control plane and a node (cudactor.tls.*, CAF's OpenSSL module): a peer whose
// certificate comes from the job's CA is served; one whose certificate comes from another CA
// is refused, and so is a peer without TLS; TLS without its certificate, key and CA is a
// configuration error, not CAF's anonymous mode. The certificates are made for the test by the
// openssl program (scripts/install-deps installs it).
#define BOOST_TEST_MODULE tls
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/remote_node.hpp"
#include "cudactor/actors/node_client.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

// Two CAs; the node and a client signed by the first, a rogue signed by the second.
struct certificates {
  certificates()
      : dir(std::filesystem::temp_directory_path() / ("cudactor-tls-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir);
    const std::string d = dir.string();
    std::string script = "set -e; cd '" + d + "'; ";
    for (const char* ca : {"ca1", "ca2"}) {
      script += std::string{"openssl req -x509 -newkey rsa:2048 -nodes -keyout "} + ca +
                ".key -out " + ca + ".pem -days 2 -subj /CN=" + ca + " 2>/dev/null; ";
    }
    for (const auto& [who, ca] : {std::pair{"node", "ca1"}, {"client", "ca1"}, {"rogue", "ca2"}}) {
      script += std::string{"openssl req -newkey rsa:2048 -nodes -keyout "} + who + ".key -out " +
                who + ".csr -subj /CN=" + who + " 2>/dev/null; ";
      script += std::string{"openssl x509 -req -in "} + who + ".csr -CA " + ca + ".pem -CAkey " +
                ca + ".key -CAcreateserial -out " + who + ".pem -days 2 2>/dev/null; ";
    }
    ok = std::system(("bash -c \"" + script + "\"").c_str()) == 0;
  }
  ~certificates() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  // The options that make `who` speak TLS, trusting `ca`.
  std::vector<std::string> options(const std::string& who, const std::string& ca) const {
    const std::string d = dir.string() + "/";
    return {"--cudactor.tls.enabled", "--cudactor.tls.certificate=" + d + who + ".pem",
            "--cudactor.tls.key=" + d + who + ".key", "--cudactor.tls.ca-file=" + d + ca + ".pem"};
  }
  std::filesystem::path dir;
  bool ok = false;
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_node_with_tls_serves_peers_of_its_ca_and_refuses_the_rest) {
  certificates certs;
  BOOST_REQUIRE_MESSAGE(certs.ok, "openssl could not make the test's certificates");
  node_process node{"secure", certs.options("node", "ca1")};
  BOOST_REQUIRE_MESSAGE(node.port != 0, "no port printed: " << read_file(node.log));

  {
    control_plane good{certs.options("client", "ca1")};
    auto connected = connect_node(good.system, "127.0.0.1", node.port, connect_limit());
    BOOST_REQUIRE_MESSAGE(connected, good.why(connected));
    BOOST_TEST(connected->info.name == "secure");
    auto end = good.ask<op_notice>(connected->actor, register_atom::value,
                                   named("over tls", work::named("busy", std::uint64_t{1000})));
    BOOST_REQUIRE_MESSAGE(end, good.why(end));
    BOOST_TEST((end->state == op_state::completed));
  }
  // A certificate from another CA: the node refuses it (and the rogue does not trust the
  // node's either).
  for (const char* trusted : {"ca2", "ca1"}) {
    control_plane rogue{certs.options("rogue", trusted)};
    const auto began = std::chrono::steady_clock::now();
    auto refused = connect_node(rogue.system, "127.0.0.1", node.port, 5s);
    BOOST_TEST(!refused, "a rogue trusting " << trusted << " was let in");
    if (!refused) continue;
    BOOST_TEST(is(refused.error(), errc::node_unreachable), rogue.render(refused.error()));
    BOOST_TEST((std::chrono::steady_clock::now() - began < 10s));
  }
  // A peer without TLS.
  {
    control_plane plain;
    auto refused = connect_node(plain.system, "127.0.0.1", node.port, 5s);
    BOOST_TEST(!refused, "a peer without TLS was let in");
  }
  // The node still serves its own.
  control_plane again{certs.options("client", "ca1")};
  auto connected = connect_node(again.system, "127.0.0.1", node.port, connect_limit());
  BOOST_REQUIRE_MESSAGE(connected, again.why(connected));
  BOOST_TEST(node.child.running());
}

BOOST_AUTO_TEST_CASE(tls_without_its_files_is_a_configuration_error) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--cudactor.tls.enabled"},
           {"--cudactor.tls.enabled", "--cudactor.tls.certificate=/nonexistent/c.pem",
            "--cudactor.tls.key=/nonexistent/k.pem",
            "--cudactor.tls.ca-file=/nonexistent/ca.pem"}}) {
    runtime_config config;
    config.enable_network();
    auto err = config.parse(args);
    BOOST_REQUIRE(static_cast<bool>(err));
    BOOST_TEST(caf::to_string(err).find("cudactor.tls") != std::string::npos, caf::to_string(err));
  }
  runtime_config without_network;
  auto err = without_network.parse(std::vector<std::string>{"--cudactor.tls.enabled"});
  BOOST_REQUIRE(static_cast<bool>(err));
  BOOST_TEST(caf::to_string(err).find("enable_network") != std::string::npos, caf::to_string(err));
}
