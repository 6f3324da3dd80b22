#define BOOST_TEST_MODULE status
#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

#include "common/printing.hpp"
#include "cudactor/gpu/handle_id.hpp"
#include "cudactor/gpu/status.hpp"
#include "cudactor/gpu/types.hpp"

using namespace cudactor::gpu;

BOOST_AUTO_TEST_CASE(a_default_status_is_ok_and_renders_as_ok) {
  status s;
  BOOST_TEST(s.ok());
  BOOST_TEST(static_cast<bool>(s));
  BOOST_TEST(s.code() == status_code::ok);
  BOOST_TEST(s.to_string() == "ok");
}

BOOST_AUTO_TEST_CASE(a_failure_renders_its_code_then_what_failed) {
  status s{status_code::device_lost, "stream 'copy' (#1.1)"};
  BOOST_TEST(!s.ok());
  BOOST_TEST(s.to_string() == "device_lost: stream 'copy' (#1.1)");
}

BOOST_AUTO_TEST_CASE(every_code_has_a_distinct_name) {
  std::set<std::string> names;
  for (int raw = 0; raw <= static_cast<int>(status_code::cancelled); ++raw) {
    const std::string name{to_string(static_cast<status_code>(raw))};
    BOOST_TEST(name != "unknown_status_code");
    names.insert(name);
  }
  BOOST_TEST(names.size() == static_cast<std::size_t>(status_code::cancelled) + 1);
}

BOOST_AUTO_TEST_CASE(a_result_holds_a_value_or_the_reason_there_is_none) {
  result<int> good = 42;
  BOOST_TEST(good.ok());
  BOOST_TEST(good.value() == 42);
  BOOST_TEST(*good == 42);
  BOOST_TEST(good.error().ok());
  BOOST_TEST(good.code() == status_code::ok);

  result<std::string> bad{status_code::not_ready, "event #2.1"};
  BOOST_TEST(!bad.ok());
  BOOST_TEST(bad.code() == status_code::not_ready);
  BOOST_TEST(bad.error().message() == "event #2.1");

  result<std::string> moved = std::string{"payload"};
  const std::string taken = std::move(moved).value();
  BOOST_TEST(taken == "payload");
}

BOOST_AUTO_TEST_CASE(handle_ids_name_slot_and_generation) {
  handle_id empty;
  BOOST_TEST(empty.empty());
  handle_id id{7, 3, 2};
  BOOST_TEST(!id.empty());
  BOOST_TEST(to_string(id) == "#3.2");
  BOOST_TEST(id.value() == ((std::uint64_t{3} << 32) | 2));
  BOOST_TEST((id == handle_id{7, 3, 2}));
  BOOST_TEST((id != handle_id{8, 3, 2}));  // another backend instance
  BOOST_TEST((id != handle_id{7, 3, 3}));  // another generation of the slot
}

BOOST_AUTO_TEST_CASE(value_types_have_names) {
  BOOST_TEST(to_string(backend_kind::cuda) == "cuda");
  BOOST_TEST(to_string(stream_priority::high) == "high");
  BOOST_TEST(to_string(event_kind::timing) == "timing");
  BOOST_TEST(to_string(copy_kind::device_to_host) == "device_to_host");
  BOOST_TEST(to_string(memory_kind::pinned_host) == "pinned_host");
  BOOST_TEST(to_string(event_state::failed) == "failed");
  query_result failed{event_state::failed, status{status_code::op_failed, "x"}};
  BOOST_TEST(failed.failed());
  BOOST_TEST(failed.done());
  BOOST_TEST(!failed.ready());
}
