// How much slower this build runs than a plain one, for the tests' time limits.
//
// A sanitized build runs the same code several times slower (ASan about 2x, TSan 5-15x). The
// limits that tell a hang from slow progress (a request's timeout, a future's wait, a
// deadline) and the pauses that let work get somewhere before the next step (a sleep before
// a kill) are multiplied by CUDACTOR_TIME_SCALE, which the sanitized builds' test environment
// sets (tests/CMakeLists.txt, the same factor as CTest's timeouts). Figures a test measures
// and compares are never scaled.
#pragma once

#include <chrono>
#include <cstdlib>

namespace cudactor::test {

inline double time_scale() {
  static const double scale = [] {
    const char* text = std::getenv("CUDACTOR_TIME_SCALE");
    const double value = text != nullptr ? std::strtod(text, nullptr) : 1.0;
    return value >= 1.0 && value <= 100.0 ? value : 1.0;
  }();
  return scale;
}

// `d`, stretched by the build's slowdown.
template <class Rep, class Period>
std::chrono::duration<Rep, Period> scaled(std::chrono::duration<Rep, Period> d) {
  return std::chrono::duration<Rep, Period>{static_cast<Rep>(static_cast<double>(d.count()) *
                                                             time_scale())};
}

}  // namespace cudactor::test
