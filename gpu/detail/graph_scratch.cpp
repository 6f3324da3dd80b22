#include "cudactor/gpu/detail/graph_scratch.hpp"

#include <algorithm>
#include <utility>

namespace cudactor::gpu::detail {

scratch_source& graph_scratch::begin(std::uint32_t node) {
  running_ = node;
  taken_.clear();
  return source_;
}

bool graph_scratch::free_in_run(std::size_t index) const {
  return std::find(taken_.begin(), taken_.end(), index) == taken_.end();
}

result<void*> graph_scratch::take(std::size_t bytes) {
  node_blocks& node = nodes_[running_];
  taken_.reserve(taken_.size() + 1);
  const std::size_t k = taken_.size();
  // The block this request got last time: what was captured with it stays valid.
  std::size_t chosen = node.owned.size();
  if (k < node.order.size() && node.owned[node.order[k]].size >= bytes &&
      free_in_run(node.order[k])) {
    chosen = node.order[k];
  } else {
    for (std::size_t i = 0; i < node.owned.size(); ++i) {
      const bool fits = node.owned[i].size >= bytes && free_in_run(i);
      if (fits && (chosen == node.owned.size() || node.owned[i].size < node.owned[chosen].size)) {
        chosen = i;
      }
    }
  }
  if (chosen == node.owned.size()) {
    node.owned.reserve(node.owned.size() + 1);  // before allocating: nothing to undo after
    all_.reserve(all_.size() + 1);
    auto made = allocate_(bytes);
    if (!made) return made;
    const block b{made.value(), bytes};
    node.owned.push_back(b);
    all_.push_back(b);
    bytes_ += bytes;
  }
  taken_.push_back(chosen);
  return node.owned[chosen].data;
}

void graph_scratch::settle(bool kept) {
  if (kept) nodes_[running_].order = std::move(taken_);
  taken_.clear();
}

}  // namespace cudactor::gpu::detail
