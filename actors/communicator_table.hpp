// actors/communicator_table.hpp
//
// The communicators a node holds, by name: each one rank's handle on a group of nodes that
// run collectives together (gpu/communicator.hpp). The cluster makes them (one rank per node,
// actors/cluster_actor.hpp) and the node installs its rank's here; a program that made one
// itself (gpu::make_gloo_communicator) installs it with add(). The coordinator finds a
// collective's communicator here when the operation is registered, and runs it through
// work(), which counts it. A name holds one generation at a time: a newer one replaces the
// older, which is aborted, so what was pending on it fails. Thread-safe: the coordinator
// reads while the node installs.
//
// Metrics (labels communicator, and kind where it applies):
//   cudactor_collective_operations_total, cudactor_collective_failures_total,
//   cudactor_collective_bytes_total (what this rank sent and received),
//   cudactor_collective_duration_seconds (host engines: the call, end to end; a device engine
//     only enqueues, so its time is the operation's on the device, not observed here),
//   cudactor_communicator_sequence (collectives started on the current generation),
//   cudactor_communicator_generation.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cudactor/gpu/communicator.hpp"
#include "cudactor/metrics/registry.hpp"

namespace cudactor {

// One communicator as the table reports it.
struct communicator_status {
  std::string name;
  std::uint64_t generation = 0;
  int rank = 0;
  int size = 0;
  std::uint64_t sequence = 0;
  std::string broken;  // why it can run nothing more; empty while it can
};

class communicator_table {
 public:
  // `registry` empty: the counts go nowhere.
  explicit communicator_table(std::shared_ptr<metrics::registry> registry);
  communicator_table(const communicator_table&) = delete;
  communicator_table& operator=(const communicator_table&) = delete;
  // Aborts every communicator still held.
  ~communicator_table();

  // Installs `c` under its name. One of an older generation there is aborted (what is pending
  // on it fails); one of the same or a newer generation stays, and `c` is refused
  // (invalid_argument).
  [[nodiscard]] caf::error add(std::shared_ptr<gpu::communicator> c);

  // The communicator called `name`, or nullptr and why: unknown_communicator.
  [[nodiscard]] std::shared_ptr<gpu::communicator> find(const std::string& name,
                                                        caf::error& why) const;

  // Aborts the communicator called `name` with `why` and forgets it; generation 0: whichever
  // it holds. False when it holds no such one.
  bool remove(const std::string& name, std::uint64_t generation, const std::string& why);
  // Takes the communicator called `name` out of the table without aborting it, and hands it
  // back (null when there was none), so that the caller chooses the thread its abort and its
  // last reference go on: either may wait (an abort for a call in progress, a destructor for
  // its abort), which no actor may.
  [[nodiscard]] std::shared_ptr<gpu::communicator> extract(const std::string& name,
                                                           std::uint64_t generation);

  // Breaks the communicator called `name` with `why` but keeps it (a peer the cluster lost:
  // what is pending fails, and later calls too, naming it, until it is rebuilt); generation 0:
  // whichever it holds. False when it holds no such one.
  bool abort(const std::string& name, std::uint64_t generation, const std::string& why);

  // The work that runs `call` on `c` when its stream reaches it, counted under c's name. Work
  // captured into a graph (launch_context::captured) is not counted: its launches are, by
  // the counter below.
  [[nodiscard]] gpu::work_fn work(std::shared_ptr<gpu::communicator> c,
                                  const gpu::collective_call& call);
  // Counts one run of `call` on `c` that a graph's launch made, with the launch's outcome.
  [[nodiscard]] std::function<void(const gpu::status&)> counter(
      const std::shared_ptr<gpu::communicator>& c, const gpu::collective_call& call);

  [[nodiscard]] std::vector<communicator_status> list() const;
  [[nodiscard]] std::size_t size() const;

  // Aborts and forgets every communicator (the runtime's shutdown).
  void clear(const std::string& why);

  struct cells;  // one communicator name's metrics

 private:
  std::shared_ptr<cells> cells_for(const std::string& name);
  // What counting runs of `call` on `c` needs: its name's metrics, its kind's index, the bytes
  // one run moves.
  struct call_counts {
    std::shared_ptr<cells> counts;
    std::size_t kind = 0;
    std::uint64_t moved = 0;
  };
  [[nodiscard]] call_counts counts_of(const gpu::communicator& c, const gpu::collective_call& call);
  // The communicator held under `name` (of `generation`, unless 0), taken out if `erase`.
  std::shared_ptr<gpu::communicator> take(const std::string& name, std::uint64_t generation,
                                          bool erase);

  std::shared_ptr<metrics::registry> registry_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<gpu::communicator>> held_;
  std::map<std::string, std::shared_ptr<cells>> cells_;  // kept after a communicator goes
};

}  // namespace cudactor
