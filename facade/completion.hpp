// facade/completion.hpp
//
// How every facade call tells its caller the answer: one mechanism, three forms, chosen by
// the last argument (the completion token, as in Boost.Asio):
//
//   s.synchronize()                          -> std::future<completion> (cudactor::use_future,
//                                               the default); get() throws cudactor::failure
//   s.synchronize([](outcome<completion> r) {...})
//                                            -> a plain callable, called once on a CAF worker
//                                               (keep it short, never block in it)
//   s.synchronize(asio::bind_executor(ex, h)), s.synchronize(asio::use_future), ...
//                                            -> any Asio token: the handler, void(outcome<T>),
//                                               runs on its associated executor
//
// Whatever the form, the caller is told exactly once, and the calling thread never waits: the
// blocking get() is the caller's choice.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/system_executor.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <type_traits>
#include <utility>

#include "cudactor/actors/client_asio.hpp"
#include "cudactor/facade/outcome.hpp"

namespace cudactor {

class cancellation;

// The default token: the call returns a std::future.
struct use_future_t {};
inline constexpr use_future_t use_future{};

// What the facade's requests hand their answer to, whatever the token.
template <class T>
using on_done = std::function<void(outcome<T>)>;

namespace detail {

template <class T>
struct is_duration : std::false_type {};
template <class R, class P>
struct is_duration<std::chrono::duration<R, P>> : std::true_type {};

}  // namespace detail

// A completion token: anything but the limit and the cancellation a wait takes before it
// (so that s.await(p, 2s) is a limit, not a token).
template <class T>
inline constexpr bool is_token_v =
    !detail::is_duration<std::decay_t<T>>::value && !std::is_same_v<std::decay_t<T>, cancellation>;

namespace detail {

// A plain callable: invocable with the outcome, returning nothing (Asio's use_future is
// invocable too, and returns a token), and not bound to an Asio executor (one that is goes
// the Asio way, so that it runs where it was bound).
template <class Token, class T, class = void>
inline constexpr bool is_plain_callable = false;
template <class Token, class T>
inline constexpr bool is_plain_callable<
    Token, T, std::enable_if_t<std::is_invocable_v<std::decay_t<Token>&, outcome<T>>>> =
    std::is_void_v<std::invoke_result_t<std::decay_t<Token>&, outcome<T>>>&& std::is_same_v<
        boost::asio::associated_executor_t<std::decay_t<Token>>, boost::asio::system_executor>;

// std::function wants a copyable callable; a move-only one is held by a shared_ptr.
template <class T, class F>
on_done<T> to_on_done(F&& f) {
  using fn = std::decay_t<F>;
  if constexpr (std::is_copy_constructible_v<fn>) {
    return on_done<T>{std::forward<F>(f)};
  } else {
    auto held = std::make_shared<fn>(std::forward<F>(f));
    return on_done<T>{[held](outcome<T> r) { (*held)(std::move(r)); }};
  }
}

// A callable of one fixed signature (a lambda that is not generic, a function or a pointer to
// one) that cannot take the outcome: a mistake (`[](completion c) {}` for
// `[](outcome<completion> c) {}`), not an Asio token (whose call operators are templates).
template <class F, class = void>
inline constexpr bool has_fixed_call = std::is_function_v<std::remove_pointer_t<F>>;
template <class F>
inline constexpr bool has_fixed_call<F, std::void_t<decltype(&F::operator())>> = true;
template <class Token, class T>
inline constexpr bool is_wrong_callable =
    has_fixed_call<std::decay_t<Token>> && !std::is_invocable_v<std::decay_t<Token>&, outcome<T>>;

}  // namespace detail

// Starts a request with `start(on_done<T>)` and hands its answer over in the form `token`
// asks for. `start` must own what it needs (an Asio token may start it later).
template <class T, class Token, class Start>
auto complete(Token&& token, Start start) {
  using token_type = std::decay_t<Token>;
  if constexpr (std::is_same_v<token_type, use_future_t>) {
    auto promise = std::make_shared<std::promise<T>>();
    auto future = promise->get_future();
    start(on_done<T>{[promise](outcome<T> r) {
      if (!r) {
        promise->set_exception(std::make_exception_ptr(r.error()));
      } else if constexpr (std::is_void_v<T>) {
        promise->set_value();
      } else {
        promise->set_value(std::move(r).value());
      }
    }});
    return future;
  } else if constexpr (detail::is_plain_callable<Token, T>) {
    start(detail::to_on_done<T>(std::forward<Token>(token)));
  } else if constexpr (detail::is_wrong_callable<Token, T>) {
    // Stops here, before Asio would take the callable for a token and fail deep inside.
    static_assert(!detail::is_wrong_callable<Token, T>,
                  "cudactor: a callable given to a facade call takes the call's outcome: "
                  "void(cudactor::outcome<T>), e.g. [](cudactor::outcome<cudactor::completion> r) "
                  "{ if (r) use(*r); else report(r.error()); } (T is the call's answer: see the "
                  "table in docs/facade.md)");
  } else {
    return boost::asio::async_initiate<Token, void(outcome<T>)>(
        [start = std::move(start)](auto handler) mutable {
          start(detail::to_on_done<T>(
              detail::post_to_handler<decltype(handler), outcome<T>>(std::move(handler))));
        },
        token);
  }
}

}  // namespace cudactor
