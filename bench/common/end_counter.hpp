// bench/common/end_counter.hpp
//
// A listener actor that counts the ends of the operations a benchmark submitted: `done` is
// fulfilled once `expected` have been told, and `not_completed` says how many failed or were
// cancelled (a benchmark whose work did not complete measured nothing).
#pragma once

#include <caf/all.hpp>

#include <cstdint>
#include <future>
#include <memory>
#include <vector>

#include "cudactor/messaging/coordinator_protocol.hpp"

namespace cudactor::bench {

struct count_state {
  std::uint64_t expected = 0;
  std::uint64_t told = 0;
  std::uint64_t not_completed = 0;
  std::promise<void> done;
};

inline op_listener::behavior_type counter(op_listener::pointer, std::shared_ptr<count_state> st) {
  return {[st](const std::vector<op_notice>& notices) {
    for (const auto& n : notices) {
      if (n.state != op_state::completed) ++st->not_completed;
    }
    st->told += notices.size();
    if (st->told == st->expected) st->done.set_value();
  }};
}

}  // namespace cudactor::bench
