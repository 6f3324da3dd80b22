// actors/client.cpp
#include "cudactor/actors/client.hpp"

#include <caf/all.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "cudactor/actors/detail/call_once.hpp"
#include "cudactor/actors/runtime.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace {

op_notice refused(caf::error why) {
  op_notice n;
  n.state = op_state::failed;
  n.cause = std::move(why);
  return n;
}

op_notice never_ran() { return refused(make_error(errc::shutting_down, "client: stopped")); }

}  // namespace

// The callers not yet told, each as a weak hold on its detail::call_once<>: stop() tells them, and
// a request dropped on the way (no coordinator any more) tells its caller as it goes.
struct client::open_calls {
  std::mutex mutex;
  bool stopped = false;
  std::uint64_t next = 0;
  std::unordered_map<std::uint64_t, std::function<void()>> calls;

  // The key the caller is kept under; nothing when the client has stopped.
  template <class T>
  std::optional<std::uint64_t> keep(const std::shared_ptr<detail::call_once<T>>& cell) {
    std::lock_guard<std::mutex> lock{mutex};
    if (stopped) return std::nullopt;
    const std::uint64_t key = next++;
    calls.emplace(key, [weak = std::weak_ptr<detail::call_once<T>>{cell}] {
      if (auto c = weak.lock()) c->otherwise();
    });
    return key;
  }
  void forget(std::uint64_t key) {
    std::lock_guard<std::mutex> lock{mutex};
    calls.erase(key);
  }
  void stop() {
    std::unordered_map<std::uint64_t, std::function<void()>> left;
    {
      std::lock_guard<std::mutex> lock{mutex};
      stopped = true;
      left.swap(calls);
    }
    for (auto& [key, tell] : left) tell();
  }
};

client::client(runtime& rt) : client(rt.coordinator()) {}

client::client(coordinator_actor coordinator)
    : coordinator_(std::move(coordinator)), open_(std::make_shared<open_calls>()) {}

client& client::operator=(client&& other) noexcept {
  if (this != &other) {
    stop();
    coordinator_ = std::move(other.coordinator_);
    open_ = std::move(other.open_);
  }
  return *this;
}

client::~client() { stop(); }

void client::stop() noexcept {
  if (open_) open_->stop();
}

void client::submit(op_spec op, std::function<void(op_notice)> done) {
  auto cell = std::make_shared<detail::call_once<op_notice>>(std::move(done), never_ran);
  const auto key = open_ && coordinator_ ? open_->keep(cell) : std::nullopt;
  if (!key) {
    cell->otherwise();
    return;
  }
  // The message holds the only strong reference: dropped unanswered, it tells the caller.
  caf::anon_send(coordinator_, run_atom::value, std::move(op),
                 op_callback{[cell, open = open_, k = *key](op_notice n) {
                   open->forget(k);
                   (*cell)(std::move(n));
                 }});
}

void client::submit(graph_spec graph, std::function<void(std::vector<op_notice>)> done) {
  const std::size_t n = graph.ops.size();
  auto cell = std::make_shared<detail::call_once<std::vector<op_notice>>>(
      std::move(done), [n] { return std::vector<op_notice>(n, never_ran()); });
  const auto key = open_ && coordinator_ ? open_->keep(cell) : std::nullopt;
  if (!key) {
    cell->otherwise();
    return;
  }
  caf::anon_send(coordinator_, run_atom::value, std::move(graph),
                 graph_callback{[cell, open = open_, k = *key](std::vector<op_notice> ends) {
                   open->forget(k);
                   (*cell)(std::move(ends));
                 }});
}

void client::record(step_spec step, std::function<void(step_handle, caf::error)> done) {
  using recorded = std::pair<step_handle, caf::error>;
  auto cell = std::make_shared<detail::call_once<recorded>>(
      [f = std::move(done)](recorded r) { f(r.first, std::move(r.second)); },
      [] {
        return recorded{step_handle{}, make_error(errc::shutting_down, "client: stopped")};
      });
  const auto key = open_ && coordinator_ ? open_->keep(cell) : std::nullopt;
  if (!key) {
    cell->otherwise();
    return;
  }
  caf::anon_send(coordinator_, record_atom::value, std::move(step),
                 step_record_callback{[cell, open = open_, k = *key](step_handle h, caf::error e) {
                   open->forget(k);
                   (*cell)(recorded{h, std::move(e)});
                 }});
}

std::future<step_handle> client::record(step_spec step) {
  auto p = std::make_shared<std::promise<step_handle>>();
  auto f = p->get_future();
  record(std::move(step), [p](step_handle h, caf::error why) {
    if (why) {
      p->set_exception(std::make_exception_ptr(std::runtime_error{describe(why)}));
    } else {
      p->set_value(h);
    }
  });
  return f;
}

void client::replay(replay_request request, std::function<void(step_outcome)> done) {
  const step_handle step = request.step;
  auto cell = std::make_shared<detail::call_once<step_outcome>>(std::move(done), [step] {
    step_outcome out;
    out.step = step;
    out.state = op_state::failed;
    out.cause = make_error(errc::shutting_down, "client: stopped");
    return out;
  });
  const auto key = open_ && coordinator_ ? open_->keep(cell) : std::nullopt;
  if (!key) {
    cell->otherwise();
    return;
  }
  caf::anon_send(coordinator_, replay_atom::value, std::move(request),
                 step_callback{[cell, open = open_, k = *key](step_outcome out) {
                   open->forget(k);
                   (*cell)(std::move(out));
                 }});
}

std::future<step_outcome> client::replay(replay_request request) {
  auto p = std::make_shared<std::promise<step_outcome>>();
  auto f = p->get_future();
  replay(std::move(request), [p](step_outcome out) { p->set_value(std::move(out)); });
  return f;
}

void client::release(step_handle step) {
  if (coordinator_) caf::anon_send(coordinator_, release_atom::value, step);
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

}  // namespace cudactor
