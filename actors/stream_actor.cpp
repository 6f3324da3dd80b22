#include "cudactor/actors/stream_actor.hpp"

#include <caf/all.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/actors/detail/stream_state.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

namespace {

using detail::op_kind;
using detail::pending_op;
using detail::stream_state;

stream_actor::behavior_type stream_behavior(stream_actor::stateful_pointer<stream_state> self,
                                            stream_context context, stream_actor_options options,
                                            std::shared_ptr<gpu::stream> owned) {
  self->state.init(self, context, std::move(options), std::move(*owned));
  self->set_down_handler([self](caf::down_msg& down) { self->state.unsubscribe(down.source); });
  auto& st = self->state;
  return {
      [&st](submit_atom, const work& w) -> caf::result<ticket> {
        if (auto why = st.refusal()) return why;
        pending_op op;
        if (auto bad = st.resolve(w, op.fn)) return bad;
        return st.accept(std::move(op));
      },
      [&st](submit_atom, const std::vector<work>& works) -> caf::result<std::vector<ticket>> {
        if (auto why = st.refusal()) return why;
        if (works.empty() || works.size() > st.options().max_batch) {
          return make_error(errc::invalid_argument,
                            "submit: a batch holds 1 to " + std::to_string(st.options().max_batch) +
                                " works, not " + std::to_string(works.size()));
        }
        // All or none: every work is checked before any is accepted.
        std::vector<gpu::work_fn> fns(works.size());
        for (std::size_t i = 0; i < works.size(); ++i) {
          if (auto bad = st.resolve(works[i], fns[i])) return bad;
        }
        std::vector<ticket> out;
        out.reserve(works.size());
        st.begin_burst();
        for (auto& fn : fns) {
          pending_op op;
          op.fn = std::move(fn);
          out.push_back(st.accept(std::move(op)));
        }
        st.end_burst();
        return out;
      },
      [&st](copy_atom, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
            gpu::copy_kind direction) -> caf::result<ticket> {
        if (auto why = st.refusal()) return why;
        if (dst == 0 || src == 0 || bytes == 0) {
          return make_error(errc::invalid_argument, "copy: null address or zero bytes");
        }
        pending_op op;
        op.kind = op_kind::copy;
        op.a = dst;
        op.b = src;
        op.c = bytes;
        op.mode = static_cast<std::uint8_t>(direction);
        return st.accept(std::move(op));
      },
      [&st](fill_atom, std::uint64_t dst, std::uint8_t value,
            std::uint64_t bytes) -> caf::result<ticket> {
        if (auto why = st.refusal()) return why;
        if (dst == 0 || bytes == 0) {
          return make_error(errc::invalid_argument, "fill: null address or zero bytes");
        }
        pending_op op;
        op.kind = op_kind::fill;
        op.a = dst;
        op.b = value;
        op.c = bytes;
        return st.accept(std::move(op));
      },
      [&st](prefetch_atom, std::uint64_t data, std::uint64_t bytes,
            gpu::prefetch_target target) -> caf::result<ticket> {
        if (auto why = st.refusal()) return why;
        if (data == 0 || bytes == 0) {
          return make_error(errc::invalid_argument, "prefetch: null address or zero bytes");
        }
        pending_op op;
        op.kind = op_kind::prefetch;
        op.a = data;
        op.b = bytes;
        op.mode = static_cast<std::uint8_t>(target);
        return st.accept(std::move(op));
      },
      [&st](alloc_atom, std::uint64_t bytes) { return st.allocate(bytes); },
      [&st](free_atom, const buffer_ref& buffer) { return st.free(buffer); },
      [&st](await_atom, timeline_point point) { return st.await(point); },
      [&st](synchronize_atom) { return st.synchronize(); },
      [&st](record_atom, gpu::event_kind kind) { return st.accept_record(kind); },
      [&st](wait_atom, const event_ref& ref) -> caf::result<ticket> {
        if (auto why = st.refusal()) return why;
        auto device = st.resolve_event(ref);
        if (!device) {
          return make_error(
              ref.empty() ? errc::invalid_argument : errc::stale_event,
              "wait on stream '" + st.options().name + "': " + device.error().message());
        }
        pending_op op;
        op.kind = op_kind::wait;
        op.wait_on = *device;
        return st.accept(std::move(op));
      },
      [&st](callback_atom, const stream_callback& callback) -> caf::result<ticket> {
        if (auto why = st.refusal()) return why;
        if (!callback.get()) return make_error(errc::invalid_argument, "callback: empty");
        pending_op op;
        op.kind = op_kind::callback;
        op.callback = callback.get();
        return st.accept(std::move(op));
      },
      [&st](status_atom) { return st.status(); },
      [&st](subscribe_atom, const completion_listener& listener) { st.subscribe(listener); },
      [&st](unsubscribe_atom, const completion_listener& listener) {
        st.unsubscribe(listener.address());
      },
      [&st](dispatch_atom, stream_dispatch& pass) { return st.accept_dispatch(pass.get()); },
      [&st](hold_atom, stream_hold& waits) { return st.accept_hold(waits.get()); },
      [&st](hold_end_atom, timeline_point point, const caf::error& why) {
        return st.end_hold(point, why);
      },
      [&st](reset_atom) { return st.reset(); },
      [&st](shutdown_atom) { st.shut_down(); },
      [&st](progress_atom, const completion_batch& batch) { st.on_progress(batch); },
  };
}

}  // namespace

gpu::result<spawned_stream> spawn_stream_actor(caf::actor_system& system,
                                               const stream_context& context,
                                               stream_actor_options options) {
  if (context.device == nullptr || context.poller == nullptr || !context.events) {
    return gpu::status{gpu::errc::invalid_argument, "stream actor: incomplete context"};
  }
  if (options.name.empty()) options.name = "stream-" + std::to_string(options.id.value);
  auto made = context.device->create_stream({options.name, options.priority});
  if (!made) return made.error();
  auto owned = std::make_shared<gpu::stream>(std::move(made.value()));
  spawned_stream out;
  out.stream = owned->ref();
  out.name = options.name;
  out.actor = system.spawn(stream_behavior, context, std::move(options), std::move(owned));
  return out;
}

}  // namespace cudactor
