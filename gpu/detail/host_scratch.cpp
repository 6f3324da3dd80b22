#include "cudactor/gpu/detail/host_scratch.hpp"

#include <new>
#include <string>

namespace cudactor::gpu::detail {

namespace {
constexpr std::align_val_t alignment{launch_context::scratch_alignment};
}  // namespace

result<void*> allocate_host_scratch(const host_scratch_budget& budget, std::size_t bytes) {
  if (!budget.table->try_reserve(bytes, budget.limit)) {
    return status{status_code::out_of_memory,
                  "no room for " + std::to_string(bytes) +
                      " bytes of scratch: " + std::to_string(budget.table->bytes_in_use()) +
                      " of " + std::to_string(budget.limit) + " bytes in use"};
  }
  void* data = ::operator new(bytes, alignment, std::nothrow);
  if (data == nullptr) {
    budget.table->unreserve(bytes);
    return status{status_code::out_of_memory,
                  "the host could not provide " + std::to_string(bytes) + " bytes of scratch"};
  }
  return data;
}

void free_host_scratch(const host_scratch_budget& budget, void* data, std::size_t bytes) noexcept {
  ::operator delete(data, alignment);
  budget.table->unreserve(bytes);
}

host_run_scratch::~host_run_scratch() {
  for (const taken& t : taken_) free_host_scratch(*budget_, t.data, t.bytes);
}

result<void*> host_run_scratch::take(std::size_t bytes) {
  taken_.reserve(taken_.size() + 1);  // before allocating: a throw here leaks nothing
  auto made = allocate_host_scratch(*budget_, bytes);
  if (made) taken_.push_back(taken{made.value(), bytes});
  return made;
}

}  // namespace cudactor::gpu::detail
