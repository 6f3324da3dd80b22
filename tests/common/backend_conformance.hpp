// tests/common/backend_conformance.hpp
//
// The semantics every backend must share, written once and run against each: the host
// backend's tests run them on CPU threads, the CUDA backend's on a GPU. A target supplies
// the backend plus two ways to occupy a stream: hold() until released (deterministic
// ordering checks) and busy() for a duration (timing checks).
#pragma once

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cudactor/gpu/backend.hpp"
#include "printing.hpp"

namespace cudactor::test {

using namespace std::chrono_literals;

class conformance_target {
 public:
  // Holds a stream until release() or destruction.
  class hold_handle {
   public:
    virtual ~hold_handle() = default;
    virtual void release() = 0;
  };

  virtual ~conformance_target() = default;
  virtual gpu::backend& backend() = 0;
  // A second backend of the same kind, for foreign-handle checks.
  virtual std::unique_ptr<gpu::backend> make_another() = 0;
  virtual std::unique_ptr<hold_handle> hold(gpu::stream_ref s) = 0;
  virtual gpu::status busy(gpu::stream_ref s, std::chrono::milliseconds duration) = 0;
};

namespace conformance {

inline gpu::stream make_stream(gpu::backend& b, std::string name = {},
                               gpu::stream_priority p = gpu::stream_priority::normal) {
  auto made = b.create_stream({std::move(name), p});
  BOOST_REQUIRE_MESSAGE(made.ok(), made.error().to_string());
  return std::move(made).value();
}

inline gpu::event make_event(gpu::backend& b, gpu::event_kind kind = gpu::event_kind::regular) {
  auto made = b.create_event(kind);
  BOOST_REQUIRE_MESSAGE(made.ok(), made.error().to_string());
  return std::move(made).value();
}

#define CUDACTOR_REQUIRE_OK(expr)                                                               \
  do {                                                                                          \
    const ::cudactor::gpu::status cudactor_status_ = (expr);                                    \
    BOOST_REQUIRE_MESSAGE(cudactor_status_.ok(), #expr " -> " << cudactor_status_.to_string()); \
  } while (false)

#define CUDACTOR_CHECK_ERRC(expr, expected_errc)                                      \
  do {                                                                                \
    const ::cudactor::gpu::status cudactor_status_ = (expr);                          \
    BOOST_CHECK_MESSAGE(cudactor_status_.code() == (expected_errc),                   \
                        #expr " -> " << cudactor_status_.to_string() << ", expected " \
                                     << ::cudactor::gpu::to_string(expected_errc));   \
  } while (false)

inline void streams_carry_their_names_and_priorities(conformance_target& t) {
  auto& b = t.backend();
  auto high = make_stream(b, "compute-high", gpu::stream_priority::high);
  auto unnamed = make_stream(b, {}, gpu::stream_priority::low);
  BOOST_TEST(b.stream_name(high).value() == "compute-high");
  BOOST_TEST(b.priority(high).value() == gpu::stream_priority::high);
  BOOST_TEST(!b.stream_name(unnamed).value().empty());
  BOOST_TEST(b.priority(unnamed).value() == gpu::stream_priority::low);
  BOOST_TEST(b.health().ok());
}

inline void a_destroyed_stream_is_an_invalid_handle(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "doomed");
  const gpu::stream_ref stale = s.ref();
  auto e = make_event(b);
  CUDACTOR_REQUIRE_OK(s.reset());
  BOOST_TEST(!s.valid());
  CUDACTOR_CHECK_ERRC(b.record(e, stale), gpu::status_code::invalid_handle);
  CUDACTOR_CHECK_ERRC(b.wait(stale, e), gpu::status_code::invalid_handle);
  CUDACTOR_CHECK_ERRC(b.signal(stale).error(), gpu::status_code::invalid_handle);
  CUDACTOR_CHECK_ERRC(b.allocate(stale, 64).error(), gpu::status_code::invalid_handle);
  CUDACTOR_CHECK_ERRC(b.stream_name(stale).error(), gpu::status_code::invalid_handle);
  CUDACTOR_CHECK_ERRC(b.destroy_stream(stale), gpu::status_code::invalid_handle);
  CUDACTOR_CHECK_ERRC(b.add_callback(stale, [](const gpu::status&) {}), gpu::status_code::invalid_handle);
  CUDACTOR_CHECK_ERRC(b.native_handle(stale).error(), gpu::status_code::invalid_handle);
  // A destroyed event too: the reference is checked before the backend says it has no
  // native handles (the host backend said not_supported for any event).
  auto doomed_event = make_event(b);
  const gpu::event_ref stale_event = doomed_event.ref();
  CUDACTOR_REQUIRE_OK(doomed_event.reset());
  CUDACTOR_CHECK_ERRC(b.native_handle(stale_event).error(), gpu::status_code::invalid_handle);
  // The message names the stream.
  const auto why = b.record(e, stale);
  BOOST_TEST(why.message().find(gpu::to_string(stale.id())) != std::string::npos);
  // A slot reused by a new stream does not answer for the old reference.
  auto successor = make_stream(b, "successor");
  CUDACTOR_CHECK_ERRC(b.stream_name(stale).error(), gpu::status_code::invalid_handle);
  BOOST_TEST(b.failed_releases() == 0u);
}

inline void handles_of_another_backend_are_foreign(conformance_target& t) {
  auto& b = t.backend();
  auto other = t.make_another();
  auto theirs = make_stream(*other, "theirs");
  auto their_event = make_event(*other);
  auto mine = make_stream(b, "mine");
  auto my_event = make_event(b);
  CUDACTOR_CHECK_ERRC(b.record(my_event, theirs), gpu::status_code::foreign_handle);
  CUDACTOR_CHECK_ERRC(b.record(their_event, mine), gpu::status_code::foreign_handle);
  CUDACTOR_CHECK_ERRC(b.wait(mine, their_event), gpu::status_code::foreign_handle);
  CUDACTOR_CHECK_ERRC(b.query(their_event).error, gpu::status_code::foreign_handle);
  BOOST_TEST(b.query(their_event).failed());
  auto their_buffer = other->allocate(theirs, 64);
  BOOST_REQUIRE(their_buffer.ok());
  CUDACTOR_CHECK_ERRC(b.free_async(mine, their_buffer.value()), gpu::status_code::foreign_handle);
  BOOST_TEST(their_buffer.value().valid());
}

inline void empty_references_are_invalid_arguments(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  auto e = make_event(b);
  CUDACTOR_CHECK_ERRC(b.record(e, gpu::stream_ref{}), gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.record(gpu::event_ref{}, s), gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.enqueue(s, gpu::work_fn{}), gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.add_callback(s, gpu::host_callback{}), gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.create_event(static_cast<gpu::event_kind>(7)).error(),
                      gpu::status_code::invalid_argument);
}

inline void a_never_recorded_event_is_complete_and_waiting_on_it_does_not_wait(
    conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  auto never = make_event(b);
  BOOST_TEST(b.query(never).ready());
  CUDACTOR_REQUIRE_OK(b.wait(s, never));
  auto after = make_event(b);
  CUDACTOR_REQUIRE_OK(b.record(after, s));
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  BOOST_TEST(b.query(after).ready());
}

inline void an_event_completes_after_the_work_before_it(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  auto e = make_event(b);
  auto held = t.hold(s);
  CUDACTOR_REQUIRE_OK(b.record(e, s));
  BOOST_TEST(b.query(e).state == gpu::event_state::not_ready);
  held->release();
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  BOOST_TEST(b.query(e).ready());
}

inline void a_wait_orders_work_across_streams(conformance_target& t) {
  auto& b = t.backend();
  auto producer = make_stream(b, "producer");
  auto consumer = make_stream(b, "consumer");
  auto produced = make_event(b);
  auto consumed = make_event(b);
  auto held = t.hold(producer);
  CUDACTOR_REQUIRE_OK(b.record(produced, producer));
  CUDACTOR_REQUIRE_OK(b.wait(consumer, produced));
  CUDACTOR_REQUIRE_OK(b.record(consumed, consumer));
  std::this_thread::sleep_for(20ms);  // give the consumer every chance to run ahead wrongly
  BOOST_TEST(b.query(consumed).state == gpu::event_state::not_ready);
  held->release();
  CUDACTOR_REQUIRE_OK(b.synchronize(consumer));
  BOOST_TEST(b.query(produced).ready());
  BOOST_TEST(b.query(consumed).ready());
}

inline void a_wait_binds_to_the_record_current_at_the_call(conformance_target& t) {
  auto& b = t.backend();
  auto slow = make_stream(b, "slow");
  auto fast = make_stream(b, "fast");
  auto waiter = make_stream(b, "waiter");
  auto e = make_event(b);
  auto after = make_event(b);
  auto held = t.hold(slow);
  CUDACTOR_REQUIRE_OK(b.record(e, slow));
  CUDACTOR_REQUIRE_OK(b.wait(waiter, e));  // binds to the record on `slow`
  CUDACTOR_REQUIRE_OK(b.record(e, fast));  // re-recording is allowed and moves e on
  CUDACTOR_REQUIRE_OK(b.record(after, waiter));
  CUDACTOR_REQUIRE_OK(b.synchronize(fast));
  BOOST_TEST(b.query(e).ready());  // e now stands for the record on the idle stream
  std::this_thread::sleep_for(20ms);
  BOOST_TEST(b.query(after).state == gpu::event_state::not_ready);  // still bound to `slow`
  held->release();
  CUDACTOR_REQUIRE_OK(b.synchronize(waiter));
  BOOST_TEST(b.query(after).ready());
}

inline void a_point_wait_orders_work_across_streams(conformance_target& t) {
  auto& b = t.backend();
  auto producer = make_stream(b, "producer");
  auto consumer = make_stream(b, "consumer");
  auto consumed = make_event(b);
  auto first = b.signal(producer);  // reached before anything is held
  BOOST_REQUIRE(first.ok());
  CUDACTOR_REQUIRE_OK(b.synchronize(producer));
  CUDACTOR_REQUIRE_OK(b.wait_point(consumer, producer, first.value()));  // reached: no wait
  auto held = t.hold(producer);
  auto second = b.signal(producer);
  BOOST_REQUIRE(second.ok());
  CUDACTOR_CHECK_ERRC(b.wait_point(consumer, producer, second.value() + 1),
                      gpu::status_code::invalid_argument);          // not signalled yet
  CUDACTOR_REQUIRE_OK(b.wait_point(consumer, producer, 0));  // nothing to wait for
  CUDACTOR_REQUIRE_OK(b.wait_point(consumer, producer, second.value()));
  CUDACTOR_REQUIRE_OK(b.record(consumed, consumer));
  std::this_thread::sleep_for(20ms);  // give the consumer every chance to run ahead wrongly
  BOOST_TEST(b.query(consumed).state == gpu::event_state::not_ready);
  held->release();
  CUDACTOR_REQUIRE_OK(b.synchronize(consumer));
  BOOST_TEST(b.query(consumed).ready());
  auto gone = make_stream(b, "gone");
  const gpu::stream_ref stale = gone.ref();
  CUDACTOR_REQUIRE_OK(b.destroy_stream(stale));
  CUDACTOR_CHECK_ERRC(b.wait_point(consumer, stale, 1), gpu::status_code::invalid_handle);
  CUDACTOR_CHECK_ERRC(b.wait_point(stale, producer, 1), gpu::status_code::invalid_handle);
}

// order_after holds later work like wait_point; what it carries is tested per backend (a
// failure only the host backend can inject).
inline void an_order_holds_work_until_the_point(conformance_target& t) {
  auto& b = t.backend();
  auto producer = make_stream(b, "producer");
  auto consumer = make_stream(b, "consumer");
  auto consumed = make_event(b);
  auto held = t.hold(producer);
  auto point = b.signal(producer);
  BOOST_REQUIRE(point.ok());
  CUDACTOR_CHECK_ERRC(b.order_after(consumer, producer, point.value() + 1),
                      gpu::status_code::invalid_argument);  // not signalled yet
  CUDACTOR_REQUIRE_OK(b.order_after(consumer, producer, point.value()));
  CUDACTOR_REQUIRE_OK(b.record(consumed, consumer));
  std::this_thread::sleep_for(20ms);
  BOOST_TEST(b.query(consumed).state == gpu::event_state::not_ready);
  held->release();
  CUDACTOR_REQUIRE_OK(b.synchronize(consumer));
  BOOST_TEST(b.query(consumed).ready());
}

inline void elapsed_time_is_plausible(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  auto start = make_event(b, gpu::event_kind::timing);
  auto end = make_event(b, gpu::event_kind::timing);
  CUDACTOR_REQUIRE_OK(b.record(start, s));
  CUDACTOR_REQUIRE_OK(t.busy(s, 25ms));
  CUDACTOR_REQUIRE_OK(b.record(end, s));
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  auto took = b.elapsed(start, end);
  BOOST_REQUIRE_MESSAGE(took.ok(), took.error().to_string());
  BOOST_TEST(took.value() >= 24ms);
  BOOST_TEST(took.value() < 5s);
}

inline void elapsed_needs_recorded_complete_timing_events(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  auto regular = make_event(b, gpu::event_kind::regular);
  auto start = make_event(b, gpu::event_kind::timing);
  auto end = make_event(b, gpu::event_kind::timing);
  CUDACTOR_CHECK_ERRC(b.elapsed(start, end).error(), gpu::status_code::not_recorded);
  CUDACTOR_REQUIRE_OK(b.record(regular, s));
  CUDACTOR_REQUIRE_OK(b.record(start, s));
  CUDACTOR_CHECK_ERRC(b.elapsed(regular, start).error(), gpu::status_code::not_timing);
  auto held = t.hold(s);
  CUDACTOR_REQUIRE_OK(b.record(end, s));
  CUDACTOR_CHECK_ERRC(b.elapsed(start, end).error(), gpu::status_code::not_ready);
  held->release();
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  BOOST_TEST(b.elapsed(start, end).ok());
  // Over failed work: not_ready while the work before is unfinished (CUDA knows of the
  // failure at once, yet answers as the host does), then the failure itself.
  held = t.hold(s);
  (void)b.enqueue(s, [](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "refused by the test"};
  });
  CUDACTOR_REQUIRE_OK(b.record(end, s));
  CUDACTOR_CHECK_ERRC(b.elapsed(start, end).error(), gpu::status_code::not_ready);
  held->release();
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  const auto over_failure = b.elapsed(start, end);
  BOOST_REQUIRE(!over_failure.ok());
  CUDACTOR_CHECK_ERRC(over_failure.error(), gpu::status_code::op_failed);
  BOOST_TEST(over_failure.error().message().find("refused by the test") != std::string::npos,
             over_failure.error().to_string());
}

inline void copies_and_fills_round_trip(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "copies");
  constexpr std::size_t n = 1 << 16;
  auto pinned = b.allocate_pinned(n);
  BOOST_REQUIRE_MESSAGE(pinned.ok(), pinned.error().to_string());
  auto first = b.allocate(s, n);
  auto second = b.allocate(s, n);
  BOOST_REQUIRE(first.ok() && second.ok());
  BOOST_TEST(first.value().kind() == gpu::memory_kind::device);
  BOOST_TEST(first.value().size() == n);
  auto* source = pinned.value().as<std::uint8_t>();
  for (std::size_t i = 0; i < n; ++i) source[i] = static_cast<std::uint8_t>(i * 7 + 3);
  // Pinned both ways: CUDA refuses copies to or from pageable memory (they block the caller).
  auto landing = b.allocate_pinned(n);
  BOOST_REQUIRE(landing.ok());
  auto* back = landing.value().as<std::uint8_t>();
  std::fill(back, back + n, std::uint8_t{0});
  CUDACTOR_REQUIRE_OK(b.copy(s, first.value().data(), source, n, gpu::copy_kind::host_to_device));
  CUDACTOR_REQUIRE_OK(
      b.copy(s, second.value().data(), first.value().data(), n, gpu::copy_kind::device_to_device));
  CUDACTOR_REQUIRE_OK(b.fill(s, second.value().as<std::uint8_t>() + 100, 0xAB, 50));
  CUDACTOR_REQUIRE_OK(b.copy(s, back, second.value().data(), n, gpu::copy_kind::device_to_host));
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  bool same = true;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t want =
        (i >= 100 && i < 150) ? std::uint8_t{0xAB} : static_cast<std::uint8_t>(i * 7 + 3);
    same = same && back[i] == want;
  }
  BOOST_TEST(same);
}

inline void copies_are_checked_against_their_allocations(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  auto device = b.allocate(s, 256);
  BOOST_REQUIRE(device.ok());
  std::vector<std::uint8_t> host(1024);
  void* d = device.value().data();
  using gpu::copy_kind;
  using gpu::status_code;
  CUDACTOR_CHECK_ERRC(b.copy(s, d, host.data(), 0, copy_kind::host_to_device),
                      status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.copy(s, nullptr, host.data(), 16, copy_kind::host_to_device),
                      status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.copy(s, d, nullptr, 16, copy_kind::host_to_device), status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.copy(s, d, host.data(), 257, copy_kind::host_to_device),
                      status_code::out_of_range);
  CUDACTOR_CHECK_ERRC(
      b.copy(s, static_cast<std::uint8_t*>(d) + 200, host.data(), 100, copy_kind::host_to_device),
      status_code::out_of_range);
  CUDACTOR_CHECK_ERRC(b.copy(s, host.data(), d, 512, copy_kind::device_to_host),
                      status_code::out_of_range);
  CUDACTOR_CHECK_ERRC(b.copy(s, host.data(), d, 16, copy_kind::host_to_device),
                      status_code::invalid_argument);  // device memory given as the host source
  CUDACTOR_CHECK_ERRC(
      b.copy(s, d, static_cast<std::uint8_t*>(d) + 8, 16, copy_kind::device_to_device),
      status_code::invalid_argument);  // overlap
  CUDACTOR_CHECK_ERRC(b.fill(s, d, 0, 0), status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.fill(s, d, 0, 1000), status_code::out_of_range);
  CUDACTOR_CHECK_ERRC(b.fill(s, nullptr, 0, 8), status_code::invalid_argument);
  const auto why = b.copy(s, d, host.data(), 257, copy_kind::host_to_device);
  BOOST_TEST(why.message().find("overruns") != std::string::npos);
  // Nothing bad was enqueued: the stream still works.
  auto pinned = b.allocate_pinned(256);
  BOOST_REQUIRE(pinned.ok());
  CUDACTOR_REQUIRE_OK(b.copy(s, d, pinned.value().data(), 256, copy_kind::host_to_device));
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
}

// What CUDA refuses, both refuse: a copy from or to pageable host memory (it would block the
// caller), named as such; pinned and managed host memory are taken both ways.
inline void copies_from_or_to_pageable_memory_are_refused(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  auto device = b.allocate(s, 256);
  BOOST_REQUIRE(device.ok());
  std::vector<std::uint8_t> pageable(256);
  using gpu::copy_kind;
  for (auto direction : {copy_kind::host_to_device, copy_kind::device_to_host}) {
    const auto why = direction == copy_kind::host_to_device
                         ? b.copy(s, device.value().data(), pageable.data(), 256, direction)
                         : b.copy(s, pageable.data(), device.value().data(), 256, direction);
    CUDACTOR_CHECK_ERRC(why, gpu::status_code::invalid_argument);
    BOOST_TEST(why.message().find("pageable") != std::string::npos, why.message());
    BOOST_TEST(why.message().find("allocate_pinned") != std::string::npos, why.message());
  }
  auto pinned = b.allocate_pinned(256);
  auto managed = b.allocate_managed(256);
  BOOST_REQUIRE(pinned.ok() && managed.ok());
  std::fill(pinned.value().as<std::uint8_t>(), pinned.value().as<std::uint8_t>() + 256, 7);
  CUDACTOR_REQUIRE_OK(
      b.copy(s, device.value().data(), pinned.value().data(), 256, copy_kind::host_to_device));
  CUDACTOR_REQUIRE_OK(
      b.copy(s, managed.value().data(), device.value().data(), 256, copy_kind::device_to_host));
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  BOOST_TEST(managed.value().as<std::uint8_t>()[255] == 7);
}

inline void allocation_sizes_are_checked(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  CUDACTOR_CHECK_ERRC(b.allocate(s, 0).error(), gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.allocate_managed(0).error(), gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.allocate_pinned(0).error(), gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.allocate(s, std::size_t{1} << 60).error(), gpu::status_code::out_of_memory);
  // The arguments are checked before the stream: zero bytes on a destroyed stream is the
  // size's fault on both backends.
  auto doomed = make_stream(b, "doomed");
  const gpu::stream_ref gone = doomed.ref();
  CUDACTOR_REQUIRE_OK(doomed.reset());
  CUDACTOR_CHECK_ERRC(b.allocate(gone, 0).error(), gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.allocate(gone, 64).error(), gpu::status_code::invalid_handle);
  // The backend is still usable after refusing.
  auto fine = b.allocate(s, 4096);
  BOOST_TEST(fine.ok());
  BOOST_TEST(b.health().ok());
}

inline void stream_ordered_free_releases_in_stream_order(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "alloc");
  auto other = make_stream(b, "other");
  auto memory = b.allocate(s, 1024);
  BOOST_REQUIRE(memory.ok());
  CUDACTOR_REQUIRE_OK(b.fill(s, memory.value().data(), 1, 1024));
  CUDACTOR_REQUIRE_OK(b.free_async(s, memory.value()));
  BOOST_TEST(!memory.value().valid());
  CUDACTOR_CHECK_ERRC(b.free_async(s, memory.value()), gpu::status_code::invalid_argument);  // empty
  // Freeing on a destroyed stream leaves the caller its buffer.
  auto kept = b.allocate(other, 64);
  BOOST_REQUIRE(kept.ok());
  auto doomed = make_stream(b, "doomed");
  const gpu::stream_ref stale = doomed.ref();
  CUDACTOR_REQUIRE_OK(doomed.reset());
  CUDACTOR_CHECK_ERRC(b.free_async(stale, kept.value()), gpu::status_code::invalid_handle);
  BOOST_TEST(kept.value().valid());
  // Managed memory is not freed in stream order.
  auto managed = b.allocate_managed(64);
  BOOST_REQUIRE(managed.ok());
  CUDACTOR_CHECK_ERRC(b.free_async(s, managed.value()), gpu::status_code::invalid_argument);
  BOOST_TEST(managed.value().valid());
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  BOOST_TEST(b.failed_releases() == 0u);
}

// Memory handed to free_async is no one's: a copy or fill on it is refused ("being freed") on
// both backends, before and after the stream has passed the free (CUDA cannot tell when), and
// a free that fails leaves the buffer to its owner.
inline void memory_being_freed_is_refused(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "freeing");
  auto memory = b.allocate(s, 1024);
  auto pinned = b.allocate_pinned(1024);
  BOOST_REQUIRE(memory.ok() && pinned.ok());
  void* const freed = memory.value().data();
  auto* const inside = static_cast<std::uint8_t*>(freed) + 512;
  using gpu::copy_kind;
  for (int passed = 0; passed < 2; ++passed) {
    std::unique_ptr<conformance_target::hold_handle> held;
    if (passed == 0) {
      held = t.hold(s);
      CUDACTOR_REQUIRE_OK(b.free_async(s, memory.value()));
      BOOST_TEST(!memory.value().valid());
    }
    const auto fill = b.fill(s, inside, 0, 16);
    CUDACTOR_CHECK_ERRC(fill, gpu::status_code::invalid_argument);
    const auto into = b.copy(s, freed, pinned.value().data(), 1024, copy_kind::host_to_device);
    CUDACTOR_CHECK_ERRC(into, gpu::status_code::invalid_argument);
    const auto out = b.copy(s, pinned.value().data(), inside, 16, copy_kind::device_to_host);
    CUDACTOR_CHECK_ERRC(out, gpu::status_code::invalid_argument);
    if (passed == 0) {
      BOOST_TEST(fill.message().find("being freed") != std::string::npos, fill.message());
      BOOST_TEST(into.message().find("being freed") != std::string::npos, into.message());
      held->release();
      CUDACTOR_REQUIRE_OK(b.synchronize(s));
    }
  }
  // Memory allocated there again is the new owner's.
  auto again = b.allocate(s, 1024);
  BOOST_REQUIRE(again.ok());
  CUDACTOR_REQUIRE_OK(b.fill(s, again.value().data(), 3, 1024));
  CUDACTOR_REQUIRE_OK(
      b.copy(s, pinned.value().data(), again.value().data(), 1024, copy_kind::device_to_host));
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  BOOST_TEST(pinned.value().as<std::uint8_t>()[1023] == 3);
  BOOST_TEST(b.failed_releases() == 0u);
}

inline void prefetch_takes_managed_memory(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  auto managed = b.allocate_managed(4096);
  auto device = b.allocate(s, 4096);
  BOOST_REQUIRE(managed.ok() && device.ok());
  CUDACTOR_REQUIRE_OK(b.prefetch(s, managed.value().data(), 4096, gpu::prefetch_target::device));
  CUDACTOR_REQUIRE_OK(b.prefetch(s, managed.value().data(), 4096, gpu::prefetch_target::host));
  CUDACTOR_CHECK_ERRC(b.prefetch(s, device.value().data(), 4096, gpu::prefetch_target::device),
                      gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(b.prefetch(s, managed.value().data(), 8192, gpu::prefetch_target::device),
                      gpu::status_code::out_of_range);
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
}

inline void host_callbacks_run_once_in_stream_order(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  std::mutex mutex;
  std::vector<int> order;
  std::atomic<int> failures{0};
  auto held = t.hold(s);
  for (int i = 1; i <= 3; ++i) {
    CUDACTOR_REQUIRE_OK(b.add_callback(s, [&, i](const gpu::status& outcome) {
      if (!outcome.ok()) ++failures;
      std::lock_guard<std::mutex> lock{mutex};
      order.push_back(i);
    }));
  }
  std::this_thread::sleep_for(10ms);
  {
    std::lock_guard<std::mutex> lock{mutex};
    BOOST_TEST(order.empty());
  }
  held->release();
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  std::lock_guard<std::mutex> lock{mutex};
  BOOST_TEST(order == (std::vector<int>{1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(failures.load() == 0);
}

inline void timeline_values_are_reached_in_order(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "timed");
  auto line = b.timeline_of(s);
  BOOST_REQUIRE(line.ok());
  auto& tl = *line.value();
  BOOST_TEST(tl.signalled() == 0u);
  BOOST_TEST(tl.completed() == 0u);
  auto held = t.hold(s);
  for (gpu::timeline_point want = 1; want <= 3; ++want) {
    auto value = b.signal(s);
    BOOST_REQUIRE(value.ok());
    BOOST_TEST(value.value() == want);
  }
  BOOST_TEST(tl.signalled() == 3u);
  BOOST_TEST(tl.completed() == 0u);
  BOOST_TEST(!tl.is_reached(1));
  BOOST_TEST(tl.query(1).state == gpu::event_state::not_ready);
  CUDACTOR_CHECK_ERRC(tl.wait(1, 20ms), gpu::status_code::timeout);
  held->release();
  CUDACTOR_REQUIRE_OK(tl.wait(3, 0ms));
  BOOST_TEST(tl.completed() == 3u);
  BOOST_TEST(tl.query(2).ready());
  CUDACTOR_REQUIRE_OK(tl.wait(2, 10ms));  // reached values answer at once
}

// Work that fails (at launch on CUDA, when run on the host) fails the point signalled after
// it, for whoever reads the timeline: its wait and query answer the work's words, and a
// wait_point on it from another stream carries the failure, refused at once (CUDA, which
// knows it at launch) or failing that stream's next point (host). The point after, with clean
// work before it, is reached cleanly.
inline void failed_work_fails_the_point_after_it(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "failing");
  auto other = make_stream(b, "waiting");
  auto line = b.timeline_of(s);
  BOOST_REQUIRE(line.ok());
  auto& tl = *line.value();
  (void)b.enqueue(s, [](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "refused by the test"};
  });
  auto point = b.signal(s);
  BOOST_REQUIRE(point.ok());
  const auto waited = tl.wait(point.value(), 5000ms);
  BOOST_TEST(!waited.ok());
  BOOST_TEST(waited.message().find("refused by the test") != std::string::npos, waited.to_string());
  BOOST_TEST(tl.query(point.value()).failed());

  const auto carried = b.wait_point(other, s, point.value());
  if (carried.ok()) {
    auto after = b.signal(other);
    BOOST_REQUIRE(after.ok());
    auto other_line = b.timeline_of(other);
    BOOST_REQUIRE(other_line.ok());
    const auto failed = other_line.value()->wait(after.value(), 5000ms);
    BOOST_TEST(failed.message().find("refused by the test") != std::string::npos,
               failed.to_string());
  } else {
    BOOST_TEST(carried.message().find("refused by the test") != std::string::npos,
               carried.to_string());
  }
  CUDACTOR_REQUIRE_OK(b.order_after(other, s, point.value()));  // an order carries nothing

  CUDACTOR_REQUIRE_OK(t.busy(s, 0ms));
  auto next = b.signal(s);
  BOOST_REQUIRE(next.ok());
  CUDACTOR_REQUIRE_OK(tl.wait(next.value(), 5000ms));
  BOOST_TEST(tl.query(next.value()).ready());
}

// Work that answers a failure, whatever its code (device_lost included: only the device can
// say it is lost), fails its stream's next point with "work on <stream> failed: <code>: ..."
// and the stream goes on. enqueue answers the failure at once on CUDA (the work is the
// launch) and ok on the host (the work runs later, on the stream): either way the words are
// the same. With enqueue_signalled the point is placed and fails.
inline void work_failing_with_any_code_fails_the_point_after_it(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "failing");
  auto line = b.timeline_of(s);
  BOOST_REQUIRE(line.ok());
  auto& tl = *line.value();
  for (auto c = static_cast<std::uint8_t>(gpu::status_code::invalid_argument);
       c <= static_cast<std::uint8_t>(gpu::status_code::cancelled); ++c) {
    const auto code = static_cast<gpu::status_code>(c);
    const std::string words =
        "failed: " + std::string{gpu::to_string(code)} + ": refused by the test";
    auto fails = [code](const gpu::launch_context&) {
      return gpu::status{code, "refused by the test"};
    };
    const auto answered = b.enqueue(s, fails);
    BOOST_TEST((answered.ok() || answered.code() == gpu::status_code::op_failed),
               answered.to_string());
    if (!answered.ok()) BOOST_TEST(answered.message().find(words) != std::string::npos);
    auto point = b.signal(s);
    BOOST_REQUIRE_MESSAGE(point.ok(), point.error().to_string());
    const auto waited = tl.wait(point.value(), 5000ms);
    BOOST_TEST(waited.code() == gpu::status_code::op_failed, waited.to_string());
    BOOST_TEST(waited.message().find(words) != std::string::npos, waited.to_string());
    auto both = b.enqueue_signalled(s, fails);
    BOOST_REQUIRE_MESSAGE(both.point.ok(), both.point.error().to_string());
    const auto own = tl.wait(both.point.value(), 5000ms);
    BOOST_TEST(own.message().find(words) != std::string::npos, own.to_string());
    // The stream goes on, and the backend is not lost.
    auto fine = b.enqueue_signalled(s, [](const gpu::launch_context&) { return gpu::status{}; });
    CUDACTOR_REQUIRE_OK(fine.launched);
    BOOST_REQUIRE(fine.point.ok());
    CUDACTOR_REQUIRE_OK(tl.wait(fine.point.value(), 5000ms));
    CUDACTOR_REQUIRE_OK(b.health());
  }
}

// enqueue_signalled is enqueue then signal in one call: its points take their place among
// signal()'s, its work's failure (at launch on CUDA, when run on the host) fails its own
// point and not the next, an empty work is refused while its point is still marked, and a
// destroyed stream refuses both.
inline void work_enqueued_with_its_point_fails_only_that_point(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "signalled");
  auto line = b.timeline_of(s);
  BOOST_REQUIRE(line.ok());
  auto& tl = *line.value();
  const auto fine = [](const gpu::launch_context&) { return gpu::status{}; };
  auto held = t.hold(s);
  auto first = b.enqueue_signalled(s, fine);
  CUDACTOR_REQUIRE_OK(first.launched);
  BOOST_REQUIRE(first.point.ok());
  BOOST_TEST(first.point.value() == 1u);
  auto plain = b.signal(s);
  BOOST_REQUIRE(plain.ok());
  BOOST_TEST(plain.value() == 2u);
  auto failing = b.enqueue_signalled(s, [](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "refused by the test"};
  });
  BOOST_REQUIRE(failing.point.ok());
  BOOST_TEST(failing.point.value() == 3u);
  auto after = b.enqueue_signalled(s, fine);
  CUDACTOR_REQUIRE_OK(after.launched);
  BOOST_REQUIRE(after.point.ok());
  BOOST_TEST(after.point.value() == 4u);
  BOOST_TEST(tl.completed() == 0u);
  held->release();
  CUDACTOR_REQUIRE_OK(tl.wait(2, 5000ms));
  const auto failed = tl.wait(3, 5000ms);
  BOOST_TEST(failed.message().find("refused by the test") != std::string::npos, failed.to_string());
  CUDACTOR_REQUIRE_OK(tl.wait(4, 5000ms));
  BOOST_TEST(tl.query(1).ready());
  BOOST_TEST(tl.query(3).failed());
  BOOST_TEST(tl.query(4).ready());

  auto empty = b.enqueue_signalled(s, gpu::work_fn{});
  CUDACTOR_CHECK_ERRC(empty.launched, gpu::status_code::invalid_argument);
  BOOST_REQUIRE(empty.point.ok());
  BOOST_TEST(empty.point.value() == 5u);
  CUDACTOR_REQUIRE_OK(tl.wait(5, 5000ms));

  const gpu::stream_ref gone = s.ref();
  CUDACTOR_REQUIRE_OK(s.reset());
  auto refused = b.enqueue_signalled(gone, fine);
  CUDACTOR_CHECK_ERRC(refused.launched, gpu::status_code::invalid_handle);
  BOOST_REQUIRE(!refused.point.ok());
  CUDACTOR_CHECK_ERRC(refused.point.error(), gpu::status_code::invalid_handle);
}

// The first event recorded after failed work reports the failure, once; a stream that waits
// on that event reports dependency_failed at its next point; the timeline's next point fails
// all the same (an event in between does not take it from the timeline).
inline void failed_work_fails_the_first_event_after_it(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "failing");
  auto other = make_stream(b, "waiting");
  auto first = make_event(b);
  auto second = make_event(b);
  (void)b.enqueue(s, [](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "refused by the test"};
  });
  CUDACTOR_REQUIRE_OK(b.record(first, s));
  CUDACTOR_REQUIRE_OK(b.record(second, s));
  auto point = b.signal(s);
  BOOST_REQUIRE(point.ok());
  CUDACTOR_REQUIRE_OK(b.wait(other, first));
  auto after = b.signal(other);
  BOOST_REQUIRE(after.ok());
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  const auto one = b.query(first);
  BOOST_TEST(one.failed());
  BOOST_TEST(one.error.message().find("refused by the test") != std::string::npos,
             one.error.to_string());
  BOOST_TEST(b.query(second).ready());  // once
  auto line = b.timeline_of(s);
  BOOST_REQUIRE(line.ok());
  BOOST_TEST(line.value()->query(point.value()).failed());
  auto other_line = b.timeline_of(other);
  BOOST_REQUIRE(other_line.ok());
  const auto carried = other_line.value()->wait(after.value(), 5000ms);
  BOOST_TEST(carried.code() == gpu::status_code::dependency_failed, carried.to_string());
  BOOST_TEST(carried.message().find("refused by the test") != std::string::npos,
             carried.to_string());
}

// Each backend bounds the signalled values in flight per stream (on CUDA each holds an event,
// and a full stream would block the caller): the one past the bound is refused, with its work
// or alone, and room comes back as the stream moves on.
inline void signals_past_the_in_flight_bound_are_refused(conformance_target& t) {
  auto& b = t.backend();
  const std::size_t bound = b.max_in_flight();
  BOOST_REQUIRE(bound >= 1u);
  BOOST_REQUIRE(bound <= 1024u);  // below the ~1000 operations a CUDA stream queues
  auto s = make_stream(b, "bounded");
  auto held = t.hold(s);
  gpu::timeline_point last = 0;
  for (std::size_t i = 0; i < bound; ++i) {
    auto value = b.signal(s);
    BOOST_REQUIRE_MESSAGE(value.ok(), value.error().to_string());
    last = value.value();
  }
  CUDACTOR_CHECK_ERRC(b.signal(s).error(), gpu::status_code::resource_exhausted);
  // With its work: neither goes on the stream (the work is never run), as a refused signal.
  auto ran = std::make_shared<std::atomic<bool>>(false);
  auto both = b.enqueue_signalled(s, [ran](const gpu::launch_context&) {
    ran->store(true);
    return gpu::status{};
  });
  CUDACTOR_CHECK_ERRC(both.launched, gpu::status_code::resource_exhausted);
  CUDACTOR_CHECK_ERRC(both.point.error(), gpu::status_code::resource_exhausted);
  held->release();
  auto line = b.timeline_of(s);
  BOOST_REQUIRE(line.ok());
  CUDACTOR_REQUIRE_OK(line.value()->wait(last, 10s));
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  auto again = b.signal(s);
  BOOST_REQUIRE_MESSAGE(again.ok(), again.error().to_string());
  BOOST_TEST(again.value() == last + 1);
  CUDACTOR_REQUIRE_OK(b.synchronize(s));
  BOOST_TEST(!ran->load());
}

inline void a_timeline_outlives_its_stream(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b);
  auto line = b.timeline_of(s);
  BOOST_REQUIRE(line.ok());
  auto held = t.hold(s);
  auto value = b.signal(s);
  BOOST_REQUIRE(value.ok());
  CUDACTOR_REQUIRE_OK(s.reset());  // enqueued work still runs
  held->release();
  CUDACTOR_REQUIRE_OK(line.value()->wait(value.value(), 0ms));
}

inline void moving_an_owning_handle_over_a_live_one_destroys_the_old(conformance_target& t) {
  auto& b = t.backend();
  auto a = make_stream(b, "a");
  auto c = make_stream(b, "c");
  const gpu::stream_ref old = a.ref();
  a = std::move(c);
  CUDACTOR_CHECK_ERRC(b.stream_name(old).error(), gpu::status_code::invalid_handle);
  BOOST_TEST(b.stream_name(a).value() == "c");
  BOOST_TEST(!c.valid());
  auto e = make_event(b);
  auto f = make_event(b);
  const gpu::event_ref old_event = e.ref();
  e = std::move(f);
  CUDACTOR_CHECK_ERRC(b.query(old_event).error, gpu::status_code::invalid_handle);
  auto memory = b.allocate(a, 64);
  auto more = b.allocate(a, 64);
  BOOST_REQUIRE(memory.ok() && more.ok());
  memory.value() = std::move(more.value());
  BOOST_TEST(memory.value().valid());
  CUDACTOR_REQUIRE_OK(b.synchronize(a));
  BOOST_TEST(b.failed_releases() == 0u);
}

// A work's scratch (launch_context::scratch): blocks of its own for the run, aligned, each
// apart from the others; 0 bytes refused, more than the device has refused as out of memory
// (and the work goes on); a context made by hand has none.
inline void a_work_takes_scratch_for_its_run(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "scratch");
  struct seen {
    std::vector<std::uintptr_t> blocks;
    gpu::status zero;
    gpu::status huge;
  };
  auto got = std::make_shared<seen>();
  const std::vector<std::size_t> sizes{1, 1000, 4096};
  CUDACTOR_REQUIRE_OK(b.enqueue(s.ref(), [got, sizes](const gpu::launch_context& on) {
    for (const std::size_t bytes : sizes) {
      auto block = on.scratch(bytes);
      if (!block) return block.error();
      got->blocks.push_back(reinterpret_cast<std::uintptr_t>(block.value()));
    }
    got->zero = on.scratch(0).error();
    got->huge = on.scratch(std::size_t{1} << 50).error();
    return gpu::status{};
  }));
  CUDACTOR_REQUIRE_OK(b.synchronize(s.ref()));
  BOOST_REQUIRE(got->blocks.size() == sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    BOOST_TEST(got->blocks[i] % gpu::launch_context::scratch_alignment == 0u);
    for (std::size_t j = 0; j < i; ++j) {
      const bool apart = got->blocks[j] + sizes[j] <= got->blocks[i] ||
                         got->blocks[i] + sizes[i] <= got->blocks[j];
      BOOST_TEST(apart, "scratch blocks " << j << " and " << i << " overlap");
    }
  }
  CUDACTOR_CHECK_ERRC(got->zero, gpu::status_code::invalid_argument);
  CUDACTOR_CHECK_ERRC(got->huge, gpu::status_code::out_of_memory);
  const gpu::launch_context by_hand{b.device().kind, gpu::stream_ref{}, nullptr};
  CUDACTOR_CHECK_ERRC(by_hand.scratch(64).error(), gpu::status_code::invalid_argument);
}

// What a work started that ends after it (launch_context::fail_later): on CUDA a late failure
// told before the device reaches the work's point fails that point and no other (told while
// the work runs, it waits for the point to be signalled), the first told counts, and one
// told once the point was reached leaves it reached. The host backend hands none: its work
// has ended by its point.
inline void a_late_failure_fails_the_point_unless_reached(conformance_target& t) {
  auto& b = t.backend();
  auto s = make_stream(b, "late");
  auto line = b.timeline_of(s.ref());
  BOOST_REQUIRE(line.ok());
  auto handed = std::make_shared<std::vector<std::shared_ptr<gpu::late_failure>>>();
  const auto take = [handed](const gpu::launch_context& on) {
    handed->push_back(on.fail_later());
    return gpu::status{};
  };
  auto held = t.hold(s.ref());
  auto first = b.enqueue_signalled(s.ref(), take);
  auto second = b.enqueue_signalled(s.ref(), take);
  auto third = b.enqueue_signalled(s.ref(), [](const gpu::launch_context& on) {
    if (auto late = on.fail_later()) late->fail({gpu::status_code::op_failed, "told early"});
    return gpu::status{};
  });
  for (const auto* w : {&first, &second, &third}) {
    CUDACTOR_REQUIRE_OK(w->launched);
    BOOST_REQUIRE(w->point.ok());
  }
  const auto wait = [&](const gpu::signalled_work& w) {
    return line.value()->wait(w.point.value(), std::chrono::seconds{10});
  };
  if (b.device().kind == gpu::backend_kind::host) {
    held->release();
    for (const auto* w : {&first, &second, &third}) CUDACTOR_REQUIRE_OK(wait(*w));
    BOOST_REQUIRE(handed->size() == 2u);
    for (const auto& late : *handed) BOOST_TEST(late == nullptr);
    return;
  }
  BOOST_REQUIRE(handed->size() == 2u);  // on CUDA the works ran at enqueue
  BOOST_REQUIRE(handed->at(0) != nullptr);
  BOOST_REQUIRE(handed->at(1) != nullptr);
  handed->at(0)->fail({gpu::status_code::op_failed, "ended late as asked"});
  handed->at(0)->fail({gpu::status_code::op_failed, "a second time"});
  held->release();
  const gpu::status failed = wait(first);
  CUDACTOR_CHECK_ERRC(failed, gpu::status_code::op_failed);
  BOOST_TEST(failed.message().find("ended late as asked") != std::string::npos, failed.message());
  CUDACTOR_REQUIRE_OK(wait(second));
  const gpu::status early = wait(third);
  BOOST_TEST(early.message().find("told early") != std::string::npos, early.message());
  handed->at(1)->fail({gpu::status_code::op_failed, "too late"});
  BOOST_TEST(line.value()->query(second.point.value()).ready());
}

}  // namespace conformance

// Instantiates every conformance check as a test case of the current suite.
#define CUDACTOR_CONFORMANCE_CASE(fixture, name) \
  BOOST_FIXTURE_TEST_CASE(name, fixture) { ::cudactor::test::conformance::name(*this); }

#define CUDACTOR_CONFORMANCE_CASES(fixture)                                                     \
  CUDACTOR_CONFORMANCE_CASE(fixture, streams_carry_their_names_and_priorities)                  \
  CUDACTOR_CONFORMANCE_CASE(fixture, a_destroyed_stream_is_an_invalid_handle)                   \
  CUDACTOR_CONFORMANCE_CASE(fixture, handles_of_another_backend_are_foreign)                    \
  CUDACTOR_CONFORMANCE_CASE(fixture, empty_references_are_invalid_arguments)                    \
  CUDACTOR_CONFORMANCE_CASE(fixture,                                                            \
                            a_never_recorded_event_is_complete_and_waiting_on_it_does_not_wait) \
  CUDACTOR_CONFORMANCE_CASE(fixture, an_event_completes_after_the_work_before_it)               \
  CUDACTOR_CONFORMANCE_CASE(fixture, a_wait_orders_work_across_streams)                         \
  CUDACTOR_CONFORMANCE_CASE(fixture, a_wait_binds_to_the_record_current_at_the_call)            \
  CUDACTOR_CONFORMANCE_CASE(fixture, a_point_wait_orders_work_across_streams)                   \
  CUDACTOR_CONFORMANCE_CASE(fixture, an_order_holds_work_until_the_point)                       \
  CUDACTOR_CONFORMANCE_CASE(fixture, elapsed_time_is_plausible)                                 \
  CUDACTOR_CONFORMANCE_CASE(fixture, elapsed_needs_recorded_complete_timing_events)             \
  CUDACTOR_CONFORMANCE_CASE(fixture, copies_and_fills_round_trip)                               \
  CUDACTOR_CONFORMANCE_CASE(fixture, copies_are_checked_against_their_allocations)              \
  CUDACTOR_CONFORMANCE_CASE(fixture, copies_from_or_to_pageable_memory_are_refused)             \
  CUDACTOR_CONFORMANCE_CASE(fixture, allocation_sizes_are_checked)                              \
  CUDACTOR_CONFORMANCE_CASE(fixture, stream_ordered_free_releases_in_stream_order)              \
  CUDACTOR_CONFORMANCE_CASE(fixture, memory_being_freed_is_refused)                             \
  CUDACTOR_CONFORMANCE_CASE(fixture, prefetch_takes_managed_memory)                             \
  CUDACTOR_CONFORMANCE_CASE(fixture, host_callbacks_run_once_in_stream_order)                   \
  CUDACTOR_CONFORMANCE_CASE(fixture, timeline_values_are_reached_in_order)                      \
  CUDACTOR_CONFORMANCE_CASE(fixture, failed_work_fails_the_point_after_it)                      \
  CUDACTOR_CONFORMANCE_CASE(fixture, work_failing_with_any_code_fails_the_point_after_it)       \
  CUDACTOR_CONFORMANCE_CASE(fixture, work_enqueued_with_its_point_fails_only_that_point)        \
  CUDACTOR_CONFORMANCE_CASE(fixture, failed_work_fails_the_first_event_after_it)                \
  CUDACTOR_CONFORMANCE_CASE(fixture, signals_past_the_in_flight_bound_are_refused)              \
  CUDACTOR_CONFORMANCE_CASE(fixture, a_timeline_outlives_its_stream)                            \
  CUDACTOR_CONFORMANCE_CASE(fixture, moving_an_owning_handle_over_a_live_one_destroys_the_old)  \
  CUDACTOR_CONFORMANCE_CASE(fixture, a_work_takes_scratch_for_its_run)                          \
  CUDACTOR_CONFORMANCE_CASE(fixture, a_late_failure_fails_the_point_unless_reached)

}  // namespace cudactor::test
