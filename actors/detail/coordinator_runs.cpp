// Run requests: an operation or a graph registered, answered once all of it has ended. The
// request is known before anything is registered, so an operation that ends inside the
// handler that registers it (a launch that failed at once) is heard like any other.
#include <caf/all.hpp>

#include <utility>
#include <vector>

#include "cudactor/actors/detail/coordinator_state.hpp"

namespace cudactor::detail {

caf::result<op_notice> coordinator_state::run_op(op_spec& spec) {
  const std::uint64_t key = next_run_++;
  run_waiter& w = runs_[key];
  w.is_graph = false;
  w.ends.resize(1);
  w.left = 1;
  w.single = self_->make_response_promise<op_notice>();
  auto promise = w.single;  // the waiter may be answered and gone before add_op returns
  op_id id;
  if (auto bad = add_op(spec, nullptr, key, id)) {
    // Nothing was registered: the error is the answer, through the promise (once one is
    // made, what the handler returns is not sent).
    runs_.erase(key);
    promise.deliver(std::move(bad));
  }
  return promise;
}

caf::result<std::vector<op_notice>> coordinator_state::run_graph(graph_spec& graph) {
  if (graph.ops.empty()) {  // answered as submit answers it: nothing, or why not
    std::vector<op_id> none;
    if (auto bad = add_graph(graph, nullptr, 0, none)) return bad;
    return std::vector<op_notice>{};
  }
  const std::uint64_t key = next_run_++;
  run_waiter& w = runs_[key];
  w.ends.resize(graph.ops.size());
  w.left = graph.ops.size();
  w.graph = self_->make_response_promise<std::vector<op_notice>>();
  auto promise = w.graph;
  std::vector<op_id> ids;
  if (auto bad = add_graph(graph, nullptr, key, ids)) {
    runs_.erase(key);
    promise.deliver(std::move(bad));
  }
  return promise;
}

void coordinator_state::ran(const op_record& r, const op_notice& notice) {
  auto it = runs_.find(r.run);
  if (it == runs_.end()) return;
  run_waiter& w = it->second;
  w.ends[r.run_index] = notice;
  if (--w.left != 0) return;
  if (w.is_graph) {
    w.graph.deliver(std::move(w.ends));
  } else {
    w.single.deliver(std::move(w.ends.front()));
  }
  runs_.erase(it);
}

}  // namespace cudactor::detail
