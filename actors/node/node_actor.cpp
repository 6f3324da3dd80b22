#include "cudactor/actors/node_actor.hpp"

#include <caf/all.hpp>
#include <caf/detail/serialized_size.hpp>
#include <caf/detail/sync_request_bouncer.hpp>

#include <atomic>
#include <cstdio>
#include <utility>
#include <vector>

#include "cudactor/actors/node/node_core.hpp"
#include "cudactor/messaging/errc.hpp"
#include "cudactor/messaging/input_check.hpp"

namespace cudactor {

namespace {

// Why the face refused a message: the metric's label values.
enum class refusal : std::uint8_t { invalid, unexpected, system };

struct node_face_state {
  node_context context;
  node_options options;
  detail::node_core_actor core;
  metrics::counter* refused[3] = {nullptr, nullptr, nullptr};
  std::atomic<std::uint64_t> refusals{0};  // all kinds, for the log's pacing

  caf::error named(const caf::error& err) const {
    return make_error(static_cast<errc>(err.code()),
                      "node '" + options.name + "': " + error_context(err));
  }
  caf::error named(errc code, const std::string& what) const {
    return make_error(code, "node '" + options.name + "': " + what);
  }

  // Counted always; logged for the first ten, then once per thousand, so that a peer that
  // floods the node cannot flood its log. Thread-safe: exit messages are refused as they
  // arrive, on the network layer's thread.
  void refuse(refusal why, const std::string& line) {
    if (auto* c = refused[static_cast<std::size_t>(why)]) c->add();
    const std::uint64_t n = ++refusals;
    if (n <= 10 || n % 1000 == 0) {
      std::fprintf(stderr, "cudactor node '%s': refused %s (%llu refused so far)\n",
                   options.name.c_str(), line.c_str(), static_cast<unsigned long long>(n));
    }
  }

  // What a named operation means here: known, its arguments of the registered types, and
  // ordered by index only (an id of the node's coordinator means nothing to a peer).
  caf::error check_work(const op_spec& op, const std::string& which) const {
    if (!op.deps.empty()) {
      return named(errc::invalid_argument,
                   which +
                       " names dependencies by id: a node's graph orders its operations by "
                       "index (after) only");
    }
    // A barrier carries no work (checked with the rest of the spec): it is the node's to place.
    // A collective carries none either: it names one of the node's communicators.
    if (op.is_barrier() || op.is_collective()) return {};
    if (op.body.empty()) return named(errc::invalid_argument, which + " has no work");
    if (op.body.is_local()) {
      return named(errc::local_only, which + " is a local closure: a node runs named operations");
    }
    if (!context.operations->contains(op.body.name())) {
      return named(errc::unknown_operation,
                   which + ": no operation named " + quote_peer_text(op.body.name()));
    }
    if (auto bad = context.operations->check(op.body.name(), op.body.args(), op.uses.size())) {
      return named(errc::invalid_argument, which + ": " + error_context(bad));
    }
    return {};
  }

  caf::error check(const graph_spec& g) const {
    if (auto bad = check_input(g, options.limits)) return named(bad);
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
      if (auto bad = check_work(g.ops[i].spec, "graph op " + std::to_string(i))) return bad;
    }
    return {};
  }

  caf::error check(const op_spec& op) const {
    if (auto bad = check_input(op, options.limits)) return named(bad);
    return check_work(op, "the operation");
  }
};

// One line naming what came, never its content: the types and the bytes they take.
std::string describe(caf::scheduled_actor* self, caf::message_view& x) {
  const auto& content = x.content();
  std::string types;
  caf::detail::serialized_size_inspector size{static_cast<caf::execution_unit*>(nullptr)};
  for (std::size_t i = 0; i < content.size() && i < 8; ++i) {
    if (i > 0) types += ", ";
    types += self->system().types().portable_name(content.type(i));
    if (content.save(i, size)) types += " (unsized)";
  }
  if (content.size() > 8) types += ", ...";
  std::string from = "an anonymous sender";
  if (const auto& sender = self->current_sender()) from = caf::to_string(sender->node());
  return "a message (" + types + "; " + std::to_string(size.result()) + " bytes) from " + from;
}

// Answers a relayed request with the core's answer, whichever it is.
template <class T>
auto relay(caf::typed_response_promise<T> promise) {
  return std::make_pair([promise](T& value) mutable { promise.deliver(std::move(value)); },
                        [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
}

// A call on the node's buffers: checked, then relayed to the core with who made it.
template <class T, class Self, class Atom>
caf::result<T> buffer_request(Self* self, node_face_state& st, Atom atom, buffer_verb verb,
                              buffer_call& call) {
  if (auto bad = check_input(call, verb, st.options.limits)) {
    st.refuse(refusal::invalid, "a buffer call: " + error_context(bad));
    return st.named(bad);
  }
  auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
  auto promise = self->template make_response_promise<T>();
  auto [done, failed] = relay(promise);
  self->request(st.core, caf::infinite, atom, std::move(call), std::move(caller))
      .then(std::move(done), std::move(failed));
  return promise;
}

// The face is a class so that it can refuse exit messages as they arrive: CAF 0.17 ends an
// actor on an exit message with reason kill before any handler sees it, and a peer can send
// one to whatever actor it can address.
class node_face final : public node_actor::base {
 public:
  node_face(caf::actor_config& config, node_context context, node_options options,
            detail::node_core_actor core)
      : node_actor::base(config) {
    st_.context = std::move(context);
    st_.options = std::move(options);
    st_.core = std::move(core);
    if (st_.context.metrics) {
      auto& family = st_.context.metrics->counters(
          "cudactor_node_refused_messages_total",
          "Messages a node refused: invalid requests, messages outside its interface, and exit "
          "or down messages from peers",
          {"node", "reason"});
      const char* reasons[] = {"invalid", "unexpected", "system"};
      for (std::size_t i = 0; i < 3; ++i) {
        st_.refused[i] = &family.add({st_.options.name, reasons[i]});
      }
    }
  }

  // Nobody may stop the face: it goes with its core. An exit message is refused here, before
  // CAF would act on it, and a request carrying one is answered with an error.
  void enqueue(caf::mailbox_element_ptr ptr, caf::execution_unit* eu) override {
    if (ptr != nullptr && ptr->content().match_elements<caf::exit_msg>()) {
      st_.refuse(refusal::system, "an exit message");
      if (ptr->mid.is_request())
        caf::detail::sync_request_bouncer{caf::sec::unexpected_message}(*ptr);
      return;
    }
    node_actor::base::enqueue(std::move(ptr), eu);
  }

  behavior_type make_behavior() override;

 private:
  node_face_state st_;
};

node_face::behavior_type node_face::make_behavior() {
  auto* self = this;
  auto& st = st_;
  self->monitor(st.core);
  self->set_down_handler([self, &st](const caf::down_msg& down) {
    if (down.source == st.core.address()) {
      self->quit(down.reason);
      return;
    }
    st.refuse(refusal::system, "a down message for an actor it never watched");
  });
  self->set_default_handler(
      [&st](caf::scheduled_actor* ptr, caf::message_view& x) -> caf::result<caf::message> {
        st.refuse(refusal::unexpected, describe(ptr, x));
        return caf::sec::unexpected_message;  // without the message: never echoed back
      });
  return {
      [&st](info_atom) {
        return node_info{st.options.name,
                         st.context.backend,
                         st.context.coordinator_streams,
                         st.context.operations->names(),
                         st.options.limits,
                         st.options.max_rendezvous};
      },
      [self, &st](claim_atom, std::string& token) -> caf::result<bool> {
        if (token.size() > max_owner_token) {
          st.refuse(refusal::invalid,
                    "a claim: a token of " + std::to_string(token.size()) + " bytes");
          return st.named(errc::invalid_argument, "a claim: an owner token is at most " +
                                                      std::to_string(max_owner_token) + " bytes");
        }
        auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto promise = self->make_response_promise<bool>();
        auto [done, failed] = relay(promise);
        self->request(st.core, caf::infinite, claim_atom::value, std::move(token),
                      std::move(caller))
            .then(std::move(done), std::move(failed));
        return promise;
      },
      [self, &st](admit_atom, guest_call& call) -> caf::result<bool> {
        if (auto bad = check_input(call, st.options.limits)) {
          st.refuse(refusal::invalid, "an admit: " + error_context(bad));
          return st.named(bad);
        }
        auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto promise = self->make_response_promise<bool>();
        auto [done, failed] = relay(promise);
        self->request(st.core, caf::infinite, admit_atom::value, std::move(call), std::move(caller))
            .then(std::move(done), std::move(failed));
        return promise;
      },
      [self, &st](submit_atom, graph_spec& g) -> caf::result<std::vector<op_notice>> {
        if (auto bad = st.check(g)) {
          st.refuse(refusal::invalid, "a graph: " + error_context(bad));
          return bad;
        }
        auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto promise = self->make_response_promise<std::vector<op_notice>>();
        auto [done, failed] = relay(promise);
        self->request(st.core, caf::infinite, submit_atom::value, std::move(g), std::move(caller))
            .then(std::move(done), std::move(failed));
        return promise;
      },
      [self, &st](register_atom, op_spec& op) -> caf::result<op_notice> {
        if (auto bad = st.check(op)) {
          st.refuse(refusal::invalid, "an operation: " + error_context(bad));
          return bad;
        }
        auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto promise = self->make_response_promise<op_notice>();
        auto [done, failed] = relay(promise);
        self->request(st.core, caf::infinite, register_atom::value, std::move(op),
                      std::move(caller))
            .then(std::move(done), std::move(failed));
        return promise;
      },
      [self, &st](synchronize_atom, barrier_call& call) -> caf::result<node_arrival> {
        if (auto bad = check_input(call, st.options.limits)) {
          st.refuse(refusal::invalid, "a barrier call: " + error_context(bad));
          return st.named(bad);
        }
        // Before the promise: making it takes the sender out of the current message.
        auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto promise = self->make_response_promise<node_arrival>();
        auto [done, failed] = relay(promise);
        self->request(st.core, caf::infinite, synchronize_atom::value, std::move(call),
                      std::move(caller))
            .then(std::move(done), std::move(failed));
        return promise;
      },
      [self, &st](communicator_atom, communicator_call& call) -> caf::result<communicator_ready> {
        if (auto bad = check_input(call, st.options.limits)) {
          st.refuse(refusal::invalid, "a communicator call: " + error_context(bad));
          return st.named(bad);
        }
        auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto promise = self->make_response_promise<communicator_ready>();
        auto [done, failed] = relay(promise);
        self->request(st.core, caf::infinite, communicator_atom::value, std::move(call),
                      std::move(caller), caf::actor_cast<node_actor>(self))
            .then(std::move(done), std::move(failed));
        return promise;
      },
      [self, &st](alloc_atom, buffer_call& call) -> caf::result<buffer_handle> {
        return buffer_request<buffer_handle>(self, st, alloc_atom::value, buffer_verb::alloc, call);
      },
      [self, &st](store_atom, buffer_call& call) -> caf::result<op_notice> {
        return buffer_request<op_notice>(self, st, store_atom::value, buffer_verb::store, call);
      },
      [self, &st](fetch_atom, buffer_call& call) -> caf::result<std::vector<std::uint8_t>> {
        return buffer_request<std::vector<std::uint8_t>>(self, st, fetch_atom::value,
                                                         buffer_verb::fetch, call);
      },
      [self, &st](release_atom, buffer_call& call) -> caf::result<op_notice> {
        return buffer_request<op_notice>(self, st, release_atom::value, buffer_verb::release, call);
      },
      [self, &st](record_atom, step_spec& spec) -> caf::result<step_handle> {
        caf::error bad;
        if (spec.name.size() > st.options.limits.max_name) {
          bad = st.named(errc::invalid_argument, "record: a step's name has at most " +
                                                     std::to_string(st.options.limits.max_name) +
                                                     " bytes");
        } else if (spec.graph.ops.empty()) {
          bad = st.named(errc::invalid_argument, "record: a step has at least one operation");
        } else {
          bad = st.check(spec.graph);
        }
        if (bad) {
          st.refuse(refusal::invalid, "a step: " + error_context(bad));
          return bad;
        }
        auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto promise = self->make_response_promise<step_handle>();
        auto [done, failed] = relay(promise);
        self->request(st.core, caf::infinite, record_atom::value, std::move(spec),
                      std::move(caller))
            .then(std::move(done), std::move(failed));
        return promise;
      },
      [self, &st](replay_atom, replay_request& request) -> caf::result<step_outcome> {
        if (auto bad = check_input(request, st.options.limits)) {
          st.refuse(refusal::invalid, "a replay: " + error_context(bad));
          return st.named(bad);
        }
        auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto promise = self->make_response_promise<step_outcome>();
        auto [done, failed] = relay(promise);
        self->request(st.core, caf::infinite, replay_atom::value, std::move(request),
                      std::move(caller))
            .then(std::move(done), std::move(failed));
        return promise;
      },
      [self, &st](release_atom, step_handle& step) -> caf::result<bool> {
        auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
        auto promise = self->make_response_promise<bool>();
        auto [done, failed] = relay(promise);
        self->request(st.core, caf::infinite, release_atom::value, step, std::move(caller))
            .then(std::move(done), std::move(failed));
        return promise;
      },
      [self, &st](rendezvous_atom, rendezvous_entry& entry) {
        if (auto bad = check_input(entry, st.options.limits)) {
          st.refuse(refusal::invalid, "a rendezvous entry: " + error_context(bad));
          return;
        }
        self->send(st.core, rendezvous_atom::value, std::move(entry),
                   caf::actor_cast<caf::actor_addr>(self->current_sender()));
      },
      [self, &st](lost_atom, std::string& name, std::uint64_t generation, std::string& why) {
        if (auto bad = check_name(name, st.options.limits, "a communicator's name")) {
          st.refuse(refusal::invalid, "a loss: " + error_context(bad));
          return;
        }
        // The cluster's words, bounded: they become the communicator's failure.
        if (why.size() > st.options.limits.max_description * 4) {
          why.resize(st.options.limits.max_description * 4);
        }
        self->send(st.core, lost_atom::value, std::move(name), generation, std::move(why),
                   caf::actor_cast<caf::actor_addr>(self->current_sender()));
      },
      [self, &st](release_atom, std::string& barrier, std::uint64_t generation) {
        if (auto bad = check_name(barrier, st.options.limits, "a barrier's name")) {
          st.refuse(refusal::invalid, "a release: " + error_context(bad));
          return;
        }
        self->send(st.core, release_atom::value, std::move(barrier), generation,
                   caf::actor_cast<caf::actor_addr>(self->current_sender()));
      },
  };
}

}  // namespace

node_actors spawn_node(caf::actor_system& system, node_context context, node_options options) {
  auto core = detail::spawn_node_core(system, context, options);
  auto face = system.spawn<node_face>(std::move(context), std::move(options), core);
  return {std::move(face), caf::actor_cast<caf::actor>(core)};
}

}  // namespace cudactor
