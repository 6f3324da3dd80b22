// tests/actors/coordinator_fixture.hpp
//
// A runtime whose coordinator the tests drive, a listener that collects end notices (the
// scoped actor itself, cast to op_listener) and checks that each operation is told once,
// host "kernels" that record when they ran, and gates that hold a stream until opened. On the
// CUDA backend a work closure runs when its stream actor enqueues it, so recorded() stamps
// dispatch times there, not the device's (common/device_word.hpp checks the device's order).
#pragma once

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/time_scale.hpp"
#include "common/gate.hpp"
#include "common/protocol_printing.hpp"
#include "common/runtime_fixture.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::test {

// When each host kernel started and ended, by its index.
struct timeline_log {
  explicit timeline_log(std::size_t n) : started(n), ended(n) {
    for (std::size_t i = 0; i < n; ++i) {
      started[i] = 0;
      ended[i] = 0;
    }
  }
  std::vector<std::atomic<std::int64_t>> started;
  std::vector<std::atomic<std::int64_t>> ended;
  std::atomic<int> order{0};
  std::vector<std::atomic<int>> rank = std::vector<std::atomic<int>>(started.size());
};

inline work recorded(std::shared_ptr<timeline_log> log, std::size_t index,
                     std::chrono::microseconds busy = std::chrono::microseconds{0},
                     bool fail = false) {
  return work::local([log, index, busy, fail](const gpu::launch_context&) {
    log->started[index] = detail::now_ns();
    log->rank[index] = log->order++;
    if (busy.count() > 0) {
      const auto until = std::chrono::steady_clock::now() + busy;
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    log->ended[index] = detail::now_ns();
    return fail ? gpu::status{gpu::errc::op_failed, "kernel " + std::to_string(index) + " failed"}
                : gpu::status{};
  });
}

inline work noop() {
  return work::local([](const gpu::launch_context&) { return gpu::status{}; });
}

inline op_spec spec_of(work w, std::vector<op_id> deps = {},
                       op_priority priority = op_priority::normal,
                       op_workload workload = op_workload::compute, std::string what = {}) {
  op_spec s;
  s.body = std::move(w);
  s.deps = std::move(deps);
  s.priority = priority;
  s.workload = workload;
  s.description = std::move(what);
  return s;
}

class coordinator_fixture : public runtime_fixture {
 public:
  explicit coordinator_fixture(std::vector<std::string> args = {})
      : runtime_fixture(with_defaults(std::move(args))) {}

  static std::vector<std::string> with_defaults(std::vector<std::string> args) {
    args.insert(args.begin(), "--cudactor.host.workers=4");
    return args;
  }

  const coordinator_actor& co() { return rt().coordinator(); }
  op_listener me() { return caf::actor_cast<op_listener>(self()); }

  op_id add(op_spec spec, bool listen = true) {
    auto id = listen ? ask<op_id>(co(), register_atom::value, std::move(spec), me())
                     : ask<op_id>(co(), register_atom::value, std::move(spec));
    BOOST_REQUIRE_MESSAGE(id, why(id));
    return *id;
  }

  // Collects notices until every id in `ids` has been told (or the time runs out); fails the
  // test on a second notice for one id.
  std::map<std::uint64_t, op_notice> collect(const std::vector<op_id>& ids,
                                             std::chrono::seconds within = std::chrono::seconds{
                                                 20}) {
    const auto deadline = std::chrono::steady_clock::now() + scaled(within);
    auto outstanding = [&] {
      for (op_id id : ids) {
        if (told_.count(id.value) == 0) return true;
      }
      return false;
    };
    while (outstanding() && std::chrono::steady_clock::now() < deadline) {
      self()->receive(
          [&](std::vector<op_notice>& notices) {
            for (auto& n : notices) {
              BOOST_CHECK_MESSAGE(told_.count(n.id.value) == 0,
                                  "op " << n.id.value << " told twice");
              told_[n.id.value] = n;
            }
          },
          caf::after(std::chrono::milliseconds{100}) >> [] {});
    }
    std::map<std::uint64_t, op_notice> out;
    for (op_id id : ids) {
      auto found = told_.find(id.value);
      BOOST_REQUIRE_MESSAGE(found != told_.end(), "op " << id.value << " was never told");
      out.emplace(id.value, found->second);
    }
    return out;
  }

  op_notice told(op_id id) { return collect({id}).at(id.value); }

  // No notice arrives within `quiet`.
  bool silent_for(std::chrono::milliseconds quiet) {
    bool silent = true;
    self()->receive(
        [&](std::vector<op_notice>& notices) {
          silent = false;
          for (auto& n : notices) told_[n.id.value] = n;
        },
        caf::after(quiet) >> [] {});
    return silent;
  }

  // A request answered later (a begin waiting for its dependencies, a wait for a stream):
  // asked from another thread with its own scoped actor.
  template <class T, class... Ts>
  std::future<caf::expected<T>> ask_later(Ts... xs) {
    return std::async(std::launch::async, [this, xs...]() mutable {
      caf::expected<T> out{caf::sec::request_timeout};
      {
        caf::scoped_actor other{rt().system()};
        other->request(co(), scaled(std::chrono::seconds{10}), xs...)
            .receive([&](T& value) { out = std::move(value); },
                     [&](caf::error& err) { out = std::move(err); });
      }
      runtime::release_calling_thread();
      return out;
    });
  }

  coordinator_metrics metrics() {
    auto m = ask<coordinator_metrics>(co(), metrics_atom::value);
    BOOST_REQUIRE_MESSAGE(m, why(m));
    return *m;
  }

 private:
  std::map<std::uint64_t, op_notice> told_;
};

}  // namespace cudactor::test
