// Run requests: an operation or a graph registered, answered once all of it has ended. The
// request is known before anything is registered, so an operation that ends inside the
// handler that registers it (a launch that failed at once) is heard like any other.
#include <caf/all.hpp>

#include <utility>
#include <vector>

#include "cudactor/actors/coordinator/coordinator_state.hpp"

namespace cudactor::detail {

namespace {

op_notice never_ran(caf::error why) {
  op_notice n;
  n.state = op_state::failed;
  n.cause = std::move(why);
  return n;
}

}  // namespace

caf::error coordinator_state::start_run(op_spec& spec,
                                        std::function<void(std::vector<op_notice>)> done) {
  const std::uint64_t key = runs_.open(1, std::move(done));
  op_id id;
  if (auto bad = add_op(spec, nullptr, key, id)) {
    runs_.drop(key);
    return bad;
  }
  return {};
}

caf::error coordinator_state::start_run(graph_spec& graph,
                                        std::function<void(std::vector<op_notice>)> done) {
  if (graph.ops.empty()) {  // answered as submit answers it: nothing, or why not
    std::vector<op_id> none;
    if (auto bad = add_graph(graph, nullptr, 0, none)) return bad;
    done({});
    return {};
  }
  const std::uint64_t key = runs_.open(graph.ops.size(), std::move(done));
  std::vector<op_id> ids;
  if (auto bad = add_graph(graph, nullptr, key, ids)) {
    runs_.drop(key);
    return bad;
  }
  return {};
}

caf::result<op_notice> coordinator_state::run_op(op_spec& spec) {
  auto promise = self_->make_response_promise<op_notice>();
  // Once a promise is made only it answers: an error goes through it too.
  if (auto bad = start_run(spec, [promise](std::vector<op_notice> ends) mutable {
        promise.deliver(std::move(ends.front()));
      })) {
    promise.deliver(std::move(bad));
  }
  return promise;
}

caf::result<std::vector<op_notice>> coordinator_state::run_graph(graph_spec& graph) {
  auto promise = self_->make_response_promise<std::vector<op_notice>>();
  if (auto bad = start_run(graph, [promise](std::vector<op_notice> ends) mutable {
        promise.deliver(std::move(ends));
      })) {
    promise.deliver(std::move(bad));
  }
  return promise;
}

void coordinator_state::run_op(op_spec& spec, op_callback& done) {
  auto f = std::move(done.get());
  if (!f) return;
  if (auto bad =
          start_run(spec, [f](std::vector<op_notice> ends) { f(std::move(ends.front())); })) {
    f(never_ran(std::move(bad)));
  }
}

void coordinator_state::run_graph(graph_spec& graph, graph_callback& done) {
  auto f = std::move(done.get());
  if (!f) return;
  const std::size_t n = graph.ops.size();
  if (auto bad = start_run(graph, f)) f(std::vector<op_notice>(n, never_ran(bad)));
}

}  // namespace cudactor::detail
