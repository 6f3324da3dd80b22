// Limits by deadline under one armed timer: a timer is asked for only when none is armed for
// the earliest deadline or earlier; only the armed timer's token fires; due limits come out
// earliest first; a removed limit never comes out.
#define BOOST_TEST_MODULE deadline_queue
#include <boost/test/unit_test.hpp>

#include "cudactor/actors/coordinator/deadline_queue.hpp"

using namespace cudactor;
using cudactor::detail::deadline_queue;

BOOST_AUTO_TEST_CASE(one_timer_for_the_earliest_and_limits_out_in_order) {
  deadline_queue q;
  BOOST_TEST(!q.to_arm().has_value());
  auto late = q.add(300, {op_id{3}, 30});
  BOOST_TEST(q.to_arm().value_or(0) == 300);
  q.armed(300, 7);
  auto later = q.add(400, {op_id{4}, 40});
  BOOST_TEST(!q.to_arm().has_value());  // the timer for 300 comes first
  auto early = q.add(100, {op_id{1}, 10});
  BOOST_TEST(q.to_arm().value_or(0) == 100);  // earlier than the armed one
  q.armed(100, 8);
  BOOST_TEST(!q.fired(7));  // the timer armed before: not the armed one any more
  BOOST_TEST(q.fired(8));
  BOOST_TEST(!q.fired(8));  // once
  BOOST_TEST(!q.take_due(50).has_value());
  const auto first = q.take_due(350);
  BOOST_REQUIRE(first.has_value());
  BOOST_TEST(first->first.value == 1u);
  BOOST_TEST(first->second == 10u);
  (void)early;  // taken out by take_due: its handle is not the owner's to use any more
  // The handles of the limits still queued stay good after another was taken.
  q.remove(late);
  BOOST_TEST((late == q.none()));
  q.remove(late);                            // none(): left alone
  BOOST_TEST(!q.take_due(350).has_value());  // 300 was removed, 400 is not due
  BOOST_TEST(!q.empty());
  q.remove(later);
  BOOST_TEST(q.empty());
  BOOST_TEST(!q.take_due(1000).has_value());
}
