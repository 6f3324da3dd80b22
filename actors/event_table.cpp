#include "cudactor/actors/event_table.hpp"

#include <mutex>
#include <utility>

namespace cudactor {

std::string describe(const event_lease& ref) {
  std::string out = "event " + std::to_string(ref.slot) + " (lease " +
                    std::to_string(ref.generation) + ", " + std::string{gpu::to_string(ref.kind)};
  if (ref.recorded()) {
    out += ", recorded on stream " + std::to_string(ref.stream.value) + " after point " +
           std::to_string(ref.point);
  }
  return out + ")";
}

gpu::result<std::uint32_t> event_table::create(gpu::event_kind kind) {
  auto made = device_->create_event(kind);
  if (!made) return made.error();
  std::unique_lock lock{mutex_};
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(entries_.size());
    entries_.emplace_back();
  }
  entries_[slot].event = std::move(made.value());
  entries_[slot].leased = false;
  return slot;
}

void event_table::destroy(std::uint32_t slot) {
  gpu::event doomed;
  {
    std::unique_lock lock{mutex_};
    if (slot >= entries_.size() || !entries_[slot].event.valid()) return;
    doomed = std::move(entries_[slot].event);
    entries_[slot].leased = false;
    free_slots_.push_back(slot);
  }
  // Destroyed outside the lock: a failed destroy is counted by the backend.
}

event_lease event_table::lease(std::uint32_t slot) {
  std::unique_lock lock{mutex_};
  entry& e = entries_.at(slot);
  ++e.generation;
  if (e.generation == 0) e.generation = 1;  // 0 names no event
  e.leased = true;
  event_lease ref;
  ref.slot = slot;
  ref.generation = e.generation;
  ref.kind = e.event.kind();
  return ref;
}

gpu::status event_table::describe_stale(const event_lease& ref, const entry* e) const {
  if (ref.empty()) return {gpu::status_code::invalid_argument, "empty event ref"};
  if (e == nullptr || !e->event.valid()) {
    return {gpu::status_code::invalid_handle, describe(ref) + " names no event of this pool"};
  }
  if (e->generation != ref.generation) {
    return {gpu::status_code::invalid_handle,
            describe(ref) + " is stale: the event was released and leased again (lease " +
                std::to_string(e->generation) + ")"};
  }
  return {gpu::status_code::invalid_handle, describe(ref) + " was already released"};
}

const event_table::entry* event_table::find(const event_lease& ref) const {
  return ref.slot < entries_.size() ? &entries_[ref.slot] : nullptr;
}

bool event_table::is_current(const event_lease& ref, const entry* e) {
  return e != nullptr && e->event.valid() && e->leased && e->generation == ref.generation &&
         !ref.empty();
}

gpu::status event_table::check_release(const event_lease& ref) const {
  std::shared_lock lock{mutex_};
  const entry* e = find(ref);
  if (is_current(ref, e)) return {};
  return describe_stale(ref, e);
}

void event_table::end_lease(const event_lease& ref) {
  std::unique_lock lock{mutex_};
  entries_.at(ref.slot).leased = false;
}

void event_table::clear() {
  std::vector<entry> doomed;
  {
    std::unique_lock lock{mutex_};
    doomed.swap(entries_);
    free_slots_.clear();
  }
}

gpu::result<gpu::event_ref> event_table::resolve(const event_lease& ref) const {
  std::shared_lock lock{mutex_};
  const entry* e = find(ref);
  if (is_current(ref, e)) return e->event.ref();
  return describe_stale(ref, e);
}

gpu::result<std::chrono::nanoseconds> event_table::elapsed(const event_lease& start,
                                                           const event_lease& end) const {
  // Under the lock: neither event can be destroyed (a shrink) while the backend reads it.
  std::shared_lock lock{mutex_};
  const entry* a = find(start);
  if (!is_current(start, a)) return describe_stale(start, a);
  const entry* b = find(end);
  if (!is_current(end, b)) return describe_stale(end, b);
  return device_->elapsed(a->event.ref(), b->event.ref());
}

std::size_t event_table::size() const {
  std::shared_lock lock{mutex_};
  return entries_.size() - free_slots_.size();
}

}  // namespace cudactor
