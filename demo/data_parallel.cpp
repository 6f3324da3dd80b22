#include "data_parallel.hpp"

#include <cstring>

#include "kernels.hpp"

namespace cudactor::demo::data_parallel {

float input(std::uint64_t i) noexcept { return i % 5 == 0 ? 2.0f : 1.0f; }

float target(std::uint64_t j) noexcept { return static_cast<float>((j * 7) % 17) - 8.0f; }

gpu::status add_operations(operation_registry& ops) {
  auto grad = [](const gpu::launch_context& ctx, const buffer_spans& b, std::uint64_t rank,
                 std::uint64_t ranks) -> gpu::status {
    const std::uint64_t n = b[0].count<float>();
    if (ranks == 0 || rank >= ranks) {
      return {gpu::status_code::invalid_argument,
              "dp_grad: rank " + std::to_string(rank) + " of " + std::to_string(ranks)};
    }
    for (std::size_t k = 1; k < 4; ++k) {
      if (b[k].count<float>() != n) {
        return {gpu::status_code::invalid_argument, "dp_grad: w, t, tmp and g of one width"};
      }
    }
    const float* w = b[0].as<float>();
    const float* t = b[1].as<float>();
    float* tmp = b[2].as<float>();
    float* g = b[3].as<float>();
    // tmp = w - t; g = sum over the shard of x_i^2 * tmp, sample by sample.
    if (auto s = copy(ctx, tmp, w, n * sizeof(float)); !s.ok()) return s;
    if (auto s = axpy(ctx, tmp, -1.0f, t, n); !s.ok()) return s;
    if (auto s = scale(ctx, g, tmp, 0.0f, n); !s.ok()) return s;
    for (std::uint64_t i = rank; i < samples; i += ranks) {
      const float x = input(i);
      if (auto s = axpy(ctx, g, x * x, tmp, n); !s.ok()) return s;
    }
    return {};
  };
  if (auto s = ops.add_typed_on_buffers<std::uint64_t, std::uint64_t>("dp_grad", 4, grad);
      !s.ok()) {
    return s;
  }
  return ops.add_typed_on_buffers<float>(
      "dp_sgd", 2,
      [](const gpu::launch_context& ctx, const buffer_spans& b, float rate) -> gpu::status {
        if (b[0].count<float>() != b[1].count<float>()) {
          return {gpu::status_code::invalid_argument, "dp_sgd: w and g of one width"};
        }
        return axpy(ctx, b[0].as<float>(), -rate, b[1].as<float>(), b[0].count<float>());
      });
}

graph_spec step_graph(const model_buffers& b, std::uint64_t width, std::uint64_t rank,
                      std::uint64_t ranks, const std::string& communicator) {
  const std::uint64_t bytes = width * sizeof(float);
  graph_spec g;
  op_spec grad;
  grad.description = "gradient of the shard";
  grad.body = work::named("dp_grad", rank, ranks);
  grad.uses = {buffer_use::read(b.weights, 0, bytes), buffer_use::read(b.targets, 0, bytes),
               buffer_use::write(b.scratch, 0, bytes), buffer_use::write(b.gradient, 0, bytes)};
  g.add(std::move(grad));
  op_collective sum;
  sum.communicator = communicator;
  sum.kind = gpu::collective_kind::all_reduce;
  sum.op = gpu::reduce_op::sum;
  sum.type = gpu::element_type::f32;
  sum.count = width;
  sum.send = b.gradient;
  sum.recv = b.gradient;
  g.add(op_spec::of(sum, "gradient all-reduce", op_priority::high));
  op_spec sgd;
  sgd.description = "optimizer";
  sgd.body = work::named("dp_sgd", learning_rate);
  sgd.uses = {buffer_use::read_write(b.weights, 0, bytes), buffer_use::read(b.gradient, 0, bytes)};
  g.add(std::move(sgd));
  return g;
}

std::vector<float> reference(std::uint64_t width, std::uint64_t steps) {
  std::vector<float> w(width, 0.0f);
  for (std::uint64_t s = 0; s < steps; ++s) {
    for (std::uint64_t j = 0; j < width; ++j) {
      const float d = w[j] + -1.0f * target(j);
      float g = 0.0f;
      for (std::uint64_t i = 0; i < samples; ++i) g = g + input(i) * input(i) * d;
      w[j] = w[j] + -learning_rate * g;
    }
  }
  return w;
}

std::vector<std::uint8_t> target_bytes(std::uint64_t width) {
  std::vector<float> t(width);
  for (std::uint64_t j = 0; j < width; ++j) t[j] = target(j);
  std::vector<std::uint8_t> out(width * sizeof(float));
  std::memcpy(out.data(), t.data(), out.size());
  return out;
}

}  // namespace cudactor::demo::data_parallel
