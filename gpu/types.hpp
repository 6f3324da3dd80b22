// gpu/types.hpp
//
// Small value types shared by every backend: what kind of backend, stream priorities, event
// kinds, copy directions, memory kinds, the state of a completion point, and what a backend
// says about its device. Plain data, no behaviour beyond naming.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu {

enum class backend_kind : std::uint8_t { host, cuda };

// Three classes, as in the seed stream pools; the CUDA backend spreads them over the device's
// priority range (cudaDeviceGetStreamPriorityRange), the host backend's workers serve higher
// classes first.
enum class stream_priority : std::uint8_t { low, normal, high };

// Regular events only order and signal; timing events also carry a timestamp, which costs
// extra on CUDA (cudaEventDisableTiming is set for regular ones).
enum class event_kind : std::uint8_t { regular, timing };

enum class copy_kind : std::uint8_t { host_to_device, device_to_host, device_to_device };

enum class memory_kind : std::uint8_t {
  device,       // stream-ordered device memory (cudaMallocAsync)
  managed,      // unified memory, may be prefetched (cudaMallocManaged)
  pinned_host,  // page-locked host memory for overlapping copies (cudaMallocHost)
};

enum class prefetch_target : std::uint8_t { device, host };

// Where a completion point (a recorded event, a timeline value) stands.
enum class event_state : std::uint8_t { not_ready, ready, failed };

// A timeline value: the n-th point signalled on a stream, counting from 1.
using timeline_point = std::uint64_t;

// The answer to "has this point been reached?": failed carries the reason.
struct query_result {
  event_state state = event_state::not_ready;
  status error;  // set when state == failed

  [[nodiscard]] bool ready() const noexcept { return state == event_state::ready; }
  [[nodiscard]] bool failed() const noexcept { return state == event_state::failed; }
  [[nodiscard]] bool done() const noexcept { return state != event_state::not_ready; }
};

struct stream_options {
  std::string name;  // used in error messages and metrics; defaulted when empty
  stream_priority priority = stream_priority::normal;
};

// The CUDA backend's default bound on signalled timeline values in flight per stream: well
// below the depth at which a CUDA stream stops accepting work (cuda_backend::open).
inline constexpr std::size_t cuda_default_max_in_flight = 512;

struct device_info {
  backend_kind kind = backend_kind::host;
  std::string name;                  // "host (4 workers)" or the CUDA device name
  int ordinal = 0;                   // CUDA device ordinal, 0 on the host backend
  std::size_t total_memory = 0;      // bytes the backend may hand out
  int compute_capability_major = 0;  // 0 on the host backend
  int compute_capability_minor = 0;
  int greatest_priority = 0;  // native priority of stream_priority::high
  int least_priority = 0;     // native priority of stream_priority::low
};

[[nodiscard]] std::string_view to_string(backend_kind value) noexcept;
[[nodiscard]] std::string_view to_string(stream_priority value) noexcept;
[[nodiscard]] std::string_view to_string(event_kind value) noexcept;
[[nodiscard]] std::string_view to_string(copy_kind value) noexcept;
[[nodiscard]] std::string_view to_string(memory_kind value) noexcept;
[[nodiscard]] std::string_view to_string(event_state value) noexcept;

}  // namespace cudactor::gpu
