#include "cudactor/actors/node/node_link.hpp"

#include <caf/all.hpp>

#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

namespace cudactor::detail {

namespace {

struct node_link_state {
  static inline const char* name = "cudactor.node_link";  // the actor's name in CAF's logs
  node_actor remote;
  std::string who;
  input_limits limits;
  std::uint64_t next = 1;
  // Each request the node has not answered yet, by key: fails it (each ends exactly once:
  // whoever takes it out of the map answers it).
  std::unordered_map<std::uint64_t, std::function<void(const caf::error&)>> open;
  // Who asked for each communicator the node is making a rank of: the rank's rendezvous
  // entries go there (the node sends them to the link, its caller). At most a few.
  std::map<std::pair<std::string, std::uint64_t>, caf::actor> rendezvous;

  // The node's own errors name it already; anything CAF says is about it.
  caf::error from_node(const caf::error& err) const {
    if (err.category() == error_category) return err;
    return make_error(errc::node_lost, who + ": " + describe(err));
  }
};

using link_pointer = node_actor::stateful_pointer<node_link_state>;

// Communicators whose callers a link remembers: the oldest is forgotten past it.
constexpr std::size_t max_rendezvous = 64;

caf::error refused(const node_link_state& st, const caf::error& bad) {
  return make_error(errc::invalid_argument,
                    st.who + " would refuse it, so it was not sent: " + error_context(bad));
}

template <class T, class... Ts>
caf::result<T> relay(link_pointer self, Ts&&... xs) {
  auto& st = self->state;
  auto promise = self->make_response_promise<T>();
  const std::uint64_t key = st.next++;
  st.open.emplace(key, [promise](const caf::error& err) mutable { promise.deliver(err); });
  self->request(st.remote, caf::infinite, std::forward<Ts>(xs)...)
      .then(
          [self, key, promise](T& answer) mutable {
            if (self->state.open.erase(key) != 0) promise.deliver(std::move(answer));
          },
          [self, key](caf::error& err) {
            auto& st = self->state;
            auto it = st.open.find(key);
            if (it == st.open.end()) return;
            auto fail = std::move(it->second);
            st.open.erase(it);
            fail(st.from_node(err));
          });
  return promise;
}

node_actor::behavior_type node_link_behavior(link_pointer self, node_actor remote, std::string who,
                                             input_limits limits) {
  auto& st = self->state;
  st.remote = std::move(remote);
  st.who = std::move(who);
  st.limits = limits;
  self->monitor(st.remote);
  // Stopped by its guard (the last remote_node went) or by anyone else: nothing it relayed
  // is left unanswered.
  self->set_exit_handler([self](const caf::exit_msg& msg) {
    auto& st = self->state;
    const caf::error stopped =
        make_error(errc::shutting_down, st.who + ": the control plane let go of the node");
    auto open = std::move(st.open);
    st.open.clear();
    for (auto& [key, fail] : open) fail(stopped);
    self->quit(msg.reason);
  });
  self->set_down_handler([self](const caf::down_msg& down) {
    auto& st = self->state;
    if (down.source != st.remote.address()) return;
    const std::string cause =
        down.reason ? describe(down.reason) : std::string{"its connection closed"};
    // One error for what it had open and for its end, so that whoever monitors the handle
    // (a cluster) says the same as the requests that failed.
    const caf::error lost = make_error(errc::node_lost, st.who + " was lost (" + cause + ")");
    auto open = std::move(st.open);
    st.open.clear();
    for (auto& [key, fail] : open) fail(lost);
    self->quit(lost);
  });
  return {
      [self](info_atom) { return relay<node_info>(self, info_atom::value); },
      [self](claim_atom, std::string& token) {
        return relay<bool>(self, claim_atom::value, std::move(token));
      },
      [self](admit_atom, guest_call& call) -> caf::result<bool> {
        if (auto bad = check_input(call, self->state.limits)) return refused(self->state, bad);
        return relay<bool>(self, admit_atom::value, std::move(call));
      },
      // Over the node's limits it would be refused there: refused here, before it leaves.
      [self](submit_atom, graph_spec& g) -> caf::result<std::vector<op_notice>> {
        if (auto bad = check_input(g, self->state.limits)) return refused(self->state, bad);
        return relay<std::vector<op_notice>>(self, submit_atom::value, std::move(g));
      },
      [self](register_atom, op_spec& op) -> caf::result<op_notice> {
        if (auto bad = check_input(op, self->state.limits)) return refused(self->state, bad);
        return relay<op_notice>(self, register_atom::value, std::move(op));
      },
      [self](synchronize_atom, barrier_call& call) {
        return relay<node_arrival>(self, synchronize_atom::value, std::move(call));
      },
      [self](release_atom, std::string& barrier, std::uint64_t generation) {
        self->send(self->state.remote, release_atom::value, std::move(barrier), generation);
      },
      [self](communicator_atom, communicator_call& call) -> caf::result<communicator_ready> {
        auto& st = self->state;
        if (auto bad = check_input(call, st.limits)) return refused(st, bad);
        if (auto caller = caf::actor_cast<caf::actor>(self->current_sender())) {
          if (st.rendezvous.size() >= max_rendezvous) st.rendezvous.erase(st.rendezvous.begin());
          st.rendezvous[{call.name, call.generation}] = std::move(caller);
        }
        return relay<communicator_ready>(self, communicator_atom::value, std::move(call));
      },
      [self](alloc_atom, buffer_call& call) -> caf::result<buffer_handle> {
        return relay<buffer_handle>(self, alloc_atom::value, std::move(call));
      },
      [self](store_atom, buffer_call& call) -> caf::result<op_notice> {
        return relay<op_notice>(self, store_atom::value, std::move(call));
      },
      [self](fetch_atom, buffer_call& call) -> caf::result<std::vector<std::uint8_t>> {
        return relay<std::vector<std::uint8_t>>(self, fetch_atom::value, std::move(call));
      },
      [self](release_atom, buffer_call& call) -> caf::result<op_notice> {
        return relay<op_notice>(self, release_atom::value, std::move(call));
      },
      [self](record_atom, step_spec& spec) -> caf::result<step_handle> {
        if (auto bad = check_input(spec.graph, self->state.limits)) {
          return refused(self->state, bad);
        }
        return relay<step_handle>(self, record_atom::value, std::move(spec));
      },
      [self](replay_atom, replay_request& request) -> caf::result<step_outcome> {
        if (auto bad = check_input(request, self->state.limits)) return refused(self->state, bad);
        return relay<step_outcome>(self, replay_atom::value, std::move(request));
      },
      [self](release_atom, step_handle& step) -> caf::result<bool> {
        return relay<bool>(self, release_atom::value, step);
      },
      [self](rendezvous_atom, rendezvous_entry& entry) {
        auto& st = self->state;
        const auto from = caf::actor_cast<caf::actor_addr>(self->current_sender());
        if (from != st.remote.address()) {
          // The cluster's, for the node.
          self->send(st.remote, rendezvous_atom::value, std::move(entry));
          return;
        }
        // The node's, for whoever asked for the communicator, as the link's (which is what
        // that caller knows the node by).
        auto it = st.rendezvous.find({entry.name, entry.generation});
        if (it == st.rendezvous.end()) return;
        caf::send_as(caf::actor_cast<caf::actor>(self), it->second, rendezvous_atom::value,
                     std::move(entry));
      },
      [self](lost_atom, std::string& name, std::uint64_t generation, std::string& why) {
        self->send(self->state.remote, lost_atom::value, std::move(name), generation,
                   std::move(why));
      },
  };
}

}  // namespace

node_link spawn_node_link(caf::actor_system& system, node_actor remote, std::string who,
                          input_limits limits) {
  node_link out;
  out.actor = system.spawn(node_link_behavior, std::move(remote), std::move(who), limits);
  out.guard = std::shared_ptr<void>(nullptr, [actor = out.actor](void*) {
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  });
  return out;
}

}  // namespace cudactor::detail
