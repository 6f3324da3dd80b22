// actors/client.cpp
#include "cudactor/actors/client.hpp"

#include <caf/all.hpp>

#include <cstdio>
#include <exception>
#include <memory>
#include <unordered_map>
#include <utility>
#include <variant>

#include "cudactor/actors/runtime.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace {

// A graph's ends, gathered until the last one.
struct graph_wait {
  std::vector<op_notice> ends;
  std::size_t left = 0;
  std::function<void(std::vector<op_notice>)> done;
};

// Whom an operation's end is for.
struct target {
  std::function<void(op_notice)> single;
  std::shared_ptr<graph_wait> graph;
  std::size_t index = 0;
};

template <class F, class... Ts>
void call(const F& f, Ts&&... xs) noexcept {
  try {
    f(std::forward<Ts>(xs)...);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudactor::client: a completion function threw: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "cudactor::client: a completion function threw\n");
  }
}

op_notice refused(caf::error why) {
  op_notice n;
  n.state = op_state::failed;
  n.cause = std::move(why);
  return n;
}

// Calls its function exactly once: with what it is given, or, if it is destroyed first (a
// message dropped by an actor that has quit, state torn down with the actor system), with
// what `otherwise` makes. That is what keeps "every caller is told once" true however the
// client's actor ends.
template <class T>
class once {
 public:
  once(std::function<void(T)> f, std::function<T()> otherwise)
      : f_(std::move(f)), otherwise_(std::move(otherwise)) {}
  once(const once&) = delete;
  once& operator=(const once&) = delete;
  ~once() {
    if (f_) call(f_, otherwise_());
  }
  void operator()(T x) {
    auto f = std::move(f_);
    f_ = nullptr;
    if (f) call(f, std::move(x));
  }

 private:
  std::function<void(T)> f_;
  std::function<T()> otherwise_;
};

template <class T>
std::function<void(T)> told_once(std::function<void(T)> f, std::function<T()> otherwise) {
  auto o = std::make_shared<once<T>>(std::move(f), std::move(otherwise));
  return [o](T x) { (*o)(std::move(x)); };
}

op_notice never_ran() { return refused(make_error(errc::shutting_down, "client: stopped")); }

struct client_state {
  static inline const char* name = "cudactor.client";

  coordinator_actor coordinator;
  std::uint64_t next_serial = 0;
  // registrations not yet answered, by serial
  std::unordered_map<std::uint64_t, std::vector<target>> registering;
  std::unordered_map<op_id, target> waiting;
  // ends that came before their registration's answer (an op refused by a failed dependency
  // ends inside the handler that registers it)
  std::unordered_map<op_id, op_notice> early;
  bool stopped = false;

  void deliver(target& t, op_notice n) {
    if (t.graph) {
      auto& g = *t.graph;
      g.ends[t.index] = std::move(n);
      if (--g.left == 0) call(g.done, std::move(g.ends));
    } else {
      call(t.single, std::move(n));
    }
  }

  // The callers of registration `serial`, taken out; empty when the client has already told
  // them (it stopped).
  std::vector<target> take(std::uint64_t serial) {
    std::vector<target> out;
    if (auto r = registering.find(serial); r != registering.end()) {
      out = std::move(r->second);
      registering.erase(r);
    }
    return out;
  }

  void registered(target t, op_id id) {
    if (auto e = early.find(id); e != early.end()) {
      deliver(t, std::move(e->second));
      early.erase(e);
    } else {
      waiting.emplace(id, std::move(t));
    }
  }

  void fail_all(const caf::error& why) {
    for (auto& [serial, ts] : registering) {
      for (auto& t : ts) deliver(t, refused(why));
    }
    registering.clear();
    for (auto& [id, t] : waiting) {
      op_notice n = refused(why);
      n.id = id;
      deliver(t, std::move(n));
    }
    waiting.clear();
    early.clear();
  }
};

client_actor::behavior_type client_behavior(client_actor::stateful_pointer<client_state> self,
                                            coordinator_actor coordinator) {
  self->state.coordinator = coordinator;
  self->monitor(coordinator);
  self->set_down_handler([self](const caf::down_msg&) {
    self->state.stopped = true;
    self->state.fail_all(make_error(errc::shutting_down, "client: the coordinator is gone"));
    self->quit();
  });
  auto listener = [self] { return caf::actor_cast<op_listener>(self); };
  return {
      [self](std::vector<op_notice>& ends) {
        auto& st = self->state;
        for (auto& n : ends) {
          if (auto w = st.waiting.find(n.id); w != st.waiting.end()) {
            target t = std::move(w->second);
            st.waiting.erase(w);
            st.deliver(t, std::move(n));
          } else {
            st.early.emplace(n.id, std::move(n));
          }
        }
      },
      [self, listener](submit_atom, op_spec& op, op_callback& done) {
        auto& st = self->state;
        target t;
        t.single = std::move(done.get());
        if (st.stopped) {
          st.deliver(t, refused(make_error(errc::shutting_down, "client: stopped")));
          return;
        }
        const auto serial = st.next_serial++;
        st.registering[serial].push_back(std::move(t));
        self->request(st.coordinator, caf::infinite, register_atom::value, std::move(op),
                      listener())
            .then(
                [self, serial](op_id id) {
                  auto& st = self->state;
                  for (auto& t : st.take(serial)) st.registered(std::move(t), id);
                },
                [self, serial](caf::error& why) {
                  auto& st = self->state;
                  for (auto& t : st.take(serial)) st.deliver(t, refused(why));
                });
      },
      [self, listener](submit_atom, graph_spec& graph, graph_callback& done) {
        auto& st = self->state;
        auto g = std::make_shared<graph_wait>();
        g->ends.resize(graph.ops.size());
        g->left = graph.ops.size();
        g->done = std::move(done.get());
        if (graph.ops.empty()) {
          call(g->done, std::vector<op_notice>{});
          return;
        }
        std::vector<target> ts(graph.ops.size());
        for (std::size_t i = 0; i < ts.size(); ++i) {
          ts[i].graph = g;
          ts[i].index = i;
        }
        if (st.stopped) {
          for (auto& t : ts)
            st.deliver(t, refused(make_error(errc::shutting_down, "client: stopped")));
          return;
        }
        const auto serial = st.next_serial++;
        st.registering.emplace(serial, std::move(ts));
        self->request(st.coordinator, caf::infinite, submit_atom::value, std::move(graph),
                      listener())
            .then(
                [self, serial](std::vector<op_id>& ids) {
                  auto& st = self->state;
                  std::vector<target> ts = st.take(serial);
                  if (ts.empty()) return;
                  if (ids.size() != ts.size()) {
                    const auto why = make_error(
                        errc::invalid_argument,
                        "client: the coordinator answered " + std::to_string(ids.size()) +
                            " ids for a graph of " + std::to_string(ts.size()));
                    for (auto& t : ts) st.deliver(t, refused(why));
                    return;
                  }
                  for (std::size_t i = 0; i < ts.size(); ++i)
                    st.registered(std::move(ts[i]), ids[i]);
                },
                [self, serial](caf::error& why) {
                  auto& st = self->state;
                  for (auto& t : st.take(serial)) st.deliver(t, refused(why));
                });
      },
      [self](shutdown_atom) {
        auto& st = self->state;
        st.stopped = true;
        st.fail_all(make_error(errc::shutting_down, "client: stopped"));
        self->quit();
      },
  };
}

}  // namespace

client::client(runtime& rt) : client(rt.system(), rt.coordinator()) {}

client::client(caf::actor_system& system, coordinator_actor coordinator)
    : actor_(system.spawn(client_behavior, std::move(coordinator))) {
  // spawn made this thread hold the system's logger; let go so the runtime can be shut down
  // from any thread (runtime.hpp).
  runtime::release_calling_thread();
}

client& client::operator=(client&& other) noexcept {
  if (this != &other) {
    stop();
    actor_ = std::move(other.actor_);
  }
  return *this;
}

client::~client() { stop(); }

void client::stop() noexcept {
  if (actor_) {
    caf::anon_send(actor_, shutdown_atom::value);
    actor_ = nullptr;
  }
}

void client::submit(op_spec op, std::function<void(op_notice)> done) {
  if (!actor_) {
    call(done, never_ran());
    return;
  }
  caf::anon_send(actor_, submit_atom::value, std::move(op),
                 op_callback{told_once<op_notice>(std::move(done), never_ran)});
}

void client::submit(graph_spec graph, std::function<void(std::vector<op_notice>)> done) {
  const std::size_t n = graph.ops.size();
  auto none_ran = [n] { return std::vector<op_notice>(n, never_ran()); };
  if (!actor_) {
    call(done, none_ran());
    return;
  }
  caf::anon_send(actor_, submit_atom::value, std::move(graph),
                 graph_callback{told_once<std::vector<op_notice>>(std::move(done), none_ran)});
}

std::future<op_notice> client::submit(op_spec op) {
  auto p = std::make_shared<std::promise<op_notice>>();
  auto f = p->get_future();
  submit(std::move(op), [p](op_notice n) { p->set_value(std::move(n)); });
  return f;
}

std::future<std::vector<op_notice>> client::submit(graph_spec graph) {
  auto p = std::make_shared<std::promise<std::vector<op_notice>>>();
  auto f = p->get_future();
  submit(std::move(graph), [p](std::vector<op_notice> ends) { p->set_value(std::move(ends)); });
  return f;
}

bool all_completed(const std::vector<op_notice>& ends) noexcept {
  for (const auto& n : ends) {
    if (n.state != op_state::completed) return false;
  }
  return true;
}

}  // namespace cudactor
