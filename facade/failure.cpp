#include "cudactor/facade/failure.hpp"

#include <caf/sec.hpp>

#include <utility>

namespace cudactor {

namespace {

errc code_of(const caf::error& err) {
  if (!err) return errc::invalid_state;  // a failure without an error is a bug of the caller
  if (err.category() == error_category) return static_cast<errc>(err.code());
  if (err.category() == caf::atom("system")) {
    switch (static_cast<caf::sec>(err.code())) {
      case caf::sec::request_timeout: return errc::timeout;
      case caf::sec::request_receiver_down: return errc::shutting_down;
      default: break;
    }
  }
  if (err.category() == caf::atom("exit")) return errc::shutting_down;
  return errc::backend_error;
}

}  // namespace

failure::failure(caf::error cause)
    : cause_(std::move(cause)), code_(code_of(cause_)), text_(describe(cause_)) {
  // CAF's own error read as a cudactor code: say the code first, CAF's name after.
  if (cause_ && cause_.category() != error_category) {
    text_ = "cudactor::" + std::string{to_string(code_)} + " (" + text_ + ")";
  }
}

failure::failure(errc code, std::string what) : failure(make_error(code, std::move(what))) {}

}  // namespace cudactor
