// A node's open requests: the bounds refuse past max-pending and max-pending-ops naming
// them; ends told before the ids came are placed when they come; a request ends exactly once
// (answered, failed, or failed at close), with its operations in order; a departed control
// plane's registered operations are cancelled, and those registered later as they come.
#define BOOST_TEST_MODULE node_requests
#include <boost/test/unit_test.hpp>

#include <caf/node_id.hpp>

#include <algorithm>
#include <vector>

#include "cudactor/actors/node/node_requests.hpp"
#include "cudactor/messaging/errc.hpp"

using namespace cudactor;
using cudactor::detail::node_requests;
using cudactor::detail::pending_request;

namespace {

caf::node_id process(std::uint32_t pid) {
  return *caf::make_node_id(pid, "0102030405060708090a0b0c0d0e0f1011121314");
}

op_notice end_of(std::uint64_t id) {
  op_notice n;
  n.id = op_id{id};
  return n;
}

struct fixture {
  fixture() {
    r.cancel_ops = [this](std::vector<op_id> ids) {
      ++cancel_messages;
      for (op_id id : ids) cancelled.push_back(id.value);
    };
    r.on_closed = [this](std::uint64_t key, const pending_request& p) {
      closed.push_back(key);
      closed_told.push_back(p.told);
    };
    r.on_ended = [this](const pending_request&, const op_notice& n) {
      ended.push_back(n.id.value);
    };
  }
  node_requests r{"n", 3, 5, 100};
  std::vector<std::uint64_t> cancelled, closed, ended;
  int cancel_messages = 0;
  std::vector<std::size_t> closed_told;
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(bounds_are_refused_by_name, fixture) {
  BOOST_TEST(!r.refusal(5));
  BOOST_TEST(static_cast<bool>(r.refusal(6)));
  r.open(pending_request::answer::graph, 4, process(1), 0);
  BOOST_TEST(!r.refusal(1));
  auto over = r.refusal(2);
  BOOST_REQUIRE(over);
  BOOST_TEST(over.category() == error_category);
  BOOST_TEST(over.code() == static_cast<std::uint8_t>(errc::resource_exhausted));
  r.open(pending_request::answer::single, 1, process(1), 0);
  r.open(pending_request::answer::single, 0, process(1), 0);
  BOOST_TEST(r.size() == 3u);
  BOOST_TEST(r.ops() == 5u);
  BOOST_TEST(static_cast<bool>(r.refusal(0)));  // 3 requests open: max-pending
}

BOOST_FIXTURE_TEST_CASE(bytes_moved_are_bounded_and_given_back_when_a_request_ends, fixture) {
  BOOST_TEST(!r.refusal(1, 100));
  BOOST_TEST(static_cast<bool>(r.refusal(1, 101)));
  const auto fetch = r.open(pending_request::answer::fetch, 1, process(1), 0, 60);
  const auto store = r.open(pending_request::answer::single, 1, process(1), 0, 40);
  auto over = r.refusal(0, 1);
  BOOST_REQUIRE(over);
  BOOST_TEST(over.code() == static_cast<std::uint8_t>(errc::resource_exhausted));
  BOOST_TEST(describe(over).find("100 bytes of open stores and fetches and 1 more exceed 100 "
                                 "(limit max-transfer-bytes)") != std::string::npos,
             describe(over));
  BOOST_TEST(!r.refusal(0, 0));  // work that moves no bytes is not held back by them
  r.fail(fetch, make_error(errc::cancelled, "gone"));
  BOOST_TEST(!r.refusal(1, 60));
  BOOST_TEST(static_cast<bool>(r.refusal(1, 61)));
  r.fail(store, make_error(errc::cancelled, "gone"));
  BOOST_TEST(!r.refusal(1, 100));
}

BOOST_FIXTURE_TEST_CASE(ends_before_ids_are_placed_and_each_request_ends_once, fixture) {
  const auto key = r.open(pending_request::answer::graph, 3, process(1), 0);
  BOOST_TEST(r.next_key() == key + 1);
  std::vector<op_notice> early{end_of(11)};
  r.told(early, true);  // before the coordinator answered with the ids
  BOOST_TEST(closed.empty());
  r.registered(key, {op_id{10}, op_id{11}, op_id{12}});
  BOOST_TEST(closed.empty());
  std::vector<op_notice> rest{end_of(12), end_of(10)};
  r.told(rest, true);
  BOOST_TEST((closed == std::vector<std::uint64_t>{key}));
  BOOST_TEST((closed_told == std::vector<std::size_t>{3}));
  BOOST_TEST(ended.size() == 3u);
  BOOST_TEST(r.size() == 0u);
  BOOST_TEST(r.ops() == 0u);
  // Told again (a stray end), failed again: nothing more.
  std::vector<op_notice> again{end_of(10)};
  r.told(again, false);
  r.fail(key, make_error(errc::cancelled, "late"));
  BOOST_TEST(closed.size() == 1u);
}

BOOST_FIXTURE_TEST_CASE(a_departed_control_planes_operations_are_cancelled, fixture) {
  const auto gone = r.open(pending_request::answer::graph, 2, process(1), 0);
  const auto stays = r.open(pending_request::answer::graph, 1, process(2), 0);
  const auto later = r.open(pending_request::answer::graph, 1, process(1), 0);
  r.registered(gone, {op_id{1}, op_id{2}});
  r.registered(stays, {op_id{3}});
  std::vector<op_notice> first{end_of(1)};
  r.told(first, true);
  const auto more = r.open(pending_request::answer::graph, 1, process(1), 0);
  r.registered(more, {op_id{5}});
  r.cancel_from(process(1));
  std::sort(cancelled.begin(), cancelled.end());
  BOOST_TEST((cancelled == std::vector<std::uint64_t>{2, 5}));  // 1 ended already; 3 another's
  BOOST_TEST(cancel_messages == 1);                             // one message for all
  r.registered(later, {op_id{4}});                              // registered after: cancelled too
  BOOST_TEST((cancelled == std::vector<std::uint64_t>{2, 5, 4}));
  r.close(make_error(errc::shutting_down, "closing"));
  std::sort(closed.begin(), closed.end());
  BOOST_TEST((closed == std::vector<std::uint64_t>{gone, stays, later, more}));
  BOOST_TEST(r.size() == 0u);
}
