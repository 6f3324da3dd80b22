// tests/actors/coordinator_fixture.hpp
//
// A runtime whose coordinator the tests drive, a listener that collects end notices (the
// scoped actor itself, cast to op_listener) and checks that each operation is told once,
// work that records when it ran where it ran (common/work_log.hpp: a kernel on CUDA), and
// gates that hold a stream until opened, on either backend.
#pragma once

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/gate.hpp"
#include "common/protocol_printing.hpp"
#include "common/runtime_fixture.hpp"
#include "common/time_scale.hpp"
#include "common/work_log.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::test {

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

// Work pinned to `stream`: where it goes is the test's, not the load balancer's, whose choice
// depends on which completions the coordinator has heard of when it places.
inline op_spec pinned_to(work w, std::uint32_t stream, std::vector<op_id> deps = {}) {
  op_spec s = spec_of(std::move(w), std::move(deps));
  s.placement.pinned = true;
  s.placement.stream = stream_id{stream};
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

  // Waits until `id`'s stream actor has given its ticket (describe names its stream and
  // point): a dependent registered then is placed like one on any stream, not made to
  // follow it onto its stream while its ticket is on the way.
  op_info placed(op_id id) {
    op_info where;
    for (int i = 0; i < 5000; ++i) {
      auto info = ask<op_info>(co(), describe_atom::value, id);
      BOOST_REQUIRE_MESSAGE(info, why(info));
      where = *info;
      if (where.on_stream && where.point != 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
    BOOST_REQUIRE_MESSAGE(where.on_stream && where.point != 0,
                          "op " << id.value << " was never placed on a stream");
    return where;
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

// The runtime most coordinator tests use: four streams, the load-balanced strategy.
struct four_streams : coordinator_fixture {
  four_streams()
      : coordinator_fixture({"--cudactor.streams=4",
                             "--cudactor.coordinator.strategy=load_balanced"}) {}
};

}  // namespace cudactor::test
