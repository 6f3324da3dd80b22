// tests/common/work_log.hpp
//
// When each piece of a test's work started and ended, and in which order the pieces began,
// recorded where the work runs: on CUDA a one-thread kernel stamps the GPU's clock
// (%globaltimer) and takes its rank with a system-wide atomic in pinned memory, so the checks
// are of the order the device ran the work in; on the host backend the worker stamps the
// host's clock. Stamps of one log come from one clock, so they compare with each other; they
// do not compare with host times on CUDA. 0 means "has not started" / "has not ended".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "cudactor/messaging/work.hpp"

namespace cudactor::test {

class work_log {
 public:
  // Entries 0..n-1. On the CUDA test backend the stamps live in pinned memory; taking it
  // fails the test (throws) when there is none.
  explicit work_log(std::size_t n);

  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] std::int64_t started(std::size_t index) const;
  [[nodiscard]] std::int64_t ended(std::size_t index) const;
  // The order entry `index` began in among the log's entries (0 first); -1 before it began.
  [[nodiscard]] int rank(std::size_t index) const;

  // What stamps entry `index`, busy for `busy` between its stamps; with `fail` the launch
  // then reports "kernel <index> failed" (on CUDA the kernel still runs: a launch's failure
  // is reported when it is enqueued).
  [[nodiscard]] gpu::work_fn launch(std::size_t index,
                                    std::chrono::microseconds busy = std::chrono::microseconds{0},
                                    bool fail = false) const;
  [[nodiscard]] work record(std::size_t index,
                            std::chrono::microseconds busy = std::chrono::microseconds{0},
                            bool fail = false) const {
    return work::local(launch(index, busy, fail));
  }

  // Stamps from host code of the test's own (the host backend's clock): only meaningful on
  // the host backend, where every stamp is read on that clock.
  void start_now(std::size_t index);
  void end_now(std::size_t index);

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace cudactor::test
