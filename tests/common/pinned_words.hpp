// tests/common/pinned_words.hpp
//
// Words of pinned host memory that kernels and the test both reach, for the tests' work on
// the CUDA backend (a gate's flag, a word work writes). Handed out from pages that are never
// freed: a kernel may still read one after a failed test, and freeing memory a kernel reads
// is a sticky fault; the process's end frees them. Each word starts at 0.
#pragma once

#include "cudactor/gpu/status.hpp"

namespace cudactor::test {

// not_supported in a build without the CUDA backend; out_of_memory when CUDA has none.
[[nodiscard]] gpu::result<volatile int*> take_pinned_word();

}  // namespace cudactor::test
