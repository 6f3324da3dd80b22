// The stream facade: every stream operation from plain C++, answered once through a future,
// a callable or an Asio token, in the order asked; bad input named; a stream object that
// outlives its runtime answers shutting_down.
#define BOOST_TEST_MODULE facade_stream
#include <boost/test/unit_test.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "cudactor/facade/host_memory.hpp"
#include "cudactor/facade/stream.hpp"
#include "facade/facade_fixture.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

BOOST_FIXTURE_TEST_SUITE(facade_stream, facade_fixture)

BOOST_AUTO_TEST_CASE(memory_and_work_through_a_stream_object_run_in_the_order_asked) {
  cudactor::stream s{rt(), 0};
  BOOST_TEST(s.id().value == 0u);
  auto f_buf = s.alloc(4096);
  const buffer_ref buf = get_within(f_buf);
  BOOST_TEST(buf.size == 4096u);
  auto host = rt().device().allocate_pinned(4096);
  BOOST_REQUIRE(host.ok());
  // No waiting in between: the fill, the copy and the work reach the stream in this order.
  auto filled = s.fill(buf, 0xAB, 4096);
  auto copied = s.copy(host->data(), buf, 4096, gpu::copy_kind::device_to_host);
  auto order = std::make_shared<std::vector<int>>();
  std::vector<std::future<ticket>> work;
  for (int i = 0; i < 20; ++i) {
    work.push_back(s.submit([order, i](const gpu::launch_context&) {
      order->push_back(i);  // one stream: never two at once
      return gpu::status{};
    }));
  }
  const ticket t_fill = get_within(filled);
  const ticket t_copy = get_within(copied);
  BOOST_TEST(t_copy.point == t_fill.point + 1);
  timeline_point last = t_copy.point;
  for (auto& w : work) {
    const ticket t = get_within(w);
    BOOST_TEST(t.point == last + 1);
    last = t.point;
  }
  auto synced = s.synchronize();
  BOOST_TEST(get_within(synced).op.point >= last);
  const auto* bytes = host->as<std::uint8_t>();
  BOOST_TEST(bytes[0] == 0xAB);
  BOOST_TEST(bytes[4095] == 0xAB);
  BOOST_TEST(order->size() == 20u);
  for (int i = 0; i < 20 && i < static_cast<int>(order->size()); ++i) BOOST_TEST((*order)[i] == i);
  auto freed = s.free(buf);
  BOOST_TEST(get_within(freed).point > last);
  auto st = s.status();
  const stream_status status = get_within(st);
  BOOST_TEST(status.id.value == 0u);
  BOOST_TEST(status.accepted >= last);
  // Its part of the profile: the work sent here directly (the coordinator ran nothing).
  auto fp = s.profile();
  const stream_report profile = get_within(fp);
  BOOST_TEST(profile.stream.value == 0u);
  BOOST_TEST(profile.direct_kernels == 20u);
  BOOST_TEST(profile.direct_transfers == 2u);  // the fill and the copy
  BOOST_TEST(profile.ops == 0u);
}

BOOST_AUTO_TEST_CASE(a_callable_an_asio_handler_and_asio_future_are_each_told_once) {
  cudactor::stream s{rt(), 1};
  // A plain callable: called once, with the answer.
  std::promise<outcome<ticket>> heard;
  std::atomic<int> calls{0};
  s.submit(work::local([](const gpu::launch_context&) { return gpu::status{}; }),
           [&](outcome<ticket> r) {
             ++calls;
             heard.set_value(std::move(r));
           });
  auto f = heard.get_future();
  auto r = get_within(f);
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r->stream.value == 1u);
  // An Asio handler bound to an executor runs there, on the io_context's thread.
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  std::thread runner{[&] { io.run(); }};
  std::promise<std::thread::id> where;
  s.synchronize(boost::asio::bind_executor(io, [&](outcome<completion> c) {
    BOOST_TEST(c.ok());
    where.set_value(std::this_thread::get_id());
  }));
  auto fw = where.get_future();
  BOOST_TEST((get_within(fw) == runner.get_id()));
  // Asio's own use_future: the outcome arrives in its future.
  auto fs = s.status(boost::asio::use_future);
  auto status = get_within(fs);
  BOOST_TEST(status.ok());
  guard.reset();
  runner.join();
  std::this_thread::sleep_for(scaled(50ms));
  BOOST_TEST(calls.load() == 1);
}

BOOST_AUTO_TEST_CASE(an_event_recorded_on_one_stream_orders_another_and_callbacks_hear_it) {
  cudactor::stream a{rt(), 0};
  cudactor::stream b{rt(), 1};
  auto fe = a.record(gpu::event_kind::timing);
  const owned_event e = get_within(fe);
  BOOST_TEST(e.stream().value == 0u);
  BOOST_TEST((e.kind() == gpu::event_kind::timing));
  auto fw = b.wait(e);
  BOOST_TEST(get_within(fw).stream.value == 1u);
  std::promise<bool> passed;
  auto fc = b.callback([&](outcome<void> r) { passed.set_value(r.ok()); });
  const ticket t = get_within(fc);
  auto fp = passed.get_future();
  BOOST_TEST(get_within(fp));
  auto done = b.await(t.point);
  BOOST_TEST(get_within(done).op.point == t.point);
}

BOOST_AUTO_TEST_CASE(copies_take_pinned_or_managed_host_memory_and_refuse_pageable) {
  // As on CUDA, on either backend: a std::vector is pageable, refused in words.
  cudactor::stream s{rt(), 0};
  auto f_buf = s.alloc(256);
  const buffer_ref buf = get_within(f_buf);
  std::vector<std::uint8_t> pageable(256, 1);
  // Ticketed when asked; the copy's point fails when the stream launches it (as every launch
  // the backend refuses), and a wait for it says why.
  auto asked = s.copy(buf, pageable.data(), 256, gpu::copy_kind::host_to_device);
  auto refused = s.await(get_within(asked).point);
  const failure why = failure_of(refused);
  BOOST_TEST((why == errc::invalid_argument));
  BOOST_TEST(mentions(why, "is pageable"), why.what());
  BOOST_TEST(mentions(why, "allocate_pinned"), why.what());
  gpu::buffer pinned = cudactor::allocate_pinned(rt(), 256);
  gpu::buffer managed = cudactor::allocate_managed(rt(), 256);
  BOOST_TEST((pinned.kind() == gpu::memory_kind::pinned_host));
  BOOST_TEST((managed.kind() == gpu::memory_kind::managed));
  std::fill(pinned.as<std::uint8_t>(), pinned.as<std::uint8_t>() + 256, std::uint8_t{9});
  auto in = s.copy(buf, pinned.data(), 256, gpu::copy_kind::host_to_device);
  auto out = s.copy(managed.data(), buf, 256, gpu::copy_kind::device_to_host);
  get_within(in);
  auto t = get_within(out);
  auto reached = s.await(t.point);
  get_within(reached);
  BOOST_TEST(managed.as<std::uint8_t>()[200] == 9);
  BOOST_CHECK_THROW((void)cudactor::allocate_pinned(rt(), 0), failure);
}

BOOST_AUTO_TEST_CASE(a_callback_after_failed_work_is_told_the_failure) {
  // As CUDA's stream callbacks: what failed on the stream since the callback before it.
  cudactor::stream s{rt(), 0};
  auto failing = s.submit([](const gpu::launch_context&) {
    return gpu::status{gpu::status_code::op_failed, "the kernel found a NaN"};
  });
  get_within(failing);
  auto fine = s.submit([](const gpu::launch_context&) { return gpu::status{}; });
  get_within(fine);
  std::promise<outcome<void>> first;
  auto placed = s.callback([&](outcome<void> r) { first.set_value(std::move(r)); });
  get_within(placed);
  auto told = first.get_future();
  const outcome<void> r = get_within(told);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(std::string{r.error().what()}.find("the kernel found a NaN") != std::string::npos,
             r.error().what());
  // Nothing failed since: the next one is told ok.
  std::promise<bool> second;
  auto again = s.callback([&](outcome<void> r2) { second.set_value(r2.ok()); });
  get_within(again);
  auto ok = second.get_future();
  BOOST_TEST(get_within(ok));
}

BOOST_AUTO_TEST_CASE(bad_input_is_named_never_crashed_on) {
  cudactor::stream nowhere{rt(), 7};
  auto f = nowhere.synchronize();
  const failure unknown = failure_of(f);
  BOOST_TEST((unknown == errc::unknown_stream));
  BOOST_TEST_MESSAGE(unknown.what());
  BOOST_TEST(mentions(unknown, "stream 7: the runtime has 2 streams (0 to 1)"));
  // The same through a callable: told on the calling thread, at once.
  bool told = false;
  nowhere.status(
      [&](outcome<stream_status> r) { told = !r.ok() && r.error() == errc::unknown_stream; });
  BOOST_TEST(told);

  cudactor::stream s{rt(), 0};
  auto zero = s.alloc(0);
  const failure z = failure_of(zero);
  BOOST_TEST_MESSAGE(z.what());
  BOOST_TEST((z == errc::invalid_argument));
  auto huge = s.alloc(std::uint64_t{1} << 62);
  const failure h = failure_of(huge);
  BOOST_TEST_MESSAGE(h.what());
  BOOST_TEST((h == errc::out_of_memory || h == errc::invalid_argument));
  buffer_ref never;
  never.stream = s.id();
  never.id = 12345;
  auto bad_free = s.free(never);
  const failure bf = failure_of(bad_free);
  BOOST_TEST_MESSAGE(bf.what());
  BOOST_TEST((bf != errc::none));
  auto beyond = s.await(timeline_point{1} << 40);
  const failure b = failure_of(beyond);
  BOOST_TEST_MESSAGE(b.what());
  BOOST_TEST((b == errc::invalid_argument || b == errc::out_of_range));
  // A released event is stale: waiting on it is refused, naming it.
  auto fe = s.record();
  const owned_event e = get_within(fe);
  auto synced = s.synchronize();
  get_within(synced);
  event_lease forged = e.lease();
  forged.generation += 1000;
  auto stale = s.wait(forged);
  const failure st = failure_of(stale);
  BOOST_TEST_MESSAGE(st.what());
  BOOST_TEST((st == errc::stale_event));
}

BOOST_AUTO_TEST_CASE(a_stream_object_that_outlives_its_runtime_answers_shutting_down) {
  cudactor::stream s{rt(), 0};
  auto before = s.synchronize();
  get_within(before);
  stop();  // the runtime is gone; the object is not
  auto f = s.submit([](const gpu::launch_context&) { return gpu::status{}; });
  const failure late = failure_of(f);
  BOOST_TEST((late == errc::shutting_down));
  bool told = false;
  s.alloc(64, [&](outcome<buffer_ref> r) { told = !r.ok() && r.error() == errc::shutting_down; });
  BOOST_TEST(told);
}

BOOST_AUTO_TEST_SUITE_END()
