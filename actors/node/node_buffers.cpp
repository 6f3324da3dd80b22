#include "cudactor/actors/node/node_buffers.hpp"

#include <utility>

#include "cudactor/gpu/stream_copy.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor::detail {

caf::error node_buffers::reserve(std::uint64_t bytes) {
  if (live_.size() + reserved_ >= max_buffers_) {
    return make_error(errc::resource_exhausted,
                      "alloc: " + std::to_string(live_.size() + reserved_) +
                          " buffers are held already (limit " + std::to_string(max_buffers_) + ")");
  }
  if (bytes > max_bytes_ || bytes_ > max_bytes_ - bytes) {
    return make_error(errc::resource_exhausted,
                      "alloc: " + std::to_string(bytes) + " bytes more than the " +
                          std::to_string(bytes_) + " held would pass the node's limit of " +
                          std::to_string(max_bytes_));
  }
  ++reserved_;
  bytes_ += bytes;
  return {};
}

void node_buffers::settle(std::uint64_t bytes, const buffer_handle* handle) {
  --reserved_;
  if (handle == nullptr) {
    bytes_ -= bytes;
    return;
  }
  live_[handle->id] = *handle;
}

caf::error node_buffers::find(const buffer_call& call, buffer_verb verb,
                              const buffer_handle*& out) const {
  auto it = live_.find(call.buffer);
  if (it == live_.end()) {
    return make_error(errc::invalid_argument,
                      to_string(call.buffer) + " is not a buffer of this node's owner");
  }
  out = &it->second;
  const std::uint64_t bytes = verb == buffer_verb::store ? call.data.size() : call.bytes;
  if (verb == buffer_verb::store || verb == buffer_verb::fetch) {
    if (call.offset > out->size || bytes > out->size - call.offset) {
      return make_error(errc::invalid_argument, "bytes " + std::to_string(call.offset) + " to " +
                                                    std::to_string(call.offset + bytes) +
                                                    " are outside " + to_string(call.buffer) +
                                                    " (" + std::to_string(out->size) + " bytes)");
    }
  }
  return {};
}

caf::error node_buffers::check_names(const op_spec& op, const std::string& which) const {
  const auto known = [&](const buffer_id& id, const char* role) -> caf::error {
    if (id.empty() || live_.count(id) != 0) return {};
    return make_error(errc::invalid_argument, which + ": its " + role + " " + to_string(id) +
                                                  " is not a buffer of this node's owner");
  };
  for (const auto& use : op.uses) {
    if (auto bad = known(use.buffer, "use of")) return bad;
  }
  if (op.is_collective()) {
    if (auto bad = known(op.collective.send, "send buffer")) return bad;
    if (auto bad = known(op.collective.recv, "receive buffer")) return bad;
  }
  return {};
}

bool node_buffers::remove(const buffer_id& id) {
  auto it = live_.find(id);
  if (it == live_.end()) return false;
  bytes_ -= it->second.size;
  live_.erase(it);
  return true;
}

std::vector<buffer_id> node_buffers::take_all() {
  std::vector<buffer_id> out;
  out.reserve(live_.size());
  for (const auto& [id, handle] : live_) {
    out.push_back(id);
    bytes_ -= handle.size;
  }
  live_.clear();
  return out;
}

op_spec node_buffers::store_op(const buffer_handle& b, buffer_call& call) {
  auto data = std::make_shared<std::vector<std::uint8_t>>(std::move(call.data));
  void* dst = reinterpret_cast<void*>(static_cast<std::uintptr_t>(b.address + call.offset));
  op_spec spec;
  spec.description = "store to " + to_string(b.id);
  spec.type = op_type::memory_transfer;
  spec.uses.push_back(buffer_use::write(b.id, call.offset, data->size()));
  spec.body = work::local([data, dst](const gpu::launch_context& ctx) {
    return gpu::copy_in_stream(ctx, dst, data->data(), data->size());
  });
  return spec;
}

op_spec node_buffers::fetch_op(const buffer_handle& b, const buffer_call& call,
                               std::shared_ptr<std::vector<std::uint8_t>> into) {
  into->resize(call.bytes);
  const void* src =
      reinterpret_cast<const void*>(static_cast<std::uintptr_t>(b.address + call.offset));
  op_spec spec;
  spec.description = "fetch from " + to_string(b.id);
  spec.type = op_type::memory_transfer;
  spec.uses.push_back(buffer_use::read(b.id, call.offset, call.bytes));
  spec.body = work::local([into = std::move(into), src](const gpu::launch_context& ctx) {
    return gpu::copy_in_stream(ctx, into->data(), src, into->size());
  });
  return spec;
}

}  // namespace cudactor::detail
