// gpu/rendezvous_store.hpp
//
// Where the ranks of a communicator find each other: a key-value store each rank writes its
// address to and reads the others' from, with a bound on how long a read waits. The engines
// (Gloo's context, NCCL's unique id) rendezvous through one. memory_store keeps the keys in
// this process, for ranks that are threads of one process (tests, a single node); the
// cluster provides one backed by its control plane's messages.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu {

class rendezvous_store {
 public:
  virtual ~rendezvous_store() = default;
  // Writes `value` under `key`, replacing what was there.
  [[nodiscard]] virtual status set(const std::string& key, std::vector<char> value) = 0;
  // The value under `key`, once there: timeout after `limit` (naming the key).
  [[nodiscard]] virtual result<std::vector<char>> get(const std::string& key,
                                                      std::chrono::milliseconds limit) = 0;
};

class memory_store final : public rendezvous_store {
 public:
  [[nodiscard]] status set(const std::string& key, std::vector<char> value) override;
  [[nodiscard]] result<std::vector<char>> get(const std::string& key,
                                              std::chrono::milliseconds limit) override;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<char>> values_;
};

}  // namespace cudactor::gpu
