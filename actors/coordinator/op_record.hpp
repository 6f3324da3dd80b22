// actors/coordinator/op_record.hpp
//
// What the coordinator keeps of one live operation besides its place in the dependency graph:
// its work, how it is to be placed, where it went (the stream's index and its point once
// known), its listeners and run request, its times, and, for a buffer user, its buffer side.
// Records live in an id_table owned by the coordinator and go with the operation's end (the
// ended ring keeps what describe shows of it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cudactor/actors/coordinator/id_list.hpp"
#include "cudactor/actors/coordinator/stream_pool.hpp"
#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/coordinator_protocol.hpp"
#include "cudactor/messaging/point_cell.hpp"

namespace cudactor::detail {

// An operation on no stream yet (op_record::stream, pinned: none).
inline constexpr std::uint32_t no_stream = ~std::uint32_t{0};

struct buffers_block;
// What an operation has to do with buffers.
struct op_buffers {
  std::vector<buffer_use> uses;        // declared
  std::vector<inferred_dep> inferred;  // the dependencies inferred from them
  buffer_id releases;                  // a release operation: the buffer it releases
  buffers_block* block = nullptr;      // the graph's block it is part of; null: allocated alone
};
// The buffer sides of a graph's buffer users, allocated at once: one allocation each cost
// every buffer user a malloc and a free, a tenth of what registering it cost. `live` counts
// the sides still held, and the registration's own hold while it runs; the block goes with
// the last. A long-running user keeps its graph's block (about 100 bytes a user).
struct buffers_block {
  std::unique_ptr<op_buffers[]> items;
  std::size_t live = 1;
  // Gives up one hold; the block goes with the last. Never throws (a deleter's share).
  static void release(buffers_block* block) noexcept;
};
// Frees a buffer side alone, or gives its block a hold back.
struct buffers_release {
  void operator()(op_buffers* b) const noexcept;
};
using buffers_ptr = std::unique_ptr<op_buffers, buffers_release>;
// An operation's listeners, each once. Nearly every operation has one (its graph's, or its
// registrar's), held without an allocation: a vector per record cost one per operation.
class listener_list {
 public:
  void add(const op_listener& listener) {
    if (!first_) {
      first_ = listener;
    } else if (listener != first_ &&
               std::find(rest_.begin(), rest_.end(), listener) == rest_.end()) {
      rest_.push_back(listener);
    }
  }
  [[nodiscard]] std::size_t size() const noexcept { return first_ ? 1 + rest_.size() : 0; }
  [[nodiscard]] const op_listener& operator[](std::size_t k) const {
    return k == 0 ? first_ : rest_[k - 1];
  }

 private:
  op_listener first_;
  std::vector<op_listener> rest_;
};
struct op_record {
  // What a scheduling pass reads comes first, in 64 bytes (at most two cache lines, the
  // rest of a record four): a random DAG's pass finds most records out of cache and asks
  // for the next one ahead (pump). Aligning records to cache lines as well cost the
  // independent graph 13% (10 alternated coordinator_bench runs), the random DAG nothing.
  op_type type = op_type::kernel;
  op_priority priority = op_priority::normal;
  op_workload workload = op_workload::compute;
  bool manual = false;
  std::uint32_t pinned = no_stream;  // the stream it must run on (op_placement::pinned)
  bool strict = false;
  pool_strategy strategy = pool_strategy::load_balanced;  // its own, or the coordinator's
  bool completing = false;  // a caller-launched one: complete() came, the hold is ending
  // The device finished it before a dependency's own report came (deferred): its outcome
  // (`report`), told once every dependency has ended.
  bool deferred = false;
  std::uint32_t stream = no_stream;  // the pool's index of its stream
  gpu::work_fn fn;
  std::int64_t registered_ns = 0;
  std::int64_t dispatched_ns = 0;
  // Its buffer side, only for an operation that uses buffers or releases one: alone, or an
  // entry of its graph's block. The record of every other stays as small as before buffers
  // (held in the record, the side cost the stated graph 2.5%: every record grew by 96
  // bytes).
  buffers_ptr bufs;
  timeline_point point = 0;  // its ticket's (a caller-launched one's: once its hold is held)
  // Where its stream actor publishes its point once issued, made when it is sent and may
  // have dependents on other streams: they go out in the same pass and wait for it there.
  std::shared_ptr<point_cell> cell;
  std::int64_t started_ns = 0, finished_ns = 0;  // on the device (timing)
  caf::error report;
  std::uint64_t run = 0;        // the run request it belongs to (0: none)
  std::uint32_t run_index = 0;  // its place in that request's answer
  listener_list listeners;
  std::string description;
  id_list deps;  // as named and inferred (what describe() and the ended ring show)
};

}  // namespace cudactor::detail
