// facade/barrier.hpp
//
// A barrier over some of the runtime's streams as a plain C++ object. synchronize() begins
// the next generation and answers once every stream has reached it (host mode: within the
// time limit, or timeout naming who did not arrive), or once
// every stream has been made to wait for every other on the device (device mode: no host
// thread waits at all).
//
//   cudactor::barrier b{*rt, {0, 1, 2}};
//   auto crossed = b.synchronize(barrier_mode::host, std::chrono::seconds{1}).get();
//
// Made by the constructor, which throws cudactor::failure for members the runtime has no
// stream for, a stream named twice, or a runtime that has shut down. Copies share the one
// barrier, which goes when the last copy does (or with the runtime).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "cudactor/actors/barrier_actor.hpp"
#include "cudactor/facade/cancellation.hpp"
#include "cudactor/facade/completion.hpp"

namespace cudactor {

class front_door;
class runtime;

class barrier {
 public:
  barrier(runtime& rt, const std::vector<std::size_t>& members, barrier_options options = {});

  // With the barrier's own mode and limit.
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto synchronize(Token&& token = {}) const {
    return complete<barrier_crossing>(
        std::forward<Token>(token), [b = *this](on_done<barrier_crossing> d) {
          b.synchronize_with(std::nullopt, {}, std::nullopt, std::move(d));
        });
  }
  // The barrier's own mode, with this limit (and cancellation), as stream::synchronize takes.
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto synchronize(std::chrono::nanoseconds limit, Token&& token = {}) const {
    return complete<barrier_crossing>(
        std::forward<Token>(token), [b = *this, limit](on_done<barrier_crossing> d) {
          b.synchronize_with(b.mode(), limit, std::nullopt, std::move(d));
        });
  }
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto synchronize(std::chrono::nanoseconds limit, const cancellation& cancel,
                   Token&& token = {}) const {
    return complete<barrier_crossing>(std::forward<Token>(token),
                                      [b = *this, limit, cancel](on_done<barrier_crossing> d) {
                                        b.synchronize_with(b.mode(), limit, cancel, std::move(d));
                                      });
  }
  // With this limit (zero: none; negative: refused): host mode until every stream arrived,
  // device mode until the waits are placed. With a cancellation: answered cancelled when it
  // is cancelled first, and the generation's operation ends at the coordinator.
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto synchronize(barrier_mode mode, std::chrono::nanoseconds limit, Token&& token = {}) const {
    return complete<barrier_crossing>(std::forward<Token>(token),
                                      [b = *this, mode, limit](on_done<barrier_crossing> d) {
                                        b.synchronize_with(mode, limit, std::nullopt, std::move(d));
                                      });
  }
  template <class Token = use_future_t, std::enable_if_t<is_token_v<Token>, int> = 0>
  auto synchronize(barrier_mode mode, std::chrono::nanoseconds limit, const cancellation& cancel,
                   Token&& token = {}) const {
    return complete<barrier_crossing>(
        std::forward<Token>(token), [b = *this, mode, limit, cancel](on_done<barrier_crossing> d) {
          b.synchronize_with(mode, limit, cancel, std::move(d));
        });
  }
  template <class Token = use_future_t>
  auto status(Token&& token = {}) const {
    return complete<barrier_status>(
        std::forward<Token>(token),
        [b = *this](on_done<barrier_status> d) { b.status_with(std::move(d)); });
  }

 private:
  struct held;  // the door's key for the barrier actor, forgotten with the last copy
  void synchronize_with(std::optional<barrier_mode> mode, std::chrono::nanoseconds limit,
                        const std::optional<cancellation>& cancel,
                        on_done<barrier_crossing> done) const;
  void status_with(on_done<barrier_status> done) const;
  [[nodiscard]] barrier_mode mode() const noexcept;

  std::shared_ptr<held> held_;
};

}  // namespace cudactor
