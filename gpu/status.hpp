// gpu/status.hpp
//
// status: the outcome of a device-layer call (an status_code plus a message naming what failed);
// result<T>: a value or the status that explains why there is none. gpu/ reports expected
// failures through these instead of exceptions, so callers on hot paths and in actors can
// branch without try/catch, and nothing is silently dropped ([[nodiscard]] on both).
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "cudactor/gpu/status_code.hpp"

namespace cudactor::gpu {

class [[nodiscard]] status {
 public:
  status() noexcept = default;
  status(status_code code, std::string message) : code_(code), message_(std::move(message)) {}

  [[nodiscard]] static status success() noexcept { return {}; }

  [[nodiscard]] bool ok() const noexcept { return code_ == status_code::ok; }
  explicit operator bool() const noexcept { return ok(); }
  [[nodiscard]] status_code code() const noexcept { return code_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

  // "device_lost: stream 'copy-0' ...": the code's name, then the message.
  [[nodiscard]] std::string to_string() const;

  // Marks a status as deliberately not acted upon (e.g. a best-effort clean-up whose failure
  // is counted elsewhere). Makes the decision visible at the call site.
  void ignore() const noexcept {}

 private:
  status_code code_ = status_code::ok;
  std::string message_;
};

// A value of type T, or the status saying why there is none. Never holds an ok status.
template <class T>
class [[nodiscard]] result {
 public:
  result(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
  result(status error) : state_(std::in_place_index<1>, std::move(error)) {  // NOLINT
    assert(!std::get<1>(state_).ok() && "a result's error must not be ok");
  }
  result(status_code code, std::string message) : result(status{code, std::move(message)}) {}

  [[nodiscard]] bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  [[nodiscard]] T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  [[nodiscard]] const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  [[nodiscard]] T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // The error; an ok status when there is a value.
  [[nodiscard]] status error() const { return ok() ? status{} : std::get<1>(state_); }
  [[nodiscard]] status_code code() const noexcept { return ok() ? status_code::ok : std::get<1>(state_).code(); }

 private:
  std::variant<T, status> state_;
};

}  // namespace cudactor::gpu
