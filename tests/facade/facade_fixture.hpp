// tests/facade/facade_fixture.hpp
//
// A runtime with two streams for the facade's tests, and a bounded get() on futures: a call
// that is never answered fails the test instead of hanging it.
#pragma once

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <string>

#include "common/runtime_fixture.hpp"
#include "common/time_scale.hpp"
#include "cudactor/facade/failure.hpp"

namespace cudactor::test {

struct facade_fixture : runtime_fixture {
  facade_fixture() : runtime_fixture({"--cudactor.streams=2"}) {}
};

template <class T>
T get_within(std::future<T>& f, std::chrono::seconds limit = std::chrono::seconds{10}) {
  BOOST_REQUIRE_MESSAGE(f.wait_for(scaled(limit)) == std::future_status::ready,
                        "no answer in time");
  return f.get();
}

// The failure a future's get() throws; fails the test when it gives a value.
template <class T>
failure failure_of(std::future<T>& f) {
  BOOST_REQUIRE_MESSAGE(f.wait_for(scaled(std::chrono::seconds{10})) == std::future_status::ready,
                        "no answer in time");
  try {
    f.get();
  } catch (const failure& e) {
    return e;
  }
  BOOST_FAIL("a value where a failure was expected");
  return failure{errc::invalid_state, "unreachable"};
}

inline bool mentions(const failure& f, const std::string& text) {
  return std::string{f.what()}.find(text) != std::string::npos;
}

}  // namespace cudactor::test
