// gpu/rendezvous_store.cpp
#include "cudactor/gpu/rendezvous_store.hpp"

#include <utility>

namespace cudactor::gpu {

status memory_store::set(const std::string& key, std::vector<char> value) {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    values_[key] = std::move(value);
  }
  changed_.notify_all();
  return {};
}

result<std::vector<char>> memory_store::get(const std::string& key,
                                            std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock{mutex_};
  const bool there =
      changed_.wait_for(lock, limit, [&] { return values_.find(key) != values_.end(); });
  if (!there) {
    return status{status_code::timeout, "rendezvous: no value under '" + key + "' within " +
                                     std::to_string(limit.count()) + " ms"};
  }
  return values_.at(key);
}

}  // namespace cudactor::gpu
