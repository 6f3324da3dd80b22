// facade/launch_lease.hpp
//
// A caller-launched operation's stream, held for it between coordinator::begin and its end:
// the way to put the operation's work on the device. launch() enqueues on the held stream,
// inside the hold (before the point the operation is tracked by), on either backend;
// complete() ends the hold, and the operation ends when the stream passes its work; fail()
// ends it failed instead (its dependents are cancelled).
//
//   op_spec spec;  spec.manual = true;
//   op_id op = c.add(spec).get();
//   cudactor::launch_lease lease = c.begin(op).get();   // answered once the stream is held
//   lease.launch([](const gpu::launch_context& ctx) { return my_kernel(ctx); });
//   lease.complete().get();                             // or lease.fail("why")
//
// Everything asked of one lease (or a copy) arrives in the order asked: launch, launch,
// complete need no wait in between. A launch that fails (its answer) fails the operation
// whatever complete says. Work sent to the held stream any other way (cudactor::stream,
// another actor) is not the operation's: it waits and goes on after the operation's point,
// as after any operation before it. A lease outliving its hold answers invalid_state.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "cudactor/facade/completion.hpp"
#include "cudactor/gpu/launch_context.hpp"
#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/work.hpp"

namespace cudactor {

class front_door;

class launch_lease {
 public:
  launch_lease(std::shared_ptr<front_door> door, op_lease held)
      : door_(std::move(door)), held_(held) {}

  [[nodiscard]] op_id op() const noexcept { return held_.op; }
  [[nodiscard]] stream_id stream() const noexcept { return held_.stream; }
  [[nodiscard]] const op_lease& get() const noexcept { return held_; }

  // The operation's work, on the held stream now (on CUDA: launched by the stream's actor
  // with the stream's launch_context). Answers the ticket the operation is tracked by (its
  // point passes once complete() was asked and the stream got there).
  template <class Token = use_future_t>
  auto launch(work w, Token&& token = {}) const {
    return complete_call<ticket>(std::forward<Token>(token),
                                 [l = *this, w = std::move(w)](on_done<ticket> d) mutable {
                                   l.launch_with(std::move(w), std::move(d));
                                 });
  }
  template <class Token = use_future_t>
  auto launch(gpu::work_fn fn, Token&& token = {}) const {
    return launch(work::local(std::move(fn)), std::forward<Token>(token));
  }
  // The launch is done: the operation ends once the stream passes what was launched.
  template <class Token = use_future_t>
  auto complete(Token&& token = {}) const {
    return complete_call<ticket>(std::forward<Token>(token),
                                 [l = *this](on_done<ticket> d) { l.complete_with(std::move(d)); });
  }
  // The launch failed: the operation fails with `why`, its dependents are cancelled.
  template <class Token = use_future_t>
  auto fail(std::string why, Token&& token = {}) const {
    return complete_call<op_state>(std::forward<Token>(token),
                                   [l = *this, why = std::move(why)](on_done<op_state> d) mutable {
                                     l.fail_with(std::move(why), std::move(d));
                                   });
  }

 private:
  // cudactor::complete, named apart from the member complete().
  template <class T, class Token, class Start>
  static auto complete_call(Token&& token, Start&& start) {
    return cudactor::complete<T>(std::forward<Token>(token), std::forward<Start>(start));
  }
  void launch_with(work w, on_done<ticket> done) const;
  void complete_with(on_done<ticket> done) const;
  void fail_with(std::string why, on_done<op_state> done) const;

  std::shared_ptr<front_door> door_;
  op_lease held_;
};

}  // namespace cudactor
