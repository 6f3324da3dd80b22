#include "cudactor/actors/barrier_actor.hpp"

#include <caf/all.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "cudactor/actors/detail/actor_metrics.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/actors/detail/wait_keys.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace {

using detail::now_ns;

// A generation asked of the coordinator and not answered yet.
struct open_generation {
  caf::typed_response_promise<barrier_crossing> promise;
  std::int64_t began_ns = 0;
  std::uint64_t wait_id = 0;  // its withdraw key's (wait_keys), or 0
};

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

  barrier_state() = default;
  barrier_state(const barrier_state&) = delete;
  barrier_state& operator=(const barrier_state&) = delete;
  ~barrier_state() { shut_down(false); }

  // `key`: the sender's withdraw key (0: none).
  caf::result<barrier_crossing> synchronize(barrier_mode mode, caf::timespan limit,
                                            std::uint64_t key = 0) {
    if (closing_) return refuse(make_error(errc::shutting_down, label() + " is shutting down"));
    if (auto bad = detail::check_limit(wait_limit{limit, key}, label() + " synchronize")) {
      return bad;
    }
    const std::uint64_t g = ++generations_;
    open_generation& gen = open_[g];
    if (key != 0) {  // before the promise takes the sender over
      const auto& sender = self_->current_sender();
      gen.wait_id = waits_.add(sender ? sender->address() : caf::actor_addr{}, key, g);
    }
    gen.promise = self_->make_response_promise<barrier_crossing>();
    gen.began_ns = now_ns();
    op_spec spec;
    spec.type = op_type::barrier;
    spec.description = label() + " generation " + std::to_string(g);
    spec.barrier.streams = streams_;
    spec.barrier.mode = mode;
    // The coordinator keeps the limit; the generation is the key this actor withdraws by.
    self_
        ->request(context_.coordinator, caf::infinite, synchronize_atom::value, std::move(spec),
                  wait_limit{limit, g})
        .then([this, g](barrier_crossing& crossing) { crossed(g, std::move(crossing)); },
              [this, g](caf::error& why) { refused(g, why); });
    return gen.promise;
  }

  // The sender's generation under `key`, answered cancelled; the coordinator ends it.
  bool withdraw(std::uint64_t key) {
    if (key == 0) return false;
    const auto sender = self_->current_sender();
    const auto w = waits_.take(sender ? sender->address() : caf::actor_addr{}, key);
    if (w.id == 0) return false;
    auto found = open_.find(w.where);
    if (found == open_.end()) return false;
    found->second.promise.deliver(make_error(
        errc::cancelled,
        label() + " generation " + std::to_string(w.where) + ": withdrawn by its caller"));
    open_.erase(found);
    withdraw_from_coordinator(w.where);
    return true;
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

  // Answers every open generation shutting_down; `withdraw`: and ends them at the
  // coordinator (not from the destructor, which may no longer send).
  void shut_down(bool withdraw = true) {
    if (closing_ || self_ == nullptr) return;
    closing_ = true;
    for (auto& [g, gen] : open_) {
      gen.promise.deliver(
          refuse(make_error(errc::shutting_down, label() + " generation " + std::to_string(g) +
                                                     ": the barrier shut down first")));
      if (withdraw) withdraw_from_coordinator(g);
    }
    open_.clear();
    waits_.clear();
  }

  [[nodiscard]] const barrier_options& options() const noexcept { return options_; }

 private:
  void crossed(std::uint64_t g, barrier_crossing crossing) {
    auto found = open_.find(g);
    if (found == open_.end()) return;  // withdrawn or shut down: answered already
    crossing.generation = g;
    ++crossed_;
    device_waits_ += crossing.device_waits;
    metrics_->crossed(now_ns() - found->second.began_ns);
    waits_.forget(found->second.wait_id);
    found->second.promise.deliver(std::move(crossing));
    open_.erase(found);
  }

  void refused(std::uint64_t g, const caf::error& why) {
    auto found = open_.find(g);
    if (found == open_.end()) return;
    waits_.forget(found->second.wait_id);
    found->second.promise.deliver(
        refuse(make_error(static_cast<errc>(why.code()),
                          label() + " generation " + std::to_string(g) + ": " + describe(why))));
    open_.erase(found);
  }

  void withdraw_from_coordinator(std::uint64_t g) {
    self_->request(context_.coordinator, caf::infinite, withdraw_atom::value, g)
        .then([](bool) {}, [](caf::error&) {});
  }

  // Counts an answer that is not a crossing.
  caf::error refuse(caf::error why) {
    if (why.code() == static_cast<std::uint8_t>(errc::timeout)) {
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
  std::map<std::uint64_t, open_generation> open_;
  detail::wait_keys waits_;  // generations made with a withdraw key, until answered
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
  };
}

}  // namespace

gpu::result<barrier_actor> spawn_barrier(caf::actor_system& system, const barrier_context& context,
                                         std::vector<barrier_member> members,
                                         barrier_options options) {
  if (!context.coordinator) {
    return gpu::status{gpu::errc::invalid_argument, "barrier: no coordinator"};
  }
  if (members.empty()) {
    return gpu::status{gpu::errc::invalid_argument,
                       "barrier '" + options.name + "': needs at least one stream"};
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (members[j].id == members[i].id) {
        return gpu::status{gpu::errc::invalid_argument, "barrier '" + options.name + "': stream '" +
                                                            members[i].name + "' is named twice"};
      }
    }
  }
  return system.spawn(barrier_behavior, context, std::move(members), std::move(options));
}

}  // namespace cudactor
