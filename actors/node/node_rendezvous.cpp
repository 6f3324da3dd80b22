#include "cudactor/actors/node/node_rendezvous.hpp"

#include <algorithm>
#include <chrono>
#include <system_error>

#include "cudactor/gpu/gloo_communicator.hpp"
#include "cudactor/gpu/nccl_communicator.hpp"
#include "cudactor/messaging/errc.hpp"

namespace cudactor::detail {

namespace {
constexpr std::chrono::milliseconds loss_grace{2000};
}  // namespace

// --- relay_store ------------------------------------------------------------------------------

gpu::status relay_store::set(const std::string& key, std::vector<char> value) {
  std::string bytes(value.begin(), value.end());
  {
    std::lock_guard<std::mutex> lock{mutex_};
    if (!cancelled_.empty()) return {gpu::status_code::cancelled, cancelled_};
    if (values_.size() >= max_keys_ && values_.count(key) == 0) {
      return {gpu::status_code::resource_exhausted,
              "the rendezvous holds " + std::to_string(max_keys_) + " keys, its most"};
    }
    if (!take_bytes(value.size())) {
      return {gpu::status_code::resource_exhausted,
              "the node's rendezvous values are at their bound (64 MiB over every making)"};
    }
    values_[key] = std::move(value);
  }
  changed_.notify_all();
  publish_(key, bytes);
  return {};
}

gpu::result<std::vector<char>> relay_store::get(const std::string& key,
                                                std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock{mutex_};
  const bool there = changed_.wait_for(
      lock, limit, [&] { return !cancelled_.empty() || values_.count(key) != 0; });
  if (!cancelled_.empty()) return gpu::status{gpu::status_code::cancelled, cancelled_};
  if (!there) {
    return gpu::status{gpu::status_code::timeout, "no rank wrote '" + key + "' within " +
                                               std::to_string(limit.count()) + " ms"};
  }
  return values_.at(key);
}

bool relay_store::put(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    auto it = values_.find(key);
    if (it != values_.end()) return std::string(it->second.begin(), it->second.end()) == value;
    if (values_.size() >= max_keys_ || !take_bytes(value.size())) return false;
    values_.emplace(key, std::vector<char>(value.begin(), value.end()));
  }
  changed_.notify_all();
  return true;
}

bool relay_store::take_bytes(std::uint64_t n) {
  if (budget_ && !budget_->take(n)) return false;
  bytes_ += n;
  return true;
}

void relay_store::cancel(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    if (cancelled_.empty()) cancelled_ = why.empty() ? std::string{"cancelled"} : why;
  }
  changed_.notify_all();
}

// --- node_rendezvous ----------------------------------------------------------------------

node_rendezvous::node_rendezvous(std::shared_ptr<communicator_table> table, std::string node,
                                 bool host, int device)
    : table_(std::move(table)), node_(std::move(node)), host_(host), device_(device) {}

node_rendezvous::~node_rendezvous() { close("the node is shutting down"); }

caf::error node_rendezvous::start(const communicator_call& call, publish_fn publish, done_fn done) {
  const std::string which =
      "communicator '" + call.name + "' generation " + std::to_string(call.generation);
  if (!table_) return make_error(errc::not_supported, which + ": this node runs no collectives");
  if (call.members[call.rank] != node_) {
    return make_error(errc::invalid_argument, which + ": rank " + std::to_string(call.rank) +
                                                  " is '" + call.members[call.rank] +
                                                  "', not this node");
  }
  const key k{call.name, call.generation};
  if (runs_.count(k) != 0) {
    return make_error(errc::invalid_argument, which + " is being made already");
  }
  // Gloo writes one key per rank, and reads every other: room for all, and a few more.
  const std::size_t max_keys = 2 * call.members.size() + 16;
  auto store = std::make_shared<relay_store>(
      [publish, name = call.name, generation = call.generation](const std::string& key,
                                                                const std::string& value) {
        publish(rendezvous_entry{name, generation, key, value});
      },
      max_keys, budget_);
  gpu::gloo_options o;
  o.name = call.name;
  o.generation = call.generation;
  o.rank = static_cast<int>(call.rank);
  o.size = static_cast<int>(call.members.size());
  o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(call.timeout);
  o.rendezvous_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(call.rendezvous_timeout);
  // A peer the cluster lost is named by its loss, which comes about as soon as the transport
  // fails: a collective waits that long for it (docs/collectives.md).
  o.failure_grace = std::min(loss_grace, o.timeout);
  gpu::nccl_options n;
  n.name = o.name;
  n.generation = o.generation;
  n.rank = o.rank;
  n.size = o.size;
  n.device = device_;
  n.timeout = o.timeout;
  n.rendezvous_timeout = o.rendezvous_timeout;
  auto& r = runs_[k];
  r.store = store;
  r.thread = std::thread([table = table_, store, o, n, host = host_, done = std::move(done)] {
    auto made =
        host ? gpu::make_gloo_communicator(o, *store) : gpu::make_nccl_communicator(n, *store);
    caf::error why;
    if (made) {
      why = table->add(std::shared_ptr<gpu::communicator>{std::move(made.value())});
    } else {
      why = to_error(made.error());
    }
    done(o.name, o.generation, std::move(why));
  });
  return {};
}

bool node_rendezvous::put(const rendezvous_entry& entry) {
  auto it = runs_.find(key{entry.name, entry.generation});
  if (it == runs_.end()) return false;
  return it->second.store->put(entry.key, entry.value);
}

void node_rendezvous::lost(const std::string& name, std::uint64_t generation,
                           const std::string& why) {
  auto it = runs_.find(key{name, generation});
  if (it != runs_.end()) it->second.store->cancel(why);
  if (table_) (void)table_->abort(name, generation, why);
}

void node_rendezvous::finished(const std::string& name, std::uint64_t generation) {
  auto it = runs_.find(key{name, generation});
  if (it == runs_.end()) return;
  if (it->second.thread.joinable()) it->second.thread.join();
  runs_.erase(it);
}

void node_rendezvous::retire(const std::string& name, std::uint64_t generation,
                             const std::string& why) {
  join_retired(false);
  if (!table_) return;
  std::shared_ptr<gpu::communicator> c = table_->extract(name, generation);
  if (!c) return;
  auto done = std::make_shared<std::atomic<bool>>(false);
  try {
    retiring_.push_back(retiring{std::thread([c, why, done]() mutable {
                                   c->abort(why);
                                   c.reset();
                                   done->store(true, std::memory_order_release);
                                 }),
                                 done});
  } catch (const std::system_error&) {
    c->abort(why);  // no thread to be had: here, bounded by the call in progress
  }
}

void node_rendezvous::join_retired(bool all) {
  for (auto it = retiring_.begin(); it != retiring_.end();) {
    if (all || it->done->load(std::memory_order_acquire)) {
      if (it->thread.joinable()) it->thread.join();
      it = retiring_.erase(it);
    } else {
      ++it;
    }
  }
}

void node_rendezvous::close(const std::string& why) {
  for (auto& [k, r] : runs_) r.store->cancel(why);
  for (auto& [k, r] : runs_) {
    if (r.thread.joinable()) r.thread.join();
  }
  runs_.clear();
  join_retired(true);
}

}  // namespace cudactor::detail
