// actors/node/node_rendezvous.hpp
//
// A node's part in making communicators (actors/cluster_actor.hpp makes them): each call
// makes this node's rank on a thread of its own, because an engine's rendezvous blocks until
// every rank has come (no actor may block), and installs it in the node's communicator table.
// The rank's store is a relay_store: what the rank writes goes to the cluster, which passes it
// to the other ranks; what they wrote comes back through put(). No CAF actor here: the node's
// core (actors/node/node_core.hpp) passes the messages in and out through the callbacks.
#pragma once

#include <caf/error.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cudactor/actors/communicator_table.hpp"
#include "cudactor/gpu/rendezvous_store.hpp"
#include "cudactor/messaging/communicator_types.hpp"

namespace cudactor::detail {

// The bytes of rendezvous values a node holds, over all its stores at once: each store is
// bounded by keys, but an owner may make 64 at a time of up to 1024 ranks each, and each value
// may be 256 KiB. Shared by the node's stores; each gives its bytes back as it goes.
class rendezvous_budget {
 public:
  explicit rendezvous_budget(std::uint64_t most) noexcept : most_(most) {}
  // Takes `bytes`; false (nothing taken) when that would pass the bound.
  [[nodiscard]] bool take(std::uint64_t bytes) noexcept {
    std::uint64_t now = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > most_ - std::min(now, most_)) return false;
    } while (!used_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
    return true;
  }
  void give(std::uint64_t bytes) noexcept { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t used() const noexcept {
    return used_.load(std::memory_order_relaxed);
  }

 private:
  const std::uint64_t most_;
  std::atomic<std::uint64_t> used_{0};
};

// A rendezvous store whose writes are also published (to the cluster) and whose reads wait
// for what the other ranks published (put). Bounded: at most `max_keys` keys, and its values'
// bytes taken from `budget` (the node's, for all its stores) until the store goes.
class relay_store final : public gpu::rendezvous_store {
 public:
  using publish_fn = std::function<void(const std::string& key, const std::string& value)>;
  relay_store(publish_fn publish, std::size_t max_keys, std::shared_ptr<rendezvous_budget> budget)
      : publish_(std::move(publish)), max_keys_(max_keys), budget_(std::move(budget)) {}
  relay_store(const relay_store&) = delete;
  relay_store& operator=(const relay_store&) = delete;
  ~relay_store() override {
    if (budget_) budget_->give(bytes_);
  }

  [[nodiscard]] gpu::status set(const std::string& key, std::vector<char> value) override;
  [[nodiscard]] gpu::result<std::vector<char>> get(const std::string& key,
                                                   std::chrono::milliseconds limit) override;
  // A value another rank wrote; false when the store is full or the key holds another value.
  bool put(const std::string& key, const std::string& value);
  // Every read waiting now or later fails with `why`.
  void cancel(const std::string& why);

 private:
  // Takes `n` bytes for a value (under mutex_).
  [[nodiscard]] bool take_bytes(std::uint64_t n);

  publish_fn publish_;
  std::size_t max_keys_;
  std::shared_ptr<rendezvous_budget> budget_;
  std::uint64_t bytes_ = 0;  // taken from budget_
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<char>> values_;
  std::string cancelled_;
};

class node_rendezvous {
 public:
  // Publishes an entry this node's rank wrote (to whoever asked for the communicator).
  using publish_fn = std::function<void(rendezvous_entry)>;
  // A rank was made and installed (empty error), or why not; called on the rank's thread.
  using done_fn =
      std::function<void(const std::string& name, std::uint64_t generation, caf::error why)>;

  // `host`: whether the node's backend is the host one (Gloo), else CUDA on device `device`
  // (NCCL).
  node_rendezvous(std::shared_ptr<communicator_table> table, std::string node, bool host,
                  int device);
  node_rendezvous(const node_rendezvous&) = delete;
  node_rendezvous& operator=(const node_rendezvous&) = delete;
  // Cancels every rendezvous in progress and waits for its thread.
  ~node_rendezvous();

  // Starts making the rank `call` names; `done` tells how it went. invalid_argument when this
  // node is not the member of that rank, or that communicator is being made already.
  [[nodiscard]] caf::error start(const communicator_call& call, publish_fn publish, done_fn done);
  // What another rank wrote, for a rendezvous in progress; false when none takes it.
  bool put(const rendezvous_entry& entry);
  // A rank of `name`'s generation `generation` was lost: its rendezvous fails, or the
  // communicator, made already, breaks with `why`.
  void lost(const std::string& name, std::uint64_t generation, const std::string& why);
  // A rank's thread ended (after `done`): joins it.
  void finished(const std::string& name, std::uint64_t generation);
  // Takes this node's rank of `name`'s generation `generation` out of the table (its control
  // plane is gone), then aborts it and drops it on a thread of its own: the abort may wait for
  // a call in progress, the destructor for the abort. Nothing when the table holds no such
  // one.
  void retire(const std::string& name, std::uint64_t generation, const std::string& why);
  // Cancels every rendezvous in progress (the node is closing), and waits for the retired.
  void close(const std::string& why);

  [[nodiscard]] const char* engine() const noexcept { return host_ ? "gloo" : "nccl"; }

 private:
  struct run {
    std::shared_ptr<relay_store> store;
    std::thread thread;
  };
  using key = std::pair<std::string, std::uint64_t>;

  std::shared_ptr<communicator_table> table_;
  std::string node_;
  bool host_;
  int device_;
  std::map<key, run> runs_;
  // The rendezvous values this node holds at once, over every making (64 MiB).
  std::shared_ptr<rendezvous_budget> budget_ =
      std::make_shared<rendezvous_budget>(std::uint64_t{64} << 20);
  struct retiring {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<retiring> retiring_;
  void join_retired(bool all);
};

}  // namespace cudactor::detail
