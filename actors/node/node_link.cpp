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

  // The node's own errors name it already; anything CAF says is about it. Bounded either way:
  // a node is a peer, and what it says is passed on to whoever asked.
  caf::error from_node(const caf::error& err) const {
    if (err.category() == error_category) {
      if (describe(err).size() <= max_error_words) return err;
      return make_error(static_cast<errc>(err.code()), bounded(describe(err)));
    }
    return make_error(errc::node_lost, who + ": " + bounded(describe(err)));
  }
  static std::string bounded(std::string words) {
    if (words.size() <= max_error_words) return words;
    const std::size_t all = words.size();
    words.resize(max_error_words);
    return words + "... (" + std::to_string(all) + " bytes)";
  }
  // An answer that cannot be the answer to what was asked (more ends than operations, other
  // bytes than were fetched, an engine nobody runs): the node is not one to trust.
  caf::error mismatch(const std::string& what) const {
    return make_error(errc::node_mismatch, who + " answered " + what);
  }
  static constexpr std::size_t max_error_words = 4096;
};

using link_pointer = node_actor::stateful_pointer<node_link_state>;

// Communicators whose callers a link remembers: the oldest is forgotten past it.
constexpr std::size_t max_rendezvous = 64;

caf::error refused(const node_link_state& st, const caf::error& bad) {
  return make_error(errc::invalid_argument,
                    st.who + " would refuse it, so it was not sent: " + error_context(bad));
}

// Checks an answer against its request before it is passed on: empty when it may be.
template <class T>
using answer_check = std::function<caf::error(const T&)>;

template <class T, class... Ts>
caf::result<T> relay_checked(link_pointer self, answer_check<T> check, Ts&&... xs) {
  auto& st = self->state;
  auto promise = self->make_response_promise<T>();
  const std::uint64_t key = st.next++;
  st.open.emplace(key, [promise](const caf::error& err) mutable { promise.deliver(err); });
  self->request(st.remote, caf::infinite, std::forward<Ts>(xs)...)
      .then(
          [self, key, promise, check = std::move(check)](T& answer) mutable {
            if (self->state.open.erase(key) == 0) return;
            if (check) {
              if (auto bad = check(answer)) {
                promise.deliver(std::move(bad));
                return;
              }
            }
            promise.deliver(std::move(answer));
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

template <class T, class... Ts>
caf::result<T> relay(link_pointer self, Ts&&... xs) {
  return relay_checked<T>(self, answer_check<T>{}, std::forward<Ts>(xs)...);
}

// An operation's end: its error in bounded words.
caf::error check_end(const node_link_state& st, const op_notice& n) {
  if (n.cause && describe(n.cause).size() > node_link_state::max_error_words) {
    return st.mismatch("an end whose error is longer than " +
                       std::to_string(node_link_state::max_error_words) + " bytes");
  }
  return {};
}

// Ends of a graph: one per operation, each checked as above.
caf::error check_ends(const node_link_state& st, const std::vector<op_notice>& ends,
                      std::size_t ops) {
  if (ends.size() != ops) {
    return st.mismatch(std::to_string(ends.size()) + " ends for a graph of " + std::to_string(ops) +
                       " operations");
  }
  for (const op_notice& n : ends) {
    if (auto bad = check_end(st, n)) return bad;
  }
  return {};
}

// The end of one operation, checked as one of a graph's.
answer_check<op_notice> one_end(link_pointer self) {
  return [self](const op_notice& n) { return check_end(self->state, n); };
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
        const std::size_t ops = g.ops.size();
        return relay_checked<std::vector<op_notice>>(
            self,
            [self, ops](const std::vector<op_notice>& ends) {
              return check_ends(self->state, ends, ops);
            },
            submit_atom::value, std::move(g));
      },
      [self](register_atom, op_spec& op) -> caf::result<op_notice> {
        if (auto bad = check_input(op, self->state.limits)) return refused(self->state, bad);
        return relay_checked<op_notice>(self, one_end(self), register_atom::value, std::move(op));
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
        const std::string name = call.name;
        const std::uint64_t generation = call.generation;
        return relay_checked<communicator_ready>(
            self,
            [self, name, generation](const communicator_ready& ready) -> caf::error {
              if (ready.name != name || ready.generation != generation ||
                  (ready.engine != "gloo" && ready.engine != "nccl")) {
                return self->state.mismatch("a communicator other than the one asked for");
              }
              return {};
            },
            communicator_atom::value, std::move(call));
      },
      [self](alloc_atom, buffer_call& call) -> caf::result<buffer_handle> {
        return relay<buffer_handle>(self, alloc_atom::value, std::move(call));
      },
      [self](store_atom, buffer_call& call) -> caf::result<op_notice> {
        return relay_checked<op_notice>(self, one_end(self), store_atom::value, std::move(call));
      },
      [self](fetch_atom, buffer_call& call) -> caf::result<std::vector<std::uint8_t>> {
        const std::uint64_t bytes = call.bytes;
        return relay_checked<std::vector<std::uint8_t>>(
            self,
            [self, bytes](const std::vector<std::uint8_t>& got) -> caf::error {
              if (got.size() == bytes) return {};
              return self->state.mismatch(std::to_string(got.size()) + " bytes to a fetch of " +
                                          std::to_string(bytes));
            },
            fetch_atom::value, std::move(call));
      },
      [self](release_atom, buffer_call& call) -> caf::result<op_notice> {
        return relay_checked<op_notice>(self, one_end(self), release_atom::value, std::move(call));
      },
      [self](record_atom, step_spec& spec) -> caf::result<step_handle> {
        if (auto bad = check_input(spec.graph, self->state.limits)) {
          return refused(self->state, bad);
        }
        return relay<step_handle>(self, record_atom::value, std::move(spec));
      },
      [self](replay_atom, replay_request& request) -> caf::result<step_outcome> {
        if (auto bad = check_input(request, self->state.limits)) return refused(self->state, bad);
        const step_handle step = request.step;
        return relay_checked<step_outcome>(
            self,
            [self, step](const step_outcome& out) -> caf::error {
              const auto& st = self->state;
              const std::size_t most = st.limits.max_graph_ops;
              const auto too_long = [](const caf::error& e) {
                return e && describe(e).size() > node_link_state::max_error_words;
              };
              bool bad = out.step != step || out.ops.size() > most || too_long(out.cause);
              for (std::size_t i = 0; !bad && i < out.ops.size(); ++i) {
                bad = out.ops[i].index >= most || too_long(out.ops[i].cause);
              }
              return bad ? st.mismatch(
                               "a replay's outcome that is not the step's, or past its "
                               "bounds (operations, error words)")
                         : caf::error{};
            },
            replay_atom::value, std::move(request));
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
