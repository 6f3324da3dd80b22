// actors/coordinator/staged_passes.hpp
//
// What a scheduling pass is gathering for each stream: the operations it puts there, in
// order, with their ids, sent at the end of the pass as one dispatch message per stream
// (coordinator_state::send_staged). Each stream's last pass is the guess for its next, so that
// a message's vector is sized once rather than grown, and its work moved, by doubling. No CAF
// here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "cudactor/messaging/stream_dispatch.hpp"

namespace cudactor::detail {

class staged_passes {
 public:
  struct pass {
    std::vector<dispatched_op> ops;
    std::vector<op_id> ids;  // ops[i]'s operation
  };

  void resize(std::size_t streams) { streams_.resize(streams); }
  [[nodiscard]] std::size_t size() const noexcept { return streams_.size(); }
  // `op`, of operation `id`, after what was gathered for stream `index`.
  void add(std::uint32_t index, op_id id, dispatched_op op) {
    stream& s = streams_[index];
    if (s.gathered.ops.empty()) {
      s.gathered.ops.reserve(s.last_size);
      s.gathered.ids.reserve(s.last_size);
    }
    s.gathered.ops.push_back(std::move(op));
    s.gathered.ids.push_back(id);
  }
  [[nodiscard]] bool empty(std::uint32_t index) const noexcept {
    return streams_[index].gathered.ops.empty();
  }
  // What was gathered for stream `index`, taken: the stream starts its next pass empty.
  [[nodiscard]] pass take(std::uint32_t index) {
    stream& s = streams_[index];
    s.last_size = s.gathered.ops.size();
    pass out = std::move(s.gathered);
    s.gathered.ops.clear();  // moved from: empty, said so
    s.gathered.ids.clear();
    return out;
  }
  // Nothing gathered is sent (the device was lost).
  void clear() noexcept {
    for (auto& s : streams_) {
      s.gathered.ops.clear();
      s.gathered.ids.clear();
    }
  }

 private:
  struct stream {
    pass gathered;
    std::size_t last_size = 16;  // of the stream's last pass
  };
  std::vector<stream> streams_;
};

}  // namespace cudactor::detail
