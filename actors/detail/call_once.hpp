// actors/detail/call_once.hpp
//
// A caller's function called exactly once, whichever way its request ends: with the answer,
// or, when the cell is destroyed unanswered (a request dropped by an actor that quit, a
// mailbox torn down with the actor system), with what `otherwise` makes. That is what keeps
// "every caller is told once" true for the code that is not an actor (client, facade).
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <utility>

namespace cudactor::detail {

// Calls `f`, reporting on stderr what it throws: it runs on a CAF worker, where an escaping
// exception would take the whole process down.
template <class F, class... Ts>
void call_reporting(const F& f, Ts&&... xs) noexcept {
  try {
    f(std::forward<Ts>(xs)...);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudactor: a completion function threw: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "cudactor: a completion function threw\n");
  }
}

template <class T>
class call_once {
 public:
  call_once(std::function<void(T)> f, std::function<T()> otherwise)
      : f_(std::move(f)), otherwise_(std::move(otherwise)) {}
  call_once(const call_once&) = delete;
  call_once& operator=(const call_once&) = delete;
  ~call_once() {
    if (f_) call_reporting(f_, otherwise_());
  }
  // From whichever thread ends the request first (an actor's, or one that stops the caller):
  // the first wins, later calls do nothing.
  void operator()(T x) {
    std::function<void(T)> f;
    {
      std::lock_guard<std::mutex> lock{mutex_};
      f = std::move(f_);
      f_ = nullptr;
    }
    if (f) call_reporting(f, std::move(x));
  }
  void otherwise() { (*this)(otherwise_()); }

 private:
  std::mutex mutex_;
  std::function<void(T)> f_;
  std::function<T()> otherwise_;
};

}  // namespace cudactor::detail
