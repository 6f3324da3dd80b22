// gpu/stream.hpp
//
// A stream: an in-order queue of device work. `stream` owns one (move-only, destroyed with
// it); `stream_ref` is the cheap, copyable, non-owning view every backend call takes. A ref can
// outlive its stream: the backend then answers invalid_handle instead of touching freed state.
#pragma once

#include <cstdint>

#include "cudactor/gpu/handle_id.hpp"
#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu {

class backend;

class stream_ref {
 public:
  constexpr stream_ref() noexcept = default;
  explicit constexpr stream_ref(handle_id id) noexcept : id_(id) {}

  [[nodiscard]] const handle_id& id() const noexcept { return id_; }
  [[nodiscard]] bool empty() const noexcept { return id_.empty(); }

  friend bool operator==(const stream_ref& a, const stream_ref& b) noexcept {
    return a.id_ == b.id_;
  }
  friend bool operator!=(const stream_ref& a, const stream_ref& b) noexcept { return !(a == b); }

 private:
  handle_id id_;
};

class stream {
 public:
  stream() noexcept = default;
  stream(backend& owner, stream_ref ref) noexcept : owner_(&owner), ref_(ref) {}
  stream(stream&& other) noexcept;
  stream& operator=(stream&& other) noexcept;  // destroys what this held first
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream();

  [[nodiscard]] stream_ref ref() const noexcept { return ref_; }
  operator stream_ref() const noexcept { return ref_; }  // NOLINT: a view, like string_view
  [[nodiscard]] bool valid() const noexcept { return owner_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }
  [[nodiscard]] backend* owner() const noexcept { return owner_; }

  // Destroys the stream now and says how that went; the handle is empty afterwards. Work
  // already enqueued still runs to completion, as with cudaStreamDestroy.
  [[nodiscard]] status reset() noexcept;

 private:
  backend* owner_ = nullptr;
  stream_ref ref_;
};

}  // namespace cudactor::gpu
