#include "cudactor/actors/barrier_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cudactor/actors/detail/actor_metrics.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace {

using detail::now_ns;

std::string readable(caf::timespan t) {
  const auto ns = t.count();
  if (ns % 1000000000 == 0) return std::to_string(ns / 1000000000) + " s";
  if (ns % 1000000 == 0) return std::to_string(ns / 1000000) + " ms";
  if (ns % 1000 == 0) return std::to_string(ns / 1000) + " us";
  return std::to_string(ns) + " ns";
}

// One host-mode generation until it is answered.
struct open_generation {
  caf::typed_response_promise<barrier_crossing> promise;
  barrier_crossing crossing;
  caf::timespan limit{0};
  std::vector<std::optional<caf::error>> outcome;  // per member: none yet, empty = arrived
  std::vector<gpu::watch_id> watches;
  std::size_t outstanding = 0;
};

class barrier_state {
 public:
  static inline const char* name = "cudactor.barrier";

  void init(barrier_actor::pointer self, barrier_context context,
            std::vector<barrier_member> members, barrier_options options) {
    self_ = self;
    context_ = context;
    members_ = std::move(members);
    options_ = std::move(options);
    registry_ = detail::registry_or_own(context_.metrics);
    metrics_.emplace(*registry_, detail::gpu_label(*context_.device), options_.name);
  }

  barrier_state() = default;
  barrier_state(const barrier_state&) = delete;
  barrier_state& operator=(const barrier_state&) = delete;
  ~barrier_state() { shut_down(); }

  caf::result<barrier_crossing> synchronize(barrier_mode mode, caf::timespan limit) {
    if (closing_) return refuse(make_error(errc::shutting_down, label() + " is shutting down"));
    barrier_crossing crossing;
    crossing.generation = ++generations_;
    crossing.mode = mode;
    crossing.began_ns = now_ns();
    std::vector<std::shared_ptr<gpu::timeline>> lines;
    for (std::uint32_t i = 0; i < members_.size(); ++i) {
      auto line = context_.device->timeline_of(members_[i].stream);
      if (!line) return refuse(member_gone(i, line.error()));
      crossing.members.push_back({i, members_[i].name, (*line)->submitted(), 0});
      lines.push_back(std::move(*line));
    }
    return mode == barrier_mode::device ? on_device(std::move(crossing), lines)
                                        : on_host(std::move(crossing), lines, limit);
  }

  // The poller saw member `i` of generation `g` at the barrier, or gave up on it.
  void arrived(std::uint64_t g, std::uint32_t i, caf::error why, std::int64_t seen_ns) {
    auto found = open_.find(g);
    if (found == open_.end() || i >= members_.size() || found->second.outcome[i]) return;
    open_generation& gen = found->second;
    gen.outcome[i] = std::move(why);
    gen.crossing.members[i].arrived_ns = seen_ns;
    if (--gen.outstanding == 0) answer(found);
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

  void shut_down() {
    if (closing_ || self_ == nullptr) return;
    closing_ = true;
    for (auto& [g, gen] : open_) {
      for (const auto& id : gen.watches) context_.poller->cancel(id);
      gen.promise.deliver(
          refuse(make_error(errc::shutting_down, label() + " generation " + std::to_string(g) +
                                                     ": the barrier shut down first")));
    }
    open_.clear();
  }

  [[nodiscard]] const barrier_options& options() const noexcept { return options_; }

 private:
  caf::result<barrier_crossing> on_device(
      barrier_crossing crossing, const std::vector<std::shared_ptr<gpu::timeline>>& lines) {
    caf::error known_failure;
    for (std::uint32_t i = 0; i < members_.size(); ++i) {
      const timeline_point p = crossing.members[i].point;
      if (p == 0) continue;  // nothing handed to the device yet: nothing to wait for
      const gpu::query_result reached = lines[i]->query(p);
      if (reached.ready()) continue;  // already passed, cleanly
      if (reached.failed() && !known_failure) {
        known_failure = reached_failed(crossing.generation, i, reached.error);
      }
      for (std::uint32_t j = 0; j < members_.size(); ++j) {
        if (j == i) continue;
        auto placed = context_.device->wait_point(members_[j].stream, members_[i].stream, p);
        if (!placed.ok()) return refuse(member_gone(j, placed));
        ++crossing.device_waits;
      }
    }
    device_waits_ += crossing.device_waits;
    crossing.duration = caf::timespan{now_ns() - crossing.began_ns};
    // The waits are placed either way: what follows is ordered after the barrier, and each
    // stream's next work reports the failure too.
    if (known_failure) return refuse(std::move(known_failure));
    ++crossed_;
    metrics_->crossed(now_ns() - crossing.began_ns);
    return crossing;
  }

  caf::result<barrier_crossing> on_host(barrier_crossing crossing,
                                        const std::vector<std::shared_ptr<gpu::timeline>>& lines,
                                        caf::timespan limit) {
    const std::uint64_t g = crossing.generation;
    open_generation gen;
    gen.limit = limit;
    gen.outcome.resize(members_.size());
    gen.crossing = std::move(crossing);
    gpu::watch_deadline deadline;
    if (limit.count() > 0) deadline = gpu::watch_clock::now() + limit;
    auto weak = caf::actor_cast<caf::actor_addr>(self_);
    auto [at, added] = open_.emplace(g, std::move(gen));
    open_generation& open = at->second;
    for (std::uint32_t i = 0; i < members_.size(); ++i) {
      const timeline_point p = open.crossing.members[i].point;
      // Already there: no watch (a failed point is the poller's to report, with the rest).
      if (p == 0 || lines[i]->query(p).ready()) {
        open.outcome[i] = caf::error{};
        open.crossing.members[i].arrived_ns = now_ns();
        continue;
      }
      auto watched = context_.poller->watch(
          members_[i].stream, p, deadline, [weak, g, i](const gpu::watch_result& result) {
            if (auto strong = caf::actor_cast<barrier_actor>(weak)) {
              const auto seen = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    result.detected.time_since_epoch())
                                    .count();
              caf::anon_send(strong, progress_atom::value, g, i,
                             result.completed() ? caf::error{} : to_error(result.error), seen);
            }
          });
      if (!watched) {
        open.outcome[i] = member_gone(i, watched.error());
        continue;
      }
      open.watches.push_back(*watched);
      ++open.outstanding;
    }
    auto promise = self_->make_response_promise<barrier_crossing>();
    open.promise = promise;
    if (open.outstanding == 0) answer(at);
    return promise;
  }

  void answer(std::map<std::uint64_t, open_generation>::iterator at) {
    open_generation& gen = at->second;
    const std::uint64_t g = at->first;
    std::int64_t last = gen.crossing.began_ns;
    std::string late;
    std::size_t late_count = 0;
    caf::error lost, failure;
    for (std::uint32_t i = 0; i < members_.size(); ++i) {
      const caf::error& why = *gen.outcome[i];
      if (!why) {
        last = std::max(last, gen.crossing.members[i].arrived_ns);
        continue;
      }
      if (why.code() == static_cast<std::uint8_t>(errc::timeout)) {
        ++late_count;
        late += (late.empty() ? "'" : ", '") + members_[i].name + "' (passed point " +
                std::to_string(passed(i)) + ", the barrier is at " +
                std::to_string(gen.crossing.members[i].point) + ")";
      } else if (why.code() == static_cast<std::uint8_t>(errc::device_lost)) {
        if (!lost) lost = why;
      } else if (!failure) {
        failure = why.code() == static_cast<std::uint8_t>(errc::invalid_state)
                      ? why
                      : reached_failed(g, i, why);
      }
    }
    if (lost) {
      deliver_error(
          gen, make_error(errc::device_lost,
                          label() + " generation " + std::to_string(g) + ": " + to_string(lost)));
    } else if (late_count > 0) {
      deliver_error(gen, make_error(errc::timeout, label() + " generation " + std::to_string(g) +
                                                       ": " + std::to_string(late_count) + " of " +
                                                       std::to_string(members_.size()) +
                                                       " streams did not arrive within " +
                                                       readable(gen.limit) + ": " + late));
    } else if (failure) {
      deliver_error(gen, std::move(failure));
    } else {
      gen.crossing.duration = caf::timespan{last - gen.crossing.began_ns};
      ++crossed_;
      metrics_->crossed(now_ns() - gen.crossing.began_ns);
      gen.promise.deliver(std::move(gen.crossing));
    }
    open_.erase(at);
  }

  void deliver_error(open_generation& gen, caf::error why) {
    gen.promise.deliver(refuse(std::move(why)));
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

  timeline_point passed(std::uint32_t i) const {
    auto line = context_.device->timeline_of(members_[i].stream);
    return line ? (*line)->completed() : 0;
  }

  caf::error member_gone(std::uint32_t i, const gpu::status& why) const {
    if (why.code() == gpu::errc::device_lost) return to_error(why);
    return make_error(errc::invalid_state, label() + ": stream '" + members_[i].name +
                                               "' cannot take part: " + why.to_string());
  }

  caf::error reached_failed(std::uint64_t g, std::uint32_t i, const gpu::status& why) const {
    return reached_failed(g, i, to_error(why));
  }

  caf::error reached_failed(std::uint64_t g, std::uint32_t i, const caf::error& why) const {
    return make_error(errc::dependency_failed,
                      label() + " generation " + std::to_string(g) + ": stream '" +
                          members_[i].name +
                          "' reached the barrier with failed work: " + to_string(why));
  }

  std::string label() const { return "barrier '" + options_.name + "'"; }

  barrier_actor::pointer self_ = nullptr;
  barrier_context context_;
  std::vector<barrier_member> members_;
  barrier_options options_;
  std::map<std::uint64_t, open_generation> open_;
  std::shared_ptr<metrics::registry> registry_;  // keeps metrics_' cells alive
  std::optional<detail::barrier_metrics> metrics_;
  std::uint64_t generations_ = 0, crossed_ = 0, timed_out_ = 0, failed_ = 0, device_waits_ = 0;
  bool closing_ = false;
};

barrier_actor::behavior_type barrier_behavior(barrier_actor::stateful_pointer<barrier_state> self,
                                              barrier_context context,
                                              std::vector<barrier_member> members,
                                              barrier_options options) {
  self->state.init(self, context, std::move(members), std::move(options));
  auto& st = self->state;
  return {
      [&st](synchronize_atom) { return st.synchronize(st.options().mode, st.options().timeout); },
      [&st](synchronize_atom, barrier_mode mode) {
        return st.synchronize(mode, st.options().timeout);
      },
      [&st](synchronize_atom, barrier_mode mode, caf::timespan limit) {
        return st.synchronize(mode, limit);
      },
      [&st](status_atom) { return st.status(); },
      [&st](shutdown_atom) { st.shut_down(); },
      [&st](progress_atom, std::uint64_t g, std::uint32_t i, caf::error& why, std::int64_t seen) {
        st.arrived(g, i, std::move(why), seen);
      },
  };
}

}  // namespace

gpu::result<barrier_actor> spawn_barrier(caf::actor_system& system, const barrier_context& context,
                                         std::vector<barrier_member> members,
                                         barrier_options options) {
  if (context.device == nullptr || context.poller == nullptr) {
    return gpu::status{gpu::errc::invalid_argument, "barrier: incomplete context"};
  }
  if (members.empty()) {
    return gpu::status{gpu::errc::invalid_argument,
                       "barrier '" + options.name + "': needs at least one stream"};
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i].stream.empty()) {
      return gpu::status{gpu::errc::invalid_argument, "barrier '" + options.name + "': member " +
                                                          std::to_string(i) + " names no stream"};
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (members[j].stream.id() == members[i].stream.id()) {
        return gpu::status{gpu::errc::invalid_argument, "barrier '" + options.name + "': stream '" +
                                                            members[i].name + "' is named twice"};
      }
    }
  }
  return system.spawn(barrier_behavior, context, std::move(members), std::move(options));
}

}  // namespace cudactor
