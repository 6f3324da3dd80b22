// actors/node/node_core.cpp
//
// Past 600 lines for a reason: the node's open requests, barrier holds, communicator ranks,
// buffers and steps share one state and one mailbox (a barrier waits for the stores, fetches
// and replays taken before it; an owner's end releases its buffers and steps and holds and
// cancels its work and its guests'). What each of them keeps lives in its own type:
// node_requests for the open requests, node_guests for the guests' quotas, node_rendezvous for
// the ranks, node_buffers for the buffers, node_steps for the steps; this file holds the rules
// between them.
#include "cudactor/actors/node/node_core.hpp"

#include "cudactor/actors/detail/wait_keys.hpp"
#include "cudactor/actors/node/node_guests.hpp"
#include "cudactor/actors/node/node_requests.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cudactor/actors/node/node_buffers.hpp"
#include "cudactor/actors/node/node_rendezvous.hpp"
#include "cudactor/actors/node/node_steps.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

namespace cudactor::detail {

namespace {

// A barrier call waiting for the requests taken before it to end.
struct arriving_call {
  caf::typed_response_promise<node_arrival> promise;
  barrier_call call;
  caf::actor_addr holder;        // who called: only it may release, its end ends the hold
  std::uint64_t before_key = 0;  // requests with a smaller key must end first
  std::uint64_t waited = 0;      // the owner's open requests when the call came
  std::uint64_t left = 0;        // of those, not ended yet
  std::chrono::steady_clock::time_point since;
};

// An arrival not yet released: while any is held, new work waits in `held`.
struct hold {
  std::string barrier;
  std::uint64_t generation = 0;
  caf::actor_addr holder;
};

// A request taken while a barrier holds the node, in the order taken: a graph, or a replay
// (which counts as `cost` operations: node_steps::cost_of).
struct held_work {
  graph_spec graph;
  bool replay = false;
  replay_request request;
  std::size_t cost = 0;
  std::uint64_t bytes = 0;  // a store's or a fetch's (max-transfer-bytes)
};

using clock = std::chrono::steady_clock;

// Communicators being made on one node at once: a control plane makes a few.
constexpr std::size_t max_making = 64;
// Callers of one process the node monitors at once (node_core_state::callers).
constexpr std::size_t max_callers_per_process = 1024;
// Communicators the owner may hold on one node, made and being made: each holds a thread
// and sockets (Gloo) or device memory (NCCL) until the owner goes.
constexpr std::size_t max_communicators = 256;

// Whether a peer's token is the configured one, in time that depends only on their lengths:
// how long the comparison takes must not tell a guesser how much of the token is right.
bool same_token(const std::string& given, const std::string& configured) {
  if (given.size() != configured.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ configured[i]);
  }
  return diff == 0;
}

struct node_core_state {
  static inline const char* name = "cudactor.node";  // the actor's name in CAF's logs
  node_context context;
  node_options options;
  std::unique_ptr<node_requests> requests;  // made with the options
  bool closing = false;
  std::vector<arriving_call> arriving;
  std::uint64_t next_hold = 1;
  // The callers monitored, once each, by process: whoever called for work, a barrier, a
  // claim. At most max_callers_per_process per process: past it a caller is served but not
  // monitored (its process is seen to go by the others' down messages), so that a process
  // calling from ever more actors grows neither this nor the node's monitors without bound,
  // and each look is a hash, not a walk through every caller.
  std::unordered_map<caf::node_id, std::unordered_set<caf::actor_addr>> callers;
  // The control plane (the process) whose barriers this node takes part in: the first
  // caller's, until none of its callers is left. Another's barrier calls are refused, so that
  // nobody else can hold the node's work.
  caf::node_id owner;
  std::unordered_map<std::uint64_t, hold> holds;
  // Work that came while a hold was on: dispatched, in order, once the last hold ends.
  std::vector<std::pair<std::uint64_t, held_work>> held;
  // Communicators' ranks being made on this node, by name and generation.
  std::unique_ptr<node_rendezvous> rendezvous;
  struct making_rank {
    caf::typed_response_promise<communicator_ready> promise;
    std::uint32_t rank = 0;
    caf::actor_addr holder;  // who asked: the making ends when it goes
  };
  std::map<std::pair<std::string, std::uint64_t>, making_rank> making;
  // The owner's communicators this node made, by name (the generation installed): removed
  // from the table, aborted, when the owner goes, so that the next control plane neither
  // finds them under its names nor is refused a generation they passed.
  std::map<std::string, std::uint64_t> made;
  std::function<void(std::uint64_t, caf::timespan)> start_timer;  // set by the behaviour
  std::function<void(std::uint64_t, held_work)> dispatch;         // set by the behaviour
  // The control planes the owner admitted as guests, and what they used of their quotas.
  node_guests guests;
  // The buffers the owner allocated here, and how one goes back (set by the behaviour).
  node_buffers buffers{0, 0};
  std::function<void(buffer_id)> release_buffer;
  // The steps the owner recorded here, and how one goes back (set by the behaviour).
  node_steps steps{0};
  std::function<void(step_handle)> release_step;
  // Cancels the replays of these steps the coordinator has not yet handed to a stream.
  std::function<void(std::vector<step_handle>)> cancel_replays;

  caf::error named(errc code, const std::string& what) const {
    return make_error(code, "node '" + options.name + "': " + what);
  }

  // Whether a request of `ops` operations may be taken now.
  caf::error refusal(std::size_t ops, std::uint64_t bytes = 0) const {
    if (closing) return named(errc::shutting_down, "shutting down");
    return requests->refusal(ops, bytes);
  }

  // Whether `holder` may hold this node (barriers) or make communicators of it: the configured
  // owner's token, and the owner's process once there is one.
  caf::error check_owner(const std::string& token, const caf::actor_addr& holder,
                         const std::string& what) const {
    if (!options.owner_token.empty() && !same_token(token, options.owner_token)) {
      // The token is never echoed: the error says only that it did not match.
      return named(errc::permission_denied,
                   what +
                       ": this node serves only the control plane configured for it (its owner "
                       "token did not match)");
    }
    if (owner && owner != holder.node()) return serves_another(what);
    return {};
  }

  caf::error serves_another(const std::string& what) const {
    return named(errc::permission_denied,
                 what +
                     ": this node serves another control plane (the first to call it, or the "
                     "one that claimed it with its owner token, until it is gone)");
  }

  // Whether `caller` may hand the node `ops` operations of work: its owner's process, or a
  // guest the owner admitted, within its quotas. Without an owner token the first caller of
  // any kind owns the node (one tenant); with one, only the control plane that claimed it
  // with the token (claim_atom, or any call carrying it).
  caf::error check_work(const caf::actor_addr& caller, const std::string& which,
                        std::size_t ops) const {
    if (!caller) return named(errc::invalid_argument, which + " needs a caller to answer");
    if (owner && owner != caller.node()) {
      if (const auto id = guests.admission_of(caller.node()); id != 0) {
        const std::string over = guests.refusal(id, ops);
        if (over.empty()) return {};
        return named(errc::resource_exhausted, which + ": " + over);
      }
    }
    if (!owner && !options.owner_token.empty()) {
      return named(errc::permission_denied,
                   which +
                       ": this node takes work only from the control plane configured for it, "
                       "once that has claimed it with its owner token");
    }
    if (owner && owner != caller.node()) return serves_another(which);
    return {};
  }

  // The control plane `gone` sent work and is gone: what it queued is cancelled, so that the
  // next control plane does not wait behind it. Work held back by a barrier fails at once;
  // work the coordinator has is cancelled there, operation by operation (one already running
  // finishes: neither backend can stop a kernel), and its request ends with the last end.
  void cancel_work_of(const caf::node_id& gone) {
    const caf::error why = named(errc::cancelled, "the control plane that sent it is gone");
    for (auto it = held.begin(); it != held.end();) {
      const pending_request* p = requests->find(it->first);
      if (p == nullptr || p->from != gone) {
        ++it;
        continue;
      }
      const std::uint64_t key = it->first;
      it = held.erase(it);
      requests->fail(key, why);
    }
    requests->cancel_from(gone);
  }

  // Monitors a new caller once; the first makes its process the owner.
  template <class Self>
  void take_caller(Self* self, const caf::actor_addr& holder) {
    auto& of_process = callers[holder.node()];
    if (of_process.size() < max_callers_per_process && of_process.insert(holder).second) {
      self->monitor(holder);
    }
    if (!owner) owner = holder.node();
  }

  caf::error check_call(const barrier_call& call, const caf::actor_addr& holder) const {
    if (call.hold > options.max_hold) {
      return named(
          errc::invalid_argument,
          "barrier " + quote_peer_text(call.barrier) + ": a hold is 0 to " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(options.max_hold).count()) +
              " ms (limit max-hold)");
    }
    if (!holder) return named(errc::invalid_argument, "a barrier call needs a caller to answer");
    if (auto bad =
            check_owner(call.owner_token, holder, "barrier " + quote_peer_text(call.barrier)))
      return bad;
    if (arriving.size() + holds.size() >= options.max_pending) {
      return named(errc::resource_exhausted,
                   "too many barrier calls are open (limit max-pending); retry later");
    }
    return refusal(0);
  }

  // The coordinator's own words, with the node's name in front.
  caf::error from_coordinator(const caf::error& err) const {
    return err.category() == error_category
               ? named(static_cast<errc>(err.code()), error_context(err))
               : named(errc::shutting_down, describe(err));
  }

  // Whether `caller` may name buffers: the node's owner, as the token says where one is
  // configured. Only the owner holds buffers here, so nobody else can name one.
  caf::error check_buffer_caller(const std::string& token, const caf::actor_addr& caller,
                                 const std::string& what) const {
    if (!caller) return named(errc::invalid_argument, what + " needs a caller to answer");
    return check_owner(token, caller, what);
  }

  // A peer's work that names buffers: only the owner's, and only the owner's buffers. A
  // guest's (the only other caller check_work lets through) is named work alone: a collective
  // would run on the owner's communicator on this rank only, out of step with its other
  // ranks, and a barrier would order the owner's streams.
  caf::error check_names(const op_spec& op, const caf::actor_addr& caller,
                         const std::string& which) const {
    if ((op.is_collective() || op.is_barrier()) && owner && caller && caller.node() != owner) {
      return named(errc::permission_denied,
                   which +
                       ": a guest hands the node named work only (collectives and barriers "
                       "are the owner's)");
    }
    const bool names =
        !op.uses.empty() ||
        (op.is_collective() && !(op.collective.send.empty() && op.collective.recv.empty()));
    if (!names) return {};
    if (!owner || !caller || caller.node() != owner) {
      return named(errc::permission_denied,
                   which + " names buffers: only the control plane that owns the node may");
    }
    if (auto bad = buffers.check_names(op, which)) {
      return named(static_cast<errc>(bad.code()), error_context(bad));
    }
    return {};
  }

  // Whether `caller` may record, replay or release steps: the node's owner only (a step names
  // the owner's buffers and communicators; a guest hands the node named work alone).
  caf::error check_steps_caller(const caf::actor_addr& caller, const std::string& what) const {
    if (closing) return named(errc::shutting_down, "shutting down");
    if (!caller) return named(errc::invalid_argument, what + " needs a caller to answer");
    if (!owner || caller.node() != owner) {
      return named(errc::permission_denied,
                   what +
                       ": only the control plane that owns the node records, replays and "
                       "releases steps on it");
    }
    return {};
  }

  // A request left `pending`: barrier calls that waited for it may arrive. Only the owner's
  // count (`admission` 0): a guest's long work must not hold the owner's barrier back.
  void ended(std::uint64_t key, std::uint64_t admission) {
    if (arriving.empty() || admission != 0) return;
    std::vector<arriving_call> done;
    for (auto it = arriving.begin(); it != arriving.end();) {
      if (key < it->before_key && --it->left == 0) {
        done.push_back(std::move(*it));
        it = arriving.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& a : done) arrive(a);
  }

  void arrive(arriving_call& a) {
    node_arrival out;
    out.node = options.name;
    out.generation = a.call.generation;
    out.waited = a.waited;
    out.duration = std::chrono::duration_cast<caf::timespan>(clock::now() - a.since);
    if (a.call.hold.count() > 0) {
      const std::uint64_t id = next_hold++;
      holds.emplace(id, hold{a.call.barrier, a.call.generation, a.holder});
      start_timer(id, a.call.hold);
    }
    a.promise.deliver(std::move(out));
  }

  // A hold ended (released, run out, or its holder gone): when none is left, the work held
  // back goes to the coordinator in the order it came.
  void unhold(std::uint64_t id) {
    holds.erase(id);
    if (!holds.empty()) return;
    auto work = std::move(held);
    held.clear();
    for (auto& [key, w] : work) dispatch(key, std::move(w));
  }

  void release(const std::string& barrier, std::uint64_t generation, const caf::actor_addr& from) {
    for (auto it = holds.begin(); it != holds.end(); ++it) {
      if (it->second.barrier == barrier && it->second.generation == generation &&
          it->second.holder == from) {
        unhold(it->first);
        return;
      }
    }
  }

  // Whoever called barriers is gone: its calls are dropped, its holds end, and the node is
  // free for another control plane.
  void holder_down(const caf::actor_addr& who) {
    if (auto it = callers.find(who.node()); it != callers.end()) {
      it->second.erase(who);
      if (it->second.empty()) callers.erase(it);
    }
    if (owner && callers.count(owner) == 0) {
      const caf::node_id gone = owner;
      owner = caf::node_id{};
      // Its work is cancelled (before its holds end, which would hand its held work on), and
      // its buffers go back: nobody else may name them.
      // Its replays queued at the coordinator too (one already on a stream runs to its end),
      // before its buffers' releases come after them: those of its steps, and of any step it
      // released since it sent a replay of it.
      std::vector<step_handle> replayed = requests->replays_from(gone);
      cancel_work_of(gone);
      const std::vector<step_handle> its_steps = steps.take_all();
      replayed.insert(replayed.end(), its_steps.begin(), its_steps.end());  // repeats are fine
      if (!replayed.empty()) cancel_replays(std::move(replayed));
      for (const auto& id : buffers.take_all()) release_buffer(id);
      for (const auto& step : its_steps) release_step(step);
      remove_made("the control plane that made it is gone");
      // The guests it admitted go with it: their queued work is cancelled too.
      for (const auto& guest : guests.clear()) cancel_work_of(guest);
    }
    const caf::node_id from = who.node();
    if (guests.admission_of(from) != 0 && callers.count(from) == 0) {
      guests.forget(from);
      cancel_work_of(from);
    }
    const caf::error why = named(errc::cancelled, "the barrier's caller is gone");
    for (auto it = arriving.begin(); it != arriving.end();) {
      if (it->holder == who) {
        it->promise.deliver(why);
        it = arriving.erase(it);
      } else {
        ++it;
      }
    }
    std::vector<std::uint64_t> ids;
    for (const auto& [id, h] : holds) {
      if (h.holder == who) ids.push_back(id);
    }
    for (auto id : ids) unhold(id);
    // Its communicators still being made end with it (a rank that never comes would keep
    // each, with its thread and sockets, until the rendezvous limit): the rendezvous is
    // cancelled, its thread ends, and the making is answered (to nobody) as it reports.
    if (rendezvous) {
      for (const auto& [k, m] : making) {
        if (m.holder == who) {
          rendezvous->lost(k.first, k.second, "the control plane that asked for it is gone");
        }
      }
    }
  }

  // Aborts and forgets the communicators made for the owner (a newer generation someone
  // installed in the table since stays).
  void remove_made(const std::string& why) {
    for (const auto& [name, generation] : made) {
      if (rendezvous) rendezvous->retire(name, generation, why);
    }
    made.clear();
  }

  void close() {
    closing = true;
    const caf::error why = named(errc::shutting_down, "shut down before the work ended");
    requests->close(why);
    for (auto& a : arriving) a.promise.deliver(why);
    arriving.clear();
    holds.clear();
    held.clear();
    for (auto& [k, m] : making) m.promise.deliver(why);
    making.clear();
    (void)buffers.take_all();  // the coordinator frees them as it stops
    (void)steps.take_all();
    // Bounded: a rank's rendezvous is cancelled; one connecting ends at its engine's timeout.
    if (rendezvous) rendezvous->close("the node is shutting down");
  }

  // Whether a rendezvous entry or a loss comes from the process that owns the node.
  bool from_owner(const caf::actor_addr& from) const {
    return owner && from && from.node() == owner;
  }
};

// A new request: handed on at once, or held back while a barrier holds the node.
std::uint64_t take(node_core_state& st, held_work w, pending_request::answer kind,
                   const caf::node_id& from) {
  const std::size_t ops = w.replay ? w.cost : w.graph.ops.size();
  const std::uint64_t admission = from != st.owner ? st.guests.admission_of(from) : 0;
  const std::uint64_t key = st.requests->open(kind, ops, from, admission, w.bytes);
  st.guests.opened(admission, ops);
  if (st.holds.empty()) {
    st.dispatch(key, std::move(w));
  } else {
    st.held.emplace_back(key, std::move(w));
  }
  return key;
}

std::uint64_t take(node_core_state& st, graph_spec& g, pending_request::answer kind,
                   const caf::node_id& from, std::uint64_t bytes = 0) {
  held_work w;
  w.graph = std::move(g);
  w.bytes = bytes;
  return take(st, std::move(w), kind, from);
}

// Makes this node's rank of a communicator on a thread of its own; answered once it is
// connected and installed, or with why not.
caf::result<communicator_ready> make_rank(node_core_actor::stateful_pointer<node_core_state> self,
                                          communicator_call& call, const caf::actor_addr& caller,
                                          const node_actor& face) {
  auto& st = self->state;
  const std::string what = "communicator " + quote_peer_text(call.name);
  if (st.closing) return st.named(errc::shutting_down, "shutting down");
  if (!caller) return st.named(errc::invalid_argument, what + " needs a caller to answer");
  if (auto bad = st.check_owner(call.owner_token, caller, what)) return bad;
  if (call.rendezvous_timeout > st.options.max_rendezvous) {
    return st.named(errc::invalid_argument, what + ": a rendezvous of at most " +
                                                readable(st.options.max_rendezvous) +
                                                " (limit max-rendezvous)");
  }
  if (st.making.size() >= max_making) {
    return st.named(errc::resource_exhausted, std::to_string(st.making.size()) +
                                                  " communicators are being made; retry later");
  }
  if (st.making.size() + st.made.size() >= max_communicators && st.made.count(call.name) == 0) {
    return st.named(errc::resource_exhausted,
                    std::to_string(st.made.size()) + " communicators made and " +
                        std::to_string(st.making.size()) + " being made: at most " +
                        std::to_string(max_communicators) +
                        " per owner (a new generation of one of them replaces it)");
  }
  // The rank's entries go to the caller as the face's: the cluster takes them only from its
  // members, and the core's handle never leaves the process.
  auto to = caf::actor_cast<caf::actor>(caller);
  auto as = caf::actor_cast<caf::actor>(face);
  auto publish = [as, to](rendezvous_entry e) {
    caf::send_as(as, to, rendezvous_atom::value, std::move(e));
  };
  auto done = [core = self->address()](const std::string& name, std::uint64_t generation,
                                       caf::error why) {
    if (auto c = caf::actor_cast<node_core_actor>(core)) {
      caf::anon_send(c, communicator_atom::value, name, generation, std::move(why));
    }
  };
  if (auto bad = st.rendezvous->start(call, std::move(publish), std::move(done))) {
    return st.named(static_cast<errc>(bad.code()), error_context(bad));
  }
  st.take_caller(self, caller);  // a call that was refused claims nothing
  auto promise = self->make_response_promise<communicator_ready>();
  st.making[{call.name, call.generation}] =
      node_core_state::making_rank{promise, call.rank, caller};
  return promise;
}

using core_pointer = node_core_actor::stateful_pointer<node_core_state>;

// A buffer for the owner: reserved against the node's bounds, allocated by the coordinator,
// answered without its address.
caf::result<buffer_handle> alloc_buffer(core_pointer self, const buffer_call& call,
                                        const caf::actor_addr& caller) {
  auto& st = self->state;
  if (st.closing) return st.named(errc::shutting_down, "shutting down");
  if (auto bad = st.check_buffer_caller(call.owner_token, caller, "alloc")) return bad;
  if (auto bad = st.buffers.reserve(call.bytes)) {
    return st.named(static_cast<errc>(bad.code()), error_context(bad));
  }
  st.take_caller(self, caller);
  auto promise = self->make_response_promise<buffer_handle>();
  const std::uint64_t bytes = call.bytes;
  const caf::node_id by = caller.node();
  self->request(st.context.coordinator, caf::infinite, alloc_atom::value, bytes)
      .then(
          [self, promise, bytes, by](buffer_handle& h) mutable {
            auto& st = self->state;
            st.buffers.settle(bytes, &h);
            if (st.owner != by) {  // its owner went while it was made: nobody may hold it
              (void)st.buffers.remove(h.id);
              st.release_buffer(h.id);
              promise.deliver(st.named(errc::cancelled, "alloc: the caller is gone"));
              return;
            }
            h.address = 0;  // the node's memory: nothing a peer may know or use
            promise.deliver(std::move(h));
          },
          [self, promise, bytes](caf::error& err) mutable {
            self->state.buffers.settle(bytes, nullptr);
            promise.deliver(self->state.from_coordinator(err));
          });
  return promise;
}

// A store or a fetch: an operation on the buffer, in the order of its other uses, taken like
// any request (held while a barrier holds the node, answered once it has ended).
template <class T>
caf::result<T> move_bytes(core_pointer self, buffer_call& call, buffer_verb verb,
                          const caf::actor_addr& caller) {
  auto& st = self->state;
  const char* what = verb == buffer_verb::store ? "store" : "fetch";
  if (auto bad = st.check_buffer_caller(call.owner_token, caller, what)) return bad;
  const buffer_handle* b = nullptr;
  if (auto bad = st.buffers.find(call, verb, b)) {
    return st.named(static_cast<errc>(bad.code()), std::string{what} + ": " + error_context(bad));
  }
  // Its bytes count from now until it is answered: a store's arrived with it, a fetch's are
  // held for its reply (max-transfer-bytes).
  const std::uint64_t bytes = verb == buffer_verb::store ? call.data.size() : call.bytes;
  if (auto bad = st.refusal(1, bytes)) return bad;
  graph_spec g;
  auto into = std::make_shared<std::vector<std::uint8_t>>();
  g.add(verb == buffer_verb::store ? node_buffers::store_op(*b, call)
                                   : node_buffers::fetch_op(*b, call, into));
  auto promise = self->template make_response_promise<T>();
  constexpr bool fetching = !std::is_same_v<T, op_notice>;
  const auto key =
      take(st, g, fetching ? pending_request::answer::fetch : pending_request::answer::single,
           caller.node(), bytes);
  pending_request& p = *st.requests->find(key);
  if constexpr (fetching) {
    p.fetched = promise;
    p.into = std::move(into);
  } else {
    p.single = promise;
  }
  return promise;
}

// Gives a buffer back: answered with the end of its release (after every use of it).
caf::result<op_notice> release_buffer(core_pointer self, const buffer_call& call,
                                      const caf::actor_addr& caller) {
  auto& st = self->state;
  if (auto bad = st.check_buffer_caller(call.owner_token, caller, "release")) return bad;
  const buffer_handle* b = nullptr;
  if (auto bad = st.buffers.find(call, buffer_verb::release, b)) {
    return st.named(static_cast<errc>(bad.code()), "release: " + error_context(bad));
  }
  if (st.closing) return st.named(errc::shutting_down, "shutting down");
  (void)st.buffers.remove(call.buffer);
  auto promise = self->make_response_promise<op_notice>();
  auto failed = [self, promise](caf::error& err) mutable {
    promise.deliver(self->state.from_coordinator(err));
  };
  self->request(st.context.coordinator, caf::infinite, release_atom::value, call.buffer)
      .then(
          [self, promise, failed](op_id released) mutable {
            self->request(self->state.context.coordinator, caf::infinite, await_atom::value,
                          released, wait_limit{})
                .then([promise](op_notice& end) mutable { promise.deliver(std::move(end)); },
                      failed);
          },
          failed);
  return promise;
}

// Records the owner's step at the coordinator, within the node's bound; a step whose owner
// left while it was being recorded is released at once.
caf::result<step_handle> record_step(core_pointer self, step_spec& spec,
                                     const caf::actor_addr& caller) {
  auto& st = self->state;
  if (auto bad = st.check_steps_caller(caller, "record")) return bad;
  for (std::size_t i = 0; i < spec.graph.ops.size(); ++i) {
    if (auto bad = st.check_names(spec.graph.ops[i].spec, caller, "step op " + std::to_string(i)))
      return bad;
  }
  if (auto bad = st.steps.reserve()) {
    return st.named(static_cast<errc>(bad.code()), error_context(bad));
  }
  auto promise = self->make_response_promise<step_handle>();
  const caf::node_id owner = st.owner;
  const std::size_t ops = spec.graph.ops.size();
  self->request(st.context.coordinator, caf::infinite, record_atom::value, std::move(spec))
      .then(
          [self, promise, owner, ops](step_handle made) mutable {
            auto& st = self->state;
            if (st.closing || st.owner != owner) {
              st.steps.settle(step_handle{});
              st.release_step(made);
              promise.deliver(
                  st.named(errc::cancelled, "record: the control plane that asked for it is gone"));
              return;
            }
            st.steps.settle(made, ops);
            promise.deliver(made);
          },
          [self, promise](caf::error& err) mutable {
            self->state.steps.settle(step_handle{});
            promise.deliver(self->state.from_coordinator(err));
          });
  return promise;
}

// Replays the owner's step: a request of one operation, held while a barrier holds the node
// and counted by the barrier calls after it, answered with the coordinator's outcome.
caf::result<step_outcome> replay_step(core_pointer self, replay_request& request,
                                      const caf::actor_addr& caller) {
  auto& st = self->state;
  if (auto bad = st.check_steps_caller(caller, "replay")) return bad;
  if (!st.steps.has(request.step)) {
    return st.named(errc::invalid_argument,
                    "replay: " + to_string(request.step) +
                        " is not a step the owner recorded on this node (never recorded, or "
                        "released)");
  }
  if (auto bad = node_steps::check_bindings(request, st.buffers)) {
    return st.named(static_cast<errc>(bad.code()), error_context(bad));
  }
  const std::size_t cost = st.steps.cost_of(request.step, request);
  if (auto bad = st.refusal(cost)) return bad;
  st.take_caller(self, caller);
  held_work w;
  w.replay = true;
  w.cost = cost;
  w.request = std::move(request);
  auto promise = self->make_response_promise<step_outcome>();
  const step_handle step = w.request.step;
  const auto key = take(st, std::move(w), pending_request::answer::replay, caller.node());
  pending_request& p = *st.requests->find(key);
  p.replayed = promise;
  p.step = step;
  return promise;
}

node_core_actor::behavior_type node_core(node_core_actor::stateful_pointer<node_core_state> self,
                                         node_context context, node_options options) {
  auto& st = self->state;
  st.context = std::move(context);
  st.options = std::move(options);
  st.rendezvous = std::make_unique<node_rendezvous>(
      st.context.communicators, st.options.name, st.context.device_kind == gpu::backend_kind::host,
      st.context.device_ordinal);
  self->monitor(st.context.coordinator);
  self->set_down_handler([self](const caf::down_msg& down) {
    if (down.source == self->state.context.coordinator.address()) {
      self->state.close();
    } else {
      self->state.holder_down(down.source);
    }
  });
  // Registered with the core as the listener, so that it knows each operation's id: a
  // departed control plane's operations can be cancelled (cancel_work_of).
  st.dispatch = [self](std::uint64_t key, held_work w) {
    if (w.replay) {
      // One operation of the coordinator, which answers its outcome itself.
      self->request(self->state.context.coordinator, caf::infinite, replay_atom::value,
                    std::move(w.request))
          .then([self, key](step_outcome& out) { self->state.requests->answer(key, out); },
                [self, key](caf::error& err) {
                  self->state.requests->fail(key, self->state.from_coordinator(err));
                });
      return;
    }
    self->request(self->state.context.coordinator, caf::infinite, submit_atom::value,
                  std::move(w.graph), caf::actor_cast<op_listener>(self))
        .then([self, key](std::vector<op_id>& ids) { self->state.requests->registered(key, ids); },
              [self, key](caf::error& err) {
                self->state.requests->fail(key, self->state.from_coordinator(err));
              });
  };
  st.requests =
      std::make_unique<node_requests>(st.options.name, st.options.max_pending,
                                      st.options.max_pending_ops, st.options.max_transfer_bytes);
  st.requests->cancel_ops = [self](std::vector<op_id> ids) {
    self->send(self->state.context.coordinator, cancel_atom::value, std::move(ids));
  };
  // A guest's operation is charged from its dispatch to its end; its request's end frees its
  // quota, and barrier calls that waited for the request may arrive.
  st.requests->on_ended = [self](const pending_request& p, const op_notice& n) {
    if (p.admission != 0 && n.dispatched_ns > 0 && n.ended_ns > n.dispatched_ns) {
      self->state.guests.charge(p.admission,
                                std::chrono::nanoseconds{n.ended_ns - n.dispatched_ns});
    }
  };
  st.requests->on_closed = [self](std::uint64_t key, const pending_request& p) {
    self->state.guests.closed(p.admission, p.ops);
    self->state.ended(key, p.admission);
  };
  st.buffers = node_buffers{st.options.max_buffers, st.options.max_buffer_bytes};
  st.steps = node_steps{st.options.max_steps};
  st.release_step = [self](step_handle step) {
    self->request(self->state.context.coordinator, caf::infinite, release_atom::value, step)
        .then([](bool) {}, [](caf::error&) {});  // replays in flight run to their end
  };
  st.cancel_replays = [self](std::vector<step_handle> steps) {
    self->send(self->state.context.coordinator, cancel_atom::value, std::move(steps));
  };
  st.release_buffer = [self](buffer_id id) {
    self->request(self->state.context.coordinator, caf::infinite, release_atom::value, id)
        .then([](op_id) {}, [](caf::error&) {});  // the coordinator frees it after its uses
  };
  st.start_timer = [self](std::uint64_t id, caf::timespan after) {
    self->delayed_send(self, after, expire_atom::value, id);
  };
  return {
      [self](claim_atom, const std::string& token,
             const caf::actor_addr& caller) -> caf::result<bool> {
        auto& st = self->state;
        if (st.closing) return st.named(errc::shutting_down, "shutting down");
        if (!caller) return st.named(errc::invalid_argument, "a claim needs a caller to answer");
        if (caller.node() != st.owner && st.owner && st.guests.claim(token, caller.node())) {
          st.take_caller(self, caller);  // a guest: monitored, so that its going ends its work
          return true;
        }
        if (auto bad = st.check_owner(token, caller, "claim")) return bad;
        st.take_caller(self, caller);
        return true;
      },
      [self](admit_atom, const guest_call& call,
             const caf::actor_addr& caller) -> caf::result<bool> {
        auto& st = self->state;
        if (st.closing) return st.named(errc::shutting_down, "shutting down");
        if (!caller) return st.named(errc::invalid_argument, "admit needs a caller to answer");
        if (auto bad = st.check_owner(call.owner_token, caller, "admit")) return bad;
        if (!st.options.owner_token.empty() &&
            same_token(call.guest_token, st.options.owner_token)) {
          return st.named(errc::invalid_argument,
                          "admit: a guest token must differ from the owner's");
        }
        if (call.max_open_ops > st.options.max_pending_ops) {
          return st.named(errc::invalid_argument, "admit: a guest may have at most the node's " +
                                                      std::to_string(st.options.max_pending_ops) +
                                                      " operations open (limit max-pending-ops)");
        }
        st.take_caller(self, caller);
        const auto gone = st.guests.admit(call.guest_token,
                                          node_guests::quota{call.max_open_ops, call.stream_time});
        for (const auto& guest : gone) st.cancel_work_of(guest);
        return true;
      },
      [self](std::vector<op_notice>& notices) {
        auto& st = self->state;
        if (caf::actor_cast<caf::actor_addr>(self->current_sender()) !=
            st.context.coordinator.address()) {
          return;
        }
        st.requests->told(notices, !st.closing);
      },
      [self](submit_atom, graph_spec& g,
             const caf::actor_addr& caller) -> caf::result<std::vector<op_notice>> {
        auto& st = self->state;
        if (auto bad = st.check_work(caller, "a graph", g.ops.size())) return bad;
        for (std::size_t i = 0; i < g.ops.size(); ++i) {
          if (auto bad = st.check_names(g.ops[i].spec, caller, "graph op " + std::to_string(i)))
            return bad;
        }
        if (auto bad = st.refusal(g.ops.size())) return bad;
        st.take_caller(self, caller);
        auto promise = self->make_response_promise<std::vector<op_notice>>();
        const auto key = take(st, g, pending_request::answer::graph, caller.node());
        st.requests->find(key)->graph = promise;
        return promise;
      },
      [self](register_atom, op_spec& op, const caf::actor_addr& caller) -> caf::result<op_notice> {
        auto& st = self->state;
        if (auto bad = st.check_work(caller, "the operation", 1)) return bad;
        if (auto bad = st.check_names(op, caller, "the operation")) return bad;
        if (auto bad = st.refusal(1)) return bad;
        st.take_caller(self, caller);
        graph_spec g;
        g.add(std::move(op));
        auto promise = self->make_response_promise<op_notice>();
        const auto key = take(st, g, pending_request::answer::single, caller.node());
        st.requests->find(key)->single = promise;
        return promise;
      },
      [self](synchronize_atom, barrier_call& call,
             caf::actor_addr& holder) -> caf::result<node_arrival> {
        auto& st = self->state;
        if (auto bad = st.check_call(call, holder)) return bad;
        arriving_call a;
        a.holder = holder;
        a.promise = self->make_response_promise<node_arrival>();
        st.take_caller(self, holder);
        a.before_key = st.requests->next_key();
        a.waited = st.requests->owners();  // the owner's requests: guests' are their own
        a.left = a.waited;
        a.since = clock::now();
        a.call = std::move(call);
        auto promise = a.promise;
        if (a.left == 0) {
          st.arrive(a);
        } else {
          st.arriving.push_back(std::move(a));
        }
        return promise;
      },
      [self](alloc_atom, const buffer_call& call, const caf::actor_addr& caller)
          -> caf::result<buffer_handle> { return alloc_buffer(self, call, caller); },
      [self](store_atom, buffer_call& call,
             const caf::actor_addr& caller) -> caf::result<op_notice> {
        return move_bytes<op_notice>(self, call, buffer_verb::store, caller);
      },
      [self](fetch_atom, buffer_call& call,
             const caf::actor_addr& caller) -> caf::result<std::vector<std::uint8_t>> {
        return move_bytes<std::vector<std::uint8_t>>(self, call, buffer_verb::fetch, caller);
      },
      [self](release_atom, const buffer_call& call, const caf::actor_addr& caller)
          -> caf::result<op_notice> { return release_buffer(self, call, caller); },
      [self](release_atom, const std::string& barrier, std::uint64_t generation,
             const caf::actor_addr& from) { self->state.release(barrier, generation, from); },
      [self](record_atom, step_spec& spec, const caf::actor_addr& caller)
          -> caf::result<step_handle> { return record_step(self, spec, caller); },
      [self](replay_atom, replay_request& request, const caf::actor_addr& caller)
          -> caf::result<step_outcome> { return replay_step(self, request, caller); },
      [self](release_atom, const step_handle& step,
             const caf::actor_addr& caller) -> caf::result<bool> {
        auto& st = self->state;
        if (auto bad = st.check_steps_caller(caller, "release")) return bad;
        if (!st.steps.remove(step)) return false;
        auto promise = self->make_response_promise<bool>();
        self->request(st.context.coordinator, caf::infinite, release_atom::value, step)
            .then([promise](bool existed) mutable { promise.deliver(existed); },
                  [self, promise](caf::error& err) mutable {
                    promise.deliver(self->state.from_coordinator(err));
                  });
        return promise;
      },
      [self](communicator_atom, communicator_call& call, caf::actor_addr& caller, node_actor& face)
          -> caf::result<communicator_ready> { return make_rank(self, call, caller, face); },
      [self](communicator_atom, const std::string& name, std::uint64_t generation,
             caf::error& why) {
        // A rank's thread is done (only this core's threads can address it).
        auto& st = self->state;
        if (st.rendezvous) st.rendezvous->finished(name, generation);
        auto it = st.making.find({name, generation});
        if (it == st.making.end()) return;
        if (why) {
          it->second.promise.deliver(st.named(
              why.category() == error_category ? static_cast<errc>(why.code()) : errc::op_failed,
              "communicator " + quote_peer_text(name) + ": " + error_context(why)));
        } else if (!st.owner || it->second.holder.node() != st.owner) {
          // Made as its control plane went: it goes with it.
          if (st.rendezvous) {
            st.rendezvous->retire(name, generation, "the control plane that made it is gone");
          }
          it->second.promise.deliver(
              st.named(errc::cancelled, "communicator " + quote_peer_text(name) +
                                            ": the control plane that asked for it is gone"));
        } else {
          auto& kept = st.made[name];
          kept = std::max(kept, generation);
          it->second.promise.deliver(communicator_ready{name, generation, it->second.rank,
                                                        st.options.name, st.rendezvous->engine()});
        }
        st.making.erase(it);
      },
      [self](rendezvous_atom, const rendezvous_entry& entry, const caf::actor_addr& from) {
        auto& st = self->state;
        if (!st.from_owner(from) || !st.rendezvous) return;
        (void)st.rendezvous->put(entry);  // too late, or too many: the rank times out, named
      },
      [self](lost_atom, const std::string& name, std::uint64_t generation, const std::string& why,
             const caf::actor_addr& from) {
        auto& st = self->state;
        if (!st.from_owner(from) || !st.rendezvous) return;
        st.rendezvous->lost(name, generation, why);
      },
      [self](expire_atom, std::uint64_t id) {
        auto& st = self->state;
        if (caf::actor_cast<caf::actor_addr>(self->current_sender()) != self->address()) return;
        if (st.holds.count(id) == 0) return;  // released in time
        st.unhold(id);
      },
      [self](shutdown_atom) {
        self->state.close();
        self->quit();
      },
  };
}

}  // namespace

node_core_actor spawn_node_core(caf::actor_system& system, node_context context,
                                node_options options) {
  return system.spawn(node_core, std::move(context), std::move(options));
}

}  // namespace cudactor::detail
