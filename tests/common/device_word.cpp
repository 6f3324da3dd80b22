#include "common/device_word.hpp"

#include <atomic>
#include <stdexcept>
#include <string>

#include "common/pinned_words.hpp"
#include "common/test_backend.hpp"

#if CUDACTOR_TEST_CUDA
#include "gpu/cuda_test_kernels.hpp"
#endif

namespace cudactor::test {

struct device_word::state {
  std::atomic<int> host{0};        // the host backend's word
  volatile int* pinned = nullptr;  // CUDA's, when the tests run there

  int load() const { return pinned != nullptr ? *pinned : host.load(); }
};

device_word::device_word(int initial) : state_(std::make_shared<state>()) {
  if (on_cuda()) {
    auto taken = take_pinned_word();
    if (!taken.ok()) throw std::runtime_error{"device_word: " + taken.error().to_string()};
    state_->pinned = taken.value();
    *state_->pinned = initial;
  } else {
    state_->host = initial;
  }
}

int device_word::load() const { return state_->load(); }

#if CUDACTOR_TEST_CUDA
namespace {

gpu::status launched(int code, const char* what) {
  if (code == 0) return {};
  return {gpu::status_code::op_failed, std::string{what} + ": CUDA error " + std::to_string(code)};
}

}  // namespace
#endif

work device_word::store(int value) const {
  return work::local([s = state_, value](const gpu::launch_context& ctx) -> gpu::status {
    if (ctx.kind() == gpu::backend_kind::host) {
      s->host = value;
      return {};
    }
#if CUDACTOR_TEST_CUDA
    if (s->pinned == nullptr) return {gpu::status_code::invalid_argument, "a host word on CUDA"};
    return launched(kernels::store(ctx.native_stream(), s->pinned, value), "store kernel");
#else
    return {gpu::status_code::not_supported, "device_word on CUDA without the CUDA backend"};
#endif
  });
}

work device_word::copy_from(const device_word& from) const {
  return work::local(
      [to = state_, from = from.state_](const gpu::launch_context& ctx) -> gpu::status {
        if (ctx.kind() == gpu::backend_kind::host) {
          to->host = from->host.load();
          return {};
        }
#if CUDACTOR_TEST_CUDA
        if (to->pinned == nullptr || from->pinned == nullptr) {
          return {gpu::status_code::invalid_argument, "a host word on CUDA"};
        }
        return launched(kernels::copy_word(ctx.native_stream(), from->pinned, to->pinned),
                        "copy kernel");
#else
        return {gpu::status_code::not_supported, "device_word on CUDA without the CUDA backend"};
#endif
      });
}

}  // namespace cudactor::test
