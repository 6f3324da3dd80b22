#include "common/pinned_words.hpp"

#include <mutex>
#include <string>

#if CUDACTOR_TEST_CUDA
#include "gpu/cuda_test_kernels.hpp"
#endif

namespace cudactor::test {

gpu::result<volatile int*> take_pinned_word() {
#if CUDACTOR_TEST_CUDA
  static std::mutex mutex;
  static int* page = nullptr;
  static int used = 0;
  constexpr int per_page = 1024;
  std::lock_guard<std::mutex> lock{mutex};
  if (page == nullptr || used == per_page) {
    if (const int e = kernels::alloc_pinned_ints(per_page, &page); e != 0) {
      page = nullptr;
      return gpu::status{gpu::status_code::out_of_memory,
                         "pinned words for the tests: CUDA error " + std::to_string(e)};
    }
    used = 0;
  }
  return static_cast<volatile int*>(page + used++);
#else
  return gpu::status{gpu::status_code::not_supported,
                     "pinned words for the tests: built without the CUDA backend"};
#endif
}

}  // namespace cudactor::test
