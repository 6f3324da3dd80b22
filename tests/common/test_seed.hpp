// The seed of a randomized unit test: CUDACTOR_TEST_SEED when set (to replay a run), a fresh
// one otherwise, printed either way so that a failure can be replayed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace cudactor::test {

inline std::uint64_t test_seed(const char* test) {
  const char* text = std::getenv("CUDACTOR_TEST_SEED");
  const std::uint64_t seed =
      text != nullptr ? std::strtoull(text, nullptr, 10) : std::random_device{}();
  std::printf("%s seed %llu (CUDACTOR_TEST_SEED replays it)\n", test,
              static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace cudactor::test
