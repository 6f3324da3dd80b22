// gpu/detail/graph_scratch.hpp
//
// The scratch of a graph's nodes (launch_context::scratch inside a work_graph). Each node has
// blocks of its own, and remembers which it handed out, in which order, the last time its
// work ran (on the host) or was captured (on CUDA) with success: the next run asking for the
// same sizes in the same order gets the same blocks, so what a node launched keeps its
// addresses from launch to launch, and what a launch left in a block is there at the next.
// A request that its block of last time cannot serve gets the smallest other block of the
// node's that fits and is not taken in this run, else a new one. No block is given back while
// the graph lives: a launch enqueued before a node changed may still use it (a graph's
// launches are ordered one after the other, so the node's later runs may take it again). The
// graph's owner frees every block when the graph is gone. The backend allocates (its memory,
// its pool). One run at a time: the graph serializes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/gpu/status.hpp"

namespace cudactor::gpu::detail {

class graph_scratch {
 public:
  struct block {
    void* data = nullptr;
    std::size_t size = 0;
  };
  using allocator = std::function<result<void*>(std::size_t bytes)>;

  graph_scratch(std::size_t nodes, allocator allocate)
      : source_(*this), allocate_(std::move(allocate)), nodes_(nodes) {}
  graph_scratch(const graph_scratch&) = delete;
  graph_scratch& operator=(const graph_scratch&) = delete;
  ~graph_scratch() = default;  // the owner frees blocks()

  // The source to hand a run of `node`'s work.
  [[nodiscard]] scratch_source& begin(std::uint32_t node);
  // The run begin() started is over: its work is now the node's (kept: its order is the one
  // to follow), or it is not (the node's order stays that of its work).
  void settle(bool kept);

  // The order `node`'s work took its blocks in, to put back with restore() when the work
  // that was settled as kept is given up after all.
  [[nodiscard]] std::vector<std::size_t> order(std::uint32_t node) const {
    return nodes_[node].order;
  }
  void restore(std::uint32_t node, std::vector<std::size_t> order) {
    nodes_[node].order = std::move(order);
  }

  // Every block allocated, each node's: what the owner frees.
  [[nodiscard]] const std::vector<block>& blocks() const noexcept { return all_; }
  // Their bytes, as asked for.
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  class run_source final : public scratch_source {
   public:
    explicit run_source(graph_scratch& owner) : owner_(&owner) {}
    [[nodiscard]] result<void*> take(std::size_t bytes) override { return owner_->take(bytes); }

   private:
    graph_scratch* owner_;
  };

  struct node_blocks {
    std::vector<block> owned;
    std::vector<std::size_t> order;  // indices into owned, as the node's work took them
  };

  [[nodiscard]] result<void*> take(std::size_t bytes);
  [[nodiscard]] bool free_in_run(std::size_t index) const;

  run_source source_;
  allocator allocate_;
  std::vector<node_blocks> nodes_;
  std::vector<block> all_;
  std::size_t bytes_ = 0;
  std::uint32_t running_ = 0;       // the node begin() named
  std::vector<std::size_t> taken_;  // what its run took so far, indices into its owned
};

}  // namespace cudactor::gpu::detail
