#include "common/gate.hpp"

#include <chrono>
#include <mutex>
#include <string>

#include "common/pinned_words.hpp"
#include "common/time_scale.hpp"

#if CUDACTOR_TEST_CUDA
#include "gpu/cuda_test_kernels.hpp"
#endif

namespace cudactor::test {

struct gate::state {
  std::promise<void> opened_promise;
  std::shared_future<void> opened = opened_promise.get_future().share();
  std::once_flag open_once;
  std::mutex flag_mutex;
  volatile int* device_flag = nullptr;  // taken by the first hold on CUDA

  void open() {
    std::call_once(open_once, [this] { opened_promise.set_value(); });
    std::lock_guard<std::mutex> lock{flag_mutex};
    if (device_flag != nullptr) *device_flag = 1;
  }

  gpu::status hold_on_device(void* stream) {
#if CUDACTOR_TEST_CUDA
    volatile int* flag = nullptr;
    {
      std::lock_guard<std::mutex> lock{flag_mutex};
      if (device_flag == nullptr) {
        auto taken = take_pinned_word();
        if (!taken.ok()) return taken.error();
        device_flag = taken.value();
        // Opened before this first hold: the promise is set before open() takes the lock.
        const bool open_now = opened.wait_for(std::chrono::seconds{0}) == std::future_status::ready;
        *device_flag = open_now ? 1 : 0;
      }
      flag = device_flag;
    }
    const auto limit = scaled(std::chrono::nanoseconds{std::chrono::seconds{60}});
    if (const int e = kernels::hold(stream, flag, limit.count()); e != 0) {
      return {gpu::status_code::op_failed, "the gate's hold kernel: CUDA error " + std::to_string(e)};
    }
    return {};
#else
    (void)stream;
    return {gpu::status_code::not_supported, "a gate on CUDA in a build without the CUDA backend"};
#endif
  }
};

gate::gate() : state_(std::make_shared<state>()) {}

gate::~gate() { open(); }

void gate::open() { state_->open(); }

std::shared_future<void> gate::opened() const { return state_->opened; }

work gate::hold() const {
  return work::local([s = state_](const gpu::launch_context& ctx) -> gpu::status {
    if (ctx.kind() == gpu::backend_kind::cuda) return s->hold_on_device(ctx.native_stream());
    s->opened.wait();
    return {};
  });
}

}  // namespace cudactor::test
