#define BOOST_TEST_MODULE status
#include <boost/test/unit_test.hpp>

#include "cudactor/gpu/status.hpp"

using namespace cudactor::gpu;

BOOST_AUTO_TEST_CASE(a_default_status_is_ok_and_renders_as_ok) {
  status s;
  BOOST_TEST(s.ok());
  BOOST_TEST(s.to_string() == "ok");
}
