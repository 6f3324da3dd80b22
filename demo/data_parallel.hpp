// demo/data_parallel.hpp
//
// Data-parallel training across node processes, for real: each node computes the gradient of
// its own shard of the samples, a collective all-reduce (sum) over the nodes' communicator
// adds them up, and each node applies the optimizer to its copy of the weights. The named
// operations a node runs (add_operations), one step's graph for one node (step_graph: no
// operation names another, the buffers order them), and the single-process reference the
// weights must equal afterwards.
//
// The model is element-wise least squares: prediction w[j] * x_i for sample i, target
// t[j] * x_i, so the gradient of a shard is (w - t) times the sum of its samples' x_i^2. The
// data are chosen so that the check can be exact: every x_i is 1 or 2 and their squares add up
// to 32 over the 20 samples, the learning rate is 1/64, and the targets are small integers, so
// each step halves w - t and every value stays a float with fewer than 24 significant bits
// (for at most max_steps): every sum is exact in any order, whatever order the engine's
// reduction adds the nodes' gradients in, and every node's weights must equal the reference
// bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cudactor/actors/operation_registry.hpp"
#include "cudactor/messaging/coordinator_types.hpp"

namespace cudactor::demo::data_parallel {

inline constexpr std::uint64_t samples = 20;
inline constexpr std::uint64_t max_steps = 16;  // exact while w - t keeps fewer than 24 bits
inline constexpr float learning_rate = 1.0f / 64;

// Sample i's input: 2 for every fifth sample, 1 otherwise (squares: 4 * 4 + 16 * 1 = 32).
[[nodiscard]] float input(std::uint64_t i) noexcept;
// Weight j's target: a small integer in [-8, 8].
[[nodiscard]] float target(std::uint64_t j) noexcept;

// Registers on a node: "dp_grad" (buffers w read, t read, tmp write, g write; args rank and
// ranks: the gradient of the samples i with i % ranks == rank into g) and "dp_sgd" (buffers
// w read-write, g read; arg the learning rate: w -= rate * g). Both run as CUDA kernels on a
// CUDA stream and as host loops on the host backend (demo/kernels.hpp).
[[nodiscard]] gpu::status add_operations(operation_registry& ops);

// The node's buffers of the model: `width` floats each.
struct model_buffers {
  buffer_id weights, targets, scratch, gradient;
};

// One step on rank `rank` of `ranks`: gradient, all-reduce of it (sum, in place) over
// `communicator`, optimizer; ordered by the buffers alone.
[[nodiscard]] graph_spec step_graph(const model_buffers& b, std::uint64_t width, std::uint64_t rank,
                                    std::uint64_t ranks, const std::string& communicator);

// The weights after `steps` steps from zero, on one process, the samples in order.
[[nodiscard]] std::vector<float> reference(std::uint64_t width, std::uint64_t steps);

// The targets as bytes, and zero weights as bytes: what a control plane stores first.
[[nodiscard]] std::vector<std::uint8_t> target_bytes(std::uint64_t width);

}  // namespace cudactor::demo::data_parallel
