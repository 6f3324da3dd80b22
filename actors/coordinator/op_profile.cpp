#include "cudactor/actors/coordinator/op_profile.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <string>

#include "cudactor/messaging/enum_range.hpp"

namespace cudactor::detail {

namespace {

const std::string other_names = "(other names)";

// An operation type's name, as a string that lives as long as the program.
const std::string& type_name(op_type type) {
  static const auto names = [] {
    std::array<std::string, enum_count<op_type>> out;
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = std::string{to_string(static_cast<op_type>(i))};
    }
    return out;
  }();
  const auto i = static_cast<std::size_t>(type);
  return i < names.size() ? names[i] : names[0];
}

}  // namespace

op_profile::op_profile(std::int64_t since_ns, std::size_t names)
    : since_ns_(since_ns), max_names_(names) {}

void op_profile::streams(std::size_t count) {
  if (streams_.size() < count) streams_.resize(count);
}

void op_profile::add(const profiled_op& op) {
  const bool bad = op.state != op_state::completed;
  const bool timed = op.started_ns != 0 && op.finished_ns >= op.started_ns;
  const std::int64_t run = timed ? op.finished_ns - op.started_ns : 0;
  if (op.on_stream) {
    if (streams_.size() <= op.stream) streams_.resize(op.stream + 1);
    stream_figures& s = streams_[op.stream];
    s.totals.stream = stream_id{op.stream};
    ++s.totals.ops;
    if (op.type == op_type::kernel) ++s.totals.kernels;
    if (op.type == op_type::memory_transfer) ++s.totals.transfers;
    if (bad) ++s.totals.failed;
    s.totals.run_ns += run;
    // A stream's operations are dispatched and end in order, so the union of their
    // [dispatched, end seen] spans grows at its end only.
    const std::int64_t from = std::max(op.dispatched_ns, s.covered_until);
    if (op.ended_ns > from) s.totals.busy_ns += op.ended_ns - from;
    s.covered_until = std::max(s.covered_until, op.ended_ns);
  }
  // The description itself is the key: no string is built per operation.
  const std::string& name = op.name != nullptr && !op.name->empty() ? *op.name : type_name(op.type);
  // Operations end in runs of one name (a graph's, a type's): the last one's figures are
  // found without hashing the name again. Map nodes do not move, so the pointer stays good.
  if (last_ == nullptr || last_name_ != name) {
    auto it = names_.find(name);
    if (it == names_.end()) {
      const std::string& kept = names_.size() >= max_names_ ? other_names : name;
      it = names_.try_emplace(kept).first;
      it->second.name = kept;
    }
    last_ = &it->second;
    last_name_ = name;
  }
  op_name_report& n = *last_;
  ++n.count;
  if (bad) ++n.failed;
  if (op.dispatched_ns != 0) {
    n.queued_ns += op.dispatched_ns - op.registered_ns;
    if (op.on_stream) n.on_stream_ns += std::max<std::int64_t>(0, op.ended_ns - op.dispatched_ns);
  }
  n.run_ns += run;
  n.max_run_ns = std::max(n.max_run_ns, run);
}

coordinator_report op_profile::report(std::int64_t now_ns, bool timed) const {
  coordinator_report out;
  out.since_ns = since_ns_;
  out.now_ns = now_ns;
  out.timed = timed;
  for (std::uint32_t i = 0; i < streams_.size(); ++i) {
    out.streams.push_back(streams_[i].totals);
    out.streams.back().stream = stream_id{i};
  }
  for (const auto& [name, figures] : names_) out.operations.push_back(figures);
  // The most time first, one measure for all: run time when timed (a name whose operations
  // all failed has none and goes last), time on stream otherwise. Mixing the two put a failed
  // operation that had waited behind others ahead of the ones that ran.
  std::sort(out.operations.begin(), out.operations.end(), [timed](const auto& a, const auto& b) {
    const auto key = [timed](const op_name_report& r) { return timed ? r.run_ns : r.on_stream_ns; };
    return key(a) != key(b) ? key(a) > key(b) : a.name < b.name;
  });
  return out;
}

}  // namespace cudactor::detail
