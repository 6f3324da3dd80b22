// demo/training_step.hpp
//
// A data-parallel training step as one coordinator graph, the shape a training control plane
// submits every step: the next batch copied host -> device (prefetched during this step),
// forward through every layer, backward per replica, a gradient all-reduce per layer, the
// optimizer update, and a barrier that ends the step. Priorities follow what a real step
// wants first: the copy and the all-reduces high, the compute normal, the barrier critical.
//
// No operation states what it waits for: each declares the buffers it reads and writes, and
// the coordinator infers the order (docs/buffers.md), within a step and from one step to the
// next (the next forward pass overwrites activations this step's backward pass reads). Only
// the barrier names what it comes after: it is a point in time, not a use of data.
//
// The model is small and element-wise (a layer multiplies by its weights), so that each
// step's numbers can be recomputed on the host and checked: reference() runs the same
// arithmetic in plain loops, and the weights after N steps must equal it on either backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cudactor/facade/coordinator.hpp"
#include "cudactor/gpu/backend.hpp"
#include "cudactor/messaging/coordinator_types.hpp"

namespace cudactor::demo {

struct model_shape {
  std::size_t layers = 8;
  std::size_t replicas = 4;      // gradients averaged by the all-reduce (at most 8)
  std::size_t width = 1u << 16;  // floats per layer
  float learning_rate = 0.01f;
};

// The batch of step `step`: a fixed pattern, so the reference can make it too.
[[nodiscard]] float batch_value(std::size_t i, std::uint64_t step);
void fill_batch(float* x, std::size_t width, std::uint64_t step);

// The model's memory on the device (managed memory: the host can read it for the check) and
// the two pinned host batches the copies come from.
class training_model {
 public:
  // invalid_argument for a shape out of range; out_of_memory as the backend says.
  [[nodiscard]] static gpu::result<training_model> make(gpu::backend& device, model_shape shape);

  // Hands every buffer of the model to the coordinator, adopted (the memory stays the
  // model's), so that the graphs can declare their uses: before the first graph. Throws
  // cudactor::failure when the coordinator refuses one.
  void adopt(const coordinator& c);
  // Releases them again, each after its last use, and returns once every release has ended:
  // after the last graph, before the model goes. Throws cudactor::failure.
  void release(const coordinator& c);

  // The graph of step `step`. It reads the batch that step `step - 1`'s graph copied (step
  // 0's is copied by prepare()) and copies the batch of `step + 1` from the other pinned
  // buffer, which fill_next() must have filled first. The graphs of steps two apart are the
  // same (the batches alternate between two buffers): recorded once per parity, a step is
  // replayed (docs/replay.md). Without the barrier (`barrier` false) for a recording: a
  // replay is one operation, ordered after the step before it by the buffers they share.
  [[nodiscard]] graph_spec step_graph(std::uint64_t step, bool barrier = true) const;
  // Fills the pinned batch that step `step`'s graph copies from (that of step + 1). The
  // graph of step - 1 must have ended: it copied from the same buffer.
  void fill_next(std::uint64_t step);
  // Step 0's batch, before the first step: filled and copied by the caller's first graph.
  [[nodiscard]] graph_spec prepare();

  // Sum of every weight, and the largest difference from the host's reference after `steps`
  // over `samples` weights per layer spread evenly across it (the model is element-wise, so
  // each weight can be recomputed alone; all of them when samples >= width). Infinite when a
  // weight or its reference is not finite.
  [[nodiscard]] double weight_sum() const;
  [[nodiscard]] double max_difference(std::uint64_t steps, std::size_t samples = 4096) const;

  [[nodiscard]] const model_shape& shape() const noexcept { return shape_; }
  // The next batch's copy and the barrier, and per layer: forward, backward per replica,
  // all-reduce, optimizer.
  [[nodiscard]] std::size_t ops_per_step(bool barrier = true) const noexcept {
    return (barrier ? 2 : 1) + shape_.layers * (3 + shape_.replicas);
  }

 private:
  // A buffer of the model and the id the coordinator knows it by once adopted.
  struct tracked {
    gpu::buffer memory;
    buffer_id id;
    [[nodiscard]] float* data() const noexcept { return memory.as<float>(); }
  };

  explicit training_model(model_shape shape) : shape_(shape) {}
  const tracked& weights(std::size_t l) const { return weights_[l]; }
  const tracked& activation(std::size_t l) const { return activations_[l]; }
  const tracked& gradient(std::size_t l, std::size_t r) const {
    return gradients_[l * shape_.replicas + r];
  }
  const tracked& reduced(std::size_t l) const { return reduced_[l]; }
  const tracked& input(std::uint64_t step) const { return inputs_[step % 2]; }
  const tracked& staged(std::uint64_t step) const { return staged_[step % 2]; }
  template <class F>
  void for_each_buffer(F f) {
    for (auto* v : {&weights_, &activations_, &gradients_, &reduced_, &inputs_, &staged_}) {
      for (tracked& t : *v) f(t);
    }
  }

  model_shape shape_;
  std::vector<tracked> weights_, activations_, gradients_, reduced_;
  std::vector<tracked> inputs_;  // device: the batch of even / odd steps
  std::vector<tracked> staged_;  // pinned host: where those batches come from
};

// The weights at positions `at` of every layer after `steps` steps, computed on the host
// alone: out[l][k] is weight at[k] of layer l.
[[nodiscard]] std::vector<std::vector<float>> reference(const model_shape& shape,
                                                        std::uint64_t steps,
                                                        const std::vector<std::size_t>& at);

}  // namespace cudactor::demo
