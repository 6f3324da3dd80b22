#include "cudactor/gpu/detail/cuda_work_graph.hpp"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "cudactor/gpu/detail/cuda_device.hpp"
#include "cudactor/gpu/detail/cuda_status.hpp"

namespace cudactor::gpu::detail {

namespace {

status count_nodes(cudaGraph_t g, std::size_t& count) {
  count = 0;
  return from_cuda(cudaGraphGetNodes(g, nullptr, &count), "counting a captured graph's nodes");
}

}  // namespace

result<std::unique_ptr<work_graph>> cuda_work_graph::build(int ordinal, std::size_t device_bytes,
                                                           priorities native,
                                                           std::vector<graph_node> nodes) {
  std::unique_ptr<cuda_work_graph> made{
      new cuda_work_graph(ordinal, device_bytes, native, nodes.size())};
  made->nodes_.reserve(nodes.size());
  for (graph_node& n : nodes) {
    node_state s;
    s.work = std::move(n.work);
    s.after = std::move(n.after);
    s.priority = n.priority;
    s.label = std::move(n.label);
    made->nodes_.push_back(std::move(s));
  }
  if (auto bad = made->assemble(); !bad.ok()) return bad;
  return std::unique_ptr<work_graph>{std::move(made)};
}

cuda_work_graph::~cuda_work_graph() {
  (void)select_device(ordinal_);  // the handles know their context: released either way
  // Nothing to report to from a destructor; an executable graph still running is freed by
  // CUDA when its launches end.
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
  for (cudaStream_t s : streams_) {
    if (s != nullptr) (void)cudaStreamDestroy(s);
  }
  pool_.release(scratch_.blocks());  // after the last launch, in stream order
  (void)cudaGetLastError();
}

std::string cuda_work_graph::label(std::uint32_t node) const {
  if (node < nodes_.size() && !nodes_[node].label.empty()) return nodes_[node].label;
  return "graph node " + std::to_string(node);
}

status cuda_work_graph::capture_stream(stream_priority p, cudaStream_t& out) {
  cudaStream_t& s = streams_[static_cast<std::size_t>(p)];
  if (s == nullptr) {
    if (auto bad = from_cuda(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking,
                                                          native_[static_cast<std::size_t>(p)]),
                             "creating a graph's capture stream");
        !bad.ok()) {
      s = nullptr;
      return bad;
    }
  }
  out = s;
  return {};
}

status cuda_work_graph::capture(std::uint32_t node, const work_fn& work, cudaGraph_t& out) {
  out = nullptr;
  cudaStream_t s = nullptr;
  if (auto bad = capture_stream(nodes_[node].priority, s); !bad.ok()) return bad;
  (void)cudaGetLastError();  // so that the check below is about this work
  if (auto bad = from_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal),
                           "capturing " + label(node));
      !bad.ok()) {
    return bad;
  }
  status outcome;
  scratch_source& scratch = scratch_.begin(node);
  try {
    // No stream of the backend's: a work that calls the backend cannot be captured.
    outcome = work(
        launch_context{backend_kind::cuda, stream_ref{}, static_cast<void*>(s), true, &scratch});
  } catch (const std::exception& e) {
    outcome = status{status_code::op_failed, std::string{"threw: "} + e.what()};
  } catch (...) {
    outcome = status{status_code::op_failed, "threw a non-standard exception"};
  }
  const cudaError_t launched = cudaGetLastError();
  cudaGraph_t captured = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s, &captured);
  const bool kept =
      outcome.ok() && launched == cudaSuccess && ended == cudaSuccess && captured != nullptr;
  scratch_.settle(kept);  // else the node keeps the scratch its current work was captured with
  hold_scratch(scratch_.bytes());
  if (kept) {
    out = captured;
    return {};
  }
  if (captured != nullptr) (void)cudaGraphDestroy(captured);
  (void)cudaGetLastError();
  const std::string doing = "capturing " + label(node);
  if (!outcome.ok()) {
    return status{status_code::op_failed, doing + ": its work failed: " + outcome.to_string()};
  }
  if (launched != cudaSuccess) return from_cuda(launched, doing + " (its launches)");
  return from_cuda(ended != cudaSuccess ? ended : cudaErrorStreamCaptureInvalidated,
                   doing +
                       " (ending the capture: the work did what a graph cannot hold, e.g. "
                       "a synchronization or a launch on another stream)");
}

status cuda_work_graph::assemble() {
  cudaGraph_t graph = nullptr;
  if (auto bad = from_cuda(cudaGraphCreate(&graph, 0), "creating a graph"); !bad.ok()) return bad;
  const auto fail = [&](status why) {
    (void)cudaGraphDestroy(graph);
    return why;
  };
  std::vector<cudaGraphNode_t> handles(nodes_.size());
  std::vector<bool> empty(nodes_.size());
  std::vector<cudaGraphNode_t> deps;
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    cudaGraph_t child = nullptr;
    if (auto bad = capture(i, nodes_[i].work, child); !bad.ok()) return fail(std::move(bad));
    deps.clear();
    for (const std::uint32_t a : nodes_[i].after) deps.push_back(handles[a]);
    // CUDA refuses a dependency named twice (cudaErrorInvalidValue); the host takes it.
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    std::size_t count = 0;
    if (auto bad = count_nodes(child, count); !bad.ok()) {
      (void)cudaGraphDestroy(child);
      return fail(std::move(bad));
    }
    empty[i] = count == 0;
    const cudaError_t added =
        empty[i] ? cudaGraphAddEmptyNode(&handles[i], graph, deps.data(), deps.size())
                 // The child is cloned into the node.
                 : cudaGraphAddChildGraphNode(&handles[i], graph, deps.data(), deps.size(), child);
    (void)cudaGraphDestroy(child);
    if (auto bad = from_cuda(added, "adding " + label(i) + " to its graph"); !bad.ok()) {
      return fail(std::move(bad));
    }
  }
  cudaGraphExec_t exec = nullptr;
  if (auto bad = from_cuda(
          cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagUseNodePriority),
          "instantiating a graph of " + std::to_string(nodes_.size()) + " nodes");
      !bad.ok()) {
    return fail(std::move(bad));
  }
  // Its device resources now, not at the first launch.
  cudaStream_t upload = nullptr;
  status uploaded = capture_stream(stream_priority::normal, upload);
  if (uploaded.ok()) uploaded = from_cuda(cudaGraphUpload(exec, upload), "uploading a graph");
  if (!uploaded.ok()) {
    (void)cudaGraphExecDestroy(exec);
    return fail(std::move(uploaded));
  }
  count_instantiation();
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
  exec_ = exec;
  graph_ = graph;
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].handle = handles[i];
    nodes_[i].empty = empty[i];
  }
  return {};
}

status cuda_work_graph::set_work(std::uint32_t node, work_fn work) {
  if (!work) return {status_code::invalid_argument, "empty work function"};
  std::lock_guard<std::mutex> lock{mutex_};
  if (node >= nodes_.size()) {
    return {status_code::invalid_argument,
            label(node) + " does not exist (" + std::to_string(nodes_.size()) + " nodes)"};
  }
  // If the new work is given up after its capture, the node's scratch order is its old work's.
  std::vector<std::size_t> scratch_order = scratch_.order(node);
  const auto give_up = [&](status why) {
    scratch_.restore(node, std::move(scratch_order));
    return why;
  };
  cudaGraph_t child = nullptr;
  if (auto bad = capture(node, work, child); !bad.ok()) return bad;
  node_state& n = nodes_[node];
  std::size_t count = 0;
  if (auto bad = count_nodes(child, count); !bad.ok()) {
    (void)cudaGraphDestroy(child);
    return give_up(std::move(bad));
  }
  if (n.empty && count == 0) {
    // Still nothing on the device: an empty node stays one.
    (void)cudaGraphDestroy(child);
    n.work = std::move(work);
    count_update();
    return {};
  }
  if (!n.empty && count != 0) {
    // The same node, other parameters (addresses): in place, no instantiation.
    const cudaError_t swapped = cudaGraphExecChildGraphNodeSetParams(exec_, n.handle, child);
    (void)cudaGraphDestroy(child);
    if (swapped == cudaSuccess) {
      n.work = std::move(work);
      count_update();
      return {};
    }
    if (is_sticky(swapped)) return give_up(from_cuda(swapped, "updating " + label(node)));
    (void)cudaGetLastError();  // another shape: assembled anew below
  } else {
    (void)cudaGraphDestroy(child);
  }
  work_fn previous = std::exchange(n.work, std::move(work));
  if (auto bad = assemble(); !bad.ok()) {
    nodes_[node].work = std::move(previous);
    return give_up(std::move(bad));
  }
  return {};
}

status cuda_work_graph::launch(const launch_context& on, const node_observer* observer) {
  (void)observer;  // a failure on the device does not name its node
  if (on.kind() != backend_kind::cuda || on.native_stream() == nullptr) {
    return {status_code::invalid_argument, "a CUDA graph launched outside a CUDA stream's work"};
  }
  std::lock_guard<std::mutex> lock{mutex_};
  const auto s = static_cast<cudaStream_t>(on.native_stream());
  if (auto bad = pool_.before_launch(s); !bad.ok()) return bad;
  if (auto bad = from_cuda(cudaGraphLaunch(exec_, s),
                           "launching a graph of " + std::to_string(nodes_.size()) + " nodes");
      !bad.ok()) {
    return bad;
  }
  return pool_.after_launch(s);
}

}  // namespace cudactor::gpu::detail
