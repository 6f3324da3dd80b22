// tests/actors/barrier_fixture.hpp
//
// A runtime of four stream actors for the barrier tests, with what they share: spawning a
// barrier over some of them, submitting work to one, the error a pending synchronize is
// answered with, a barrier's status.
#pragma once

#include <string>
#include <vector>

#include "coordinator_fixture.hpp"
#include "cudactor/messaging/barrier_protocol.hpp"

namespace cudactor::test {

struct barrier_fixture : coordinator_fixture {
  barrier_fixture() : coordinator_fixture({"--cudactor.streams=4"}) {}
  explicit barrier_fixture(std::vector<std::string> args) : coordinator_fixture(std::move(args)) {}

  barrier_actor barrier(std::vector<std::size_t> members = {0, 1, 2, 3},
                        barrier_options options = {}) {
    auto made = rt().spawn_barrier(members, std::move(options));
    BOOST_REQUIRE_MESSAGE(made.ok(), made.error().to_string());
    return made.value();
  }

  ticket on(std::size_t stream, work w) {
    auto t = ask<ticket>(rt().stream(stream), submit_atom::value, std::move(w));
    BOOST_REQUIRE_MESSAGE(t, why(t));
    return *t;
  }

  // The error a pending synchronize is answered with; a crossing fails the test with `why_not`.
  template <class Pending>
  caf::error refusal_of(Pending& pending, const char* why_not) {
    caf::error out;
    pending.receive([&](barrier_crossing&) { BOOST_FAIL(why_not); },
                    [&](caf::error& e) { out = std::move(e); });
    return out;
  }

  barrier_status status_of(const barrier_actor& b) {
    auto s = ask<barrier_status>(b, status_atom::value);
    BOOST_REQUIRE_MESSAGE(s, why(s));
    return *s;
  }
};

inline bool says(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace cudactor::test
