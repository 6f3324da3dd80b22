// actors/coordinator/run_table.hpp
//
// The run requests the coordinator still owes an answer: an operation or a graph registered
// and answered once all of it has ended. Per request, the notices of its operations are
// gathered in their order until the last has ended, then handed to whoever asked (a response
// promise, or a client's function) in one call. A request is opened before anything is
// registered, so that an operation ending inside the handler that registers it is heard like
// any other. No CAF here: the coordinator keeps the key in each operation's record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cudactor/messaging/coordinator_types.hpp"

namespace cudactor::detail {

class run_table {
 public:
  using answer_fn = std::function<void(std::vector<op_notice>)>;

  // A request for `ops` operations (at least one), answered through `done`; its key, never 0
  // (0 in a record: no request).
  [[nodiscard]] std::uint64_t open(std::size_t ops, answer_fn done) {
    const std::uint64_t key = next_++;
    request& r = open_[key];
    r.ends.resize(ops);
    r.left = ops;
    r.done = std::move(done);
    return key;
  }
  // Its registration was refused: forgotten, never answered.
  void drop(std::uint64_t key) noexcept { open_.erase(key); }
  // Operation `index` of request `key` ended with `notice`; the request is answered, and
  // forgotten, once its last operation has. A key not open (0, or answered) is ignored.
  void ended(std::uint64_t key, std::uint32_t index, op_notice notice) {
    auto it = open_.find(key);
    if (it == open_.end()) return;
    request& r = it->second;
    if (index >= r.ends.size()) return;
    r.ends[index] = std::move(notice);
    if (--r.left != 0) return;
    auto done = std::move(r.done);
    auto ends = std::move(r.ends);
    open_.erase(it);
    done(std::move(ends));
  }
  [[nodiscard]] std::size_t size() const noexcept { return open_.size(); }

 private:
  struct request {
    answer_fn done;
    std::vector<op_notice> ends;
    std::size_t left = 0;
  };
  std::unordered_map<std::uint64_t, request> open_;
  std::uint64_t next_ = 1;
};

}  // namespace cudactor::detail
