// The steps a node's owner recorded on it: the bound counts recordings under way, a failed
// recording frees its room, only the steps recorded are known (an empty handle never), the
// owner's going takes them all, and a replay's bindings may name only the owner's buffers.
#define BOOST_TEST_MODULE node_steps
#include <boost/test/unit_test.hpp>

#include <string>

#include "cudactor/actors/node/node_steps.hpp"
#include "cudactor/messaging/errc.hpp"

using cudactor::detail::node_buffers;
using cudactor::detail::node_steps;
using namespace cudactor;

BOOST_AUTO_TEST_CASE(the_bound_counts_recordings_under_way_and_a_failed_one_frees_its_room) {
  node_steps steps{2};
  BOOST_REQUIRE(!steps.reserve());
  BOOST_REQUIRE(!steps.reserve());
  const caf::error full = steps.reserve();  // two under way: no room for a third
  BOOST_REQUIRE(full);
  BOOST_TEST(full.code() == static_cast<std::uint8_t>(errc::resource_exhausted));
  steps.settle(step_handle{});  // failed: its room is free again
  BOOST_TEST(steps.size() == 0u);
  BOOST_REQUIRE(!steps.reserve());
  steps.settle(step_handle{1, 1}, 10);
  steps.settle(step_handle{2, 1}, 3);
  // A replay costs its step's operations and its bindings; a step not here costs nothing.
  replay_request two;
  two.bindings = {{buffer_id{0, 1, 1}, buffer_id{0, 2, 1}},
                  {buffer_id{0, 3, 1}, buffer_id{0, 4, 1}}};
  BOOST_TEST(steps.cost_of(step_handle{1, 1}, two) == 12u);
  BOOST_TEST(steps.cost_of(step_handle{2, 1}, replay_request{}) == 3u);
  BOOST_TEST(steps.cost_of(step_handle{9, 1}, two) == 0u);
  BOOST_TEST(steps.size() == 2u);
  BOOST_TEST(static_cast<bool>(steps.reserve()));  // two recorded
  BOOST_TEST(steps.has(step_handle{1, 1}));
  BOOST_TEST(!steps.has(step_handle{1, 2}));  // another generation of the slot
  BOOST_TEST(!steps.has(step_handle{}));
  BOOST_TEST(!steps.remove(step_handle{3, 1}));
  BOOST_TEST(steps.remove(step_handle{1, 1}));
  BOOST_TEST(!steps.has(step_handle{1, 1}));
  BOOST_REQUIRE(!steps.reserve());
  steps.settle(step_handle{4, 1});
  const auto all = steps.take_all();
  BOOST_TEST(all.size() == 2u);
  BOOST_TEST(steps.size() == 0u);
  BOOST_TEST(!steps.has(step_handle{4, 1}));
}

BOOST_AUTO_TEST_CASE(bindings_name_only_the_owners_buffers) {
  node_buffers buffers{8, 1 << 20};
  BOOST_REQUIRE(!buffers.reserve(64));
  buffer_handle mine;
  mine.id = buffer_id{0, 3, 1};
  mine.size = 64;
  buffers.settle(64, &mine);
  BOOST_REQUIRE(!buffers.reserve(64));
  buffer_handle also_mine;
  also_mine.id = buffer_id{0, 5, 1};
  also_mine.size = 64;
  buffers.settle(64, &also_mine);
  const buffer_id other{0, 4, 1};
  replay_request r;
  r.bindings = {{mine.id, mine.id}};
  BOOST_TEST(!static_cast<bool>(node_steps::check_bindings(r, buffers)));
  r.bindings.push_back({mine.id, other});
  const caf::error bad = node_steps::check_bindings(r, buffers);
  BOOST_REQUIRE(bad);
  const std::string words = caf::to_string(bad);
  BOOST_TEST(words.find("binding 1") != std::string::npos, words);
  r.bindings = {{other, mine.id}};
  BOOST_TEST(static_cast<bool>(node_steps::check_bindings(r, buffers)));
  // More bindings than the owner has buffers: refused before any is looked at.
  r.bindings = {{mine.id, mine.id}, {mine.id, mine.id}, {mine.id, mine.id}};
  const caf::error many = node_steps::check_bindings(r, buffers);
  BOOST_REQUIRE(many);
  BOOST_TEST(caf::to_string(many).find("more than the owner's 2 buffers") != std::string::npos,
             caf::to_string(many));
}
