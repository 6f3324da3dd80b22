// actors/coordinator/op_profile.hpp
//
// The coordinator's running profile behind report_atom: each ended operation is added once
// (stream figures, per-name totals); report() reads it out. Plain data, no CAF, no locks: the
// coordinator owns it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "cudactor/messaging/operation_types.hpp"
#include "cudactor/messaging/report_types.hpp"

namespace cudactor::detail {

// One ended operation as the profile sees it. Times are steady-clock nanoseconds, 0 when the
// step did not happen (never dispatched, not timed).
struct profiled_op {
  const std::string* name = nullptr;  // its description; its type's name when empty
  op_type type = op_type::kernel;
  op_state state = op_state::completed;
  bool on_stream = false;
  std::uint32_t stream = 0;
  std::int64_t registered_ns = 0;
  std::int64_t dispatched_ns = 0;
  std::int64_t started_ns = 0;
  std::int64_t finished_ns = 0;
  std::int64_t ended_ns = 0;
};

class op_profile {
 public:
  // `names`: distinct names kept apart; later ones are summed under "(other names)".
  op_profile(std::int64_t since_ns, std::size_t names);
  // It points into its own table (last_): not copied, not moved.
  op_profile(const op_profile&) = delete;
  op_profile& operator=(const op_profile&) = delete;

  // Lists streams 0 .. count-1 in the report even before anything ran on them.
  void streams(std::size_t count);
  void add(const profiled_op& op);
  [[nodiscard]] coordinator_report report(std::int64_t now_ns, bool timed) const;

 private:
  struct stream_figures {
    stream_report totals;
    std::int64_t covered_until = 0;  // busy time is counted up to here
  };

  std::int64_t since_ns_;
  std::size_t max_names_;
  std::vector<stream_figures> streams_;
  std::unordered_map<std::string, op_name_report> names_;
  // The entry the last operation's name led to, and that name (which may differ from the
  // entry's own: past max_names_, every new name lands on other_names).
  op_name_report* last_ = nullptr;
  std::string last_name_;
};

}  // namespace cudactor::detail
