#include "cudactor/actors/communicator_table.hpp"

#include <array>
#include <chrono>
#include <utility>

#include "cudactor/actors/detail/actor_metrics.hpp"
#include "cudactor/messaging/enum_range.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor {

// A communicator name's cells, made once when the name is first installed (a family's add
// takes a lock: never per collective) and shared with the work that counts into them.
struct communicator_table::cells {
  static constexpr std::size_t kinds = enum_count<gpu::collective_kind>;
  std::array<metrics::counter*, kinds> operations{};
  std::array<metrics::counter*, kinds> failures{};
  std::array<metrics::counter*, kinds> bytes{};
  std::array<metrics::duration_histogram*, kinds> duration{};
  metrics::gauge* sequence = nullptr;
  metrics::gauge* generation = nullptr;

  // One run of a collective of kind `k` that moved `moved` bytes, ended with `s`.
  void counted(std::size_t k, std::uint64_t moved, const gpu::communicator& c,
               const gpu::status& s) {
    operations[k]->add();
    sequence->set(static_cast<std::int64_t>(c.sequence()));
    if (!s.ok()) {
      failures[k]->add();
    } else {
      bytes[k]->add(moved);
    }
  }
};

communicator_table::communicator_table(std::shared_ptr<metrics::registry> registry)
    : registry_(detail::registry_or_own(std::move(registry))) {}

communicator_table::~communicator_table() { clear("the node is shutting down"); }

std::shared_ptr<communicator_table::cells> communicator_table::cells_for(const std::string& name) {
  auto& slot = cells_[name];
  if (slot) return slot;
  slot = std::make_shared<cells>();
  auto& r = *registry_;
  const std::vector<std::string> labels{"communicator", "kind"};
  auto& ops = r.counters("cudactor_collective_operations_total",
                         "Collectives this rank ran, failed ones included.", labels);
  auto& failed = r.counters("cudactor_collective_failures_total",
                            "Collectives that failed on this rank (a peer lost, a timeout, an "
                            "abort); the communicator is broken after the first.",
                            labels);
  auto& bytes =
      r.counters("cudactor_collective_bytes_total",
                 "Bytes this rank's collectives read and wrote (send plus receive).", labels);
  auto& time = r.histograms("cudactor_collective_duration_seconds",
                            "A collective from its start on this rank to its end, on host "
                            "engines (a device engine only enqueues it).",
                            labels);
  for (std::size_t k = 0; k < cells::kinds; ++k) {
    const std::string kind{gpu::to_string(static_cast<gpu::collective_kind>(k))};
    slot->operations[k] = &ops.add({name, kind});
    slot->failures[k] = &failed.add({name, kind});
    slot->bytes[k] = &bytes.add({name, kind});
    slot->duration[k] = &time.add({name, kind});
  }
  slot->sequence = &r.gauges("cudactor_communicator_sequence",
                             "Collectives started on the communicator's current generation: "
                             "ranks that agree are in step.",
                             {"communicator"})
                        .add({name});
  slot->generation =
      &r.gauges("cudactor_communicator_generation",
                "The generation of the communicator this node holds.", {"communicator"})
           .add({name});
  return slot;
}

caf::error communicator_table::add(std::shared_ptr<gpu::communicator> c) {
  if (!c) return make_error(errc::invalid_argument, "no communicator to add");
  std::shared_ptr<gpu::communicator> replaced;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    auto& slot = held_[c->name()];
    if (slot && slot->generation() >= c->generation()) {
      return make_error(errc::invalid_argument,
                        "communicator '" + c->name() + "': generation " +
                            std::to_string(c->generation()) + " is not newer than generation " +
                            std::to_string(slot->generation()) + ", which the node holds");
    }
    replaced = std::exchange(slot, c);
    auto counts = cells_for(c->name());
    counts->generation->set(static_cast<std::int64_t>(c->generation()));
    counts->sequence->set(0);
  }
  // Outside the lock: an abort may wait for the engine's connections to close.
  if (replaced) {
    replaced->abort("replaced by generation " + std::to_string(c->generation()));
  }
  return {};
}

std::shared_ptr<gpu::communicator> communicator_table::find(const std::string& name,
                                                            caf::error& why) const {
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = held_.find(name);
  if (it == held_.end()) {
    why = make_error(errc::unknown_communicator,
                     "this node holds no communicator named '" + name + "'");
    return nullptr;
  }
  return it->second;
}

std::shared_ptr<gpu::communicator> communicator_table::take(const std::string& name,
                                                            std::uint64_t generation, bool erase) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = held_.find(name);
  if (it == held_.end() || (generation != 0 && it->second->generation() != generation)) {
    return nullptr;
  }
  auto c = it->second;
  if (erase) held_.erase(it);
  return c;
}

bool communicator_table::abort(const std::string& name, std::uint64_t generation,
                               const std::string& why) {
  auto c = take(name, generation, false);
  if (c) c->abort(why);  // outside the lock: an abort may wait for connections to close
  return c != nullptr;
}

bool communicator_table::remove(const std::string& name, std::uint64_t generation,
                                const std::string& why) {
  auto c = extract(name, generation);
  if (c) c->abort(why);
  return c != nullptr;
}

std::shared_ptr<gpu::communicator> communicator_table::extract(const std::string& name,
                                                               std::uint64_t generation) {
  return take(name, generation, true);
}

void communicator_table::clear(const std::string& why) {
  std::map<std::string, std::shared_ptr<gpu::communicator>> all;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    all.swap(held_);
  }
  for (auto& entry : all) entry.second->abort(why);
}

communicator_table::call_counts communicator_table::counts_of(const gpu::communicator& c,
                                                              const gpu::collective_call& call) {
  call_counts out;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    out.counts = cells_for(c.name());
  }
  out.kind = static_cast<std::size_t>(call.kind) % cells::kinds;
  out.moved =
      static_cast<std::uint64_t>(gpu::send_bytes(call, c.size()) + gpu::recv_bytes(call, c.size()));
  return out;
}

gpu::work_fn communicator_table::work(std::shared_ptr<gpu::communicator> c,
                                      const gpu::collective_call& call) {
  auto [counts, k, moved] = counts_of(*c, call);
  return [c = std::move(c), call, counts = std::move(counts), k = k,
          moved = moved](const gpu::launch_context& on) {
    if (on.captured()) return c->run(call, on);  // the graph's launches are counted
    const auto start = std::chrono::steady_clock::now();
    gpu::status s = c->run(call, on);
    counts->counted(k, moved, *c, s);
    if (s.ok() && on.kind() == gpu::backend_kind::host) {
      counts->duration[k]->observe(std::chrono::steady_clock::now() - start);
    }
    return s;
  };
}

std::function<void(const gpu::status&)> communicator_table::counter(
    const std::shared_ptr<gpu::communicator>& c, const gpu::collective_call& call) {
  auto [counts, k, moved] = counts_of(*c, call);
  return [weak = std::weak_ptr<gpu::communicator>(c), counts = std::move(counts), k = k,
          moved = moved](const gpu::status& s) {
    if (auto c = weak.lock()) counts->counted(k, moved, *c, s);
  };
}

std::vector<communicator_status> communicator_table::list() const {
  std::vector<std::shared_ptr<gpu::communicator>> all;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    for (const auto& entry : held_) all.push_back(entry.second);
  }
  std::vector<communicator_status> out;
  for (const auto& c : all) {
    const gpu::status broken = c->broken();
    out.push_back(communicator_status{c->name(), c->generation(), c->rank(), c->size(),
                                      c->sequence(), broken.ok() ? "" : broken.to_string()});
  }
  return out;
}

std::size_t communicator_table::size() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return held_.size();
}

}  // namespace cudactor
