// demo/training_step.cpp
#include "training_step.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <string>
#include <utility>

#include "kernels.hpp"

namespace cudactor::demo {

namespace {

op_spec op(op_type type, op_priority priority, op_workload workload, std::string what,
           std::vector<buffer_use> uses, gpu::work_fn fn) {
  op_spec s;
  s.type = type;
  s.priority = priority;
  s.workload = workload;
  s.description = std::move(what);
  s.uses = std::move(uses);
  s.body = work::local(std::move(fn));
  return s;
}

// The scale replica r applies to its gradient: replicas see different data.
float replica_factor(std::size_t r) { return 0.001f * static_cast<float>(r + 1); }

}  // namespace

float batch_value(std::size_t i, std::uint64_t step) {
  return static_cast<float>((i * 7 + step * 13) % 101) / 101.0f;
}

void fill_batch(float* x, std::size_t width, std::uint64_t step) {
  for (std::size_t i = 0; i < width; ++i) x[i] = batch_value(i, step);
}

gpu::result<training_model> training_model::make(gpu::backend& device, model_shape shape) {
  if (shape.layers == 0 || shape.layers > 256 || shape.replicas == 0 ||
      shape.replicas > max_inputs || shape.width == 0 || shape.width > (std::size_t{1} << 26)) {
    return gpu::status{gpu::status_code::invalid_argument,
                       "model: 1-256 layers, 1-8 replicas, 1 to 2^26 floats per layer"};
  }
  training_model m{shape};
  const std::size_t bytes = shape.width * sizeof(float);
  auto managed = [&](std::vector<tracked>& into, std::size_t count) -> gpu::status {
    for (std::size_t i = 0; i < count; ++i) {
      auto b = device.allocate_managed(bytes);
      if (!b) return b.error();
      into.push_back(tracked{std::move(b.value()), buffer_id{}});
    }
    return {};
  };
  if (auto s = managed(m.weights_, shape.layers); !s) return s;
  if (auto s = managed(m.activations_, shape.layers); !s) return s;
  if (auto s = managed(m.gradients_, shape.layers * shape.replicas); !s) return s;
  if (auto s = managed(m.reduced_, shape.layers); !s) return s;
  if (auto s = managed(m.inputs_, 2); !s) return s;
  for (int i = 0; i < 2; ++i) {
    auto b = device.allocate_pinned(bytes);
    if (!b) return b.error();
    m.staged_.push_back(tracked{std::move(b.value()), buffer_id{}});
  }
  for (std::size_t l = 0; l < shape.layers; ++l) {
    std::fill_n(m.weights(l).data(), shape.width, 1.0f);
  }
  return m;
}

void training_model::adopt(const coordinator& c) {
  // Every request on its way before the first answer is awaited: one round trip in all.
  std::vector<std::future<buffer_handle>> asked;
  for_each_buffer([&](tracked& t) { asked.push_back(c.adopt(t.memory.data(), t.memory.size())); });
  std::size_t i = 0;
  for_each_buffer([&](tracked& t) { t.id = asked[i++].get().id; });
}

void training_model::release(const coordinator& c) {
  std::vector<std::future<op_id>> asked;
  for_each_buffer([&](tracked& t) {
    if (!t.id.empty()) asked.push_back(c.release(std::exchange(t.id, buffer_id{})));
  });
  std::vector<std::future<op_notice>> ends;
  for (auto& a : asked) ends.push_back(c.on_end(a.get()));
  for (auto& e : ends) {
    const op_notice n = e.get();
    if (n.state != op_state::completed) throw failure{n.cause};
  }
}

graph_spec training_model::prepare() {
  fill_batch(staged(0).data(), shape_.width, 0);
  graph_spec g;
  float* dst = input(0).data();
  const float* src = staged(0).data();
  const std::size_t bytes = shape_.width * sizeof(float);
  g.add(op(op_type::memory_transfer, op_priority::high, op_workload::memory, "copy batch 0",
           {buffer_use::read(staged(0).id), buffer_use::write(input(0).id)},
           [=](const gpu::launch_context& ctx) { return copy(ctx, dst, src, bytes); }));
  return g;
}

void training_model::fill_next(std::uint64_t step) {
  fill_batch(staged(step + 1).data(), shape_.width, step + 1);
}

graph_spec training_model::step_graph(std::uint64_t step, bool with_barrier) const {
  const std::size_t n = shape_.width;
  const std::size_t layers = shape_.layers;
  const std::size_t replicas = shape_.replicas;
  const float lr = shape_.learning_rate;
  graph_spec g;
  std::vector<std::uint32_t> last;  // what the barrier waits for
  // What layer l reads: this step's batch below the first layer, the activation below it.
  auto below = [&](std::size_t l) -> const tracked& {
    return l == 0 ? input(step) : activation(l - 1);
  };

  // The next step's batch, copied while this step computes. It overwrites the buffer the
  // step before this one read: the coordinator orders it after those reads.
  {
    const tracked& to = input(step + 1);
    const tracked& from = staged(step + 1);
    float* dst = to.data();
    const float* src = from.data();
    last.push_back(g.add(op(
        op_type::memory_transfer, op_priority::high, op_workload::memory, "copy next batch",
        {buffer_use::read(from.id), buffer_use::write(to.id)},
        [=](const gpu::launch_context& ctx) { return copy(ctx, dst, src, n * sizeof(float)); })));
  }
  // Forward: a[l] = w[l] * a[l-1], a[-1] being this step's batch.
  for (std::size_t l = 0; l < layers; ++l) {
    float* out = activation(l).data();
    const float* w = weights(l).data();
    const float* in = below(l).data();
    g.add(op(op_type::kernel, op_priority::normal, op_workload::compute,
             "forward " + std::to_string(l),
             {buffer_use::read(weights(l).id), buffer_use::read(below(l).id),
              buffer_use::write(activation(l).id)},
             [=](const gpu::launch_context& ctx) { return multiply(ctx, out, w, in, n); }));
  }
  // Backward, last layer first, per replica: grad[l][r] = a[l-1] * factor(r). Each reads
  // the activation below its layer, so it runs once the forward pass wrote it.
  for (std::size_t l = layers; l-- > 0;) {
    std::vector<buffer_use> reduce_uses;
    for (std::size_t r = 0; r < replicas; ++r) {
      float* out = gradient(l, r).data();
      const float* in = below(l).data();
      const float f = replica_factor(r);
      g.add(op(op_type::kernel, op_priority::normal, op_workload::compute,
               "backward " + std::to_string(l),
               {buffer_use::read(below(l).id), buffer_use::write(gradient(l, r).id)},
               [=](const gpu::launch_context& ctx) { return scale(ctx, out, in, f, n); }));
      reduce_uses.push_back(buffer_use::read(gradient(l, r).id));
    }
    // The all-reduce of this layer's gradients starts as soon as they exist, while the
    // backward pass goes on below it.
    std::vector<const float*> inputs(replicas);
    for (std::size_t r = 0; r < replicas; ++r) inputs[r] = gradient(l, r).data();
    float* mean = reduced(l).data();
    reduce_uses.push_back(buffer_use::write(reduced(l).id));
    g.add(op(op_type::all_reduce, op_priority::high, op_workload::mixed,
             "all-reduce " + std::to_string(l), std::move(reduce_uses),
             [=](const gpu::launch_context& ctx) {
               return mean_of(ctx, mean, inputs.data(), inputs.size(), n);
             }));
    // The update changes w[l]: the coordinator orders it after the forward pass that read
    // it, and after the all-reduce whose mean it reads.
    float* w = weights(l).data();
    last.push_back(
        g.add(op(op_type::kernel, op_priority::normal, op_workload::compute,
                 "optimizer " + std::to_string(l),
                 {buffer_use::read(reduced(l).id), buffer_use::read_write(weights(l).id)},
                 [=](const gpu::launch_context& ctx) { return axpy(ctx, w, -lr, mean, n); })));
  }
  // The barrier ends the step: a real barrier over every stream, crossed on the device, so
  // the next step's work, wherever it goes, runs after every stream got here, and no host
  // thread waits for it. It names the step's last operations (the copy and the updates;
  // the backward passes precede the all-reduces, so the updates cover them): a barrier uses
  // no buffer, its order is stated.
  if (!with_barrier) return g;
  op_spec barrier;
  barrier.type = op_type::barrier;
  barrier.priority = op_priority::critical;
  barrier.workload = op_workload::coordination;
  barrier.barrier.mode = barrier_mode::device;
  // The same name every step: the coordinator's report totals by name.
  barrier.description = "step barrier";
  g.add(std::move(barrier), std::move(last));
  return g;
}

double training_model::weight_sum() const {
  double sum = 0;
  for (std::size_t l = 0; l < shape_.layers; ++l) {
    for (std::size_t i = 0; i < shape_.width; ++i) sum += weights(l).data()[i];
  }
  return sum;
}

double training_model::max_difference(std::uint64_t steps, std::size_t samples) const {
  std::vector<std::size_t> at;
  const std::size_t n = shape_.width;
  const std::size_t count = std::min(samples == 0 ? std::size_t{1} : samples, n);
  for (std::size_t k = 0; k < count; ++k) at.push_back(k * n / count);
  at.back() = n - 1;  // the last weight too
  const auto expected = reference(shape_, steps, at);
  double worst = 0;
  for (std::size_t l = 0; l < shape_.layers; ++l) {
    for (std::size_t k = 0; k < at.size(); ++k) {
      const double got = weights(l).data()[at[k]];
      const double want = expected[l][k];
      // std::max would pass over a NaN: a weight that is not finite is infinitely wrong.
      if (!std::isfinite(got) || !std::isfinite(want)) return HUGE_VAL;
      worst = std::max(worst, std::fabs(got - want));
    }
  }
  return worst;
}

std::vector<std::vector<float>> reference(const model_shape& shape, std::uint64_t steps,
                                          const std::vector<std::size_t>& at) {
  const std::size_t n = at.size();
  std::vector<std::vector<float>> w(shape.layers, std::vector<float>(n, 1.0f));
  std::vector<std::vector<float>> a(shape.layers, std::vector<float>(n));
  std::vector<float> x(n), mean(n);
  for (std::uint64_t step = 0; step < steps; ++step) {
    for (std::size_t k = 0; k < n; ++k) x[k] = batch_value(at[k], step);
    for (std::size_t l = 0; l < shape.layers; ++l) {
      const std::vector<float>& in = l == 0 ? x : a[l - 1];
      for (std::size_t k = 0; k < n; ++k) a[l][k] = w[l][k] * in[k];
    }
    for (std::size_t l = shape.layers; l-- > 0;) {
      const std::vector<float>& in = l == 0 ? x : a[l - 1];
      std::fill(mean.begin(), mean.end(), 0.0f);
      for (std::size_t r = 0; r < shape.replicas; ++r) {
        const float f = replica_factor(r);
        for (std::size_t k = 0; k < n; ++k) mean[k] = mean[k] + in[k] * f;
      }
      const float c = static_cast<float>(shape.replicas);
      for (std::size_t k = 0; k < n; ++k) {
        const float m = mean[k] / c;
        const float ax = -shape.learning_rate * m;
        w[l][k] = w[l][k] + ax;
      }
    }
  }
  return w;
}

}  // namespace cudactor::demo
