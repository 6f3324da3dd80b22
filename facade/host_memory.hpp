// facade/host_memory.hpp
//
// Host memory a copy can use on either backend: pinned (page-locked) or managed (unified),
// made by the runtime's backend. Both backends refuse a copy from or to ordinary (pageable)
// host memory, a std::vector's for instance: on CUDA such a copy would block the calling
// thread while the driver stages it, and the host backend refuses what CUDA refuses.
//
//   gpu::buffer staging = cudactor::allocate_pinned(*rt, bytes);
//   std::memcpy(staging.data(), input, bytes);
//   s.copy(device_buffer, staging.data(), bytes, gpu::copy_kind::host_to_device);
//
// Made on the calling thread (no actor is asked; cudaMallocHost may take a while, so not on
// an actor's thread); a failure throws cudactor::failure (out_of_memory, invalid_argument for
// zero bytes). The buffer frees itself when it goes, through the runtime's backend: let it go
// before the runtime, and only once the copies that use it have completed.
#pragma once

#include <cstdint>

#include "cudactor/gpu/buffer.hpp"

namespace cudactor {

class runtime;

[[nodiscard]] gpu::buffer allocate_pinned(runtime& rt, std::uint64_t bytes);
[[nodiscard]] gpu::buffer allocate_managed(runtime& rt, std::uint64_t bytes);

}  // namespace cudactor
