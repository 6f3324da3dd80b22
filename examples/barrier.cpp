// examples/barrier.cpp
//
// Rounds of work on several streams where each round reads what every stream wrote in the
// round before: a barrier over the streams separates the rounds. The work is driven by an
// ordinary CAF actor that never blocks: per round it submits one kernel to each stream actor,
// and once every stream has accepted its kernel it asks the barrier actor to synchronize.
// The barrier answers when the completion poller has seen every stream get there; the actor
// then starts the next round. Nothing waits on a stream.
//
// Round k on stream s: next[s] = mean(cur[s-1], cur[s], cur[s+1]) (neighbours wrap around),
// then cur and next swap. The values after the last round are checked against the same
// arithmetic done here on the host, bit for bit, on either backend.
//
//   build/examples/barrier --cudactor.streams=4 --rounds=50
#include <caf/all.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cudactor/actors/runtime.hpp"
#include "kernels.hpp"

using namespace cudactor;

namespace {

using run_atom = caf::atom_constant<caf::atom("run")>;

class barrier_config : public runtime_config {
 public:
  barrier_config() {
    opt_group{custom_options_, "global"}
        .add(rounds, "rounds", "rounds separated by a barrier")
        .add(width, "width", "floats per stream");
  }
  std::size_t rounds = 20;
  std::size_t width = 65536;
};

float initial(std::size_t s, std::size_t i) { return static_cast<float>((s + 1) * (i % 97)); }

// Each stream's two buffers; `current` says which holds the latest round's values.
struct buffers {
  std::vector<gpu::buffer> a, b;
  bool current_is_a = true;
  float* cur(std::size_t s) const { return (current_is_a ? a : b)[s].as<float>(); }
  float* next(std::size_t s) const { return (current_is_a ? b : a)[s].as<float>(); }
};

struct round_state {
  std::vector<stream_actor> streams;
  barrier_actor barrier;
  buffers* memory = nullptr;
  std::size_t width = 0;
  std::size_t rounds = 0;
  std::size_t round = 0;
  std::size_t accepted = 0;  // kernels of this round the streams have taken
  caf::timespan waited{0};   // summed over the crossings
  caf::response_promise done;
};

void start_round(caf::event_based_actor* self, std::shared_ptr<round_state> st);

void cross(caf::event_based_actor* self, std::shared_ptr<round_state> st) {
  self->request(st->barrier, std::chrono::seconds{30}, synchronize_atom::value)
      .then(
          [self, st](const barrier_crossing& crossing) {
            st->waited += crossing.duration;
            st->memory->current_is_a = !st->memory->current_is_a;
            if (++st->round == st->rounds) {
              st->done.deliver(st->waited);
            } else {
              start_round(self, st);
            }
          },
          [st](caf::error& err) { st->done.deliver(std::move(err)); });
}

void start_round(caf::event_based_actor* self, std::shared_ptr<round_state> st) {
  st->accepted = 0;
  const std::size_t count = st->streams.size();
  for (std::size_t s = 0; s < count; ++s) {
    const float* left = st->memory->cur((s + count - 1) % count);
    const float* mine = st->memory->cur(s);
    const float* right = st->memory->cur((s + 1) % count);
    float* out = st->memory->next(s);
    const std::size_t n = st->width;
    auto kernel = work::local([=](const gpu::launch_context& ctx) {
      const float* inputs[] = {left, mine, right};
      return demo::mean_of(ctx, out, inputs, 3, n);
    });
    // The barrier marks where each stream is when it gets the synchronize: ask only once
    // every stream has taken its kernel, or the barrier could pass before the work.
    self->request(st->streams[s], std::chrono::seconds{30}, submit_atom::value, std::move(kernel))
        .then(
            [self, st](const ticket&) {
              if (++st->accepted == st->streams.size()) cross(self, st);
            },
            [st](caf::error& err) { st->done.deliver(std::move(err)); });
  }
}

caf::behavior rounds_actor(caf::event_based_actor* self, std::shared_ptr<round_state> st) {
  return {
      [self, st](run_atom) {
        st->done = self->make_response_promise();
        start_round(self, st);
        return st->done;
      },
  };
}

}  // namespace

int main(int argc, char** argv) {
  barrier_config config;
  // Four streams unless the command line says otherwise (CAF takes the last value given).
  std::vector<std::string> args{"--cudactor.streams=4"};
  args.insert(args.end(), argv + 1, argv + argc);
  if (auto err = config.parse(args)) {
    std::fprintf(stderr, "barrier: %s\n", cudactor::describe(err).c_str());
    return 2;
  }
  if (config.cli_helptext_printed) return 0;
  auto started = runtime::start(config);
  if (!started) {
    std::fprintf(stderr, "barrier: %s\n", started.error().to_string().c_str());
    return 1;
  }
  runtime& rt = *started.value();
  const std::size_t count = rt.streams().size();
  const std::size_t n = config.width;

  std::vector<std::size_t> members;
  for (std::size_t s = 0; s < count; ++s) members.push_back(s);
  auto barrier = rt.spawn_barrier(members);
  if (!barrier) {
    std::fprintf(stderr, "barrier: %s\n", barrier.error().to_string().c_str());
    return 1;
  }

  // Managed memory: the streams compute on it, the host fills it and checks it.
  auto memory = std::make_unique<buffers>();
  for (std::size_t s = 0; s < count; ++s) {
    auto a = rt.device().allocate_managed(n * sizeof(float));
    auto b = rt.device().allocate_managed(n * sizeof(float));
    if (!a || !b) {
      std::fprintf(stderr, "barrier: out of memory\n");
      memory.reset();
      rt.shutdown();
      return 1;
    }
    memory->a.push_back(std::move(a.value()));
    memory->b.push_back(std::move(b.value()));
    for (std::size_t i = 0; i < n; ++i) memory->cur(s)[i] = initial(s, i);
  }

  auto st = std::make_shared<round_state>();
  st->streams = rt.streams();
  st->barrier = *barrier;
  st->memory = memory.get();
  st->width = n;
  st->rounds = config.rounds;
  std::printf("barrier: %zu rounds over %zu streams, %zu floats each\n", config.rounds, count, n);

  int rc = 0;
  {
    caf::scoped_actor self{rt.system()};
    auto worker = self->spawn(rounds_actor, st);
    self->request(worker, caf::infinite, run_atom::value)
        .receive(
            [&](caf::timespan waited) {
              std::printf("%zu barriers crossed, mean wait %.1f us\n", config.rounds,
                          config.rounds == 0 ? 0.0
                                             : static_cast<double>(waited.count()) / 1e3 /
                                                   static_cast<double>(config.rounds));
            },
            [&](caf::error& err) {
              std::printf("barrier: failed: %s\n", rt.system().render(err).c_str());
              rc = 1;
            });
    self->send_exit(worker, caf::exit_reason::user_shutdown);
  }

  if (rc == 0) {
    // The same rounds on the host, in the kernel's order of arithmetic.
    std::vector<std::vector<float>> cur(count, std::vector<float>(n)), next = cur;
    for (std::size_t s = 0; s < count; ++s) {
      for (std::size_t i = 0; i < n; ++i) cur[s][i] = initial(s, i);
    }
    for (std::size_t r = 0; r < config.rounds; ++r) {
      for (std::size_t s = 0; s < count; ++s) {
        const auto& l = cur[(s + count - 1) % count];
        const auto& m = cur[s];
        const auto& h = cur[(s + 1) % count];
        for (std::size_t i = 0; i < n; ++i) {
          float sum = 0.0f;
          sum = sum + l[i];
          sum = sum + m[i];
          sum = sum + h[i];
          next[s][i] = sum / 3.0f;
        }
      }
      std::swap(cur, next);
    }
    std::size_t wrong = 0;
    double sum = 0;
    for (std::size_t s = 0; s < count; ++s) {
      for (std::size_t i = 0; i < n; ++i) {
        if (memory->cur(s)[i] != cur[s][i]) ++wrong;
        sum += memory->cur(s)[i];
      }
    }
    std::printf("result: sum %.3f; %s\n", sum,
                wrong == 0
                    ? "every value equals the host reference"
                    : (std::to_string(wrong) + " values differ from the host reference").c_str());
    if (wrong != 0) rc = 1;
  }
  st.reset();
  memory.reset();
  runtime::release_calling_thread();
  rt.shutdown();
  return rc;
}
