// The coordinator's buffers: allocation through a stream actor, adoption of the caller's
// memory, dependencies inferred from the uses operations declare, poison left by writers that
// never wrote, and release after the last use on every stream (docs/buffers.md).
#include <caf/all.hpp>

#include <algorithm>
#include <cassert>
#include <string>
#include <unordered_set>
#include <utility>

#include "cudactor/actors/coordinator/coordinator_state.hpp"
#include "cudactor/actors/detail/clock.hpp"
#include "cudactor/actors/detail/small_sort.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

// --- allocating -------------------------------------------------------------------------------

caf::error coordinator_state::buffers_full(const std::string& doing) const {
  const std::size_t held = buffers_->size();
  if (held + allocating_ < options_.max_buffers) return {};
  // Those still being made count too: without them the words said "holds 0 buffers".
  return make_error(errc::resource_exhausted,
                    doing + ": the coordinator holds " + std::to_string(held) +
                        " buffers and is making " + std::to_string(allocating_) + ", " +
                        std::to_string(options_.max_buffers) +
                        " in all at most (coordinator_options::max_buffers)");
}

caf::result<buffer_handle> coordinator_state::allocate_buffer(std::optional<stream_id> on,
                                                              std::uint64_t bytes) {
  if (auto why = refusal()) return why;
  if (bytes == 0) return make_error(errc::invalid_argument, "allocate: a buffer of 0 bytes");
  std::uint32_t index = 0;
  if (on) {
    const auto found = pool_.index_of(*on);
    if (!found) {
      return make_error(errc::invalid_argument, "allocate: stream " + std::to_string(on->value) +
                                                    " is not one the coordinator schedules onto");
    }
    index = *found;
  } else if (auto chosen = pool_.choose(op_priority::normal, op_workload::memory)) {
    index = *chosen;
  }
  if (auto full = buffers_full("allocate")) return full;
  ++allocating_;
  auto promise = self_->make_response_promise<buffer_handle>();
  const std::uint64_t epoch = epoch_;
  self_->request(actors_[index], caf::infinite, alloc_atom::value, bytes)
      .then(
          [this, promise, index, epoch](const buffer_ref& memory) mutable {
            --allocating_;
            if (epoch != epoch_ || closing_) {
              // Lost or shut down meanwhile: the memory goes back in the stream's order.
              self_->request(actors_[index], caf::infinite, free_atom::value, memory)
                  .then([](const ticket&) {}, [this](caf::error&) { ++failed_frees_; });
              caf::error why = refusal();
              promise.deliver(why ? why : make_error(errc::device_lost, "allocate: device lost"));
              return;
            }
            buffer_table::entry* e = buffers_->add(memory.size, memory.address, false);
            e->home = index;
            e->memory = memory;
            e->handle.stream = pool_.at(index).id;
            buffer_metrics_[index].allocated(memory.size);
            promise.deliver(e->handle);
          },
          [this, promise](caf::error& why) mutable {
            --allocating_;
            promise.deliver(std::move(why));
          });
  return promise;
}

caf::result<buffer_handle> coordinator_state::adopt_buffer(std::uint64_t address,
                                                           std::uint64_t bytes) {
  if (auto why = refusal()) return why;
  if (address == 0 || bytes == 0) {
    return make_error(errc::invalid_argument, "adopt: memory at " + std::to_string(address) +
                                                  " of " + std::to_string(bytes) +
                                                  " bytes (neither may be 0)");
  }
  if (address + bytes < address) {
    return make_error(errc::invalid_argument, "adopt: the range wraps around the address space");
  }
  if (auto full = buffers_full("adopt")) return full;
  buffer_table::entry* e = buffers_->add(bytes, address, true);
  return e->handle;
}

// --- releasing ------------------------------------------------------------------------------

caf::result<op_id> coordinator_state::release_buffer(const buffer_id& id) {
  if (auto why = refusal()) return why;
  caf::error why;
  buffer_table::entry* e = buffers_->find_live(id, why);
  if (e == nullptr) return why;
  // After every user still to be waited for: those that have not ended through the graph
  // (order only: a failed user does not hold the release back), those still on the device
  // through their points.
  std::vector<op_id> order, tails, users;
  e->uses->for_each_user([&](op_id user) { users.push_back(user); });
  std::vector<op_id> through;
  for (op_id user : users) {
    if (ghosts_.count(user) != 0) expand_ghost(user, through);
  }
  users.insert(users.end(), through.begin(), through.end());
  // A user of several ranges (a write of the whole buffer, read in halves since) is listed
  // once per range: one dependency each.
  std::sort(users.begin(), users.end());
  users.erase(std::unique(users.begin(), users.end()), users.end());
  for (op_id user : users) {
    if (tails_.count(user) != 0) {
      tails.push_back(user);
    } else if (waited(user)) {
      order.push_back(user);
    }
  }
  const op_id release{graph_.newest().value + 1};
  if (auto bad = graph_.add(release, op_priority::normal, false, {}, order)) return bad;
  op_spec spec;
  spec.deps = order;
  spec.deps.insert(spec.deps.end(), tails.begin(), tails.end());
  spec.type = op_type::release;
  spec.workload = op_workload::memory;
  // One name for every release: the profile and the report total by name, and describe()
  // says which buffer a release releases.
  spec.description = "buffer release";
  if (!e->handle.adopted) {
    // Freed in the order of the stream it was allocated on: the release goes there.
    spec.placement.pinned = true;
    spec.placement.stream = pool_.at(e->home).id;
  }
  op_record& r = add_record(release, spec, spec.deps, gpu::work_fn{no_work}, false, now_ns());
  r.bufs.reset(new op_buffers{});
  if (!tails.empty()) after_ops_[release] = std::move(tails);  // spec.deps has them
  r.bufs->releases = id;
  e->state = buffer_table::phase::releasing;
  e->release = release;
  if (!e->handle.adopted) buffer_metrics_[e->home].released(e->handle.size);
  pass_or_later();
  return release;
}

void coordinator_state::free_released(std::uint32_t index, const buffer_ref& memory) {
  frees_[index].push_back(memory);
}

void coordinator_state::drop_kept_buffers() {
  buffers_->for_each([this](buffer_table::entry& e) {
    if (e.state != buffer_table::phase::kept) return;
    if (!e.handle.adopted) buffer_metrics_[e.home].dropped(e.handle.size);
    buffers_->remove(e);
  });
}

// --- uses -------------------------------------------------------------------------------------

caf::error coordinator_state::check_uses(const std::vector<buffer_use>& uses,
                                         std::size_t graph_index, byte_range* ranges,
                                         buffer_uses** histories) {
  for (std::size_t i = 0; i < uses.size(); ++i) {
    buffer_table::entry* e = buffers_->passing(uses[i], ranges[i]);
    if (e == nullptr) {
      if (auto bad = buffers_->check(uses[i], ranges[i], e)) {
        // The label only on the way out: a graph's checks that pass build no text.
        const std::string which = graph_index == ~std::size_t{0}
                                      ? "the operation"
                                      : "graph op " + std::to_string(graph_index);
        return make_error(static_cast<errc>(bad.code()), which + error_context(bad));
      }
    }
    histories[i] = &*e->uses;
  }
  return {};
}

namespace {

// Who an inference refusal names: built only on the way out.
std::string inference_label(std::size_t graph_index) {
  if (graph_index == ~std::size_t{0}) return "the operation";
  if (graph_index == ~std::size_t{0} - 1) return "the graph";
  return "graph op " + std::to_string(graph_index);
}

}  // namespace

caf::error coordinator_state::inference_bounds(std::size_t graph_index) const {
  if (!past_inference_bounds()) return {};
  std::string which = inference_label(graph_index);
  if (crossed_) {
    which += ", at its use " + std::to_string(crossed_->use) + " (" + to_string(crossed_->buffer) +
             ")";
  }
  if (inferred_edges_ > options_.max_inferred_edges) {
    return make_error(
        errc::invalid_argument,
        which + ": the buffer uses infer more than " + std::to_string(options_.max_inferred_edges) +
            " dependencies (coordinator_options::max_inferred_edges, per graph or lone operation)");
  }
  if (covered_segments_ > options_.max_covered_segments) {
    return make_error(errc::invalid_argument,
                      which + ": inferring from the buffer uses goes through more than " +
                          std::to_string(options_.max_covered_segments) +
                          " history segments (coordinator_options::max_covered_segments, per "
                          "graph or lone operation)");
  }
  return {};
}

caf::error coordinator_state::history_room(const std::vector<buffer_use>& uses,
                                           buffer_uses* const* histories, op_id scratch_first,
                                           std::size_t graph_index) {
  const std::size_t most = options_.max_buffer_segments;
  // Two per use, all of them on one history at worst: a bound that needs no count per history.
  const std::size_t adds = 2 * uses.size();
  for (std::size_t i = 0; i < uses.size(); ++i) {
    buffer_uses& history = *histories[i];
    if (history.segments() + adds <= most) continue;
    // Its ended users may hold most of it: compacted, it may have room after all.
    // Not again while nothing was let go or recorded: a refusal each time a full history is
    // asked for more went through all of it before.
    history.compact(
        [this, scratch_first](op_id x) {
          return (!scratch_first.empty() && x.value >= scratch_first.value) || kept_in_history(x);
        },
        history_let_go());
    if (history.segments() + adds <= most) continue;
    return make_error(errc::resource_exhausted,
                      inference_label(graph_index) + ": the use history of " +
                          to_string(uses[i].buffer) + " holds " +
                          std::to_string(history.segments()) +
                          " segments from uses still to end, and this operation's uses could "
                          "take it past " +
                          std::to_string(most) + " (coordinator_options::max_buffer_segments)");
  }
  return {};
}

bool coordinator_state::waited(op_id op) const {
  if (const op_graph::node* n = graph_.find(op)) {
    if (!is_terminal(n->state)) return true;
  }
  return tails_.count(op) != 0;
}

auto coordinator_state::still_waited(op_id user) const {
  // A user of the same graph (scratch ids, past every registered one) is still to come.
  const op_id newest = graph_.newest();
  return [this, user, newest](op_id x) {
    return x != user &&
           (x.value > newest.value || waited(x) || (!ghosts_.empty() && ghosts_.count(x) != 0));
  };
}

void coordinator_state::take_edges(const buffer_use& use) {
  for (const use_edge& e : edges_) {
    if (!ghosts_.empty() && ghosts_.count(e.op) != 0 && !waited(e.op)) {
      // It never ran: what it came after stands in for it.
      std::vector<op_id> through;
      expand_ghost(e.op, through);
      for (op_id d : through) {
        inferred_work_.push_back(inferred_dep{d, use.buffer, use.access, true});
      }
      continue;
    }
    inferred_work_.push_back(inferred_dep{e.op, use.buffer, use.access, e.order_only});
  }
}

void coordinator_state::settle_inferred(use_inference& out) {
  std::vector<inferred_dep>& found = inferred_work_;
  // Each dependency once per buffer, a data one winning (for_each_inferred makes it once):
  // what describe says keeps the buffers.
  if (found.size() > 1) {
    const auto before = [](const inferred_dep& a, const inferred_dep& b) {
      if (a.dep != b.dep) return a.dep < b.dep;
      if (a.buffer.slot != b.buffer.slot) return a.buffer.slot < b.buffer.slot;
      return !a.order_only && b.order_only;
    };
    sort_small(found, before);  // most operations infer a handful
    found.erase(std::unique(found.begin(), found.end(),
                            [](const inferred_dep& a, const inferred_dep& b) {
                              return a.dep == b.dep && a.buffer == b.buffer;
                            }),
                found.end());
  }
  out.inferred.assign(found.begin(), found.end());  // one allocation, of its size
}

void coordinator_state::infer_uses(const std::vector<buffer_use>& uses, const byte_range* ranges,
                                   buffer_uses* const* histories, op_id user, use_inference& out) {
  inferred_work_.clear();
  const auto still = still_waited(user);
  for (std::size_t i = 0; i < uses.size(); ++i) {
    edges_.clear();
    covered_segments_ +=
        histories[i]->infer(ranges[i], uses[i].access, still, edges_, out.poisoned);
    inferred_edges_ += edges_.size();
    if (past_inference_bounds()) {
      crossed_ = inference_crossing{i, uses[i].buffer};
      return;  // refused: inference_bounds() says why
    }
    take_edges(uses[i]);
  }
  settle_inferred(out);
}

namespace {

// At most this many uses of one operation are compared pairwise (infer_and_record_uses); an
// operation with more takes the two passes, whatever they overlap.
constexpr std::size_t paired_uses = 16;

}  // namespace

void coordinator_state::infer_and_record_uses(const std::vector<buffer_use>& uses,
                                              const byte_range* ranges,
                                              buffer_uses* const* histories, op_id user,
                                              use_inference& out) {
  // Each use is inferred and recorded with one search of its history, unless another use of
  // the operation overlaps it in the same buffer: recording one first could then hide from
  // the other a user it must come after, so all are inferred before any is recorded. A use
  // that repeats an earlier one exactly (same buffer, bytes and access) adds nothing to either.
  const std::size_t m = uses.size();
  std::uint32_t repeats = 0;  // bit k: use k repeats an earlier one
  bool tangled = m > paired_uses;
  for (std::size_t k = 1; k < m && !tangled; ++k) {
    for (std::size_t j = 0; j < k; ++j) {
      if (histories[j] != histories[k] || ranges[j].end <= ranges[k].begin ||
          ranges[k].end <= ranges[j].begin) {
        continue;
      }
      if (ranges[j].begin == ranges[k].begin && ranges[j].end == ranges[k].end &&
          uses[j].access == uses[k].access) {
        repeats |= std::uint32_t{1} << k;
      } else {
        tangled = true;
      }
      break;
    }
  }
  if (tangled) {
    infer_uses(uses, ranges, histories, user, out);
    if (!crossed_) record_uses(uses, ranges, histories, user, false);
    return;
  }
  inferred_work_.clear();
  const auto still = still_waited(user);
  for (std::size_t k = 0; k < m; ++k) {
    if ((repeats >> k) & 1U) continue;
    edges_.clear();
    covered_segments_ += histories[k]->infer_and_record(ranges[k], uses[k].access, still, user,
                                                        edges_, out.poisoned);
    inferred_edges_ += edges_.size();
    if (past_inference_bounds()) {
      crossed_ = inference_crossing{k, uses[k].buffer};
      return;  // refused, the graph's scratch copies with it
    }
    take_edges(uses[k]);
  }
  settle_inferred(out);
}

void coordinator_state::record_uses(const std::vector<buffer_use>& uses, const byte_range* ranges,
                                    buffer_uses* const* histories, op_id user, bool compact) {
  for (std::size_t i = 0; i < uses.size(); ++i) {
    buffer_uses& history = *histories[i];
    history.record(ranges[i], uses[i].access, user);
    if (compact && history.compaction_due()) {
      compact_history(history);
    }
  }
}

void coordinator_state::buffer_user_ended(op_id id, op_record& r, op_state state,
                                          const caf::error& cause) {
  if (r.type == op_type::release) {
    caf::error why;
    buffer_table::entry* e = buffers_->find(r.bufs->releases, why);
    if (e == nullptr) return;
    if (state == op_state::completed) {
      if (!e->handle.adopted) buffer_metrics_[e->home].reclaimed(e->handle.size);
      buffers_->remove(*e);
    } else {
      e->state = buffer_table::phase::kept;  // the device went: not reused until reset
    }
    return;
  }
  if (state != op_state::completed) {
    for (const buffer_use& u : r.bufs->uses) {
      if (!writes(u.access)) continue;
      caf::error why;
      buffer_table::entry* e = buffers_->find(u.buffer, why);
      if (e == nullptr) continue;
      const std::uint64_t bytes = u.bytes == 0 ? e->handle.size - u.offset : u.bytes;
      e->uses->poison(
          byte_range{u.offset, u.offset + bytes}, id,
          cause ? cause : make_error(errc::op_failed, to_string(id) + " ended unwritten"));
    }
    // A tail (note_tail): what comes after it by its uses must come after its point too.
    if (!tails_.empty() && tails_.count(id) != 0) hand_over(id, {id});
    // Ended before it ran (note_ghost made it a ghost): what it came after, and what the
    // ghosts among those came after, stands in for it.
    if (r.stream == no_stream && ghosts_.count(id) != 0) {
      std::vector<op_id> through;
      expand_ghost(id, through);
      hand_over(id, through);
      if (ghosts_.size() > 64 + 2 * ghosts_pruned_at_) prune_ghosts();
    }
  }
}

void coordinator_state::note_ghost(op_id id, const op_record& r, op_state state) {
  // Its uses are in the histories (a write of it took the place of the users before it):
  // kept as a ghost, with what it came after. All of a batch of ends first, so that a ghost
  // ended with one before it sees that one as a ghost too.
  if (lost_ || state == op_state::completed || r.stream != no_stream || !r.bufs) return;
  const op_buffers& b = *r.bufs;
  const auto after = after_ops_.find(id);
  const bool after_any = after != after_ops_.end() && !after->second.empty();
  if (b.uses.empty() || (b.inferred.empty() && !after_any)) return;
  std::vector<op_id>& before = ghosts_[id];
  for (const inferred_dep& d : b.inferred) before.push_back(d.dep);
  if (after_any) before.insert(before.end(), after->second.begin(), after->second.end());
}

void coordinator_state::note_tail(op_id id, const op_record& r, op_state state) {
  // Cancelled or failed on its way or on its stream: its work may still run there.
  if (lost_ || state == op_state::completed || !r.bufs || r.type == op_type::release ||
      r.stream == no_stream) {
    return;
  }
  if (r.point == 0 || r.point > pool_.at(r.stream).ledger->completed()) {
    tails_[id] = op_position{r.stream, r.point};
  }
}

void coordinator_state::expand_ghost(op_id ghost, std::vector<op_id>& out) const {
  std::vector<op_id> stack{ghost};
  std::unordered_set<std::uint64_t> seen{ghost.value};
  while (!stack.empty()) {
    auto found = ghosts_.find(stack.back());
    stack.pop_back();
    if (found == ghosts_.end()) continue;
    for (op_id d : found->second) {
      if (!seen.insert(d.value).second) continue;
      if (waited(d)) {
        out.push_back(d);
      } else if (ghosts_.count(d) != 0) {
        stack.push_back(d);
      }
    }
  }
}

void coordinator_state::prune_ghosts() {
  // A ghost whose predecessors have all ended stands for nothing any more.
  for (auto it = ghosts_.begin(); it != ghosts_.end();) {
    std::vector<op_id> through;
    expand_ghost(it->first, through);
    if (through.empty()) {
      it = ghosts_.erase(it);
      ++let_go_;
    } else {
      ++it;
    }
  }
  ghosts_pruned_at_ = ghosts_.size();
}

coordinator_state::after_state coordinator_state::after_op(op_id op, op_position& at) const {
  if (const op_graph::node* n = graph_.find(op); n != nullptr && !is_terminal(n->state)) {
    if (!n->position) return after_state::not_yet;
    at = *n->position;
    return after_state::placed;
  }
  auto tail = tails_.find(op);
  if (tail == tails_.end()) return after_state::done;
  at = tail->second;
  return after_state::placed;
}

void coordinator_state::after_waits(op_id id, std::uint32_t index) {
  for_each_after(id, [&](after_state st, const op_position& at) {
    if (st != after_state::placed) return;
    assert(at.point != 0 || at.stream == index);  // place() keeps it so
    if (at.point != 0 && at.stream != index) waits_work_.emplace_back(at, true);
  });
}

void coordinator_state::hand_over(op_id ended, const std::vector<op_id>& instead) {
  const op_graph::node* n = graph_.find(ended);
  if (n == nullptr) return;
  for (op_id d : n->dependents) {
    const op_graph::node* dependent = graph_.find(d);
    if (dependent == nullptr || is_terminal(dependent->state) || dependent->position) continue;
    auto r = records_.find(d.value);
    if (r == nullptr) continue;
    add_after_ops(d, *r, instead);
  }
}

void coordinator_state::add_after_ops(op_id id, op_record& r, const std::vector<op_id>& ops) {
  if (ops.empty()) return;
  std::vector<op_id>& after = after_ops_[id];
  after.insert(after.end(), ops.begin(), ops.end());
  r.deps.append(ops.data(), ops.data() + ops.size());
}

}  // namespace cudactor::detail
