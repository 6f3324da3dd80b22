// messaging/detail/input_walker.hpp
//
// Walks a value through its inspect(), as CAF's serializers do, and checks every field on
// the way: enums in range (messaging/enum_range.hpp), strings, lists and named operations'
// arguments within input_limits, durations not negative and bounded. Because it follows
// inspect(), a field added to a message type is checked without anyone remembering to; a
// field of a type it does not know does not compile. It also adds up what the value holds
// (bytes of text and arguments, list elements) for the per-graph bounds.
#pragma once

#include <caf/detail/type_traits.hpp>
#include <caf/message.hpp>
#include <caf/meta/annotation.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "cudactor/messaging/enum_range.hpp"
#include "cudactor/messaging/input_limits.hpp"

namespace cudactor::detail {

class input_walker {
 public:
  using result_type = void;
  static constexpr bool reads_state = true;
  static constexpr bool writes_state = false;

  explicit input_walker(const input_limits& limits) noexcept : limits_(limits) {}

  template <class... Ts>
  void operator()(Ts&&... xs) {
    frame f;
    (visit(f, xs), ...);
  }

  template <class T>
  void walk(const T& x) {
    consume(const_cast<T&>(x));
  }

  // The first field that broke a rule, as "op_spec field 1: ..."; empty when none did.
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  struct frame {
    const char* type = nullptr;
    std::size_t field = 0;
  };

  template <class T>
  void visit(frame& f, T& x) {
    using plain = std::decay_t<T>;
    if constexpr (std::is_same_v<plain, caf::meta::type_name_t>) {
      f.type = x.value;
    } else if constexpr (caf::meta::is_annotation<plain>::value) {
      // save/load callbacks and formatting hints carry no data
    } else {
      const frame* outer = current_;
      current_ = &f;
      consume(const_cast<plain&>(x));
      current_ = outer;
      ++f.field;
    }
  }

  void fail(const std::string& what) {
    if (!problem_.empty()) return;
    std::string where;
    if (current_ != nullptr && current_->type != nullptr) {
      std::string type = current_->type;
      if (type.rfind("cudactor::", 0) == 0) type.erase(0, 10);
      where = type + " field " + std::to_string(current_->field) + ": ";
    }
    problem_ = where + what;
  }

  void consume(bool&) {}

  template <class T>
  std::enable_if_t<std::is_arithmetic_v<T>> consume(T&) {}

  template <class E>
  std::enable_if_t<std::is_enum_v<E>> consume(E& x) {
    using U = std::underlying_type_t<E>;
    if (!in_range(x)) {
      fail(std::to_string(static_cast<std::uint64_t>(static_cast<U>(x))) + " is not a valid " +
           enum_range<E>::name + " (0 to " +
           std::to_string(static_cast<std::uint64_t>(static_cast<U>(enum_range<E>::last))) + ")");
    }
  }

  void consume(std::string& x) {
    bytes_ += x.size();
    if (x.size() > limits_.max_string) {
      fail("a string of " + std::to_string(x.size()) + " bytes (at most " +
           std::to_string(limits_.max_string) + ")");
    }
  }

  void consume(caf::timespan& x) {
    if (x.count() < 0 || x > limits_.max_duration) {
      fail("a duration of " + std::to_string(x.count()) + " ns (0 to " +
           std::to_string(limits_.max_duration.count()) + " ns)");
    }
  }

  template <class T>
  void consume(std::vector<T>& xs) {
    if (xs.size() > limits_.max_sequence) {
      fail("a list of " + std::to_string(xs.size()) + " elements (at most " +
           std::to_string(limits_.max_sequence) + ")");
      return;
    }
    for (auto& x : xs) {
      if (!problem_.empty()) return;
      consume(x);
    }
  }

  // A named operation's arguments: counted and their bytes added up. Their types are the
  // operation registry's to check (operation_registry::check).
  void consume(caf::message& x);

  template <class T>
  std::enable_if_t<caf::detail::is_inspectable<input_walker, T>::value && !std::is_enum_v<T>>
  consume(T& x) {
    inspect(*this, x);
  }

  const input_limits& limits_;
  const frame* current_ = nullptr;
  std::string problem_;
  std::size_t bytes_ = 0;
};

}  // namespace cudactor::detail
