// tests/common/gate.hpp
//
// A host "kernel" that runs only once the test opens the gate: how a test holds a stream. It
// blocks one host worker meanwhile.
#pragma once

#include <future>

#include "cudactor/messaging/work.hpp"

namespace cudactor::test {

struct gate {
  std::promise<void> open_promise;
  std::shared_future<void> opened = open_promise.get_future().share();
  void open() { open_promise.set_value(); }
  work hold() {
    auto f = opened;
    return work::local([f](const gpu::launch_context&) {
      f.wait();
      return gpu::status{};
    });
  }
};

}  // namespace cudactor::test
