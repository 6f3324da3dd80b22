// actors/event_table.hpp
//
// The events of one event pool and the state of their leases, shared between the pool actor
// (which alone creates, leases, releases and destroys) and the stream actors (which turn an
// event_lease from a message into the backend event it names). A lease's generation changes
// each time the event is handed out, so a ref kept after its release, or released twice, is
// recognised instead of touching an event that now belongs to someone else.
//
// Thread-safe: the pool writes under an exclusive lock, stream actors read under a shared one.
#pragma once

#include <chrono>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <vector>

#include "cudactor/gpu/backend.hpp"
#include "cudactor/messaging/types.hpp"

namespace cudactor {

class event_table {
 public:
  explicit event_table(gpu::backend& device) : device_(&device) {}

  // --- the pool's side -------------------------------------------------------------------
  // Creates an event and gives it a slot; not leased yet.
  [[nodiscard]] gpu::result<std::uint32_t> create(gpu::event_kind kind);
  // Destroys the (unleased) event in `slot`; the slot is reused by a later create().
  void destroy(std::uint32_t slot);
  // Hands out the event in `slot` under a new generation.
  [[nodiscard]] event_lease lease(std::uint32_t slot);
  // ok, or stale_event saying whether the ref was released already or belongs to an older
  // lease of its slot. Checks without changing anything.
  [[nodiscard]] gpu::status check_release(const event_lease& ref) const;
  // Ends the lease; check_release() must have said ok.
  void end_lease(const event_lease& ref);
  // Destroys every event; refs resolve to nothing afterwards.
  void clear();

  // --- anyone ----------------------------------------------------------------------------
  // The backend event a current lease names, or a status saying why not (stale, unknown).
  [[nodiscard]] gpu::result<gpu::event_ref> resolve(const event_lease& ref) const;
  // end - start of two current timing leases (the backend's elapsed: not_ready until the
  // device passed both, not_timing, not_recorded; stale for a released lease).
  [[nodiscard]] gpu::result<std::chrono::nanoseconds> elapsed(const event_lease& start,
                                                              const event_lease& end) const;
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] const gpu::backend& device() const noexcept { return *device_; }

 private:
  struct entry {
    gpu::event event;  // empty while the slot is free
    std::uint32_t generation = 0;
    bool leased = false;
  };

  // The entry a ref's slot names (any generation), or nullptr; call under the lock.
  [[nodiscard]] const entry* find(const event_lease& ref) const;
  // Whether `e` is the live lease `ref` names.
  [[nodiscard]] static bool is_current(const event_lease& ref, const entry* e);
  [[nodiscard]] gpu::status describe_stale(const event_lease& ref, const entry* e) const;

  gpu::backend* device_;
  mutable std::shared_mutex mutex_;
  std::vector<entry> entries_;
  std::vector<std::uint32_t> free_slots_;
};

// "event 3 (lease 7, timing)": how errors name an event ref.
[[nodiscard]] std::string describe(const event_lease& ref);

}  // namespace cudactor
