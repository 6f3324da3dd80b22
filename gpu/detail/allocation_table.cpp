#include "cudactor/gpu/detail/allocation_table.hpp"

#include <cstdio>
#include <iterator>
#include <string>

namespace cudactor::gpu::detail {

std::string format_address(const void* data) {
  char text[2 + 2 * sizeof(void*) + 1];
  std::snprintf(text, sizeof text, "%p", data);
  return text;
}

void allocation_table::add(const void* data, allocation record) {
  std::lock_guard<std::mutex> lock{mutex_};
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  drop_retired_overlapping(start, record.size);
  live_[start] = record;
}

const std::pair<const std::uintptr_t, allocation_table::retired_range>*
allocation_table::retired_at(std::uintptr_t address) const {
  auto it = retired_.upper_bound(address);
  if (it == retired_.begin()) return nullptr;
  --it;
  return address < it->first + it->second.size ? &*it : nullptr;
}

void allocation_table::drop_retired_overlapping(std::uintptr_t start, std::size_t size) {
  if (retired_.empty()) return;
  auto it = retired_.upper_bound(start);
  if (it != retired_.begin() && std::prev(it)->first + std::prev(it)->second.size > start) --it;
  while (it != retired_.end() && it->first < start + size) it = retired_.erase(it);
}

status allocation_table::check(const void* data, std::size_t bytes, memory_side side,
                               std::string_view role) const {
  std::string what{role};
  if (data == nullptr) return {status_code::invalid_argument, what + " pointer is null"};
  if (bytes == 0) return {status_code::invalid_argument, "size is zero"};
  const auto address = reinterpret_cast<std::uintptr_t>(data);
  if (address + bytes < address) {
    return {status_code::out_of_range,
            what + " range of " + std::to_string(bytes) + " bytes wraps around the address space"};
  }
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = live_.upper_bound(address);
  const allocation* owner = nullptr;
  std::uintptr_t start = 0;
  if (it != live_.begin()) {
    --it;
    if (address < it->first + it->second.size) {
      owner = &it->second;
      start = it->first;
    }
  }
  if (owner == nullptr) {
    if (const auto* freed = retired_at(address)) {
      return {status_code::invalid_argument,
              what + " " + format_address(data) + " lies in the " +
                  std::to_string(freed->second.size) + "-byte " +
                  std::string{to_string(freed->second.kind)} + " allocation at " +
                  format_address(reinterpret_cast<const void*>(freed->first)) +
                  ", which is already being freed"};
    }
    if (side == memory_side::device && strict_) {
      return {status_code::invalid_argument,
              what + " " + format_address(data) + " is not device memory of this backend"};
    }
    return {};
  }
  const std::string where = "the " + std::to_string(owner->size) + "-byte " +
                            std::string{to_string(owner->kind)} + " allocation at " +
                            format_address(reinterpret_cast<const void*>(start));
  if (owner->freeing) {
    return {status_code::invalid_argument, what + " " + format_address(data) + " lies in " + where +
                                        ", which is already being freed"};
  }
  const std::uintptr_t end = start + owner->size;
  if (address + bytes > end) {
    return {status_code::out_of_range, what + " range of " + std::to_string(bytes) + " bytes at " +
                                    format_address(data) + " overruns " + where + " by " +
                                    std::to_string(address + bytes - end) + " bytes"};
  }
  if (side == memory_side::device && owner->kind == memory_kind::pinned_host) {
    return {status_code::invalid_argument,
            what + " " + format_address(data) + " is pinned host memory, not device memory"};
  }
  if (side == memory_side::host && owner->kind == memory_kind::device) {
    return {status_code::invalid_argument,
            what + " " + format_address(data) + " is device memory, not host memory"};
  }
  return {};
}

status allocation_table::check_copy(void* dst, const void* src, std::size_t bytes,
                                    copy_kind direction) const {
  memory_side dst_side = memory_side::device;
  memory_side src_side = memory_side::device;
  switch (direction) {
    case copy_kind::host_to_device: src_side = memory_side::host; break;
    case copy_kind::device_to_host: dst_side = memory_side::host; break;
    case copy_kind::device_to_device: break;
    default: return {status_code::invalid_argument, "unknown copy direction"};
  }
  if (auto bad = check(dst, bytes, dst_side, "destination"); !bad.ok()) return bad;
  if (auto bad = check(src, bytes, src_side, "source"); !bad.ok()) return bad;
  const auto to = reinterpret_cast<std::uintptr_t>(dst);
  const auto from = reinterpret_cast<std::uintptr_t>(src);
  if (to < from + bytes && from < to + bytes) {
    return {status_code::invalid_argument,
            "source and destination of a " + std::to_string(bytes) + "-byte copy overlap"};
  }
  return {};
}

result<allocation> allocation_table::begin_free(const void* data) {
  if (data == nullptr) return status{status_code::invalid_argument, "free of a null pointer"};
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = live_.find(reinterpret_cast<std::uintptr_t>(data));
  if (it == live_.end()) {
    return status{status_code::invalid_handle,
                  format_address(data) + " is not the start of a live allocation of this backend"};
  }
  if (it->second.freeing) {
    return status{status_code::invalid_handle,
                  "the allocation at " + format_address(data) + " is already being freed"};
  }
  it->second.freeing = true;
  return it->second;
}

void allocation_table::cancel_free(const void* data) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = live_.find(reinterpret_cast<std::uintptr_t>(data));
  if (it != live_.end()) it->second.freeing = false;
}

void allocation_table::retire(const void* data) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = live_.find(reinterpret_cast<std::uintptr_t>(data));
  if (it == live_.end()) return;
  reserved_ -= std::min(reserved_, it->second.size);
  const std::uint64_t sequence = ++retired_sequence_;
  retired_[it->first] = retired_range{it->second.size, it->second.kind, sequence};
  retired_order_.emplace_back(it->first, sequence);
  live_.erase(it);
  while (retired_order_.size() > retired_kept) {
    const auto [oldest, when] = retired_order_.front();
    retired_order_.pop_front();
    auto r = retired_.find(oldest);
    if (r != retired_.end() && r->second.sequence == when) retired_.erase(r);
  }
}

void allocation_table::remove(const void* data) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = live_.find(reinterpret_cast<std::uintptr_t>(data));
  if (it == live_.end()) return;
  reserved_ -= std::min(reserved_, it->second.size);
  live_.erase(it);
}

std::optional<allocation> allocation_table::find(const void* data) const {
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = live_.find(reinterpret_cast<std::uintptr_t>(data));
  if (it == live_.end()) return std::nullopt;
  return it->second;
}

std::optional<allocation> allocation_table::containing(const void* data) const {
  const auto address = reinterpret_cast<std::uintptr_t>(data);
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = live_.upper_bound(address);
  if (it == live_.begin()) return std::nullopt;
  --it;
  if (address >= it->first + it->second.size) return std::nullopt;
  return it->second;
}

bool allocation_table::try_reserve(std::size_t bytes, std::size_t limit) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (bytes > limit || reserved_ > limit - bytes) return false;
  reserved_ += bytes;
  return true;
}

void allocation_table::unreserve(std::size_t bytes) {
  std::lock_guard<std::mutex> lock{mutex_};
  reserved_ -= std::min(reserved_, bytes);
}

std::size_t allocation_table::bytes_in_use() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return reserved_;
}

std::size_t allocation_table::count() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return live_.size();
}

std::map<std::uintptr_t, allocation> allocation_table::take_all() {
  std::lock_guard<std::mutex> lock{mutex_};
  // Only what the allocations held: bytes reserved for anything else (the host backend's
  // scratch, which a graph keeps across a reset) stay counted until given back.
  for (const auto& [start, a] : live_) reserved_ -= std::min(reserved_, a.size);
  retired_.clear();
  retired_order_.clear();
  return std::exchange(live_, {});
}

}  // namespace cudactor::gpu::detail
