// actors/node/node_buffers.hpp
//
// The buffers a node's control plane allocated on it (node_actor's alloc, store, fetch and
// release): which they are, so that a peer may name only these in its operations (never a
// buffer of the node's own, such as a communicator's order token), where their memory is, and
// the bounds on how many there are and how many bytes they take. The node's core owns one;
// the operations that move a store's or a fetch's bytes are made here.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cudactor/messaging/buffer_types.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/node_types.hpp"

namespace cudactor::detail {

class node_buffers {
 public:
  node_buffers(std::size_t max_buffers, std::uint64_t max_bytes) noexcept
      : max_buffers_(max_buffers), max_bytes_(max_bytes) {}

  // Room for one more of `bytes` (counting those being allocated); reserves it when there is.
  [[nodiscard]] caf::error reserve(std::uint64_t bytes);
  // An allocation reserved for ended: `handle` is the buffer (or empty when it failed).
  void settle(std::uint64_t bytes, const buffer_handle* handle);

  // The buffer a call names, with its range inside it (store: the data's; fetch: `bytes`).
  [[nodiscard]] caf::error find(const buffer_call& call, buffer_verb verb,
                                const buffer_handle*& out) const;
  // Whether every buffer `op` names (its uses, a collective's send and receive buffers) is
  // one of these; `which` names the operation in the error.
  [[nodiscard]] caf::error check_names(const op_spec& op, const std::string& which) const;

  // Forgets the buffer; false when it was not one of these.
  bool remove(const buffer_id& id);
  // Forgets them all, returning their ids (the owner is gone: each is released).
  [[nodiscard]] std::vector<buffer_id> take_all();

  [[nodiscard]] std::size_t size() const noexcept { return live_.size(); }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }

  // The operation that writes call.data into `b` at call.offset, in the buffer's order.
  [[nodiscard]] static op_spec store_op(const buffer_handle& b, buffer_call& call);
  // The operation that reads call.bytes of `b` from call.offset into `into`.
  [[nodiscard]] static op_spec fetch_op(const buffer_handle& b, const buffer_call& call,
                                        std::shared_ptr<std::vector<std::uint8_t>> into);

 private:
  struct key_hash {
    std::size_t operator()(const buffer_id& id) const noexcept {
      return (std::size_t{id.slot} << 32) ^ id.generation ^ (std::size_t{id.owner} << 16);
    }
  };
  std::size_t max_buffers_;
  std::uint64_t max_bytes_;
  std::unordered_map<buffer_id, buffer_handle, key_hash> live_;
  std::uint64_t bytes_ = 0;   // of live and reserved buffers
  std::size_t reserved_ = 0;  // allocations under way
};

}  // namespace cudactor::detail
