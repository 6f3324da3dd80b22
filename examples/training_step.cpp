// examples/training_step.cpp
//
// A training loop's control plane in its smallest form: each step is one graph (the next
// batch copied in, forward and backward per layer, a gradient all-reduce per layer, the
// optimizer, a barrier; demo/training_step.hpp builds it) handed to the coordinator through
// cudactor::coordinator. The loop waits on a future per step, as a training script would,
// and never touches a stream or states a dependency: the model's buffers are adopted by the
// coordinator, every operation declares what it reads and writes, and the coordinator infers
// the order, spreads the operations over its priority streams and orders them on the device.
// The graphs of steps two apart are the same (the batches alternate between two buffers):
// from the third step on, each is recorded once and replayed, one operation per step
// (docs/replay.md; --no-replay submits every step as a graph). At the end the buffers are
// released and the weights checked against the same arithmetic done on the host.
// cudactor-demo is this loop with a progress line, metrics and a summary table around it.
//
//   build/examples/training_step                 # 20 steps, 4 layers, 2 replicas
//   build/examples/training_step --steps=100 --cudactor.backend=host
#include <caf/all.hpp>

#include <array>
#include <cstdio>
#include <optional>

#include "cudactor/actors/runtime.hpp"
#include "cudactor/facade/coordinator.hpp"
#include "training_step.hpp"

using namespace cudactor;

class step_config : public runtime_config {
 public:
  step_config() {
    opt_group{custom_options_, "global"}
        .add(steps, "steps", "training steps")
        .add(no_replay, "no-replay", "submit every step as a graph");
  }
  std::size_t steps = 20;
  bool no_replay = false;
};

int main(int argc, char** argv) {
  step_config config;
  if (auto err = config.parse(argc, argv)) {
    std::fprintf(stderr, "training_step: %s\n", cudactor::describe(err).c_str());
    return 2;
  }
  if (config.cli_helptext_printed) return 0;
  auto started = runtime::start(config);
  if (!started) {
    std::fprintf(stderr, "training_step: %s\n", started.error().to_string().c_str());
    return 1;
  }
  runtime& rt = *started.value();

  demo::model_shape shape;
  shape.layers = 4;
  shape.replicas = 2;
  shape.width = 4096;
  auto made = demo::training_model::make(rt.device(), shape);
  if (!made) {
    std::fprintf(stderr, "training_step: %s\n", made.error().to_string().c_str());
    return 1;
  }
  // The model's memory belongs to the backend: it goes before the runtime shuts down.
  std::optional<demo::training_model> model{std::move(made.value())};
  std::printf("training_step: %zu steps of %zu operations on %s\n", config.steps,
              model->ops_per_step(), rt.backend_reason().c_str());

  int rc = 0;
  std::size_t steps = 0;
  std::size_t inferred = 0;  // dependencies the coordinator inferred, over every step
  std::size_t replayed = 0;
  try {
    coordinator control{rt};
    model->adopt(control);
    bool ok = all_completed(control.run(model->prepare()).get());
    std::array<step_handle, 2> recorded{};  // by batch buffer (step % 2)
    for (; ok && steps < config.steps; ++steps) {
      model->fill_next(steps);  // the batch the step copies in for the next one
      if (!config.no_replay && steps >= 2) {
        if (recorded[0].empty()) {
          for (std::size_t p = 0; p < 2; ++p) {
            recorded[(steps + p) % 2] =
                control.record(step_spec{"training step", model->step_graph(steps + p, false)})
                    .get();
          }
        }
        const step_outcome out = control.replay(recorded[steps % 2]).get();
        ok = out.state == op_state::completed;
        if (!ok) std::printf("step %zu failed: %s\n", steps, cudactor::describe(out.cause).c_str());
        ++replayed;
        continue;
      }
      std::vector<op_notice> ends = control.run(model->step_graph(steps)).get();
      ok = all_completed(ends);
      if (!ok) std::printf("step %zu failed\n", steps);
      for (const op_notice& e : ends) inferred += e.inferred.size();
    }
    for (const step_handle& h : recorded) {
      if (!h.empty()) (void)control.release(h).get();
    }
    model->release(control);
    if (!ok) rc = 1;
  } catch (const failure& f) {
    std::fprintf(stderr, "training_step: %s\n", f.what());
    rc = 1;
  }
  std::printf("dependencies inferred from declared buffer uses: %zu\n", inferred);
  std::printf("steps replayed: %zu\n", replayed);
  if (rc == 0) {
    const double diff = model->max_difference(steps);
    std::printf("after %zu steps: weight sum %.6f, largest difference from the host %g\n", steps,
                model->weight_sum(), diff);
    if (diff != 0) rc = 1;
  }
  model.reset();
  runtime::release_calling_thread();
  rt.shutdown();
  return rc;
}
