#include "cudactor/actors/stream_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cudactor/actors/detail/stream_directory.hpp"
#include "cudactor/actors/detail/stream_ledger.hpp"
#include "cudactor/actors/stream/stream_state.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

std::uint64_t effective_max_in_flight(const stream_actor_options& options,
                                      const gpu::backend& device) noexcept {
  const std::uint64_t bound = std::max<std::uint64_t>(device.max_in_flight(), 1);
  return std::clamp<std::uint64_t>(options.max_in_flight, 1, bound);
}

namespace {

using detail::stream_state;

stream_actor::behavior_type stream_behavior(stream_actor::stateful_pointer<stream_state> self,
                                            stream_context context, stream_actor_options options,
                                            std::shared_ptr<gpu::stream> owned,
                                            std::shared_ptr<detail::stream_ledger> ledger) {
  self->state.init(self, context, std::move(options), std::move(*owned), std::move(ledger));
  self->set_down_handler([self](caf::down_msg& down) { self->state.unsubscribe(down.source); });
  auto& st = self->state;
  return {
      [&st](submit_atom, const work& w) { return st.accept_work(w); },
      [&st](submit_atom, const std::vector<work>& works) { return st.accept_works(works); },
      [&st](copy_atom, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
            gpu::copy_kind direction) { return st.accept_copy(dst, src, bytes, direction); },
      [&st](fill_atom, std::uint64_t dst, std::uint8_t value, std::uint64_t bytes) {
        return st.accept_fill(dst, value, bytes);
      },
      [&st](prefetch_atom, std::uint64_t data, std::uint64_t bytes, gpu::prefetch_target target) {
        return st.accept_prefetch(data, bytes, target);
      },
      [&st](alloc_atom, std::uint64_t bytes) { return st.allocate(bytes); },
      [&st](free_atom, const buffer_ref& buffer) { return st.free(buffer); },
      [&st](await_atom, timeline_point point) { return st.await(point); },
      [&st](await_atom, timeline_point point, const wait_limit& limit) {
        return st.await(point, limit);
      },
      [&st](synchronize_atom, const wait_limit& limit) { return st.synchronize(limit); },
      [&st](withdraw_atom, std::uint64_t key) { return st.withdraw(key); },
      [&st](expire_atom, std::uint64_t id) { st.expire(id); },
      [&st](synchronize_atom) { return st.synchronize(); },
      [&st](record_atom, gpu::event_kind kind) { return st.accept_record(kind); },
      [&st](record_atom, gpu::event_kind kind, std::uint32_t n) {
        return st.accept_records(kind, n);
      },
      [&st](record_atom, const event_lease& event) { return st.accept_record_into(event); },
      [&st](wait_atom, const event_lease& ref) { return st.accept_wait(ref); },
      [&st](callback_atom, const stream_callback& callback) {
        return st.accept_callback(callback);
      },
      [&st](status_atom) { return st.status(); },
      [&st](subscribe_atom, const completion_listener& listener) { st.subscribe(listener); },
      [&st](unsubscribe_atom, const completion_listener& listener) {
        st.unsubscribe(listener.address());
      },
      [&st](dispatch_atom, stream_dispatch& pass) { return st.accept_dispatch(pass.get()); },
      [&st](hold_atom, stream_hold& request) { return st.accept_hold(request.get()); },
      [&st](hold_end_atom, timeline_point point, const caf::error& why) {
        return st.end_hold(point, why);
      },
      [&st](launch_atom, op_id op, const work& w) { return st.accept_launch(op, w); },
      [&st](reset_atom) { return st.reset(); },
      [&st](issued_atom) { st.on_issued(); },
      [&st](shutdown_atom) { st.shut_down(); },
      [&st](progress_atom, const completion_batch& batch, std::uint64_t incarnation) {
        st.on_progress(batch, incarnation);
      },
  };
}

}  // namespace

gpu::result<spawned_stream> spawn_stream_actor(caf::actor_system& system,
                                               const stream_context& context,
                                               stream_actor_options options) {
  if (context.device == nullptr || context.poller == nullptr || !context.events ||
      !context.directory || options.id.value >= context.directory->size()) {
    return gpu::status{gpu::status_code::invalid_argument, "stream actor: incomplete context"};
  }
  if (options.name.empty()) options.name = "stream-" + std::to_string(options.id.value);
  auto made = context.device->create_stream({options.name, options.priority});
  if (!made) return made.error();
  auto owned = std::make_shared<gpu::stream>(std::move(made.value()));
  context.directory->publish(options.id, owned->ref());
  spawned_stream out;
  out.name = options.name;
  out.ledger = std::make_shared<detail::stream_ledger>(
      effective_max_in_flight(options, *context.device));
  out.actor =
      system.spawn(stream_behavior, context, std::move(options), std::move(owned), out.ledger);
  return out;
}

}  // namespace cudactor
