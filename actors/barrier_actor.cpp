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
#include "cudactor/actors/detail/wait_keys.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace {

using detail::now_ns;
using detail::readable;

// One host-mode generation until it is answered.
struct open_generation {
  caf::typed_response_promise<barrier_crossing> promise;
  barrier_crossing crossing;
  caf::timespan limit{0};
  std::vector<std::optional<caf::error>> outcome;  // per member: none yet, empty = arrived
  std::vector<gpu::watch_id> watches;
  std::size_t outstanding = 0;
  std::vector<timeline_point> work;  // per member: the newest work before its mark
  std::uint64_t wait_id = 0;         // its withdraw key's (wait_keys), or 0
};

// A generation whose marks are on their way: each member stream actor puts a point on its
// timeline after everything it accepted before (held back or not) and answers once that point
// is signalled.
struct marking {
  caf::typed_response_promise<barrier_crossing> promise;
  barrier_crossing crossing;
  std::vector<timeline_point> work;  // per member: the newest work before its mark
  caf::timespan limit{0};
  std::size_t left = 0;
  caf::error failed;
  std::uint64_t wait_id = 0;  // its withdraw key's (wait_keys), or 0
  bool withdrawn = false;     // answered cancelled: the marks still count, nothing else
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

  // `key`: the sender's withdraw key (0: none).
  caf::result<barrier_crossing> synchronize(barrier_mode mode, caf::timespan limit,
                                            std::uint64_t key = 0) {
    if (closing_) return refuse(make_error(errc::shutting_down, label() + " is shutting down"));
    if (auto bad = detail::check_limit(wait_limit{limit, key}, label() + " synchronize")) {
      return bad;
    }
    const std::uint64_t g = ++generations_;
    marking& m = marking_[g];
    if (key != 0) {  // before the promise takes the sender over
      const auto& sender = self_->current_sender();
      m.wait_id = waits_.add(sender ? sender->address() : caf::actor_addr{}, key, g);
    }
    m.promise = self_->make_response_promise<barrier_crossing>();
    m.limit = limit;
    m.crossing.generation = g;
    m.crossing.mode = mode;
    m.crossing.began_ns = now_ns();
    m.left = members_.size();
    for (std::uint32_t i = 0; i < members_.size(); ++i) {
      m.crossing.members.push_back({i, members_[i].name, 0, 0, members_[i].id});
    }
    // The mark goes through the stream actor, so that it sits after everything the actor
    // ticketed before this request, whatever it still holds back (its in-flight cap, events
    // being fetched): the point is answered once it is signalled on the backend.
    for (std::uint32_t i = 0; i < members_.size(); ++i) {
      std::vector<dispatched_op> mark(1);
      mark.front().fn = no_work;
      self_
          ->request(members_[i].actor, caf::infinite, dispatch_atom::value,
                    stream_dispatch{std::move(mark)})
          .then(
              [this, g, i](const std::vector<ticket>& t) {
                marked(g, i, t.empty() ? 0 : t.front().point, {});
              },
              [this, g, i](caf::error& why) { marked(g, i, 0, std::move(why)); });
    }
    return m.promise;
  }

  // The poller saw member `i` of generation `g` at the barrier, or gave up on it.
  void arrived(std::uint64_t g, std::uint32_t i, caf::error why, std::int64_t seen_ns) {
    auto found = open_.find(g);
    if (found == open_.end() || i >= members_.size() || found->second.outcome[i]) return;
    if (!why) {
      reached(g, i, seen_ns);
      return;
    }
    found->second.outcome[i] = std::move(why);
    found->second.crossing.members[i].arrived_ns = seen_ns;
    settle_one(found);
  }

  // Member `i` passed generation `g`'s mark, seen at `seen_ns`. A stream passes its marks in
  // order, so every earlier generation still waiting for it is passed too: settled here, with
  // the same time. Otherwise a later generation found already there when it opened (or seen
  // by the poller first) could be answered before an earlier one, with an earlier arrival.
  void reached(std::uint64_t g, std::uint32_t i, std::int64_t seen_ns) {
    for (auto at = open_.begin(); at != open_.end() && at->first <= g;) {
      open_generation& gen = at->second;
      if (gen.outcome[i]) {
        ++at;
        continue;
      }
      gen.outcome[i] = failed_before(at->first, i, gen.work[i]);
      gen.crossing.members[i].arrived_ns = seen_ns;
      at = --gen.outstanding == 0 ? answer(at) : std::next(at);
    }
  }

  // The sender's generation under `key`, answered cancelled: its watches cancelled and its
  // state gone (a generation still being marked keeps only what later ones need: its marks).
  bool withdraw(std::uint64_t key) {
    if (key == 0) return false;
    const auto sender = self_->current_sender();
    const auto w = waits_.take(sender ? sender->address() : caf::actor_addr{}, key);
    if (w.id == 0) return false;
    const std::uint64_t g = w.where;
    auto why = [&] {
      return make_error(errc::cancelled,
                        label() + " generation " + std::to_string(g) + ": withdrawn by its caller");
    };
    if (auto m = marking_.find(g); m != marking_.end()) {
      m->second.withdrawn = true;
      m->second.promise.deliver(why());
      return true;
    }
    if (auto open = open_.find(g); open != open_.end()) {
      for (const auto& id : open->second.watches) context_.poller->cancel(id);
      open->second.promise.deliver(why());
      open_.erase(open);
      return true;
    }
    return false;  // device mode, its waits being placed: it is answered as it is placed
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
    for (const auto& [g, m] : marking_) out.pending += m.withdrawn ? 0 : 1;
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
    for (auto& [g, m] : marking_) {
      if (m.withdrawn) continue;  // answered cancelled already
      m.promise.deliver(
          refuse(make_error(errc::shutting_down, label() + " generation " + std::to_string(g) +
                                                     ": the barrier shut down first")));
    }
    marking_.clear();
    waits_.clear();
  }

  [[nodiscard]] const barrier_options& options() const noexcept { return options_; }

 private:
  // Member `i` of generation `g` has its mark at `point` (or could not take one).
  void marked(std::uint64_t g, std::uint32_t i, timeline_point point, caf::error why) {
    auto found = marking_.find(g);
    if (found == marking_.end()) return;  // answered already (shut down)
    marking& m = found->second;
    m.crossing.members[i].point = point;
    if (why && !m.failed) m.failed = member_failed(i, why);
    if (--m.left != 0) return;
    marking done = std::move(m);
    marking_.erase(found);
    // The newest work before each mark: the point just before it, unless that is this
    // barrier's own previous mark (no work since), which stood for the same work.
    last_mark_.resize(members_.size(), 0);
    work_before_.resize(members_.size(), 0);
    for (std::uint32_t k = 0; k < members_.size(); ++k) {
      const timeline_point mark = done.crossing.members[k].point;
      if (mark == 0) continue;
      if (mark - 1 != last_mark_[k] || last_mark_[k] == 0) work_before_[k] = mark - 1;
      last_mark_[k] = mark;
    }
    done.work = work_before_;
    if (done.withdrawn) return;  // answered cancelled already
    if (done.failed) {
      waits_.forget(done.wait_id);
      done.promise.deliver(refuse(std::move(done.failed)));
      return;
    }
    if (done.crossing.mode == barrier_mode::device) {
      on_device(std::move(done));
    } else {
      on_host(std::move(done));
    }
  }

  // Every member waits, on the device, for every other member's mark: one operation per
  // member through its stream actor, answered once all are placed.
  void on_device(marking m) {
    caf::error known_failure;
    std::vector<std::vector<point_wait>> waits(members_.size());
    for (std::uint32_t i = 0; i < members_.size(); ++i) {
      const timeline_point p = m.crossing.members[i].point;
      auto line = context_.device->timeline_of(members_[i].stream);
      if (!line) {
        waits_.forget(m.wait_id);
        m.promise.deliver(refuse(member_gone(i, line.error())));
        return;
      }
      // The work just before the mark failed: the others also wait for that point, so that
      // their next work fails with the dependency, as it would have waited on it.
      const timeline_point work = m.work[i];
      const gpu::query_result before = work != 0 ? (*line)->query(work) : gpu::query_result{};
      const bool failed_work = before.failed() && before.error.code() != gpu::errc::device_lost;
      if (failed_work && !known_failure) {
        known_failure = reached_failed(m.crossing.generation, i, before.error);
      }
      const gpu::query_result reached = (*line)->query(p);
      if (reached.ready() && !failed_work) continue;  // already passed, cleanly
      if (reached.failed() && !known_failure) {
        known_failure = reached_failed(m.crossing.generation, i, reached.error);
      }
      for (std::uint32_t j = 0; j < members_.size(); ++j) {
        if (j == i) continue;
        if (failed_work) waits[j].push_back(point_wait{members_[i].stream, work, false, nullptr});
        if (!reached.ready()) waits[j].push_back(point_wait{members_[i].stream, p, false, nullptr});
        ++m.crossing.device_waits;
      }
    }
    auto state = std::make_shared<marking>(std::move(m));
    state->failed = std::move(known_failure);
    state->left = 0;
    for (std::uint32_t j = 0; j < members_.size(); ++j) {
      if (waits[j].empty()) continue;
      ++state->left;
      std::vector<dispatched_op> crossing(1);
      crossing.front().fn = no_work;
      crossing.front().waits = std::move(waits[j]);
      self_
          ->request(members_[j].actor, caf::infinite, dispatch_atom::value,
                    stream_dispatch{std::move(crossing)})
          .then(
              [this, state, j](const std::vector<ticket>& t) {
                // The crossing is the barrier's too: no work of anyone's.
                if (!t.empty() && t.front().point == last_mark_[j] + 1) {
                  last_mark_[j] = t.front().point;
                }
                placed(state, {});
              },
              [this, state, j](caf::error& why) { placed(state, member_failed(j, why)); });
    }
    if (state->left == 0) {
      ++state->left;
      placed(state, {});
    }
  }

  void placed(const std::shared_ptr<marking>& m, caf::error why) {
    if (why && !m->failed) m->failed = std::move(why);
    if (--m->left != 0) return;
    waits_.forget(m->wait_id);  // placed: too late to withdraw
    device_waits_ += m->crossing.device_waits;
    m->crossing.duration = caf::timespan{now_ns() - m->crossing.began_ns};
    // The waits are placed either way: what follows is ordered after the barrier, and each
    // stream's next work reports the failure too.
    if (m->failed) {
      m->promise.deliver(refuse(std::move(m->failed)));
      return;
    }
    ++crossed_;
    metrics_->crossed(now_ns() - m->crossing.began_ns);
    m->promise.deliver(std::move(m->crossing));
  }

  void on_host(marking m) {
    const std::uint64_t g = m.crossing.generation;
    open_generation gen;
    gen.limit = m.limit;
    gen.outcome.resize(members_.size());
    gen.crossing = std::move(m.crossing);
    gen.promise = m.promise;
    gen.work = std::move(m.work);
    gen.wait_id = m.wait_id;  // still withdrawable, under the same key
    gpu::watch_deadline deadline;
    if (gen.limit.count() > 0) deadline = gpu::watch_clock::now() + gen.limit;
    auto weak = caf::actor_cast<caf::actor_addr>(self_);
    // Every member counts as outstanding until it is settled, so that the generation is
    // answered (and erased) only once the last one is, and never in the middle of this loop.
    gen.outstanding = members_.size();
    auto [at, added] = open_.emplace(g, std::move(gen));
    open_generation& open = at->second;
    for (std::uint32_t i = 0; i < members_.size(); ++i) {
      const timeline_point p = open.crossing.members[i].point;
      auto line = context_.device->timeline_of(members_[i].stream);
      if (!line) {
        open.outcome[i] = member_gone(i, line.error());
        settle_one(at);
        continue;
      }
      // Already there: no watch (a failed point is the poller's to report, with the rest).
      if ((*line)->query(p).ready()) {
        reached(g, i, now_ns());
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
        settle_one(at);
        continue;
      }
      open.watches.push_back(*watched);
    }
  }

  // One more member of the generation at `at` settled; the last answers it.
  void settle_one(std::map<std::uint64_t, open_generation>::iterator at) {
    if (--at->second.outstanding == 0) answer(at);
  }

  // Member `i`'s newest work before the barrier (`work`, a point) failed: the stream reached
  // the barrier with failed work.
  caf::error failed_before(std::uint64_t g, std::uint32_t i, timeline_point work) const {
    if (work == 0) return {};
    auto line = context_.device->timeline_of(members_[i].stream);
    if (!line) return {};
    const gpu::query_result q = (*line)->query(work);
    if (!q.failed() || q.error.code() == gpu::errc::device_lost) return {};
    return reached_failed(g, i, q.error);
  }

  // A stream actor that refused a mark: its device is lost, or it is going away.
  caf::error member_failed(std::uint32_t i, const caf::error& why) const {
    if (why.code() == static_cast<std::uint8_t>(errc::device_lost)) return why;
    return make_error(errc::invalid_state, label() + ": stream '" + members_[i].name +
                                               "' cannot take part: " + describe(why));
  }

  // Answers the generation at `at` and forgets it; the iterator after it.
  std::map<std::uint64_t, open_generation>::iterator answer(
      std::map<std::uint64_t, open_generation>::iterator at) {
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
                          label() + " generation " + std::to_string(g) + ": " + describe(lost)));
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
    waits_.forget(gen.wait_id);
    return open_.erase(at);
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
                          "' reached the barrier with failed work: " + describe(why));
  }

  std::string label() const { return "barrier '" + options_.name + "'"; }

  barrier_actor::pointer self_ = nullptr;
  barrier_context context_;
  std::vector<barrier_member> members_;
  barrier_options options_;
  std::map<std::uint64_t, open_generation> open_;
  std::map<std::uint64_t, marking> marking_;
  detail::wait_keys waits_;  // generations made with a withdraw key, until answered
  // Per member: this barrier's newest mark, and the newest work before it.
  std::vector<timeline_point> last_mark_, work_before_;
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
      [&st](synchronize_atom, barrier_mode mode, const wait_limit& limit) {
        return st.synchronize(mode, limit.limit, limit.key);
      },
      [&st](withdraw_atom, std::uint64_t key) { return st.withdraw(key); },
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
    if (members[i].stream.empty() || !members[i].actor) {
      return gpu::status{gpu::errc::invalid_argument, "barrier '" + options.name + "': member " +
                                                          std::to_string(i) +
                                                          " names no stream or no stream actor"};
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
