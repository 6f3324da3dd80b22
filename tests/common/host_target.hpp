// tests/common/host_target.hpp
//
// The host backend as a conformance target and as a fixture for host-specific tests: holds
// are injected hangs, busy time is an injected delay.
#pragma once

#include <memory>

#include "backend_conformance.hpp"
#include "cudactor/gpu/host_backend.hpp"

namespace cudactor::test {

class host_target : public conformance_target {
 public:
  explicit host_target(gpu::host_backend_options options = {}) : host_(options) {}

  gpu::backend& backend() override { return host_; }
  gpu::host_backend& host() { return host_; }

  std::unique_ptr<gpu::backend> make_another() override {
    return std::make_unique<gpu::host_backend>();
  }

  std::unique_ptr<hold_handle> hold(gpu::stream_ref s) override {
    struct release_on_exit : hold_handle {
      gpu::hang_release gate;
      void release() override { gate.release(); }
      ~release_on_exit() override { gate.release(); }
    };
    auto hang = host_.inject_hang(s);
    BOOST_REQUIRE_MESSAGE(hang.ok(), hang.error().to_string());
    auto handle = std::make_unique<release_on_exit>();
    handle->gate = hang.value();
    return handle;
  }

  gpu::status busy(gpu::stream_ref s, std::chrono::milliseconds duration) override {
    return host_.inject_delay(s, duration);
  }

 private:
  gpu::host_backend host_;
};

// Two workers, as on the machines this runs on, whatever the hardware says.
struct two_worker_host : host_target {
  two_worker_host() : host_target(gpu::host_backend_options{2, std::size_t{1} << 30, "test"}) {}
};

}  // namespace cudactor::test
