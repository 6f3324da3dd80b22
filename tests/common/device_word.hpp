// tests/common/device_word.hpp
//
// A word that work writes where it runs and the test reads: on CUDA a one-thread kernel
// stores into pinned host memory (so what is checked is the order the device ran the work
// in, not the order it was enqueued), on the host backend the worker stores it. For tests
// that check what work saw, on either backend.
#pragma once

#include <memory>

#include "cudactor/messaging/work.hpp"

namespace cudactor::test {

class device_word {
 public:
  // Holds `initial`. On the CUDA test backend (common/test_backend.hpp) the word is pinned
  // memory; taking it fails the test when there is none.
  explicit device_word(int initial = 0);

  [[nodiscard]] int load() const;
  // Work that sets the word to `value`.
  [[nodiscard]] work store(int value) const;
  // Work that sets this word to what `from` holds when the work runs.
  [[nodiscard]] work copy_from(const device_word& from) const;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace cudactor::test
