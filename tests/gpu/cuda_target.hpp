// tests/gpu/cuda_target.hpp
//
// The CUDA backend as a conformance target: a hold is a kernel spinning on a flag in pinned,
// mapped host memory (released by writing the flag), busy time is a kernel spinning on the
// GPU's global timer. Both go through backend::enqueue, so they exercise it too.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <string>

#include "common/backend_conformance.hpp"
#include "cuda_test_kernels.hpp"
#include "cudactor/gpu/cuda_backend.hpp"

namespace cudactor::test {

inline gpu::status launched(int error, const char* what) {
  if (error == 0) return {};
  return {gpu::status_code::op_failed,
          std::string{what} + ": " + cudaGetErrorName(static_cast<cudaError_t>(error))};
}

class cuda_target : public conformance_target {
 public:
  explicit cuda_target(std::size_t max_in_flight = gpu::cuda_default_max_in_flight) {
    auto opened = gpu::cuda_backend::open(0, max_in_flight);
    BOOST_REQUIRE_MESSAGE(opened.ok(), opened.error().to_string());
    cuda_ = std::move(opened).value();
  }

  gpu::backend& backend() override { return *cuda_; }
  gpu::cuda_backend& cuda() { return *cuda_; }

  std::unique_ptr<gpu::backend> make_another() override {
    auto opened = gpu::cuda_backend::open(0);
    BOOST_REQUIRE_MESSAGE(opened.ok(), opened.error().to_string());
    return std::move(opened).value();
  }

  std::unique_ptr<hold_handle> hold(gpu::stream_ref s) override {
    struct flag_hold : hold_handle {
      gpu::backend* owner = nullptr;
      gpu::stream_ref held;
      int* flag = nullptr;
      void release() override {
        if (flag == nullptr) return;
        *static_cast<volatile int*>(flag) = 1;
        std::atomic_thread_fence(std::memory_order_seq_cst);
      }
      ~flag_hold() override {
        release();
        // The kernel may still be reading the flag: let it finish before freeing. The held
        // stream alone, not the device (other tests' streams may be held on purpose); the
        // device only when the test destroyed the stream already.
        if (owner->synchronize(held).code() == gpu::status_code::invalid_handle) {
          (void)cudaDeviceSynchronize();
        }
        if (flag != nullptr) (void)cudaFreeHost(flag);
      }
    };
    auto handle = std::make_unique<flag_hold>();
    handle->owner = &backend();
    handle->held = s;
    BOOST_REQUIRE(cudaHostAlloc(reinterpret_cast<void**>(&handle->flag), sizeof(int),
                                cudaHostAllocMapped) == cudaSuccess);
    *handle->flag = 0;
    volatile int* flag = handle->flag;
    auto held = backend().enqueue(s, [flag](const gpu::launch_context& context) {
      return launched(kernels::hold(context.native_stream(), flag, 20'000'000'000LL), "hold");
    });
    BOOST_REQUIRE_MESSAGE(held.ok(), held.to_string());
    return handle;
  }

  gpu::status busy(gpu::stream_ref s, std::chrono::milliseconds duration) override {
    const long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
    return backend().enqueue(s, [ns](const gpu::launch_context& context) {
      return launched(kernels::busy(context.native_stream(), ns), "busy");
    });
  }

 private:
  std::unique_ptr<gpu::cuda_backend> cuda_;
};

}  // namespace cudactor::test
