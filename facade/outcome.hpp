// facade/outcome.hpp
//
// What a request through the facade ends with: its value, or the failure that says why not.
// A callable given to a facade call receives one; a future holds the value and throws the
// failure from get().
#pragma once

#include <optional>
#include <utility>
#include <variant>

#include "cudactor/facade/failure.hpp"

namespace cudactor {

template <class T>
class outcome {
 public:
  outcome(T value) : v_(std::in_place_index<0>, std::move(value)) {}    // NOLINT: implicit
  outcome(failure why) : v_(std::in_place_index<1>, std::move(why)) {}  // NOLINT: implicit

  [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // The value; throws the failure when there is none.
  [[nodiscard]] T& value() & { return check(), std::get<0>(v_); }
  [[nodiscard]] const T& value() const& { return check(), std::get<0>(v_); }
  [[nodiscard]] T&& value() && { return check(), std::get<0>(std::move(v_)); }
  [[nodiscard]] T& operator*() & { return value(); }
  [[nodiscard]] const T& operator*() const& { return value(); }
  [[nodiscard]] T* operator->() { return &value(); }
  [[nodiscard]] const T* operator->() const { return &value(); }

  // Only when !ok().
  [[nodiscard]] const failure& error() const { return std::get<1>(v_); }

 private:
  void check() const {
    if (!ok()) throw std::get<1>(v_);
  }
  std::variant<T, failure> v_;
};

// A request that answers nothing but "done".
template <>
class outcome<void> {
 public:
  outcome() = default;
  outcome(failure why) : why_(std::move(why)) {}  // NOLINT: implicit

  [[nodiscard]] bool ok() const noexcept { return !why_; }
  explicit operator bool() const noexcept { return ok(); }
  void value() const {
    if (why_) throw *why_;
  }
  [[nodiscard]] const failure& error() const { return *why_; }

 private:
  std::optional<failure> why_;
};

}  // namespace cudactor
