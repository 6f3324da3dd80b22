// Collectives: an operation that runs a collective on one of the node's communicators
// (messaging/collective_types.hpp). Its buffers become declared uses, so it is ordered against
// compute like any operation; a write of the communicator's order token puts it after the
// communicator's previous collective, so that every rank, given the same collectives in the
// same order, runs them in that order whatever streams they land on (docs/collectives.md).
#include <caf/all.hpp>

#include <string>

#include "cudactor/actors/coordinator/coordinator_state.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

namespace {

gpu::collective_call call_of(const op_collective& c) {
  gpu::collective_call call;
  call.kind = c.kind;
  call.op = c.op;
  call.type = c.type;
  call.count = static_cast<std::size_t>(c.count);
  call.root = static_cast<int>(c.root);
  return call;
}

caf::error refused(const caf::error& why, const std::string& which) {
  const errc code =
      why.category() == error_category ? static_cast<errc>(why.code()) : errc::invalid_argument;
  return make_error(code, which + ": " + error_context(why));
}

}  // namespace

caf::error coordinator_state::order_token(const std::string& name, buffer_id& out) {
  auto it = order_tokens_.find(name);
  if (it != order_tokens_.end()) {
    caf::error gone;
    if (buffers_->find_live(it->second, gone) != nullptr) {
      out = it->second;
      return {};
    }
    order_tokens_.erase(it);  // someone released it: a new one orders from here on
  }
  if (auto full = buffers_full("communicator '" + name + "' needs an order token")) return full;
  // Adopted memory of one byte at address 0: nothing ever reads or frees it.
  buffer_table::entry* e = buffers_->add(1, 0, true);
  out = e->handle.id;
  order_tokens_.emplace(name, out);
  return {};
}

caf::error coordinator_state::expand_collective(op_spec& spec, const std::string& which) {
  if (!spec.is_collective()) return {};
  if (!context_.communicators) {
    return make_error(errc::not_supported, which + ": this coordinator was given no communicators");
  }
  const op_collective& c = spec.collective;
  caf::error why;
  auto comm = context_.communicators->find(c.communicator, why);
  if (!comm) return refused(why, which);
  if (auto broken = comm->broken(); !broken.ok()) {
    return refused(to_error(broken), which);
  }
  const gpu::collective_call call = call_of(c);
  const int size = comm->size();
  const bool root = comm->rank() == static_cast<int>(c.root);
  if (call.kind != gpu::collective_kind::barrier && call.root >= size &&
      (call.kind == gpu::collective_kind::broadcast || call.kind == gpu::collective_kind::reduce)) {
    return make_error(errc::invalid_argument, which + ": root " + std::to_string(c.root) +
                                                  " is not a rank of communicator '" +
                                                  c.communicator + "' (" + std::to_string(size) +
                                                  " ranks)");
  }
  const std::uint64_t sent = gpu::send_bytes(call, size);
  const std::uint64_t received = gpu::recv_bytes(call, size);
  switch (call.kind) {
    case gpu::collective_kind::barrier: break;
    case gpu::collective_kind::broadcast:
      if (root) {
        // The root sends its `send`, or its `recv` in place when it names no `send`.
        if (!c.send.empty()) {
          spec.uses.push_back(buffer_use::read(c.send, c.send_offset, received));
          spec.uses.push_back(buffer_use::write(c.recv, c.recv_offset, received));
        } else {
          spec.uses.push_back(buffer_use::read_write(c.recv, c.recv_offset, received));
        }
      } else {
        spec.uses.push_back(buffer_use::write(c.recv, c.recv_offset, received));
      }
      break;
    case gpu::collective_kind::reduce:
      spec.uses.push_back(buffer_use::read(c.send, c.send_offset, sent));
      // Only the root's output is written; the others reduce into scratch.
      if (root) spec.uses.push_back(buffer_use::write(c.recv, c.recv_offset, received));
      break;
    default:
      spec.uses.push_back(buffer_use::read(c.send, c.send_offset, sent));
      spec.uses.push_back(buffer_use::write(c.recv, c.recv_offset, received));
      break;
  }
  buffer_id token;
  if (auto bad = order_token(c.communicator, token)) return bad;
  spec.uses.push_back(buffer_use::write(token, 0, 1));
  return {};
}

std::function<void(const gpu::status&)> coordinator_state::collective_counter(
    const op_collective& c, std::shared_ptr<gpu::communicator>& comm) {
  comm = nullptr;
  if (!context_.communicators) return {};
  caf::error why;
  comm = context_.communicators->find(c.communicator, why);
  if (!comm) return {};
  return context_.communicators->counter(comm, call_of(c));
}

caf::error coordinator_state::resolve_collective(const op_spec& spec, const std::string& which,
                                                 gpu::work_fn& out) {
  const op_collective& c = spec.collective;
  caf::error why;
  auto comm = context_.communicators->find(c.communicator, why);
  if (!comm) return refused(why, which);
  gpu::collective_call call = call_of(c);
  // The uses were checked already: the ranges lie inside live buffers.
  const auto address = [&](const buffer_id& id, std::uint64_t offset) -> std::uintptr_t {
    if (id.empty()) return 0;
    caf::error unused;
    const buffer_table::entry* e = buffers_->find(id, unused);
    return e == nullptr ? 0 : static_cast<std::uintptr_t>(e->handle.address + offset);
  };
  call.send = reinterpret_cast<const void*>(address(c.send, c.send_offset));
  call.recv = reinterpret_cast<void*>(address(c.recv, c.recv_offset));
  if (auto bad = gpu::check(call, comm->size()); !bad.ok()) {
    return refused(to_error(bad), which);
  }
  out = context_.communicators->work(std::move(comm), call);
  return {};
}

}  // namespace cudactor::detail
