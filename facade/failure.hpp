// facade/failure.hpp
//
// The one error type of the facade: what a request through it failed with, in words. It is
// both the exception a future throws and the error an outcome carries. what() renders the
// whole chain of causes ("cudactor::dependency_failed: op 7 cancelled: op 5 failed:
// cudactor::op_failed: ..."); code() is the cudactor::errc to branch on; cause() is the
// caf::error itself for code that also speaks the typed protocol.
#pragma once

#include <caf/error.hpp>

#include <exception>
#include <string>

#include "cudactor/messaging/errc.hpp"

namespace cudactor {

class failure : public std::exception {
 public:
  // CAF's own errors become the cudactor code they mean for a caller: a request to an actor
  // that is gone is shutting_down, a request that ran out of time is timeout; the original
  // stays in cause() and in the text.
  explicit failure(caf::error cause);
  failure(errc code, std::string what);

  [[nodiscard]] errc code() const noexcept { return code_; }
  [[nodiscard]] const caf::error& cause() const noexcept { return cause_; }
  [[nodiscard]] const char* what() const noexcept override { return text_.c_str(); }

  friend bool operator==(const failure& f, errc code) noexcept { return f.code_ == code; }
  friend bool operator!=(const failure& f, errc code) noexcept { return f.code_ != code; }

 private:
  caf::error cause_;
  errc code_;
  std::string text_;
};

}  // namespace cudactor
