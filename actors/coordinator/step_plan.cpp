#include "cudactor/actors/coordinator/step_plan.hpp"

#include <algorithm>
#include <cassert>

namespace cudactor::detail {

step_plan::step_plan(const input& in) {
  const std::size_t n = in.order.size();
  assert(in.streams > 0 && in.after_first.size() == n + 1 && in.pinned.size() == n);
  where_.assign(n, place{});
  std::vector<std::uint32_t> count(in.streams, 0);       // operations per stream so far
  std::vector<std::uint32_t> part_of(in.streams, none);  // a stream's part, once it has one
  // Per part and other part: the newest entry of that part this part already waits for (+1;
  // 0: none). Stream order covers every wait on an older one.
  std::vector<std::vector<std::uint32_t>> covered;
  struct top {
    std::uint32_t part = none;
    std::uint32_t any = 0, data = 0;  // +1; 0: none
  };
  std::vector<top> tops;
  std::vector<std::uint32_t> all_streams;
  std::vector<std::uint32_t> votes;  // per stream: dependencies of the operation placed there
  std::uint32_t previous = none;     // the stream of the operation placed before
  // How much busier than the least busy stream the chosen one may be: a share of the step's
  // fair share per stream, at least follow_slack.
  const auto slack =
      static_cast<std::uint32_t>(std::max<std::size_t>(follow_slack, n / (4 * in.streams)));
  for (std::uint32_t s = 0; s < in.streams; ++s) all_streams.push_back(s);

  const auto cell_of = [this](std::uint32_t p, std::uint32_t e) {
    entry& target = parts_[p].entries[e];
    if (target.cell == none) target.cell = static_cast<std::uint32_t>(cells_++);
  };

  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t op = in.order[k];
    const edge* deps = in.after.data() + in.after_first[op];
    const edge* deps_end = in.after.data() + in.after_first[op + 1];
    // Its stream: pinned; else the allowed stream holding most of its dependencies (ties: the
    // stream of the operation before it, then the least busy), or the stream of the operation
    // before it when it has none, unless that stream is more than `slack` busier than the
    // least busy allowed one, which it then goes to. Runs of work stay together: one point and
    // no wait where a stream takes them in order.
    std::uint32_t stream = in.pinned[op];
    if (stream == none) {
      const auto& allowed =
          in.allowed.empty() || in.allowed[op].empty() ? all_streams : in.allowed[op];
      std::uint32_t least = allowed.front();
      for (std::uint32_t s : allowed) {
        if (count[s] < count[least]) least = s;
      }
      const auto is_allowed = [&](std::uint32_t s) {
        return std::find(allowed.begin(), allowed.end(), s) != allowed.end();
      };
      std::uint32_t best = previous != none && is_allowed(previous) ? previous : least;
      std::uint32_t best_votes = 0;
      votes.assign(in.streams, 0);
      for (const edge* d = deps; d != deps_end; ++d) {
        const std::uint32_t s = parts_[where_[d->dep].part].stream;
        if (!is_allowed(s)) continue;
        const std::uint32_t v = ++votes[s];
        if (v > best_votes || (v == best_votes && s != best &&
                               (s == previous || (best != previous && count[s] < count[best])))) {
          best = s;
          best_votes = v;
        }
      }
      stream = count[best] <= count[least] + slack ? best : least;
    }
    previous = stream;
    ++count[stream];
    if (part_of[stream] == none) {
      part_of[stream] = static_cast<std::uint32_t>(parts_.size());
      parts_.push_back(part{stream, {}, {}});
      for (auto& c : covered) c.push_back(0);
      covered.emplace_back(parts_.size(), 0);
    }
    const std::uint32_t p = part_of[stream];
    const auto e = static_cast<std::uint32_t>(parts_[p].entries.size());
    where_[op] = place{p, e};
    entry made;
    made.op = op;
    made.first_wait = static_cast<std::uint32_t>(waits_.size());
    // Its waits: per other part the newest entry it depends on, and the newest data one when
    // the newest is an order only; none that an earlier entry's wait covers.
    tops.clear();
    for (const edge* d = deps; d != deps_end; ++d) {
      const place at = where_[d->dep];
      if (at.part == p) continue;  // stream order
      auto t =
          std::find_if(tops.begin(), tops.end(), [&](const top& x) { return x.part == at.part; });
      if (t == tops.end()) t = tops.insert(tops.end(), top{at.part});
      t->any = std::max(t->any, at.entry + 1);
      if (!d->order_only) t->data = std::max(t->data, at.entry + 1);
    }
    for (const top& t : tops) {
      std::uint32_t& seen = covered[p][t.part];
      if (t.any <= seen) continue;
      if (t.data != 0 && t.data > seen) {
        waits_.push_back(wait{t.part, t.data - 1, false});
        cell_of(t.part, t.data - 1);
      }
      if (t.any != t.data) {
        waits_.push_back(wait{t.part, t.any - 1, true});
        cell_of(t.part, t.any - 1);
      }
      seen = t.any;
    }
    made.waits = static_cast<std::uint32_t>(waits_.size()) - made.first_wait;
    parts_[p].entries.push_back(made);
  }
  if (n == 0) return;
  home_ = where_[in.order.back()].part;
  for (std::uint32_t q = 0; q < parts_.size(); ++q) {
    if (q == home_) continue;
    const auto last = static_cast<std::uint32_t>(parts_[q].entries.size() - 1);
    join_.push_back(wait{q, last, false});
    cell_of(q, last);
  }
  // Segments: a new one at every entry that waits, after every entry waited for.
  for (part& pt : parts_) {
    for (std::uint32_t e = 0; e < pt.entries.size(); ++e) {
      const bool opens = e == 0 || pt.entries[e].waits != 0 || pt.entries[e - 1].cell != none;
      if (opens) {
        pt.segments.push_back(segment{e, e});
      } else {
        pt.segments.back().last = e;
      }
    }
    segments_ += pt.segments.size();
  }
}

}  // namespace cudactor::detail
