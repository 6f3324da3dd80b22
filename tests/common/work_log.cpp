#include "common/work_log.hpp"

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/test_backend.hpp"
#include "cudactor/actors/detail/clock.hpp"

#if CUDACTOR_TEST_CUDA
#include "gpu/cuda_test_kernels.hpp"
#endif

namespace cudactor::test {

struct work_log::state {
  explicit state(std::size_t n) : size(n), started(n), ended(n), rank(n) {
    for (std::size_t i = 0; i < n; ++i) {
      started[i] = 0;
      ended[i] = 0;
      rank[i] = -1;
    }
  }

  std::size_t size;
  // The host backend's stamps.
  std::vector<std::atomic<std::int64_t>> started;
  std::vector<std::atomic<std::int64_t>> ended;
  std::vector<std::atomic<int>> rank;
  std::atomic<int> order{0};
  // CUDA's, in one block of pinned memory never freed (a kernel may still write it after a
  // failed test): started[n], ended[n] as 64-bit words, then rank[n] and the order counter.
  volatile long long* device_started = nullptr;
  volatile long long* device_ended = nullptr;
  volatile int* device_rank = nullptr;
  int* device_order = nullptr;

  bool on_device() const { return device_started != nullptr; }
};

work_log::work_log(std::size_t n) : state_(std::make_shared<state>(n)) {
  if (!on_cuda()) return;
#if CUDACTOR_TEST_CUDA
  int* block = nullptr;
  const std::size_t ints = 4 * n + n + 1;
  if (const int e = kernels::alloc_pinned_ints(static_cast<int>(ints), &block); e != 0) {
    throw std::runtime_error{"work_log: pinned memory: CUDA error " + std::to_string(e)};
  }
  // Page-aligned, so the 64-bit words at its start are aligned.
  state_->device_started = reinterpret_cast<volatile long long*>(block);
  state_->device_ended = state_->device_started + n;
  state_->device_rank = block + 4 * n;
  for (std::size_t i = 0; i < n; ++i) state_->device_rank[i] = -1;
  state_->device_order = block + 5 * n;
#else
  throw std::runtime_error{"work_log on CUDA in a build without the CUDA backend"};
#endif
}

std::size_t work_log::size() const { return state_->size; }

std::int64_t work_log::started(std::size_t index) const {
  return state_->on_device() ? state_->device_started[index] : state_->started[index].load();
}

std::int64_t work_log::ended(std::size_t index) const {
  return state_->on_device() ? state_->device_ended[index] : state_->ended[index].load();
}

int work_log::rank(std::size_t index) const {
  return state_->on_device() ? state_->device_rank[index] : state_->rank[index].load();
}

void work_log::start_now(std::size_t index) {
  state_->started[index] = detail::now_ns();
  state_->rank[index] = state_->order++;
}

void work_log::end_now(std::size_t index) { state_->ended[index] = detail::now_ns(); }

gpu::work_fn work_log::launch(std::size_t index, std::chrono::microseconds busy, bool fail) const {
  if (index >= state_->size) throw std::out_of_range{"work_log: no entry " + std::to_string(index)};
  return [s = state_, index, busy, fail](const gpu::launch_context& ctx) -> gpu::status {
    const gpu::status failed{gpu::status_code::op_failed, "kernel " + std::to_string(index) + " failed"};
    if (ctx.kind() == gpu::backend_kind::cuda) {
#if CUDACTOR_TEST_CUDA
      if (!s->on_device()) return {gpu::status_code::invalid_argument, "a host work_log on CUDA"};
      const long long busy_ns = std::chrono::nanoseconds{busy}.count();
      if (const int e = kernels::stamp(ctx.native_stream(), s->device_started + index,
                                       s->device_ended + index, s->device_rank + index,
                                       s->device_order, busy_ns);
          e != 0) {
        return {gpu::status_code::op_failed, "the stamp kernel: CUDA error " + std::to_string(e)};
      }
      return fail ? failed : gpu::status{};
#else
      return {gpu::status_code::not_supported, "work_log on CUDA without the CUDA backend"};
#endif
    }
    s->started[index] = detail::now_ns();
    s->rank[index] = s->order++;
    if (busy.count() > 0) {
      const auto until = std::chrono::steady_clock::now() + busy;
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    s->ended[index] = detail::now_ns();
    return fail ? failed : gpu::status{};
  };
}

}  // namespace cudactor::test
