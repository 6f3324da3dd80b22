#include "cudactor/actors/node_actor.hpp"

#include <caf/all.hpp>

#include <unordered_map>
#include <utility>
#include <vector>

#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace {

// One request not yet answered: a graph (every end, in order) or a single operation.
struct pending_request {
  caf::typed_response_promise<std::vector<op_notice>> graph;
  caf::typed_response_promise<op_notice> single;
  bool is_graph = true;
  std::vector<op_notice> ends;
  std::size_t left = 0;
};

struct node_state {
  node_context context;
  node_options options;
  std::uint64_t next_key = 1;
  std::unordered_map<std::uint64_t, pending_request> pending;
  // Each operation of a pending request: the request and the operation's index in it.
  std::unordered_map<op_id, std::pair<std::uint64_t, std::size_t>> ops;
  // Ends told before the coordinator's answer with the ids (it tells listeners first).
  std::unordered_map<op_id, op_notice> early;
  bool closing = false;

  caf::error named(errc code, const std::string& what) const {
    return make_error(code, "node '" + options.name + "': " + what);
  }

  caf::error check_op(const op_spec& op, std::size_t index) const {
    const std::string which = "operation " + std::to_string(index);
    if (op.body.empty()) return named(errc::invalid_argument, which + " has no work");
    if (op.body.is_local()) {
      return named(errc::local_only, which + " is a local closure: a node runs named operations");
    }
    if (op.body.name().size() > operation_registry::max_name_length) {
      return named(errc::invalid_argument, which + "'s name is too long");
    }
    if (context.operations->find(op.body.name()) == nullptr) {
      return named(errc::unknown_operation, "no operation named '" + op.body.name() + "'");
    }
    if (auto bad = context.operations->check(op.body.name(), op.body.args())) {
      const auto& said = bad.context();
      return named(errc::invalid_argument,
                   which + ": " +
                       (said.match_elements<std::string>() ? said.get_as<std::string>(0)
                                                           : caf::to_string(said)));
    }
    if (op.description.size() > options.max_description) {
      return named(errc::invalid_argument, which + "'s description is over " +
                                               std::to_string(options.max_description) +
                                               " characters");
    }
    if (!op.deps.empty()) {
      return named(errc::invalid_argument,
                   which +
                       " names dependencies by id: a node's graph orders its operations by "
                       "index (after) only");
    }
    return {};
  }

  caf::error check_graph(const graph_spec& g) const {
    if (g.ops.empty() || g.ops.size() > options.max_graph) {
      return named(errc::invalid_argument, "a graph holds 1 to " +
                                               std::to_string(options.max_graph) +
                                               " operations, not " + std::to_string(g.ops.size()));
    }
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
      if (auto bad = check_op(g.ops[i].spec, i)) return bad;
      if (g.ops[i].after.size() > g.ops.size()) {
        return named(errc::invalid_argument, "operation " + std::to_string(i) +
                                                 " comes after more operations than the "
                                                 "graph holds");
      }
      for (std::uint32_t a : g.ops[i].after) {
        if (a >= g.ops.size()) {
          return named(errc::invalid_argument, "operation " + std::to_string(i) +
                                                   " comes after operation " + std::to_string(a) +
                                                   ", beyond the graph");
        }
      }
    }
    return refusal();
  }

  caf::error refusal() const {
    if (closing) return named(errc::shutting_down, "shutting down");
    if (pending.size() >= options.max_pending) {
      return named(errc::resource_exhausted,
                   std::to_string(pending.size()) + " requests are open; retry later");
    }
    return {};
  }

  void answer(std::uint64_t key) {
    auto it = pending.find(key);
    if (it == pending.end()) return;
    if (it->second.is_graph) {
      it->second.graph.deliver(std::move(it->second.ends));
    } else {
      it->second.single.deliver(std::move(it->second.ends.front()));
    }
    pending.erase(it);
  }

  void fail(std::uint64_t key, const caf::error& why) {
    auto it = pending.find(key);
    if (it == pending.end()) return;
    if (it->second.is_graph) {
      it->second.graph.deliver(why);
    } else {
      it->second.single.deliver(why);
    }
    pending.erase(it);
  }

  void end(const op_notice& n) {
    auto found = ops.find(n.id);
    if (found == ops.end()) {
      early.emplace(n.id, n);
      return;
    }
    const auto [key, index] = found->second;
    ops.erase(found);
    auto it = pending.find(key);
    if (it == pending.end()) return;
    it->second.ends[index] = n;
    if (--it->second.left == 0) answer(key);
  }

  // The coordinator took the request: its operations' ids, in order.
  void registered(std::uint64_t key, const std::vector<op_id>& ids) {
    auto it = pending.find(key);
    if (it == pending.end()) return;
    it->second.left = ids.size();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      it->second.ends[i].id = ids[i];
      ops.emplace(ids[i], std::make_pair(key, i));
    }
    for (op_id id : ids) {
      if (auto e = early.find(id); e != early.end()) {
        op_notice n = std::move(e->second);
        early.erase(e);
        end(n);
      }
    }
  }

  void close() {
    closing = true;
    const caf::error why = named(errc::shutting_down, "shut down before the work ended");
    std::vector<std::uint64_t> keys;
    for (const auto& [key, unused] : pending) keys.push_back(key);
    for (auto key : keys) fail(key, why);
    ops.clear();
    early.clear();
  }
};

node_actor::behavior_type node_behavior(node_actor::stateful_pointer<node_state> self,
                                        node_context context, node_options options) {
  auto& st = self->state;
  st.context = std::move(context);
  st.options = std::move(options);
  self->monitor(st.context.coordinator);
  self->set_down_handler([self](const caf::down_msg& down) {
    if (down.source == self->state.context.coordinator.address()) self->state.close();
  });
  const op_listener listener = caf::actor_cast<op_listener>(self);
  auto submit = [self, listener](graph_spec& g, bool is_graph) {
    auto& st = self->state;
    const std::uint64_t key = st.next_key++;
    pending_request& p = st.pending[key];
    p.is_graph = is_graph;
    p.ends.resize(g.ops.size());
    self->request(st.context.coordinator, caf::infinite, submit_atom::value, std::move(g), listener)
        .then([self, key](const std::vector<op_id>& ids) { self->state.registered(key, ids); },
              [self, key](caf::error& err) { self->state.fail(key, err); });
    return key;
  };
  return {
      [self](info_atom) {
        const auto& st = self->state;
        return node_info{st.options.name, st.context.backend, st.context.coordinator_streams,
                         st.context.operations->names()};
      },
      [self, submit](submit_atom, graph_spec& g) -> caf::result<std::vector<op_notice>> {
        auto& st = self->state;
        if (auto bad = st.check_graph(g)) return bad;
        auto promise = self->make_response_promise<std::vector<op_notice>>();
        const auto key = submit(g, true);
        st.pending[key].graph = promise;
        return promise;
      },
      [self, submit](register_atom, op_spec& op) -> caf::result<op_notice> {
        auto& st = self->state;
        if (auto bad = st.check_op(op, 0)) return bad;
        if (auto bad = st.refusal()) return bad;
        graph_spec g;
        g.add(std::move(op));
        auto promise = self->make_response_promise<op_notice>();
        const auto key = submit(g, false);
        st.pending[key].single = promise;
        return promise;
      },
      [self](std::vector<op_notice>& ends) {
        auto& st = self->state;
        if (st.closing) return;  // every request has been answered already
        if (caf::actor_cast<caf::actor_addr>(self->current_sender()) !=
            st.context.coordinator.address()) {
          return;  // only the coordinator tells the node of ends: anyone else's are dropped
        }
        for (const auto& n : ends) st.end(n);
      },
      [self](shutdown_atom) { self->state.close(); },
  };
}

}  // namespace

node_actor spawn_node(caf::actor_system& system, node_context context, node_options options) {
  return system.spawn(node_behavior, std::move(context), std::move(options));
}

}  // namespace cudactor
