// gpu/event.hpp
//
// An event: a point that can be recorded on a stream, waited for by other streams, queried,
// and (for timing events) timed. `event` owns one (move-only); `event_ref` is the copyable
// view. CUDA's semantics hold on every backend: a never-recorded event is complete, a wait
// binds to the most recent record at the time of the call, and re-recording is allowed.
#pragma once

#include "cudactor/gpu/handle_id.hpp"
#include "cudactor/gpu/status.hpp"
#include "cudactor/gpu/types.hpp"

namespace cudactor::gpu {

class backend;

class event_ref {
 public:
  constexpr event_ref() noexcept = default;
  explicit constexpr event_ref(handle_id id) noexcept : id_(id) {}

  [[nodiscard]] const handle_id& id() const noexcept { return id_; }
  [[nodiscard]] bool empty() const noexcept { return id_.empty(); }

  friend bool operator==(const event_ref& a, const event_ref& b) noexcept { return a.id_ == b.id_; }
  friend bool operator!=(const event_ref& a, const event_ref& b) noexcept { return !(a == b); }

 private:
  handle_id id_;
};

class event {
 public:
  event() noexcept = default;
  event(backend& owner, event_ref ref, event_kind kind) noexcept
      : owner_(&owner), ref_(ref), kind_(kind) {}
  event(event&& other) noexcept;
  event& operator=(event&& other) noexcept;  // destroys what this held first
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  ~event();

  [[nodiscard]] event_ref ref() const noexcept { return ref_; }
  operator event_ref() const noexcept { return ref_; }  // NOLINT: a view
  [[nodiscard]] event_kind kind() const noexcept { return kind_; }
  [[nodiscard]] bool valid() const noexcept { return owner_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }
  [[nodiscard]] backend* owner() const noexcept { return owner_; }

  [[nodiscard]] status reset() noexcept;

 private:
  backend* owner_ = nullptr;
  event_ref ref_;
  event_kind kind_ = event_kind::regular;
};

}  // namespace cudactor::gpu
