// gpu/stream_copy.hpp
//
// A copy made by work when its stream reaches it: what a named operation or a node uses to
// move bytes into or out of a buffer in the order of the buffer's other work. On the host
// backend the work *is* the copy (memcpy on the stream's worker); on CUDA it is enqueued on
// the work's stream (cudaMemcpyAsync, direction from unified addressing).
//
// On CUDA a copy to pageable host memory returns only once it has happened (CUDA's rule for
// such copies): it holds the enqueuing thread until the stream reaches it. Copies of a node's
// buffers to its control plane (fetch) are checks and small results, not a data path.
#pragma once

#include <cstddef>

#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu {

// Copies `bytes` from `src` to `dst` in the order of ctx's stream; the ranges must not
// overlap. invalid_argument for a null pointer with bytes > 0.
[[nodiscard]] status copy_in_stream(const launch_context& ctx, void* dst, const void* src,
                                    std::size_t bytes);

}  // namespace cudactor::gpu
