#include "cudactor/actors/barrier_actor.hpp"

#include <caf/all.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "cudactor/actors/detail/actor_metrics.hpp"
#include "cudactor/actors/detail/wait_keys.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace {

class barrier_state {
 public:
  static inline const char* name = "cudactor.barrier";

  void init(barrier_actor::pointer self, barrier_context context,
            std::vector<barrier_member> members, barrier_options options) {
    self_ = self;
    context_ = std::move(context);
    members_ = std::move(members);
    options_ = std::move(options);
    for (const auto& m : members_) streams_.push_back(m.id);
    registry_ = detail::registry_or_own(context_.metrics);
    metrics_.emplace(*registry_, context_.gpu, options_.name);
  }

  // The generation is the coordinator's to answer: the request is handed on (delegated) with
  // the barrier's words, and the coordinator answers the caller directly, telling this actor
  // the outcome first (outcome()). `key`: the caller's withdraw key (0: none), kept here so
  // that a key names a generation of this barrier only.
  caf::result<barrier_crossing> synchronize(barrier_mode mode, caf::timespan limit,
                                            std::uint64_t key = 0) {
    if (closing_) return refuse(make_error(errc::shutting_down, label() + " is shutting down"));
    if (auto bad = detail::check_limit(wait_limit{limit, key}, label() + " synchronize")) {
      return bad;
    }
    const std::uint64_t g = ++generations_;
    std::uint64_t wait_id = 0;
    if (key != 0) {
      const auto& sender = self_->current_sender();
      wait_id = waits_.add(sender ? sender->address() : caf::actor_addr{}, key, g);
    }
    open_.emplace(g, wait_id);
    op_spec spec;
    spec.type = op_type::barrier;
    spec.description = label() + " generation " + std::to_string(g);
    spec.barrier.streams = streams_;
    spec.barrier.mode = mode;
    return self_->delegate(context_.coordinator, synchronize_atom::value, std::move(spec),
                           wait_limit{limit, 0},
                           barrier_generation{options_.name, g, barrier_actor{self_}});
  }

  // The caller's generation under `key`: the coordinator answers it cancelled and ends it
  // (it withdraws it from this actor, under 2g); true once it has.
  caf::result<bool> withdraw(std::uint64_t key) {
    if (key == 0) return false;
    const auto sender = self_->current_sender();
    const auto w = waits_.take(sender ? sender->address() : caf::actor_addr{}, key);
    if (w.id == 0) return false;
    auto promise = self_->make_response_promise<bool>();
    self_->request(context_.coordinator, caf::infinite, withdraw_atom::value, 2 * w.where)
        .then([promise](bool done) mutable { promise.deliver(done); },
              [promise](caf::error&) mutable { promise.deliver(false); });
    return promise;
  }

  // The coordinator answered generation `o.generation`.
  void outcome(const barrier_outcome& o) {
    auto found = open_.find(o.generation);
    if (found == open_.end()) return;
    waits_.forget(found->second);
    open_.erase(found);
    if (!o.error) {
      ++crossed_;
      device_waits_ += o.device_waits;
      metrics_->crossed(o.wait_ns);
    } else if (!o.withdrawn) {
      (void)refuse(o.error);
    }
  }

  // The coordinator is gone: nothing open will be answered by it (its callers were told by
  // CAF that it is down), and nothing more can be crossed.
  void coordinator_down() {
    closing_ = true;
    for (const auto& [g, wait] : open_) {
      (void)refuse(make_error(errc::shutting_down, label() + " generation " + std::to_string(g) +
                                                       ": the coordinator is gone"));
    }
    open_.clear();
    waits_.clear();
  }

  barrier_status status() const {
    barrier_status out;
    out.name = options_.name;
    for (const auto& m : members_) out.members.push_back(m.name);
    out.mode = options_.mode;
    out.timeout = options_.timeout;
    out.generations = generations_;
    out.crossed = crossed_;
    out.timed_out = timed_out_;
    out.failed = failed_;
    out.pending = open_.size();
    out.device_waits = device_waits_;
    return out;
  }

  // Refuses new generations; the coordinator answers the open ones shutting_down (each
  // withdrawn under 2g + 1) and tells their outcomes.
  void shut_down() {
    if (closing_ || self_ == nullptr) return;
    closing_ = true;
    for (const auto& [g, wait] : open_) {
      self_->request(context_.coordinator, caf::infinite, withdraw_atom::value, 2 * g + 1)
          .then([](bool) {}, [](caf::error&) {});
    }
  }

  [[nodiscard]] const barrier_options& options() const noexcept { return options_; }
  [[nodiscard]] const coordinator_actor& coordinator() const noexcept {
    return context_.coordinator;
  }

 private:
  // Counts an answer that is not a crossing.
  caf::error refuse(caf::error why) {
    if (why == errc::timeout) {
      ++timed_out_;
      metrics_->timed_out();
    } else {
      ++failed_;
      metrics_->failed();
    }
    return why;
  }

  std::string label() const { return "barrier '" + options_.name + "'"; }

  barrier_actor::pointer self_ = nullptr;
  barrier_context context_;
  std::vector<barrier_member> members_;
  std::vector<stream_id> streams_;
  barrier_options options_;
  // Generations handed on and not answered yet, each with its caller's withdraw key's id.
  std::map<std::uint64_t, std::uint64_t> open_;
  detail::wait_keys waits_;                      // callers' withdraw keys, by generation
  std::shared_ptr<metrics::registry> registry_;  // keeps metrics_' cells alive
  std::optional<detail::barrier_metrics> metrics_;
  std::uint64_t generations_ = 0, crossed_ = 0, timed_out_ = 0, failed_ = 0, device_waits_ = 0;
  bool closing_ = false;
};

barrier_actor::behavior_type barrier_behavior(barrier_actor::stateful_pointer<barrier_state> self,
                                              barrier_context context,
                                              std::vector<barrier_member> members,
                                              barrier_options options) {
  self->state.init(self, std::move(context), std::move(members), std::move(options));
  auto& st = self->state;
  self->monitor(self->state.coordinator());
  self->set_down_handler([&st](caf::down_msg&) { st.coordinator_down(); });
  return {
      [&st](synchronize_atom) { return st.synchronize(st.options().mode, st.options().timeout); },
      [&st](synchronize_atom, barrier_mode mode) {
        return st.synchronize(mode, st.options().timeout);
      },
      [&st](synchronize_atom, barrier_mode mode, caf::timespan limit) {
        return st.synchronize(mode, limit);
      },
      [&st](synchronize_atom, barrier_mode mode, const wait_limit& limit) {
        return st.synchronize(mode, limit.limit, limit.key);
      },
      [&st](withdraw_atom, std::uint64_t key) { return st.withdraw(key); },
      [&st](status_atom) { return st.status(); },
      [&st](shutdown_atom) { st.shut_down(); },
      [&st](const barrier_outcome& o) { st.outcome(o); },
  };
}

}  // namespace

gpu::result<barrier_actor> spawn_barrier(caf::actor_system& system, const barrier_context& context,
                                         std::vector<barrier_member> members,
                                         barrier_options options) {
  if (!context.coordinator) {
    return gpu::status{gpu::status_code::invalid_argument, "barrier: no coordinator"};
  }
  if (members.empty()) {
    return gpu::status{gpu::status_code::invalid_argument,
                       "barrier '" + options.name + "': needs at least one stream"};
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (members[j].id == members[i].id) {
        return gpu::status{
            gpu::status_code::invalid_argument,
            "barrier '" + options.name + "': stream '" + members[i].name + "' is named twice"};
      }
    }
  }
  return system.spawn(barrier_behavior, context, std::move(members), std::move(options));
}

}  // namespace cudactor
