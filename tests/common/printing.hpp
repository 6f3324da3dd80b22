// tests/common/printing.hpp
//
// Lets Boost.Test print the device layer's enums in failure messages.
#pragma once

#include <chrono>
#include <ostream>

#include "cudactor/gpu/status_code.hpp"
#include "cudactor/gpu/types.hpp"

namespace cudactor::gpu {

inline std::ostream& operator<<(std::ostream& out, status_code value) { return out << to_string(value); }
inline std::ostream& operator<<(std::ostream& out, backend_kind value) {
  return out << to_string(value);
}
inline std::ostream& operator<<(std::ostream& out, stream_priority value) {
  return out << to_string(value);
}
inline std::ostream& operator<<(std::ostream& out, event_state value) {
  return out << to_string(value);
}
inline std::ostream& operator<<(std::ostream& out, memory_kind value) {
  return out << to_string(value);
}

}  // namespace cudactor::gpu

namespace std::chrono {
// Boost.Test's customisation point, found by ADL.
template <class Rep, class Period>
std::ostream& boost_test_print_type(std::ostream& out, const duration<Rep, Period>& value) {
  return out << std::chrono::duration<double, std::micro>{value}.count() << " us";
}
}  // namespace std::chrono
