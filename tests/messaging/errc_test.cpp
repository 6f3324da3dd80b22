#define BOOST_TEST_MODULE errc
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <chrono>

#include "cudactor/messaging/errc.hpp"

using namespace std::chrono_literals;

namespace cudactor {
std::ostream& operator<<(std::ostream& out, errc code) { return out << to_string(code); }
}  // namespace cudactor

namespace {

using fail_atom = caf::atom_constant<caf::atom("fail")>;

// Answers every request with the device layer's failure, as actors will.
caf::behavior failing_actor(caf::event_based_actor*) {
  return {[](fail_atom) -> caf::result<int> {
    return cudactor::to_error(cudactor::gpu::status{cudactor::gpu::status_code::device_lost,
                                                    "stream 'copy' (#1.1): illegal address"});
  }};
}

struct system_fixture {
  system_fixture() { cudactor::add_error_category(config); }
  caf::actor_system_config config;
};

}  // namespace

BOOST_AUTO_TEST_CASE(every_device_layer_code_has_an_actor_boundary_code) {
  using cudactor::gpu::status_code;
  for (int raw = 1; raw <= static_cast<int>(status_code::cancelled); ++raw) {
    const auto code = static_cast<status_code>(raw);
    const auto mapped = cudactor::to_errc(code);
    BOOST_TEST(mapped != cudactor::errc::none);
    BOOST_TEST(cudactor::to_string(mapped) != "unknown");
  }
  BOOST_TEST((cudactor::to_errc(status_code::ok) == cudactor::errc::none));
  BOOST_TEST(!cudactor::to_error(cudactor::gpu::status{}));
}

BOOST_AUTO_TEST_CASE(the_context_keeps_what_failed_and_finer_codes) {
  const caf::error plain =
      cudactor::to_error(cudactor::gpu::status{cudactor::gpu::status_code::op_failed, "kernel x"});
  BOOST_TEST((plain == cudactor::errc::op_failed));
  BOOST_TEST(cudactor::error_context(plain) == "kernel x");
  const caf::error finer =
      cudactor::to_error(cudactor::gpu::status{cudactor::gpu::status_code::not_recorded, "event #2.1"});
  BOOST_TEST((finer == cudactor::errc::not_ready));
  BOOST_TEST(cudactor::error_context(finer) == "not_recorded: event #2.1");
  BOOST_TEST(cudactor::error_context(caf::make_error(caf::sec::request_timeout)).empty());
}

BOOST_FIXTURE_TEST_CASE(an_actor_reply_carries_the_error_and_renders_readably, system_fixture) {
  caf::actor_system system{config};
  {
    caf::scoped_actor self{system};
    auto actor = system.spawn(failing_actor);
    caf::error received;
    self->request(actor, 2s, fail_atom::value)
        .receive([](int) { BOOST_FAIL("expected an error"); },
                 [&](caf::error& err) { received = std::move(err); });
    BOOST_TEST((received == cudactor::errc::device_lost));
    BOOST_TEST(system.render(received) ==
               "cudactor::device_lost: stream 'copy' (#1.1): illegal address");
    self->send_exit(actor, caf::exit_reason::user_shutdown);
  }
}

BOOST_AUTO_TEST_CASE(an_error_reads_in_words_with_its_causes_without_an_actor_system) {
  const caf::error root = cudactor::make_error(cudactor::errc::op_failed, "kernel x: NaN");
  BOOST_TEST(cudactor::describe(root) == "cudactor::op_failed: kernel x: NaN");
  // A cause carried inside another error's context is rendered in words too, not as CAF's
  // error(...) tuple.
  const caf::error nested{static_cast<std::uint8_t>(cudactor::errc::dependency_failed),
                          cudactor::error_category,
                          caf::make_message(std::string{"op 2 cancelled"}, root)};
  BOOST_TEST(cudactor::describe(nested) ==
             "cudactor::dependency_failed: op 2 cancelled: because cudactor::op_failed: kernel x: "
             "NaN");
  BOOST_TEST(cudactor::describe(caf::make_error(caf::sec::request_timeout)) ==
             "caf::request_timeout");
  BOOST_TEST(cudactor::describe(caf::error{}) == "no error");
  BOOST_TEST(cudactor::describe(cudactor::make_error(cudactor::errc::timeout)) ==
             "cudactor::timeout");
}
