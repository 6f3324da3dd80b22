// gpu/buffer.hpp
//
// An owning allocation made by a backend: device memory (stream-ordered: freed in the order
// of the stream it was allocated on, so work already enqueued may still use it), managed
// memory, or pinned host memory. Move-only; destruction releases it and never throws.
#pragma once

#include <cstddef>

#include "cudactor/gpu/status.hpp"
#include "cudactor/gpu/stream.hpp"
#include "cudactor/gpu/types.hpp"

namespace cudactor::gpu {

class backend;

class buffer {
 public:
  buffer() noexcept = default;
  buffer(backend& owner, void* data, std::size_t size, memory_kind kind, stream_ref stream) noexcept
      : owner_(&owner), data_(data), size_(size), kind_(kind), stream_(stream) {}
  buffer(buffer&& other) noexcept;
  buffer& operator=(buffer&& other) noexcept;  // releases what this held first
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer();

  [[nodiscard]] void* data() const noexcept { return data_; }
  template <class T>
  [[nodiscard]] T* as() const noexcept {
    return static_cast<T*>(data_);
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] memory_kind kind() const noexcept { return kind_; }
  // The stream whose order frees device memory; empty for managed and pinned memory.
  [[nodiscard]] stream_ref stream() const noexcept { return stream_; }
  [[nodiscard]] bool valid() const noexcept { return owner_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }
  [[nodiscard]] backend* owner() const noexcept { return owner_; }

  // Releases now (device memory: in the order of its stream) and reports how that went.
  [[nodiscard]] status reset() noexcept;

  // Gives up ownership without freeing; the caller frees through the backend.
  [[nodiscard]] void* release() noexcept;

 private:
  backend* owner_ = nullptr;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  memory_kind kind_ = memory_kind::device;
  stream_ref stream_;
};

}  // namespace cudactor::gpu
