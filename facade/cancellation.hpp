// facade/cancellation.hpp
//
// Withdraws the waits made with it: a stream's await or synchronize, a barrier's crossing, an
// operation's end. cancel() answers each one still open with errc::cancelled, and the actor
// that held it keeps nothing of it afterwards (no promise, no timer, no watch). Copies share
// the one cancellation; cancel() is idempotent, and a wait made with a cancellation already
// cancelled is answered cancelled at once, without reaching the actor.
//
//   cudactor::cancellation stop;
//   auto end = s.await(t.point, std::chrono::seconds{30}, stop);
//   ...
//   stop.cancel();  // end.get() throws cudactor::failure (cancelled)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace cudactor {

class cancellation {
 public:
  cancellation();

  void cancel() const;
  [[nodiscard]] bool cancelled() const;

  // For the facade's waits: `withdraw` is called once if cancel() comes while the wait is
  // open (at once if it came before); false when cancelled already (then it is not kept).
  // Call it after the wait's request has been posted, so the withdraw follows it.
  [[nodiscard]] bool keep(std::uint64_t key, std::function<void()> withdraw) const;
  // The wait was answered: nothing to withdraw any more.
  void forget(std::uint64_t key) const;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

namespace detail {
// A key no other wait of this process uses (wait_limit::key).
[[nodiscard]] std::uint64_t next_wait_key() noexcept;
}  // namespace detail

}  // namespace cudactor
