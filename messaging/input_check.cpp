#include "cudactor/messaging/input_check.hpp"

#include <caf/detail/serialized_size.hpp>

#include <type_traits>

#include "cudactor/messaging/detail/input_walker.hpp"
#include "cudactor/messaging/enum_range.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace detail {

void input_walker::consume(caf::message& x) {
  if (x.size() > limits_.max_args) {
    fail(std::to_string(x.size()) + " arguments (at most " + std::to_string(limits_.max_args) +
         ", limit max-args)");
    return;
  }
  if (x.empty()) return;
  // What the arguments would take on the wire: strings and lists count by their size, so a
  // graph's byte bound covers them as it covers descriptions.
  caf::detail::serialized_size_inspector size{static_cast<caf::execution_unit*>(nullptr)};
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (auto err = x.cvals()->save(i, size)) {
      fail("argument " + std::to_string(i) + " cannot be measured");
      return;
    }
  }
  bytes_ += size.result();
  if (size.result() > limits_.max_string) {
    fail("arguments of " + std::to_string(size.result()) + " bytes (at most " +
         std::to_string(limits_.max_string) + ")");
  }
}

}  // namespace detail

namespace {

caf::error bad(std::string what) { return make_error(errc::invalid_argument, std::move(what)); }

// Which operation an error is about, rendered only for an error: a graph of 50k operations is
// checked without building 50k strings.
struct op_label {
  static constexpr std::size_t alone = ~std::size_t{0};
  std::size_t index = alone;  // in its graph
  [[nodiscard]] std::string str() const {
    return index == alone ? "the operation" : "graph op " + std::to_string(index);
  }
};

// What a collective's fields mean together (the walker checked each enum's range already).
caf::error check_collective(const op_spec& op, const input_limits& limits, op_label which) {
  const op_collective& c = op.collective;
  if (op.type == op_type::step) {
    return bad(which.str() + " has type step, which only a replay of a recorded step has");
  }
  if (!op.is_collective()) {
    if (op.type == op_type::all_gather || op.type == op_type::reduce_scatter ||
        op.type == op_type::collective_barrier) {
      return bad(which.str() + " is a " + std::string{to_string(op.type)} +
                 " without a collective (its communicator is empty)");
    }
    return {};
  }
  const std::string what = which.str() + " (a " + std::string{to_string(c.kind)} + ")";
  if (c.communicator.size() > limits.max_name) {
    return bad(what + ": a communicator's name has 1 to " + std::to_string(limits.max_name) +
               " bytes");
  }
  if (op.type != op_type_of(c.kind)) {
    return bad(what + " has type " + std::string{to_string(op.type)} + ", not " +
               std::string{to_string(op_type_of(c.kind))});
  }
  if (!op.body.empty()) return bad(what + " carries no work of its own (its body must be empty)");
  if (c.kind == gpu::collective_kind::barrier) {
    if (!c.send.empty() || !c.recv.empty() || c.count != 0) {
      return bad(what + " moves no data: it names no buffer and no count");
    }
    return {};
  }
  if (c.count == 0 || c.count > max_collective_count) {
    return bad(what + " moves 1 to 2^40 elements, not " + std::to_string(c.count));
  }
  if (c.root > max_collective_root) {
    return bad(what + ": root " + std::to_string(c.root) + " is past any rank (at most " +
               std::to_string(max_collective_root) + ")");
  }
  if (c.recv.empty()) return bad(what + " names no buffer to receive into");
  if (c.send.empty() && c.kind != gpu::collective_kind::broadcast) {
    return bad(what + " names no buffer to send from");
  }
  return {};
}

// The fields of `op`, and what they mean, as operation `index` of a graph (or alone).
caf::error check_op(const op_spec& op, const input_limits& limits, op_label which,
                    std::size_t& bytes) {
  detail::input_walker walker{limits};
  walker.walk(op);
  if (!walker.problem().empty()) return bad(which.str() + ": " + walker.problem());
  if (op.description.size() > limits.max_description) {
    return bad(which.str() + "'s description has " + std::to_string(op.description.size()) +
               " bytes (at most " + std::to_string(limits.max_description) +
               ", limit max-description)");
  }
  if (op.body.name().size() > limits.max_name) {
    return bad(which.str() + "'s operation name has " + std::to_string(op.body.name().size()) +
               " bytes (at most " + std::to_string(limits.max_name) + ")");
  }
  if (op.is_barrier()) {
    if (!op.body.empty()) {
      return bad(which.str() + " is a barrier: it carries no work (its body must be empty)");
    }
    if (op.placement.pinned || op.placement.strict || op.placement.own_strategy) {
      return bad(which.str() +
                 " is a barrier: it names its streams in barrier.streams, and takes no "
                 "placement");
    }
    if (!op.uses.empty()) {
      return bad(which.str() +
                 " is a barrier: it orders whole streams and declares no buffer uses");
    }
  } else if (!op.barrier.streams.empty() || op.barrier.mode != barrier_mode::device) {
    return bad(which.str() + " is a " + std::string{to_string(op.type)} +
               ", not a barrier: it names no barrier streams or mode");
  }
  if (op.type == op_type::release) {
    return bad(which.str() +
               " is a release: buffers are released with release_atom, not registered");
  }
  if (auto err = check_collective(op, limits, which)) return err;
  if (op.uses.size() > limits.max_uses) {
    return bad(which.str() + " declares " + std::to_string(op.uses.size()) +
               " buffer uses (at most " + std::to_string(limits.max_uses) + ", limit max-uses)");
  }
  for (std::size_t u = 0; u < op.uses.size(); ++u) {
    if (op.uses[u].access == buffer_access::none) {
      return bad(which.str() + "'s buffer use " + std::to_string(u) + " (" +
                 to_string(op.uses[u].buffer) + ") declares no access (read, write or read_write)");
    }
  }
  bytes += walker.bytes();
  return {};
}

}  // namespace

namespace {

template <class E>
caf::error check_bare(E x) {
  using U = std::underlying_type_t<E>;
  if (static_cast<U>(x) <= static_cast<U>(enum_range<E>::last)) return {};
  return bad(std::to_string(static_cast<std::uint64_t>(static_cast<U>(x))) + " is not a valid " +
             enum_range<E>::name + " (0 to " +
             std::to_string(static_cast<std::uint64_t>(static_cast<U>(enum_range<E>::last))) + ")");
}

}  // namespace

caf::error check_input(op_priority x) { return check_bare(x); }
caf::error check_input(op_workload x) { return check_bare(x); }

caf::error check_input(const op_spec& op, const input_limits& limits) {
  std::size_t bytes = 0;
  if (auto err = check_op(op, limits, op_label{}, bytes)) return err;
  if (op.deps.size() > limits.max_graph_edges) {
    return bad("the operation has " + std::to_string(op.deps.size()) + " dependencies (at most " +
               std::to_string(limits.max_graph_edges) + ", limit max-graph-edges)");
  }
  return {};
}

caf::error check_input(const graph_spec& graph, const input_limits& limits) {
  const std::size_t n = graph.ops.size();
  if (n == 0 || n > limits.max_graph_ops) {
    return bad("a graph holds 1 to " + std::to_string(limits.max_graph_ops) +
               " operations (limit max-graph-ops), not " + std::to_string(n));
  }
  std::size_t edges = 0;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const graph_op& op = graph.ops[i];
    const op_label which{i};
    // Edges first: the walk over a list of millions is what the bound is there to avoid.
    edges += op.after.size() + op.spec.deps.size();
    if (edges > limits.max_graph_edges) {
      return bad("the graph has more than " + std::to_string(limits.max_graph_edges) +
                 " dependencies (limit max-graph-edges), counted up to " + which.str());
    }
    if (auto err = check_op(op.spec, limits, which, bytes)) return err;
    if (bytes > limits.max_graph_bytes) {
      return bad("the graph holds more than " + std::to_string(limits.max_graph_bytes) +
                 " bytes of names, descriptions and arguments (limit max-graph-bytes), counted "
                 "up to " +
                 which.str());
    }
    for (std::uint32_t a : op.after) {
      if (a >= n) {
        return bad(which.str() + " comes after op " + std::to_string(a) + ", beyond the graph's " +
                   std::to_string(n));
      }
    }
  }
  return {};
}

caf::error check_input(const barrier_call& call, const input_limits& limits) {
  detail::input_walker walker{limits};
  walker.walk(call);
  if (!walker.problem().empty()) return bad("barrier call: " + walker.problem());
  if (auto err = check_name(call.barrier, limits, "a barrier's name")) return err;
  if (call.generation == 0) {
    return bad("barrier " + quote_peer_text(call.barrier) + ": generations count from 1");
  }
  if (call.owner_token.size() > max_owner_token) {
    return bad("barrier " + quote_peer_text(call.barrier) + ": an owner token is at most " +
               std::to_string(max_owner_token) + " bytes");
  }
  return {};
}

caf::error check_input(const guest_call& call, const input_limits& limits) {
  if (call.owner_token.size() > max_owner_token) {
    return bad("admit: an owner token is at most " + std::to_string(max_owner_token) + " bytes");
  }
  if (call.guest_token.size() < min_owner_token || call.guest_token.size() > max_owner_token) {
    return bad("admit: a guest token is " + std::to_string(min_owner_token) + " to " +
               std::to_string(max_owner_token) + " bytes (a short one can be guessed)");
  }
  if (call.max_open_ops > 0 && call.stream_time.count() <= 0) {
    return bad("admit: a guest's stream time must be above 0 (max_open_ops 0 revokes)");
  }
  if (call.stream_time.count() < 0 || call.stream_time > limits.max_duration) {
    return bad("admit: a guest's stream time is 0 to " +
               std::to_string(limits.max_duration.count()) + " ns");
  }
  return {};
}

caf::error check_input(const replay_request& request, const input_limits& limits) {
  detail::input_walker walker{limits};
  walker.walk(request);
  if (!walker.problem().empty()) return bad("replay: " + walker.problem());
  if (request.bindings.size() > limits.max_graph_ops) {
    return bad("replay: at most " + std::to_string(limits.max_graph_ops) + " bindings, not " +
               std::to_string(request.bindings.size()));
  }
  return {};
}

caf::error check_input(const buffer_call& call, buffer_verb verb, const input_limits& limits) {
  detail::input_walker walker{limits};
  walker.walk(call);
  if (!walker.problem().empty()) return bad("buffer call: " + walker.problem());
  if (call.owner_token.size() > max_owner_token) {
    return bad("buffer call: an owner token is at most " + std::to_string(max_owner_token) +
               " bytes");
  }
  const bool names_buffer = verb != buffer_verb::alloc;
  if (names_buffer == call.buffer.empty()) {
    return bad(names_buffer ? "buffer call: no buffer named" : "alloc: names a buffer");
  }
  const std::string limit = std::to_string(max_buffer_transfer);
  switch (verb) {
    case buffer_verb::alloc:
      if (call.bytes == 0 || call.offset != 0 || !call.data.empty()) {
        return bad("alloc: a size of at least 1 byte, and nothing else");
      }
      return {};
    case buffer_verb::store:
      if (call.data.empty() || call.data.size() > max_buffer_transfer || call.bytes != 0) {
        return bad("store: 1 to " + limit + " bytes of data, and no count");
      }
      break;
    case buffer_verb::fetch:
      if (call.bytes == 0 || call.bytes > max_buffer_transfer || !call.data.empty()) {
        return bad("fetch: 1 to " + limit + " bytes, and no data");
      }
      break;
    case buffer_verb::release:
      if (call.offset != 0 || call.bytes != 0 || !call.data.empty()) {
        return bad("release: a buffer, and nothing else");
      }
      return {};
  }
  if (call.offset > ~std::uint64_t{0} - max_buffer_transfer) {
    return bad("buffer call: an offset past any buffer's end");
  }
  return {};
}

caf::error check_input(const communicator_call& call, const input_limits& limits) {
  detail::input_walker walker{limits};
  walker.walk(call);
  if (!walker.problem().empty()) return bad("communicator call: " + walker.problem());
  if (auto err = check_name(call.name, limits, "a communicator's name")) return err;
  const std::string which = "communicator " + quote_peer_text(call.name);
  if (call.generation == 0) return bad(which + ": generations count from 1");
  if (call.members.empty() || call.members.size() > max_communicator_ranks) {
    return bad(which + " has 1 to " + std::to_string(max_communicator_ranks) + " ranks, not " +
               std::to_string(call.members.size()));
  }
  if (call.rank >= call.members.size()) {
    return bad(which + ": rank " + std::to_string(call.rank) + " of " +
               std::to_string(call.members.size()));
  }
  for (const auto& m : call.members) {
    if (auto err = check_name(m, limits, "a member's name")) return err;
  }
  if (call.timeout.count() <= 0 || call.rendezvous_timeout.count() <= 0) {
    return bad(which + ": a timeout is more than 0");
  }
  if (call.owner_token.size() > max_owner_token) {
    return bad(which + ": an owner token is at most " + std::to_string(max_owner_token) + " bytes");
  }
  return {};
}

caf::error check_input(const rendezvous_entry& entry, const input_limits& limits) {
  detail::input_walker walker{limits};
  walker.walk(entry);
  if (!walker.problem().empty()) return bad("rendezvous entry: " + walker.problem());
  if (auto err = check_name(entry.name, limits, "a communicator's name")) return err;
  if (auto err = check_name(entry.key, limits, "a rendezvous key")) return err;
  if (entry.generation == 0) return bad("rendezvous entry: generations count from 1");
  if (entry.value.size() > max_rendezvous_value) {
    return bad("rendezvous entry: a value of " + std::to_string(entry.value.size()) +
               " bytes (at most " + std::to_string(max_rendezvous_value) + ")");
  }
  return {};
}

caf::error check_input(const node_info& info, const input_limits& limits) {
  detail::input_walker walker{limits};
  walker.walk(info);
  if (!walker.problem().empty()) return bad("node info: " + walker.problem());
  if (auto err = check_name(info.name, limits, "a node's name")) return err;
  for (const auto& op : info.operations) {
    if (auto err = check_name(op, limits, "an operation's name")) return err;
  }
  return {};
}

caf::error check_name(const std::string& name, const input_limits& limits, std::string_view what) {
  if (name.empty() || name.size() > limits.max_name) {
    return bad(std::string{what} + " has 1 to " + std::to_string(limits.max_name) + " bytes, not " +
               std::to_string(name.size()));
  }
  return {};
}

std::string quote_peer_text(std::string_view text, std::size_t keep) {
  std::string out = "'";
  const std::size_t shown = std::min(text.size(), keep);
  for (std::size_t i = 0; i < shown; ++i) {
    const char c = text[i];
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  if (shown < text.size()) {
    out += "...' (" + std::to_string(text.size()) + " bytes)";
  } else {
    out += "'";
  }
  return out;
}

}  // namespace cudactor
