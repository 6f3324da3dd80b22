// tests/common/poller_conformance.hpp
//
// What the completion poller promises on any backend, in either delivery mode: answers in
// stream order, exactly one answer per watch whatever happens (completion, deadline, cancel,
// stop, destruction), progress reports, the watchdog, bad input refused. Written once; the
// host backend's tests and the CUDA backend's (on a GPU) instantiate every check, and each
// check runs once per delivery mode.
#pragma once

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "backend_conformance.hpp"
#include "cudactor/gpu/completion_poller.hpp"

namespace cudactor::gpu {
inline std::ostream& operator<<(std::ostream& out, watch_outcome value) {
  return out << to_string(value);
}
inline std::ostream& operator<<(std::ostream& out, delivery_mode value) {
  return out << to_string(value);
}
}  // namespace cudactor::gpu

namespace cudactor::test::poller_conformance {

using gpu::delivery_mode;
using gpu::watch_outcome;
using gpu::watch_result;

inline constexpr delivery_mode both_modes[] = {delivery_mode::polling, delivery_mode::callback};

// Collects answers from the poller's thread; tests read them on their own thread (Boost.Test
// assertions are not thread-safe, so none are made in callbacks).
class recorder {
 public:
  gpu::watch_callback callback() {
    return [this](const watch_result& r) {
      std::lock_guard<std::mutex> lock{mutex_};
      results_.push_back(r);
      ++answers_[r.id.sequence];
      changed_.notify_all();
    };
  }

  // Waits until at least n answers came; false on timeout.
  bool wait_for(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds{20}) {
    std::unique_lock<std::mutex> lock{mutex_};
    return changed_.wait_for(lock, timeout, [&] { return results_.size() >= n; });
  }

  std::vector<watch_result> results() {
    std::lock_guard<std::mutex> lock{mutex_};
    return results_;
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock{mutex_};
    return results_.size();
  }
  // Watches answered more than once (must stay 0).
  std::size_t answered_twice() {
    std::lock_guard<std::mutex> lock{mutex_};
    return static_cast<std::size_t>(std::count_if(
        answers_.begin(), answers_.end(), [](const auto& entry) { return entry.second > 1; }));
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<watch_result> results_;
  std::map<std::uint64_t, int> answers_;
};

inline gpu::poller_options options_for(delivery_mode mode) {
  gpu::poller_options options;
  options.mode = mode;
  return options;
}

inline gpu::timeline_point signal(gpu::backend& b, gpu::stream_ref s) {
  auto point = b.signal(s);
  BOOST_REQUIRE_MESSAGE(point.ok(), point.error().to_string());
  return point.value();
}

// signal(), waiting while the stream is at its bound of values in flight (CUDA's
// max_in_flight, which refuses a signal with resource_exhausted rather than block): for a test
// that signals faster than the device passes the points, where that backpressure is not what
// it tests. Gives up after 20 s.
inline gpu::timeline_point signal_when_room(gpu::backend& b, gpu::stream_ref s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  for (;;) {
    auto point = b.signal(s);
    if (point.ok()) return point.value();
    BOOST_REQUIRE_MESSAGE(point.error().code() == gpu::status_code::resource_exhausted &&
                              std::chrono::steady_clock::now() < until,
                          point.error().to_string());
    std::this_thread::sleep_for(std::chrono::microseconds{200});
  }
}

inline gpu::watch_id watch(gpu::completion_poller& poller, gpu::stream_ref s,
                           gpu::timeline_point point, gpu::watch_callback callback,
                           gpu::watch_deadline deadline = std::nullopt) {
  auto id = poller.watch(s, point, deadline, std::move(callback));
  BOOST_REQUIRE_MESSAGE(id.ok(), id.error().to_string());
  return id.value();
}

inline void watches_on_a_stream_are_answered_in_stream_order(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      BOOST_TEST(poller.mode() == mode);
      auto s = conformance::make_stream(b, "ordered");
      auto hold = t.hold(s);
      std::vector<gpu::timeline_point> points;
      for (int i = 0; i < 200; ++i) {
        points.push_back(signal(b, s));
        watch(poller, s, points.back(), answers.callback());
      }
      std::this_thread::sleep_for(30ms);  // ticks with 200 pending and none done
      hold->release();
      BOOST_REQUIRE(answers.wait_for(points.size()));
      const auto results = answers.results();
      for (std::size_t i = 0; i < results.size(); ++i) {
        BOOST_TEST(results[i].outcome == watch_outcome::completed);
        BOOST_TEST(results[i].point == points[i]);
        BOOST_TEST(results[i].error.ok());
        if (i > 0) BOOST_TEST((results[i].detected >= results[i - 1].detected));
      }
      poller.stop();
      BOOST_TEST(answers.answered_twice() == 0u);
      const auto stats = poller.stats();
      BOOST_TEST(stats.watches == 200u);
      BOOST_TEST(stats.completed == 200u);
      BOOST_TEST(stats.in_flight == 0u);
      // Only the oldest watch is asked each tick: one unanswered query per tick at most,
      // plus one per answer. Asking all 200 each tick would blow far past this.
      BOOST_TEST(stats.queries <= stats.ticks + stats.completed);
      // Host callbacks that wake the loop (CUDA in callback mode): at most one outstanding
      // per stream, not one per watch (200 here). None when polling; where timelines notify
      // by themselves (the host backend) only the first watch's, made before the loop has
      // seen that they do.
      if (mode == delivery_mode::polling) {
        BOOST_TEST(stats.host_notifications == 0u);
      } else if (b.kind() == gpu::backend_kind::host) {
        BOOST_TEST(stats.host_notifications <= 1u);
      } else {
        BOOST_TEST(stats.host_notifications >= 1u);
        BOOST_TEST(stats.host_notifications <= 20u);
      }
    }
  }
}

inline void watches_on_many_streams_are_all_answered(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      std::vector<gpu::stream> streams;
      for (int i = 0; i < 16; ++i) streams.push_back(conformance::make_stream(b));
      std::map<std::uint64_t, std::vector<gpu::timeline_point>> per_stream;
      for (int round = 0; round < 50; ++round) {
        for (auto& s : streams) {
          CUDACTOR_REQUIRE_OK(t.busy(s, 0ms));
          const auto point = signal(b, s);
          per_stream[s.ref().id().value()].push_back(point);
          watch(poller, s, point, answers.callback());
        }
      }
      BOOST_REQUIRE(answers.wait_for(16 * 50));
      std::map<std::uint64_t, std::vector<gpu::timeline_point>> seen;
      for (const auto& r : answers.results()) {
        BOOST_TEST(r.completed());
        seen[r.id.stream.value()].push_back(r.point);
      }
      BOOST_TEST((seen == per_stream));  // every stream, in its own order
      BOOST_TEST(answers.answered_twice() == 0u);
    }
  }
}

inline void an_event_watch_completes_after_the_work_before_it(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      auto s = conformance::make_stream(b, "events");
      auto e = conformance::make_event(b);
      auto hold = t.hold(s);
      CUDACTOR_REQUIRE_OK(b.record(e, s));
      auto id = poller.watch(s, e.ref(), std::nullopt, answers.callback());
      BOOST_REQUIRE(id.ok());
      BOOST_TEST(!answers.wait_for(1, 50ms));  // held: nothing can be answered yet
      hold->release();
      BOOST_REQUIRE(answers.wait_for(1));
      const auto r = answers.results().front();
      BOOST_TEST(r.completed());
      BOOST_TEST(r.point == 0u);
      BOOST_TEST((r.id == id.value()));
    }
  }
}

inline void a_deadline_answers_timed_out_and_nothing_else(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      auto s = conformance::make_stream(b, "late");
      auto hold = t.hold(s);
      const auto first = signal(b, s);
      const auto second = signal(b, s);
      const auto start = gpu::watch_clock::now();
      // The deadline sits on the second watch, behind one that never completes in time: it
      // must fire although the second is never the front.
      watch(poller, s, first, answers.callback());
      watch(poller, s, second, answers.callback(), start + 30ms);
      BOOST_REQUIRE(answers.wait_for(1));
      auto results = answers.results();
      BOOST_TEST(results[0].outcome == watch_outcome::timed_out);
      BOOST_TEST(results[0].point == second);
      BOOST_TEST(results[0].error.code() == gpu::status_code::timeout);
      BOOST_TEST((results[0].detected >= start + 30ms));
      hold->release();
      BOOST_REQUIRE(answers.wait_for(2));
      CUDACTOR_REQUIRE_OK(b.synchronize(s));
      poller.stop();
      results = answers.results();
      BOOST_REQUIRE(results.size() == 2u);  // the timed-out watch is not answered again
      BOOST_TEST(results[1].point == first);
      BOOST_TEST(results[1].completed());
      BOOST_TEST(poller.stats().timed_out == 1u);
    }
  }
}

inline void cancel_before_completion_answers_cancelled_once(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      auto s = conformance::make_stream(b, "withdrawn");
      auto hold = t.hold(s);
      const auto id = watch(poller, s, signal(b, s), answers.callback());
      const auto kept = watch(poller, s, signal(b, s), answers.callback());
      BOOST_TEST(poller.cancel(id));
      BOOST_REQUIRE(answers.wait_for(1));
      BOOST_TEST(answers.results()[0].outcome == watch_outcome::cancelled);
      BOOST_TEST(answers.results()[0].error.code() == gpu::status_code::cancelled);
      BOOST_TEST((answers.results()[0].id == id));
      BOOST_TEST(poller.cancel(id));  // a second cancel is accepted and changes nothing
      hold->release();
      BOOST_REQUIRE(answers.wait_for(2));
      CUDACTOR_REQUIRE_OK(b.synchronize(s));
      poller.stop();
      const auto results = answers.results();
      BOOST_REQUIRE(results.size() == 2u);
      BOOST_TEST((results[1].id == kept));
      BOOST_TEST(results[1].completed());
    }
  }
}

inline void cancel_after_completion_changes_nothing(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      auto s = conformance::make_stream(b, "done");
      const auto id = watch(poller, s, signal(b, s), answers.callback());
      BOOST_REQUIRE(answers.wait_for(1));
      BOOST_TEST(poller.cancel(id));
      // A later watch on the stream proves the cancel has been processed (same inbox, in order).
      watch(poller, s, signal(b, s), answers.callback());
      BOOST_REQUIRE(answers.wait_for(2));
      poller.stop();
      const auto results = answers.results();
      BOOST_REQUIRE(results.size() == 2u);
      BOOST_TEST(results[0].completed());
      BOOST_TEST(poller.stats().cancelled == 0u);
    }
  }
}

inline void cancels_racing_completions_still_answer_once(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      // Declared before the poller, so that a failure's unwinding stops the poller before the
      // recorder its callbacks write to goes.
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      auto s = conformance::make_stream(b, "racing");
      std::vector<gpu::watch_id> ids;
      for (int i = 0; i < 2000; ++i) {
        CUDACTOR_REQUIRE_OK(t.busy(s, 0ms));
        ids.push_back(watch(poller, s, signal_when_room(b, s), answers.callback()));
        if (i % 3 == 0) BOOST_TEST(poller.cancel(ids[ids.size() / 2]));
      }
      BOOST_REQUIRE(answers.wait_for(ids.size()));
      CUDACTOR_REQUIRE_OK(b.synchronize(s));
      poller.stop();
      BOOST_TEST(answers.count() == ids.size());
      BOOST_TEST(answers.answered_twice() == 0u);
      const auto stats = poller.stats();
      BOOST_TEST(stats.completed + stats.cancelled == ids.size());
    }
  }
}

inline void stop_cancels_every_pending_watch_and_nothing_runs_after(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      recorder answers;
      std::atomic<bool> stopped{false};
      std::atomic<int> late{0};
      std::vector<gpu::stream> streams;
      std::vector<std::unique_ptr<conformance_target::hold_handle>> holds;
      for (int i = 0; i < 8; ++i) {
        streams.push_back(conformance::make_stream(b));
        holds.push_back(t.hold(streams.back()));
      }
      gpu::completion_poller poller{b, options_for(mode)};
      auto callback = answers.callback();
      // 500 a stream: held, none can pass, and CUDA bounds a stream's values in flight (512).
      for (int i = 0; i < 4000; ++i) {
        auto& s = streams[i % streams.size()];
        auto id = poller.watch(s, signal(b, s), gpu::watch_clock::now() + 1h,
                               [&, callback](const watch_result& r) {
                                 if (stopped.load()) ++late;
                                 callback(r);
                               });
        BOOST_REQUIRE(id.ok());
      }
      poller.stop();
      stopped = true;
      BOOST_TEST(answers.count() == 4000u);
      for (const auto& r : answers.results()) {
        BOOST_TEST(r.outcome == watch_outcome::cancelled);
      }
      // A watch after stop is refused at once rather than left unanswered.
      auto refused = poller.watch(streams[0], 1, std::nullopt, answers.callback());
      BOOST_TEST(refused.code() == gpu::status_code::cancelled);
      BOOST_TEST(!poller.cancel(gpu::watch_id{1, streams[0].ref().id()}));
      poller.stop();  // idempotent
      for (auto& h : holds) h->release();
      CUDACTOR_REQUIRE_OK(b.synchronize());
      BOOST_TEST(late.load() == 0);
      BOOST_TEST(answers.answered_twice() == 0u);
      BOOST_TEST(poller.stats().in_flight == 0u);
    }
  }
}

inline void destruction_without_stop_cancels_too(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      auto s = conformance::make_stream(b, "abandoned");
      auto hold = t.hold(s);
      recorder answers;
      {
        gpu::completion_poller poller{b, options_for(mode)};
        for (int i = 0; i < 100; ++i) watch(poller, s, signal(b, s), answers.callback());
      }
      BOOST_TEST(answers.count() == 100u);
      for (const auto& r : answers.results()) {
        BOOST_TEST(r.outcome == watch_outcome::cancelled);
      }
      hold->release();
      CUDACTOR_REQUIRE_OK(b.synchronize(s));
      BOOST_TEST(answers.count() == 100u);  // backend callbacks after the poller: no answers
    }
  }
}

inline void watches_from_many_threads_are_each_answered_once(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      constexpr int threads = 8;
      constexpr int per_thread = 1000;
      std::vector<gpu::stream> streams;
      for (int i = 0; i < threads; ++i) streams.push_back(conformance::make_stream(b));
      std::atomic<int> refused{0};
      std::vector<std::thread> workers;
      for (int i = 0; i < threads; ++i) {
        workers.emplace_back([&, i] {
          // Half the threads share a stream with another, so one FIFO takes watches from two.
          auto& s = streams[i / 2];
          auto line = b.timeline_of(s);
          for (int k = 0; k < per_thread; ++k) {
            auto point = b.signal(s);
            if (!point || !poller.watch(s, point.value(), std::nullopt, answers.callback())) {
              ++refused;
            }
            // Each backend bounds the points in flight per stream (backend::max_in_flight):
            // the two threads of a stream keep well below it, whatever the workers' pace.
            if (point && line && k % 64 == 63 && !line.value()->wait(point.value(), 10s).ok()) {
              ++refused;
            }
          }
        });
      }
      for (auto& w : workers) w.join();
      BOOST_TEST(refused.load() == 0);
      BOOST_REQUIRE(answers.wait_for(threads * per_thread));
      poller.stop();
      BOOST_TEST(answers.count() == static_cast<std::size_t>(threads * per_thread));
      BOOST_TEST(answers.answered_twice() == 0u);
      for (const auto& r : answers.results()) BOOST_TEST(r.completed());
    }
  }
}

inline void the_watchdog_reports_a_watch_that_never_completes(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      std::mutex mutex;
      std::vector<gpu::stuck_watch> reports;
      auto options = options_for(mode);
      options.stuck_after = 40ms;
      options.on_stuck = [&](const gpu::stuck_watch& stuck) {
        std::lock_guard<std::mutex> lock{mutex};
        reports.push_back(stuck);
      };
      recorder answers;
      gpu::completion_poller poller{b, options};
      auto s = conformance::make_stream(b, "hung");
      auto hold = t.hold(s);
      const auto first = watch(poller, s, signal(b, s), answers.callback());
      watch(poller, s, signal(b, s), answers.callback());
      const auto give_up = std::chrono::steady_clock::now() + 20s;
      while (poller.stats().stuck_total == 0 && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(5ms);
      }
      std::this_thread::sleep_for(100ms);  // more watchdog passes: still one report
      {
        std::lock_guard<std::mutex> lock{mutex};
        BOOST_REQUIRE(reports.size() == 1u);
        BOOST_TEST((reports[0].id == first));
        BOOST_TEST(reports[0].stream_name == "hung");
        BOOST_TEST(reports[0].waiting_behind == 1u);
        BOOST_TEST((reports[0].age >= 40ms));
      }
      BOOST_TEST(poller.stats().stuck_now == 1u);
      BOOST_TEST(answers.count() == 0u);  // stuck is a report, not an answer
      hold->release();
      BOOST_REQUIRE(answers.wait_for(2));
      const auto settle = std::chrono::steady_clock::now() + 20s;
      while (poller.stats().stuck_now != 0 && std::chrono::steady_clock::now() < settle) {
        std::this_thread::sleep_for(5ms);
      }
      BOOST_TEST(poller.stats().stuck_now == 0u);
      BOOST_TEST(poller.stats().stuck_total == 1u);
    }
  }
}

inline void progress_reports_how_far_a_stream_got(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      gpu::completion_poller poller{b, options_for(mode)};
      auto s = conformance::make_stream(b, "progress");
      std::mutex mutex;
      std::condition_variable changed;
      std::vector<gpu::stream_progress> reports;
      CUDACTOR_REQUIRE_OK(poller.subscribe(s, [&](const gpu::stream_progress& p) {
        std::lock_guard<std::mutex> lock{mutex};
        reports.push_back(p);
        changed.notify_all();
      }));
      auto hold = t.hold(s);
      gpu::timeline_point last = 0;
      for (int i = 0; i < 300; ++i) {
        last = signal(b, s);
        watch(poller, s, last, nullptr);  // no callback: the progress report is the answer
      }
      // A watch on another, finished stream holds the loop in its callback (a test may; real
      // callbacks never block) while "progress" runs all 300 points, so no tick can look at
      // the stream half-way: the tick after the callback finds them all done, one report.
      // (Holding the loop in a watch on "progress" itself raced: a tick could see some of the
      // 300 done before the callback ran, and report twice.)
      auto other = conformance::make_stream(b, "progress-other");
      std::promise<void> loop_held;
      std::promise<void> stream_done;
      auto finished = stream_done.get_future().share();
      watch(poller, other, signal(b, other), [&loop_held, finished](const watch_result&) {
        loop_held.set_value();
        finished.wait();
      });
      BOOST_REQUIRE(loop_held.get_future().wait_for(20s) == std::future_status::ready);
      hold->release();
      CUDACTOR_REQUIRE_OK(b.synchronize(s));
      stream_done.set_value();
      std::unique_lock<std::mutex> lock{mutex};
      BOOST_REQUIRE(changed.wait_for(lock, 20s, [&] { return !reports.empty(); }));
      BOOST_REQUIRE(reports.size() == 1u);  // one tick, one report, however many watches
      BOOST_TEST((reports[0].stream == s.ref()));
      BOOST_TEST(reports[0].reached == last);
      BOOST_TEST(reports[0].failures.empty());
      lock.unlock();
      BOOST_TEST(poller.stats().completed == 301u);  // the other stream's watch and these 300
    }
  }
}

inline void a_range_of_points_is_watched_in_one_call(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      gpu::completion_poller poller{b, options_for(mode)};
      auto s = conformance::make_stream(b, "range");
      std::mutex mutex;
      std::condition_variable changed;
      gpu::timeline_point reached = 0;
      CUDACTOR_REQUIRE_OK(poller.subscribe(s, [&](const gpu::stream_progress& p) {
        std::lock_guard<std::mutex> lock{mutex};
        reached = std::max(reached, p.reached);
        changed.notify_all();
      }));
      auto hold = t.hold(s);
      const auto first = signal(b, s);
      gpu::timeline_point last = first;
      for (int i = 0; i < 99; ++i) last = signal(b, s);
      CUDACTOR_REQUIRE_OK(poller.watch_points(s, first, last));
      BOOST_TEST(poller.stats().in_flight <= 100u);
      hold->release();
      std::unique_lock<std::mutex> lock{mutex};
      BOOST_REQUIRE(changed.wait_for(lock, 20s, [&] { return reached == last; }));
      lock.unlock();
      const auto settle = std::chrono::steady_clock::now() + 20s;
      while (poller.stats().completed < 100u && std::chrono::steady_clock::now() < settle) {
        std::this_thread::sleep_for(1ms);
      }
      BOOST_TEST(poller.stats().completed == 100u);  // one answer per point
      BOOST_TEST(poller.stats().watches == 100u);
      CUDACTOR_CHECK_ERRC(poller.watch_points(s, 0, 3), gpu::status_code::invalid_argument);
      CUDACTOR_CHECK_ERRC(poller.watch_points(s, 5, 4), gpu::status_code::invalid_argument);
      CUDACTOR_CHECK_ERRC(poller.watch_points(gpu::stream_ref{}, 1, 1),
                          gpu::status_code::invalid_argument);
      poller.stop();
      CUDACTOR_CHECK_ERRC(poller.watch_points(s, last + 1, last + 1), gpu::status_code::cancelled);
    }
  }
}

inline void bad_input_is_refused(conformance_target& t) {
  auto& b = t.backend();
  recorder answers;
  gpu::completion_poller poller{b};
  BOOST_TEST(poller.watch(gpu::stream_ref{}, 1, std::nullopt, answers.callback()).code() ==
             gpu::status_code::invalid_argument);
  auto other = t.make_another();
  auto foreign = conformance::make_stream(*other, "foreign");
  BOOST_TEST(poller.watch(foreign, 1, std::nullopt, answers.callback()).code() ==
             gpu::status_code::foreign_handle);
  auto s = conformance::make_stream(b, "mine");
  BOOST_TEST(poller.watch(s, gpu::event_ref{}, std::nullopt, answers.callback()).code() ==
             gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(poller.subscribe(foreign, nullptr), gpu::status_code::foreign_handle);
  BOOST_TEST(!poller.cancel(gpu::watch_id{}));
  // Cancelling a watch the poller never made is accepted and answers nothing.
  BOOST_TEST(poller.cancel(gpu::watch_id{12345, s.ref().id()}));
  watch(poller, s, signal(b, s), answers.callback());
  BOOST_REQUIRE(answers.wait_for(1));
  BOOST_TEST(answers.results()[0].completed());
  gpu::poller_options bad;
  bad.max_interval = bad.min_interval / 2;
  BOOST_CHECK_THROW(gpu::completion_poller(b, bad), std::invalid_argument);
}

inline void a_stale_stream_is_answered_failed(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      auto s = conformance::make_stream(b, "gone");
      const gpu::stream_ref stale = s.ref();
      CUDACTOR_REQUIRE_OK(s.reset());
      watch(poller, stale, 1, answers.callback());
      BOOST_REQUIRE(answers.wait_for(1));
      BOOST_TEST(answers.results()[0].outcome == watch_outcome::failed);
      BOOST_TEST(answers.results()[0].error.code() == gpu::status_code::invalid_handle);
    }
  }
}

inline void callbacks_may_watch_cancel_and_throw(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      gpu::completion_poller poller{b, options_for(mode)};
      auto s = conformance::make_stream(b, "chain");
      std::atomic<int> links{0};
      std::atomic<int> refused{0};
      std::function<void(const watch_result&)> next = [&](const watch_result& r) {
        if (!r.completed()) return;
        if (++links == 100) throw std::runtime_error{"the last link throws"};
        auto point = b.signal(s);
        if (!point || !poller.watch(s, point.value(), std::nullopt, next)) ++refused;
      };
      watch(poller, s, signal(b, s), next);
      const auto give_up = std::chrono::steady_clock::now() + 20s;
      while (poller.stats().callback_errors == 0 && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(1ms);
      }
      BOOST_TEST(links.load() == 100);
      BOOST_TEST(refused.load() == 0);
      BOOST_TEST(poller.stats().callback_errors == 1u);
      // The loop goes on after a callback threw.
      recorder answers;
      watch(poller, s, signal(b, s), answers.callback());
      BOOST_TEST(answers.wait_for(1));
    }
  }
}

inline void stop_may_begin_inside_a_callback(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      auto s = conformance::make_stream(b, "stopper");
      auto hold_stream = conformance::make_stream(b, "held");
      auto hold = t.hold(hold_stream);
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      watch(poller, hold_stream, signal(b, hold_stream), answers.callback());
      watch(poller, s, signal(b, s), [&](const watch_result&) { poller.stop(); });
      BOOST_REQUIRE(answers.wait_for(1));  // the held watch is cancelled by that stop
      BOOST_TEST(answers.results()[0].outcome == watch_outcome::cancelled);
      BOOST_TEST(poller.watch(s, 1, std::nullopt, nullptr).code() == gpu::status_code::cancelled);
      poller.stop();  // joins
      hold->release();
    }
  }
}

inline void an_idle_poller_does_not_tick(conformance_target& t) {
  auto& b = t.backend();
  for (auto mode : both_modes) {
    BOOST_TEST_CONTEXT("mode " << mode) {
      recorder answers;
      gpu::completion_poller poller{b, options_for(mode)};
      auto s = conformance::make_stream(b, "once");
      watch(poller, s, signal(b, s), answers.callback());
      BOOST_REQUIRE(answers.wait_for(1));
      std::this_thread::sleep_for(20ms);  // let the loop go to sleep
      const auto before = poller.stats();
      std::this_thread::sleep_for(200ms);
      const auto after = poller.stats();
      BOOST_TEST(after.ticks == before.ticks);
      BOOST_TEST(after.in_flight == 0u);
    }
  }
}

}  // namespace cudactor::test::poller_conformance

#define CUDACTOR_POLLER_CASE(fixture, name) \
  BOOST_FIXTURE_TEST_CASE(name, fixture) { ::cudactor::test::poller_conformance::name(*this); }

#define CUDACTOR_POLLER_CASES(fixture)                                                   \
  CUDACTOR_POLLER_CASE(fixture, watches_on_a_stream_are_answered_in_stream_order)        \
  CUDACTOR_POLLER_CASE(fixture, watches_on_many_streams_are_all_answered)                \
  CUDACTOR_POLLER_CASE(fixture, an_event_watch_completes_after_the_work_before_it)       \
  CUDACTOR_POLLER_CASE(fixture, a_deadline_answers_timed_out_and_nothing_else)           \
  CUDACTOR_POLLER_CASE(fixture, cancel_before_completion_answers_cancelled_once)         \
  CUDACTOR_POLLER_CASE(fixture, cancel_after_completion_changes_nothing)                 \
  CUDACTOR_POLLER_CASE(fixture, cancels_racing_completions_still_answer_once)            \
  CUDACTOR_POLLER_CASE(fixture, stop_cancels_every_pending_watch_and_nothing_runs_after) \
  CUDACTOR_POLLER_CASE(fixture, destruction_without_stop_cancels_too)                    \
  CUDACTOR_POLLER_CASE(fixture, watches_from_many_threads_are_each_answered_once)        \
  CUDACTOR_POLLER_CASE(fixture, the_watchdog_reports_a_watch_that_never_completes)       \
  CUDACTOR_POLLER_CASE(fixture, progress_reports_how_far_a_stream_got)                   \
  CUDACTOR_POLLER_CASE(fixture, a_range_of_points_is_watched_in_one_call)                \
  CUDACTOR_POLLER_CASE(fixture, bad_input_is_refused)                                    \
  CUDACTOR_POLLER_CASE(fixture, a_stale_stream_is_answered_failed)                       \
  CUDACTOR_POLLER_CASE(fixture, callbacks_may_watch_cancel_and_throw)                    \
  CUDACTOR_POLLER_CASE(fixture, stop_may_begin_inside_a_callback)                        \
  CUDACTOR_POLLER_CASE(fixture, an_idle_poller_does_not_tick)
