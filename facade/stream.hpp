// facade/stream.hpp
//
// One of the runtime's streams as a plain C++ object: what its stream actor does (work,
// copies, fills, prefetches, stream-ordered memory, events, callbacks, waits, status), each a
// call that returns at once and answers through a future (the default), a callable or an Asio
// completion token (facade/completion.hpp). Everything one stream object, or any copy of it,
// asks of its stream reaches the stream in the order it was asked.
//
//   cudactor::stream s{*rt, 0};
//   auto buf = s.alloc(1 << 20).get();
//   s.fill(buf, 0, buf.size);
//   s.submit([](const gpu::launch_context&) { return gpu::status{}; });
//   s.synchronize().get();
//
// A copy is cheap (a shared handle to the runtime's front door); it may outlive the runtime,
// and then every call answers shutting_down. An index the runtime has no stream for is not
// refused here: every call answers unknown_stream, naming it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "cudactor/facade/address.hpp"
#include "cudactor/facade/cancellation.hpp"
#include "cudactor/facade/completion.hpp"
#include "cudactor/facade/owned_event.hpp"
#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/messaging/report_types.hpp"
#include "cudactor/messaging/types.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

class front_door;
class runtime;

class stream {
 public:
  stream(runtime& rt, std::size_t index);

  [[nodiscard]] std::size_t index() const noexcept { return index_; }
  [[nodiscard]] stream_id id() const noexcept;

  // Work: a named operation or a local closure, or a host/launch function as it is.
  template <class Token = use_future_t>
  auto submit(work w, Token&& token = {}) const {
    return complete<ticket>(std::forward<Token>(token),
                            [s = *this, w = std::move(w)](on_done<ticket> d) mutable {
                              s.submit_with(std::move(w), std::move(d));
                            });
  }
  template <class Token = use_future_t>
  auto submit(gpu::work_fn fn, Token&& token = {}) const {
    return submit(work::local(std::move(fn)), std::forward<Token>(token));
  }

  // Memory, ordered with the stream's other work.
  template <class Token = use_future_t>
  auto copy(address dst, address src, std::uint64_t bytes, gpu::copy_kind kind,
            Token&& token = {}) const {
    return complete<ticket>(std::forward<Token>(token),
                            [s = *this, dst, src, bytes, kind](on_done<ticket> d) {
                              s.copy_with(dst.value(), src.value(), bytes, kind, std::move(d));
                            });
  }
  template <class Token = use_future_t>
  auto fill(address dst, std::uint8_t value, std::uint64_t bytes, Token&& token = {}) const {
    return complete<ticket>(std::forward<Token>(token),
                            [s = *this, dst, value, bytes](on_done<ticket> d) {
                              s.fill_with(dst.value(), value, bytes, std::move(d));
                            });
  }
  template <class Token = use_future_t>
  auto prefetch(address at, std::uint64_t bytes, gpu::prefetch_target to,
                Token&& token = {}) const {
    return complete<ticket>(std::forward<Token>(token),
                            [s = *this, at, bytes, to](on_done<ticket> d) {
                              s.prefetch_with(at.value(), bytes, to, std::move(d));
                            });
  }
  // Stream-ordered: the memory is usable by work submitted after alloc, and reused only once
  // the stream has passed the free.
  template <class Token = use_future_t>
  auto alloc(std::uint64_t bytes, Token&& token = {}) const {
    return complete<buffer_ref>(
        std::forward<Token>(token),
        [s = *this, bytes](on_done<buffer_ref> d) { s.alloc_with(bytes, std::move(d)); });
  }
  template <class Token = use_future_t>
  auto free(buffer_ref buffer, Token&& token = {}) const {
    return complete<ticket>(std::forward<Token>(token), [s = *this, buffer](on_done<ticket> d) {
      s.free_with(buffer, std::move(d));
    });
  }

  // Ordering between streams: an event recorded here, waited for on another stream (on the
  // device: no host thread waits). Answered once recorded after everything asked before; the
  // event goes back to the pool when the last copy of it goes (facade/owned_event.hpp).
  template <class Token = use_future_t>
  auto record(gpu::event_kind kind = gpu::event_kind::regular, Token&& token = {}) const {
    return complete<owned_event>(
        std::forward<Token>(token),
        [s = *this, kind](on_done<owned_event> d) { s.record_with(kind, std::move(d)); });
  }
  // An event the caller has recorded anew here (cudaEventRecord on an existing event): one
  // recorded before, or one leased with event_pool::acquire (which the caller releases).
  template <class Token = use_future_t>
  auto record(const owned_event& event, Token&& token = {}) const {
    return complete<owned_event>(
        std::forward<Token>(token),
        [s = *this, event](on_done<owned_event> d) { s.record_into_with(event, std::move(d)); });
  }
  template <class Token = use_future_t>
  auto record(const event_lease& event, Token&& token = {}) const {
    return complete<event_lease>(
        std::forward<Token>(token),
        [s = *this, event](on_done<event_lease> d) { s.record_lease_with(event, std::move(d)); });
  }
  // This stream's later work waits for the event's recording (as it stood when the wait
  // reached the stream).
  template <class Token = use_future_t>
  auto wait(const owned_event& event, Token&& token = {}) const {
    return complete<ticket>(std::forward<Token>(token), [s = *this, event](on_done<ticket> d) {
      s.wait_owned_with(event, std::move(d));
    });
  }
  template <class Token = use_future_t>
  auto wait(event_lease event, Token&& token = {}) const {
    return complete<ticket>(std::forward<Token>(token), [s = *this, event](on_done<ticket> d) {
      s.wait_with(event, std::move(d));
    });
  }

  // `fn` runs once the stream has passed this point (on the stream actor: keep it short),
  // with the failure when the point was not reached cleanly.
  template <class Token = use_future_t>
  auto callback(std::function<void(outcome<void>)> fn, Token&& token = {}) const {
    return complete<ticket>(std::forward<Token>(token),
                            [s = *this, fn = std::move(fn)](on_done<ticket> d) mutable {
                              s.callback_with(std::move(fn), std::move(d));
                            });
  }

  // Answered when the device has reached `point` (a ticket's), or everything submitted so
  // far; with the point's times. With a limit: timeout once it has passed (zero: none;
  // negative: refused); with a cancellation: cancelled when it is cancelled first. Either
  // way the stream actor keeps nothing of the wait afterwards.
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto await(timeline_point point, Token&& token = {}) const {
    return await(point, std::chrono::nanoseconds{0}, std::forward<Token>(token));
  }
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto await(timeline_point point, std::chrono::nanoseconds limit, Token&& token = {}) const {
    return complete<completion>(std::forward<Token>(token),
                                [s = *this, point, limit](on_done<completion> d) {
                                  s.await_with(point, limit, std::nullopt, std::move(d));
                                });
  }
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto await(timeline_point point, std::chrono::nanoseconds limit, const cancellation& cancel,
             Token&& token = {}) const {
    return complete<completion>(std::forward<Token>(token),
                                [s = *this, point, limit, cancel](on_done<completion> d) {
                                  s.await_with(point, limit, cancel, std::move(d));
                                });
  }
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto synchronize(Token&& token = {}) const {
    return synchronize(std::chrono::nanoseconds{0}, std::forward<Token>(token));
  }
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto synchronize(std::chrono::nanoseconds limit, Token&& token = {}) const {
    return complete<completion>(std::forward<Token>(token),
                                [s = *this, limit](on_done<completion> d) {
                                  s.synchronize_with(limit, std::nullopt, std::move(d));
                                });
  }
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto synchronize(std::chrono::nanoseconds limit, const cancellation& cancel,
                   Token&& token = {}) const {
    return complete<completion>(std::forward<Token>(token),
                                [s = *this, limit, cancel](on_done<completion> d) {
                                  s.synchronize_with(limit, cancel, std::move(d));
                                });
  }
  // This stream's part of the coordinator's profile (coordinator::report): the operations
  // the coordinator ran here, and the work sent here directly (what was answered before the
  // profile was asked).
  template <class Token = use_future_t>
  auto profile(Token&& token = {}) const {
    return complete<stream_report>(
        std::forward<Token>(token),
        [s = *this](on_done<stream_report> d) { s.profile_with(std::move(d)); });
  }
  // What the stream actor knows when it answers: `completed` is the newest point its
  // completion poller has reported, so it can lag behind a point the device has passed (one
  // another stream has already waited past on the device, or one the next poll reports). To
  // know a point is reached, await it: that answer is exact.
  template <class Token = use_future_t>
  auto status(Token&& token = {}) const {
    return complete<stream_status>(
        std::forward<Token>(token),
        [s = *this](on_done<stream_status> d) { s.status_with(std::move(d)); });
  }

 private:
  void submit_with(work w, on_done<ticket> done) const;
  void copy_with(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, gpu::copy_kind kind,
                 on_done<ticket> done) const;
  void fill_with(std::uint64_t dst, std::uint8_t value, std::uint64_t bytes,
                 on_done<ticket> done) const;
  void prefetch_with(std::uint64_t at, std::uint64_t bytes, gpu::prefetch_target to,
                     on_done<ticket> done) const;
  void alloc_with(std::uint64_t bytes, on_done<buffer_ref> done) const;
  void free_with(buffer_ref buffer, on_done<ticket> done) const;
  void record_with(gpu::event_kind kind, on_done<owned_event> done) const;
  void record_into_with(const owned_event& event, on_done<owned_event> done) const;
  void record_lease_with(const event_lease& event, on_done<event_lease> done) const;
  void wait_with(event_lease event, on_done<ticket> done) const;
  void wait_owned_with(const owned_event& event, on_done<ticket> done) const;
  void callback_with(std::function<void(outcome<void>)> fn, on_done<ticket> done) const;
  void await_with(timeline_point point, std::chrono::nanoseconds limit,
                  const std::optional<cancellation>& cancel, on_done<completion> done) const;
  void synchronize_with(std::chrono::nanoseconds limit, const std::optional<cancellation>& cancel,
                        on_done<completion> done) const;
  void status_with(on_done<stream_status> done) const;
  void profile_with(on_done<stream_report> done) const;
  // Sends to the stream actor, or answers unknown_stream when there is none of this index.
  template <class T, class... Ts>
  void ask(on_done<T> done, Ts... args) const;
  // The same for a wait: plain when it has neither limit nor cancellation.
  template <class T, class... Ts>
  void ask_waiting(on_done<T> done, std::chrono::nanoseconds limit,
                   const std::optional<cancellation>& cancel, Ts... args) const;
  // unknown_stream when the runtime has no stream of this index; nothing otherwise.
  [[nodiscard]] std::optional<failure> no_such_stream() const;

  std::shared_ptr<front_door> door_;
  std::size_t index_;
};

}  // namespace cudactor
