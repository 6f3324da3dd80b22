// actors/cluster_actor.cpp
//
// The cluster: a control plane's actor over its nodes. Past 600 lines because its three jobs
// share one member table and its up/down tracking (a lost node fails the requests forwarded
// to it, the barrier generations waiting for it and the communicators it had a rank in):
// barrier generations across nodes, requests forwarded to one node, and communicators made
// over the nodes that are up with the cluster as their rendezvous. What stands on its own is
// apart: which rendezvous keys a rank may write (rendezvous_keys.cpp), the link to each node
// (node/node_link.cpp).
#include "cudactor/actors/cluster_actor.hpp"

#include "cudactor/actors/detail/wait_keys.hpp"
#include "cudactor/actors/rendezvous_keys.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

namespace cudactor {

namespace {

using clock = std::chrono::steady_clock;

struct member {
  remote_node node;
  bool up = true;
  bool claimed = false;  // the node said it serves this control plane (claim_atom)
  std::string lost;  // why, once lost

  std::string who() const { return "node '" + node.info.name + "' (" + node.address + ")"; }
};

struct open_generation {
  caf::typed_response_promise<cluster_crossing> promise;
  caf::timespan limit{0};
  clock::time_point since;
  std::vector<std::size_t> members;                   // the nodes up when it began
  std::vector<std::optional<node_arrival>> arrivals;  // by position in `members`
  std::size_t left = 0;
};

// A request passed on to one node, answered by the node or failed when it is lost.
struct forwarded {
  std::function<void(const caf::error&)> fail;  // delivers the error to the caller's promise
  std::size_t member = 0;
};

// A communicator the cluster made: its current generation and the members by rank, and
// while it is being made, its caller's promise.
struct group {
  std::uint64_t generation = 0;
  std::vector<std::size_t> ranks;  // member indices, by rank
  bool making = false;
  bool broken = false;
  caf::typed_response_promise<communicator_info> promise;
  std::size_t left = 0;     // ranks not connected yet
  std::vector<std::uint32_t> entries;  // rendezvous entries passed on, by rank (bounded)
  std::string engine;
  clock::time_point since;
};

struct cluster_state {
  static inline const char* name = "cudactor.cluster";  // the actor's name in CAF's logs
  std::map<std::string, group> groups;                  // communicators, by name
  cluster_options options;
  std::vector<member> members;
  std::uint64_t next_generation = 1;
  std::map<std::uint64_t, open_generation> open;
  std::uint64_t next_request = 1;
  std::unordered_map<std::uint64_t, forwarded> requests;
  cluster_status counts;

  std::string prefix(std::uint64_t generation) const {
    return "cluster '" + options.name + "' generation " + std::to_string(generation) + ": ";
  }

  // Ends a generation: the nodes that arrived are released either way.
  template <class Self>
  void finish(Self* self, std::uint64_t generation, const caf::error* why) {
    auto it = open.find(generation);
    if (it == open.end()) return;
    open_generation g = std::move(it->second);
    open.erase(it);
    cluster_crossing out;
    out.barrier = options.name;
    out.generation = generation;
    out.duration = std::chrono::duration_cast<caf::timespan>(clock::now() - g.since);
    for (std::size_t i = 0; i < g.members.size(); ++i) {
      if (!g.arrivals[i]) continue;
      const member& m = members[g.members[i]];
      if (m.up) self->send(m.node.actor, release_atom::value, options.name, generation);
      out.nodes.push_back(std::move(*g.arrivals[i]));
    }
    if (why == nullptr) {
      ++counts.crossed;
      g.promise.deliver(std::move(out));
    } else {
      if (*why == errc::timeout) {
        ++counts.timed_out;
      } else {
        ++counts.failed;
      }
      g.promise.deliver(*why);
    }
  }

  template <class Self>
  void arrived(Self* self, std::uint64_t generation, std::size_t index, node_arrival& a) {
    const member& m = members[index];
    auto it = open.find(generation);
    if (it == open.end()) {
      // Too late: the generation ended without it. The node holds its work: release it.
      if (m.up) self->send(m.node.actor, release_atom::value, options.name, generation);
      return;
    }
    auto& g = it->second;
    const auto pos = static_cast<std::size_t>(std::find(g.members.begin(), g.members.end(), index) -
                                              g.members.begin());
    if (pos == g.members.size() || g.arrivals[pos]) return;
    if (a.generation != generation || a.node != m.node.info.name) {
      const caf::error bad =
          make_error(errc::invalid_argument,
                     prefix(generation) + m.who() + " answered for generation " +
                         std::to_string(a.generation) + " as " + quote_peer_text(a.node));
      finish(self, generation, &bad);
      return;
    }
    g.arrivals[pos] = std::move(a);
    if (--g.left == 0) finish(self, generation, nullptr);
  }

  template <class Self>
  void refused(Self* self, std::uint64_t generation, std::size_t index, const caf::error& err) {
    // The node's stand-in fails what it had open before it ends: the node is lost.
    if (err == errc::node_lost) {
      lost(self, index, err);
      return;
    }
    auto it = open.find(generation);
    if (it == open.end()) return;
    const caf::error why = make_error(
        err.category() == error_category ? static_cast<errc>(err.code()) : errc::node_lost,
        prefix(generation) + members[index].who() + " did not arrive: " + describe(err));
    finish(self, generation, &why);
  }

  template <class Self>
  void expired(Self* self, std::uint64_t generation) {
    auto it = open.find(generation);
    if (it == open.end()) return;
    const auto& g = it->second;
    std::string late;
    std::size_t count = 0;
    for (std::size_t i = 0; i < g.members.size(); ++i) {
      if (g.arrivals[i]) continue;
      const member& m = members[g.members[i]];
      late += (count++ == 0 ? "" : ", ") + ("'" + m.node.info.name + "' (" + m.node.address + ")");
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(g.limit).count();
    const caf::error why = make_error(errc::timeout, prefix(generation) + std::to_string(count) +
                                                         " of " + std::to_string(g.members.size()) +
                                                         " nodes did not arrive within " +
                                                         std::to_string(ms) + " ms: " + late);
    finish(self, generation, &why);
  }

  // A node is gone: everything that waits for it fails now, naming it.
  template <class Self>
  void lost(Self* self, std::size_t index, const caf::error& reason) {
    member& m = members[index];
    if (!m.up) return;
    m.up = false;
    // The stand-in's reason names the node already (actors/node/node_link.hpp).
    if (reason == errc::node_lost) {
      m.lost = describe(reason);
    } else {
      m.lost = m.who() + " was lost (" +
               (reason ? describe(reason) : std::string{"its connection closed"}) + ")";
    }
    std::vector<std::uint64_t> failing;
    for (const auto& [generation, g] : open) {
      for (std::size_t i = 0; i < g.members.size(); ++i) {
        if (g.members[i] == index && !g.arrivals[i]) failing.push_back(generation);
      }
    }
    for (auto generation : failing) {
      const auto& g = open.at(generation);
      const auto arrived = g.members.size() - g.left;
      const caf::error why =
          make_error(errc::node_lost, prefix(generation) + m.lost + " before it arrived; " +
                                          std::to_string(arrived) + " of " +
                                          std::to_string(g.members.size()) + " nodes had arrived");
      finish(self, generation, &why);
    }
    std::vector<std::uint64_t> keys;
    for (const auto& [key, r] : requests) {
      if (r.member == index) keys.push_back(key);
    }
    const caf::error why = make_error(errc::node_lost, m.lost + " before it answered");
    for (auto key : keys) answer_error(key, why);
    for (auto& [name, g] : groups) {
      const auto rank = std::find(g.ranks.begin(), g.ranks.end(), index) - g.ranks.begin();
      if (static_cast<std::size_t>(rank) == g.ranks.size()) continue;
      break_group(self, name, g, "rank " + std::to_string(rank) + " (" + m.lost + ")");
    }
  }

  // A communicator can run nothing more: its making fails, and every other rank that is up
  // is told why, which breaks its communicator there (or ends its rendezvous).
  template <class Self>
  void break_group(Self* self, const std::string& name, group& g, const std::string& why) {
    if (g.broken) return;
    g.broken = true;
    const std::string text =
        "communicator '" + name + "' generation " + std::to_string(g.generation) + ": " + why;
    for (std::size_t index : g.ranks) {
      if (members[index].up) {
        self->send(members[index].node.actor, lost_atom::value, name, g.generation, why);
      }
    }
    if (g.making) {
      g.making = false;
      g.promise.deliver(make_error(errc::node_lost, text));
    }
  }

  void answer_error(std::uint64_t key, const caf::error& why) {
    auto it = requests.find(key);
    if (it == requests.end()) return;
    auto fail = std::move(it->second.fail);
    requests.erase(it);
    fail(why);
  }

  // A node's own errors name it already; anything else (CAF's) is said to be about it.
  caf::error from_node(std::size_t index, const caf::error& err) const {
    if (err.category() == error_category) return err;
    return make_error(errc::node_lost, members[index].who() + ": " + describe(err));
  }

  static std::string describe(const caf::error& err) {
    const auto& said = err.context();
    if (err.category() == error_category && said.match_elements<std::string>()) {
      return said.get_as<std::string>(0);
    }
    return cudactor::describe(err);
  }

  caf::error find(const std::string& name, std::size_t& index) const {
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (members[i].node.info.name != name) continue;
      if (!members[i].up) {
        return make_error(errc::node_lost, members[i].lost + " earlier");
      }
      index = i;
      return {};
    }
    return make_error(errc::invalid_argument,
                      "cluster '" + options.name + "' has no node named '" + name + "'");
  }
};

// Passes a request on to the node of that name; its answer, or node_lost if it is lost first.
// Claims node `index` for this control plane, with the owner token where there is one: its
// work is taken only then. A refusal shows in the request that needed the claim.
template <class Self>
void claim(Self* self, std::size_t index) {
  self->request(self->state.members[index].node.actor, caf::infinite, claim_atom::value,
                self->state.options.owner_token)
      .then([self, index](bool) { self->state.members[index].claimed = true; }, [](caf::error&) {});
}

template <class T, class Self, class... Ts>
caf::result<T> forward(Self* self, const std::string& name, Ts&&... xs) {
  auto& st = self->state;
  std::size_t index = 0;
  if (auto bad = st.find(name, index)) return bad;
  // Not claimed yet (the claim sent as the cluster was made was refused, or is on its way):
  // claimed again ahead of the request, which takes the same path after it.
  if (!st.members[index].claimed) claim(self, index);
  const std::uint64_t key = st.next_request++;
  ++st.counts.forwarded;
  forwarded& r = st.requests[key];
  r.member = index;
  auto promise = self->template make_response_promise<T>();
  r.fail = [promise](const caf::error& why) mutable { promise.deliver(why); };
  self->request(st.members[index].node.actor, caf::infinite, std::forward<Ts>(xs)...)
      .then(
          [self, key, promise](T& answer) mutable {
            auto& st = self->state;
            auto it = st.requests.find(key);
            if (it == st.requests.end()) return;
            st.requests.erase(it);
            promise.deliver(std::move(answer));
          },
          [self, key, index](caf::error& err) {
            self->state.answer_error(key, self->state.from_node(index, err));
          });
  return promise;
}

using cluster_pointer = cluster_actor::stateful_pointer<cluster_state>;

// The next generation of communicator `name` over the nodes that are up, rank i the i-th of
// them: every node makes its rank, meeting the others through pass_entry.
caf::result<communicator_info> make_group(cluster_pointer self, const std::string& name) {
  auto& st = self->state;
  if (name.empty() || name.size() > 256 || name.find('/') != std::string::npos) {
    return make_error(errc::invalid_argument,
                      "a communicator's name has 1 to 256 characters and no '/'");
  }
  group& g = st.groups[name];
  if (g.making) {
    return make_error(errc::invalid_argument, "communicator '" + name + "' generation " +
                                                  std::to_string(g.generation) + " is being made");
  }
  std::vector<std::size_t> ranks;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < st.members.size(); ++i) {
    if (!st.members[i].up) continue;
    ranks.push_back(i);
    names.push_back(st.members[i].node.info.name);
  }
  if (ranks.empty()) {
    return make_error(errc::node_lost, "communicator '" + name + "': every node was lost");
  }
  g.generation += 1;
  g.ranks = ranks;
  g.making = true;
  g.broken = false;
  g.left = ranks.size();
  g.entries.assign(g.ranks.size(), 0);
  g.engine.clear();
  g.since = clock::now();
  g.promise = self->make_response_promise<communicator_info>();
  const std::uint64_t generation = g.generation;
  // A node makes its rank within the rendezvous and then the engine's connecting (Gloo's
  // connectFullMesh, NCCL's init), each under the rendezvous limit: one that has not answered
  // well after both (up, but silent) fails the making, named, rather than keep the name
  // "being made" for good.
  const caf::timespan answer_limit = 2 * st.options.rendezvous_timeout + std::chrono::seconds{10};
  for (std::size_t rank = 0; rank < ranks.size(); ++rank) {
    const std::size_t index = ranks[rank];
    communicator_call call{name,
                           generation,
                           static_cast<std::uint32_t>(rank),
                           names,
                           st.options.collective_timeout,
                           st.options.rendezvous_timeout,
                           st.options.owner_token};
    self->request(st.members[index].node.actor, answer_limit, communicator_atom::value,
                  std::move(call))
        .then(
            [self, name, generation](communicator_ready& ready) {
              auto& st = self->state;
              auto it = st.groups.find(name);
              if (it == st.groups.end() || it->second.generation != generation ||
                  !it->second.making) {
                return;
              }
              group& g = it->second;
              g.engine = ready.engine;
              if (--g.left > 0) return;
              g.making = false;
              communicator_info info;
              info.name = name;
              info.generation = generation;
              for (std::size_t i : g.ranks) info.members.push_back(st.members[i].node.info.name);
              info.engine = g.engine;
              info.duration = std::chrono::duration_cast<caf::timespan>(clock::now() - g.since);
              g.promise.deliver(std::move(info));
            },
            [self, name, generation, rank, index, answer_limit](caf::error& err) {
              auto& st = self->state;
              auto it = st.groups.find(name);
              if (it == st.groups.end() || it->second.generation != generation) return;
              const std::string why =
                  err == caf::sec::request_timeout
                      ? "did not answer within " +
                            std::to_string(
                                std::chrono::duration_cast<std::chrono::seconds>(answer_limit)
                                    .count()) +
                            " s (twice the rendezvous timeout and 10 s)"
                      : cluster_state::describe(err);
              st.break_group(self, name, it->second,
                             "rank " + std::to_string(rank) + " (" + st.members[index].who() +
                                 ") could not join: " + why);
            });
  }
  return g.promise;
}

// A rank's rendezvous entry, passed on to the communicator's other ranks: only from a member
// of that generation, only its own keys, and at most a few per rank (one rank cannot spend
// the others' share).
void pass_entry(cluster_pointer self, rendezvous_entry& entry) {
  auto& st = self->state;
  auto it = st.groups.find(entry.name);
  if (it == st.groups.end()) return;
  group& g = it->second;
  if (g.generation != entry.generation || !g.making || g.broken) return;
  if (entry.key.size() > 256 || entry.value.size() > max_rendezvous_value) return;
  const auto from = caf::actor_cast<caf::actor_addr>(self->current_sender());
  std::size_t sender = st.members.size();
  std::size_t rank = 0;
  for (std::size_t r = 0; r < g.ranks.size(); ++r) {
    if (st.members[g.ranks[r]].node.actor.address() == from) {
      sender = g.ranks[r];
      rank = r;
    }
  }
  if (sender == st.members.size()) return;  // not one of its ranks
  if (!is_own_rendezvous_key(entry, rank) || g.entries[rank] >= 4) return;
  ++g.entries[rank];
  for (std::size_t i : g.ranks) {
    if (i != sender && st.members[i].up) {
      self->send(st.members[i].node.actor, rendezvous_atom::value, entry);
    }
  }
}

cluster_actor::behavior_type cluster_behavior(cluster_actor::stateful_pointer<cluster_state> self,
                                              std::vector<remote_node> nodes,
                                              cluster_options options) {
  auto& st = self->state;
  st.options = std::move(options);
  st.counts.name = st.options.name;
  for (auto& n : nodes) {
    self->monitor(n.actor);
    st.members.push_back(member{std::move(n), true, false, {}});
    // Each node claimed for this control plane first, so that its work is taken: work comes
    // after the claim on the same path (forward claims again while it is not answered yes).
    claim(self, st.members.size() - 1);
  }
  // Stopped (its owner went): every generation and request it has open is answered, and the
  // nodes that had arrived are released.
  self->set_exit_handler([self](const caf::exit_msg& msg) {
    auto& st = self->state;
    const caf::error why =
        make_error(errc::shutting_down, "cluster '" + st.options.name + "' was stopped");
    std::vector<std::uint64_t> generations;
    for (const auto& entry : st.open) generations.push_back(entry.first);
    for (auto generation : generations) st.finish(self, generation, &why);
    std::vector<std::uint64_t> keys;
    for (const auto& entry : st.requests) keys.push_back(entry.first);
    for (auto key : keys) st.answer_error(key, why);
    for (auto& [name, g] : st.groups) {
      if (!g.making) continue;
      g.making = false;
      g.promise.deliver(why);
    }
    self->quit(msg.reason);
  });
  self->set_down_handler([self](const caf::down_msg& down) {
    auto& st = self->state;
    for (std::size_t i = 0; i < st.members.size(); ++i) {
      if (st.members[i].node.actor.address() == down.source) st.lost(self, i, down.reason);
    }
  });
  auto begin = [self](caf::timespan limit) -> caf::result<cluster_crossing> {
    auto& st = self->state;
    const std::uint64_t generation = st.next_generation++;
    ++st.counts.generations;
    open_generation g;
    g.limit = limit;
    g.since = clock::now();
    for (std::size_t i = 0; i < st.members.size(); ++i) {
      if (st.members[i].up) g.members.push_back(i);
    }
    if (g.members.empty()) {
      ++st.counts.failed;
      return make_error(errc::node_lost, st.prefix(generation) + "every node was lost");
    }
    g.arrivals.resize(g.members.size());
    g.left = g.members.size();
    g.promise = self->make_response_promise<cluster_crossing>();
    auto promise = g.promise;
    // The nodes hold their work for the generation's limit, at most the hold they accept: a
    // control plane that vanished without a release cannot stop its nodes for longer.
    const barrier_call call{
        st.options.name, generation,
        limit.count() > 0 ? std::min(limit, st.options.max_hold) : st.options.max_hold,
        st.options.owner_token};
    for (std::size_t index : g.members) {
      self->request(st.members[index].node.actor, caf::infinite, synchronize_atom::value, call)
          .then([self, generation,
                 index](node_arrival& a) { self->state.arrived(self, generation, index, a); },
                [self, generation, index](caf::error& err) {
                  self->state.refused(self, generation, index, err);
                });
    }
    st.open.emplace(generation, std::move(g));
    if (limit.count() > 0) {
      self->delayed_send(self, detail::held_limit(limit), expire_atom::value, generation);
    }
    return promise;
  };
  return {
      [self, begin](synchronize_atom) { return begin(self->state.options.barrier_timeout); },
      [begin](synchronize_atom, caf::timespan limit) -> caf::result<cluster_crossing> {
        if (limit.count() < 0) return make_error(errc::invalid_argument, "a negative limit");
        return begin(limit);
      },
      [self](submit_atom, const std::string& name,
             graph_spec& g) -> caf::result<std::vector<op_notice>> {
        return forward<std::vector<op_notice>>(self, name, submit_atom::value, std::move(g));
      },
      [self](register_atom, const std::string& name, op_spec& op) -> caf::result<op_notice> {
        return forward<op_notice>(self, name, register_atom::value, std::move(op));
      },
      [self](record_atom, const std::string& name, step_spec& spec) -> caf::result<step_handle> {
        return forward<step_handle>(self, name, record_atom::value, std::move(spec));
      },
      [self](replay_atom, const std::string& name,
             replay_request& request) -> caf::result<step_outcome> {
        return forward<step_outcome>(self, name, replay_atom::value, std::move(request));
      },
      [self](release_atom, const std::string& name, const step_handle& step) -> caf::result<bool> {
        return forward<bool>(self, name, release_atom::value, step);
      },
      [self](alloc_atom, const std::string& name, buffer_call& call) -> caf::result<buffer_handle> {
        call.owner_token = self->state.options.owner_token;
        return forward<buffer_handle>(self, name, alloc_atom::value, std::move(call));
      },
      [self](store_atom, const std::string& name, buffer_call& call) -> caf::result<op_notice> {
        call.owner_token = self->state.options.owner_token;
        return forward<op_notice>(self, name, store_atom::value, std::move(call));
      },
      [self](fetch_atom, const std::string& name,
             buffer_call& call) -> caf::result<std::vector<std::uint8_t>> {
        call.owner_token = self->state.options.owner_token;
        return forward<std::vector<std::uint8_t>>(self, name, fetch_atom::value, std::move(call));
      },
      [self](release_atom, const std::string& name, buffer_call& call) -> caf::result<op_notice> {
        call.owner_token = self->state.options.owner_token;
        return forward<op_notice>(self, name, release_atom::value, std::move(call));
      },
      [self](status_atom) {
        auto& st = self->state;
        cluster_status out = st.counts;
        for (const auto& m : st.members) {
          out.nodes.push_back(cluster_member{m.node.info.name, m.node.address, m.up, m.lost});
        }
        out.pending = st.open.size();
        out.open = st.requests.size();
        return out;
      },
      [self](communicator_atom, const std::string& name) -> caf::result<communicator_info> {
        return make_group(self, name);
      },
      [self](rendezvous_atom, rendezvous_entry& entry) { pass_entry(self, entry); },
      [self](expire_atom, std::uint64_t generation) {
        if (caf::actor_cast<caf::actor_addr>(self->current_sender()) != self->address()) return;
        self->state.expired(self, generation);
      },
  };
}

}  // namespace

cluster& cluster::operator=(cluster&& other) noexcept {
  if (this != &other) {
    stop();
    actor_ = std::exchange(other.actor_, cluster_actor{});
  }
  return *this;
}

void cluster::stop() noexcept {
  if (actor_) caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
  actor_ = cluster_actor{};
}

caf::expected<cluster> spawn_cluster(caf::actor_system& system, std::vector<remote_node> nodes,
                                     cluster_options options) {
  if (nodes.empty()) return make_error(errc::invalid_argument, "a cluster needs a node");
  if (options.name.empty() || options.name.size() > 256) {
    return make_error(errc::invalid_argument, "a cluster's name has 1 to 256 characters");
  }
  if (options.barrier_timeout.count() < 0) {
    return make_error(errc::invalid_argument, "a negative barrier timeout");
  }
  if (options.collective_timeout.count() <= 0 || options.rendezvous_timeout.count() <= 0) {
    return make_error(errc::invalid_argument,
                      "the collective and rendezvous timeouts are more than 0");
  }
  if (options.barrier_timeout.count() > 0 &&
      options.collective_timeout >= options.barrier_timeout) {
    return make_error(errc::invalid_argument,
                      "the collective timeout must stay below the barrier timeout: a rank lost "
                      "mid-collective fails it before a barrier waiting behind gives up");
  }
  if (!options.owner_token.empty() && (options.owner_token.size() < min_owner_token ||
                                       options.owner_token.size() > max_owner_token)) {
    return make_error(errc::invalid_argument, "an owner token has " +
                                                  std::to_string(min_owner_token) + " to " +
                                                  std::to_string(max_owner_token) + " bytes");
  }
  std::set<std::string> names;
  for (const auto& n : nodes) {
    if (!n.actor) return make_error(errc::invalid_argument, "a node without an actor");
    if (options.rendezvous_timeout > n.info.max_rendezvous) {
      // Every making would be refused by this node: said once, here.
      return make_error(errc::invalid_argument,
                        "the rendezvous timeout (" + detail::readable(options.rendezvous_timeout) +
                            ") is longer than node " + quote_peer_text(n.info.name) + " takes (" +
                            detail::readable(n.info.max_rendezvous) +
                            ", its cudactor.node.max-rendezvous)");
    }
    if (!names.insert(n.info.name).second) {
      return make_error(errc::invalid_argument,
                        "two nodes are named '" + n.info.name + "': work goes to nodes by name");
    }
  }
  return cluster{system.spawn(cluster_behavior, std::move(nodes), std::move(options))};
}

}  // namespace cudactor
