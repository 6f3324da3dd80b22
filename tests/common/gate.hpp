// tests/common/gate.hpp
//
// Work that holds a stream until the test opens the gate, on either backend: on the host
// backend a worker waits on a future; on CUDA a one-thread kernel spins on a flag in pinned
// host memory (tests/gpu/cuda_test_kernels.cu), so the stream is held on the device, as real
// work would hold it, and nothing on the host blocks. Which one is decided per run of the work
// (the launch context's backend). A gate that is never opened opens when it is destroyed; a
// kernel gives up on its own after a minute (scaled), so a failed test cannot leave the
// device spinning.
#pragma once

#include <future>
#include <memory>

#include "cudactor/messaging/work.hpp"

namespace cudactor::test {

class gate {
 public:
  gate();
  ~gate();
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;

  // Idempotent.
  void open();
  [[nodiscard]] work hold() const;
  // Ready once open() ran: for host work of a test's own that waits for the gate.
  [[nodiscard]] std::shared_future<void> opened() const;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace cudactor::test
