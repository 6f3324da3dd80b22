#include "cudactor/facade/stream.hpp"

#include <string>
#include <utility>

#include "cudactor/actors/runtime.hpp"
#include "cudactor/facade/detail/ask.hpp"

namespace cudactor {

stream::stream(runtime& rt, std::size_t index) : door_(rt.door()), index_(index) {}

stream_id stream::id() const noexcept { return stream_id{static_cast<std::uint32_t>(index_)}; }

std::optional<failure> stream::no_such_stream() const {
  if (!door_ || index_ < door_->stream_count()) return std::nullopt;
  const std::size_t n = door_->stream_count();
  return failure{errc::unknown_stream,
                 "stream " + std::to_string(index_) + ": the runtime has " + std::to_string(n) +
                     (n == 1 ? " stream (0)" : " streams (0 to " + std::to_string(n - 1) + ")")};
}

template <class T, class... Ts>
void stream::ask_waiting(on_done<T> done, std::chrono::nanoseconds limit,
                         const std::optional<cancellation>& cancel, Ts... args) const {
  if (limit.count() == 0 && !cancel) {
    ask<T>(std::move(done), std::move(args)...);
    return;
  }
  if (auto bad = no_such_stream()) {
    done(std::move(*bad));
    return;
  }
  detail::ask_waiting<T>(
      door_, index_, std::move(done), [i = index_](const front_door& d) { return d.stream(i); },
      limit, cancel, std::move(args)...);
}

template <class T, class... Ts>
void stream::ask(on_done<T> done, Ts... args) const {
  if (auto bad = no_such_stream()) {
    done(std::move(*bad));
    return;
  }
  // One lane per stream: everything asked of it keeps its order.
  detail::ask<T>(
      door_, index_, std::move(done), [i = index_](const front_door& d) { return d.stream(i); },
      std::move(args)...);
}

void stream::submit_with(work w, on_done<ticket> done) const {
  ask<ticket>(std::move(done), submit_atom::value, std::move(w));
}

void stream::copy_with(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
                       gpu::copy_kind kind, on_done<ticket> done) const {
  ask<ticket>(std::move(done), copy_atom::value, dst, src, bytes, kind);
}

void stream::fill_with(std::uint64_t dst, std::uint8_t value, std::uint64_t bytes,
                       on_done<ticket> done) const {
  ask<ticket>(std::move(done), fill_atom::value, dst, value, bytes);
}

void stream::prefetch_with(std::uint64_t at, std::uint64_t bytes, gpu::prefetch_target to,
                           on_done<ticket> done) const {
  ask<ticket>(std::move(done), prefetch_atom::value, at, bytes, to);
}

void stream::alloc_with(std::uint64_t bytes, on_done<buffer_ref> done) const {
  ask<buffer_ref>(std::move(done), alloc_atom::value, bytes);
}

void stream::free_with(buffer_ref buffer, on_done<ticket> done) const {
  ask<ticket>(std::move(done), free_atom::value, buffer);
}

void stream::record_with(gpu::event_kind kind, on_done<owned_event> done) const {
  ask<event_lease>(
      [door = door_, done = std::move(done)](outcome<event_lease> r) {
        if (!r) return done(r.error());
        done(owned_event{door, *r});  // owned from here: a failed done still gives it back
      },
      record_atom::value, kind);
}

void stream::record_into_with(const owned_event& event, on_done<owned_event> done) const {
  // The copy held here keeps the event leased until the stream has recorded it.
  ask<event_lease>(
      [event, done = std::move(done)](outcome<event_lease> r) {
        if (!r) return done(r.error());
        done(event.recorded_as(*r));
      },
      record_atom::value, event.lease());
}

void stream::record_lease_with(const event_lease& event, on_done<event_lease> done) const {
  ask<event_lease>(std::move(done), record_atom::value, event);
}

void stream::wait_with(event_lease event, on_done<ticket> done) const {
  ask<ticket>(std::move(done), wait_atom::value, event);
}

void stream::wait_owned_with(const owned_event& event, on_done<ticket> done) const {
  // The wait is ticketed when accepted but may reach the device later (behind the in-flight
  // cap or a hold): the event stays leased, and so recorded as it was, until this stream has
  // passed the wait. The await rides on this stream's lane, after the wait.
  const stream me = *this;
  ask<ticket>(
      [me, event, done = std::move(done)](outcome<ticket> r) {
        if (r) {
          me.await_with(r->point, std::chrono::nanoseconds{0}, std::nullopt,
                        [event](outcome<completion>) {});
        }
        done(std::move(r));
      },
      wait_atom::value, event.lease());
}

void stream::callback_with(std::function<void(outcome<void>)> fn, on_done<ticket> done) const {
  // The stream calls it with its own error; the caller hears an outcome like every answer.
  stream_callback cb{[fn = std::move(fn)](const caf::error& err) {
    if (!fn) return;
    detail::call_reporting(fn, err ? outcome<void>{failure{err}} : outcome<void>{});
  }};
  ask<ticket>(std::move(done), callback_atom::value, std::move(cb));
}

void stream::await_with(timeline_point point, std::chrono::nanoseconds limit,
                        const std::optional<cancellation>& cancel, on_done<completion> done) const {
  ask_waiting<completion>(std::move(done), limit, cancel, await_atom::value, point);
}

void stream::synchronize_with(std::chrono::nanoseconds limit,
                              const std::optional<cancellation>& cancel,
                              on_done<completion> done) const {
  ask_waiting<completion>(std::move(done), limit, cancel, synchronize_atom::value);
}

void stream::status_with(on_done<stream_status> done) const {
  ask<stream_status>(std::move(done), status_atom::value);
}

void stream::profile_with(on_done<stream_report> done) const {
  if (auto bad = no_such_stream()) {
    done(std::move(*bad));
    return;
  }
  const stream_id me = id();
  auto pick_mine = [me, done = std::move(done)](outcome<coordinator_report> r) {
    if (!r) return done(r.error());
    for (auto& s : r->streams) {
      if (s.stream == me) return done(std::move(s));
    }
    done(failure{errc::unknown_stream, "the profile has no stream " + std::to_string(me.value)});
  };
  // Through the coordinator's lane, like everything else asked of it.
  detail::ask<coordinator_report>(
      door_, detail::coordinator_lane, std::move(pick_mine),
      [](const front_door& d) { return d.coordinator(); }, report_atom::value);
}

}  // namespace cudactor
