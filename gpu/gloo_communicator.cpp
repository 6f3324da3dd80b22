// gpu/gloo_communicator.cpp
#include "cudactor/gpu/gloo_communicator.hpp"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "cudactor/gpu/element_math.hpp"

namespace cudactor::gpu {
namespace {

// Gloo's store, on ours: every key under the group's name and generation. Gloo reports a
// store that fails by exception; it comes back out of connectFullMesh as one.
class store_adapter final : public gloo::rendezvous::Store {
 public:
  store_adapter(rendezvous_store& store, std::string prefix, std::chrono::milliseconds limit)
      : store_(store), prefix_(std::move(prefix)), limit_(limit) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    if (auto s = store_.set(prefix_ + key, data); !s.ok()) throw gloo::IoException(s.to_string());
  }
  std::vector<char> get(const std::string& key) override {
    auto got = store_.get(prefix_ + key, limit_);
    if (!got) throw gloo::IoException(got.error().to_string());
    return std::move(got.value());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, limit_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& limit) override {
    for (const auto& key : keys) {
      auto got = store_.get(prefix_ + key, limit);
      if (!got) throw gloo::IoException(got.error().to_string());
    }
  }

 private:
  rendezvous_store& store_;
  std::string prefix_;
  std::chrono::milliseconds limit_;
};

// Gloo writes to its sockets with writev, which raises SIGPIPE when the peer has gone: by
// default that kills the process, where the call should fail (found by gloo_communicator_test,
// 1 run in 20). Ignored once, unless the program installed a disposition of its own.
void ignore_sigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    (void)sigaction(SIGPIPE, &ignore, nullptr);
  });
}

// A Gloo failure as a status: its timeouts say so.
status from_gloo(const std::exception& e, const std::string& what) {
  const std::string text = e.what();
  const bool timed_out =
      text.find("imed out") != std::string::npos || text.find("imeout") != std::string::npos;
  return {timed_out ? status_code::timeout : status_code::op_failed, what + ": " + text};
}

class gloo_communicator final : public communicator {
 public:
  gloo_communicator(const gloo_options& o, std::shared_ptr<gloo::rendezvous::Context> context)
      : communicator(o.name, o.generation, o.rank, o.size),
        options_(o),
        context_(std::move(context)) {}

  status broken() const override {
    std::lock_guard<std::mutex> lock{mutex_};
    return broken_;
  }

  void abort(const std::string& why) override {
    std::lock_guard<std::mutex> lock{mutex_};
    if (!broken_.ok()) return;
    broken_ = status{status_code::cancelled, label() + " aborted: " + why};
    aborted_.notify_all();
    // Closing the connections fails the other ranks' calls waiting on this one at once. A
    // call in progress here ends at its timeout: Gloo 0.5 cannot interrupt one (measured by
    // gloo_communicator_test).
    try {
      context_->closeConnections();
    } catch (const std::exception&) {
      // Already closing: the call in progress fails either way.
    }
  }

  status run(const collective_call& call, const launch_context& on) override {
    if (on.kind() != backend_kind::host) {
      return {status_code::not_supported, "communicator '" + options_.name +
                                       "': Gloo runs collectives on the host backend's streams"};
    }
    if (auto bad = check(call, options_.size); !bad.ok()) return bad;
    if (auto why = broken(); !why.ok()) return why;
    const std::uint64_t seq = next_sequence();
    const std::string what = call_name(call.kind, seq);
    std::string failed;  // Gloo's words, when the transport failed
    try {
      if (auto bad = dispatch(call, static_cast<std::uint32_t>(seq)); !bad.ok()) return bad;
    } catch (const std::exception& e) {
      failed = e.what();
    }
    if (failed.empty()) return {};
    std::unique_lock<std::mutex> lock{mutex_};
    if (broken_.ok()) {
      // A peer that died is seen here at once, and by whoever tells the abort (the cluster)
      // about as soon: waiting a moment for it lets the failure name the peer.
      (void)aborted_.wait_for(lock, options_.failure_grace, [&] { return !broken_.ok(); });
    }
    if (!broken_.ok()) {
      // Aborted, now or while it ran: the abort says why, Gloo says how it showed.
      return status{status_code::op_failed, what + ": " + broken_.message() + " (" + failed + ")"};
    }
    broken_ = from_gloo(std::runtime_error{failed}, what);  // the transport state is unknown
    return broken_;
  }

 private:
  status dispatch(const collective_call& call, std::uint32_t tag) {
    switch (element_size(call.type)) {
      case 1: return typed<std::uint8_t>(call, tag);
      case 2: return typed<std::uint16_t>(call, tag);
      case 4: return typed<std::uint32_t>(call, tag);
      case 8: return typed<std::uint64_t>(call, tag);
      default: return {status_code::invalid_argument, "an unknown element type"};
    }
  }

  // Gloo moves elements of the width W; the arithmetic is element_math's, on the real type.
  template <class W>
  status typed(const collective_call& call, std::uint32_t tag) {
    const int n = options_.size;
    const std::size_t count = call.count;
    W* send = static_cast<W*>(const_cast<void*>(call.send));
    W* recv = static_cast<W*>(call.recv);
    const reduce_op op = call.op == reduce_op::avg ? reduce_op::sum : call.op;
    const element_reducer fn = reducer(call.type, op);
    switch (call.kind) {
      case collective_kind::all_reduce: {
        all_reduce(send, recv, count, fn, tag);
        if (call.op == reduce_op::avg) divide(call.type, recv, count, n);
        return {};
      }
      case collective_kind::reduce_scatter: {
        std::vector<W> whole(count * static_cast<std::size_t>(n));
        all_reduce(send, whole.data(), whole.size(), fn, tag);
        std::copy_n(whole.data() + static_cast<std::size_t>(options_.rank) * count, count, recv);
        if (call.op == reduce_op::avg) divide(call.type, recv, count, n);
        return {};
      }
      case collective_kind::reduce: {
        // Gloo writes the output on every rank: only the root's is the caller's.
        std::vector<W> scratch;
        W* out = recv;
        if (options_.rank != call.root) {
          scratch.resize(count);
          out = scratch.data();
        }
        gloo::ReduceOptions opts{context_};
        opts.setInput(send, count);
        opts.setOutput(out, count);
        opts.setRoot(call.root);
        opts.setReduceFunction(fn);
        opts.setTag(tag);
        opts.setTimeout(options_.timeout);
        gloo::reduce(opts);
        if (call.op == reduce_op::avg && options_.rank == call.root) {
          divide(call.type, recv, count, n);
        }
        return {};
      }
      case collective_kind::broadcast: {
        gloo::BroadcastOptions opts{context_};
        if (options_.rank == call.root) opts.setInput(send != nullptr ? send : recv, count);
        opts.setOutput(recv, count);
        opts.setRoot(call.root);
        opts.setTag(tag);
        opts.setTimeout(options_.timeout);
        gloo::broadcast(opts);
        return {};
      }
      case collective_kind::all_gather: {
        gloo::AllgatherOptions opts{context_};
        opts.setInput(send, count);
        opts.setOutput(recv, count * static_cast<std::size_t>(n));
        opts.setTag(tag);
        opts.setTimeout(options_.timeout);
        gloo::allgather(opts);
        return {};
      }
      case collective_kind::barrier: {
        gloo::BarrierOptions opts{context_};
        opts.setTag(tag);
        opts.setTimeout(options_.timeout);
        gloo::barrier(opts);
        return {};
      }
    }
    return {status_code::invalid_argument, "a collective of unknown kind"};
  }

  template <class W>
  void all_reduce(W* send, W* recv, std::size_t count, const element_reducer& fn,
                  std::uint32_t tag) {
    gloo::AllreduceOptions opts{context_};
    if (send != recv) opts.setInput(send, count);
    opts.setOutput(recv, count);
    opts.setReduceFunction(fn);
    opts.setTag(tag);
    opts.setTimeout(options_.timeout);
    gloo::allreduce(opts);
  }

  const gloo_options options_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  mutable std::mutex mutex_;  // guards broken_
  std::condition_variable aborted_;
  status broken_;
};

}  // namespace

result<std::unique_ptr<communicator>> make_gloo_communicator(const gloo_options& o,
                                                             rendezvous_store& store) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size) {
    return status{status_code::invalid_argument, "gloo communicator: rank " + std::to_string(o.rank) +
                                              " of " + std::to_string(o.size)};
  }
  if (o.name.empty() || o.name.find('/') != std::string::npos) {
    return status{status_code::invalid_argument, "gloo communicator: a name without '/' is needed"};
  }
  if (o.timeout.count() <= 0 || o.rendezvous_timeout.count() <= 0) {
    return status{status_code::invalid_argument, "gloo communicator: timeouts must be positive"};
  }
  const std::string what = "gloo communicator '" + o.name + "' rank " + std::to_string(o.rank) +
                           " of " + std::to_string(o.size);
  ignore_sigpipe();
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = o.host;
    attr.ai_family = AF_INET;  // 127.0.0.1 by default; no IPv6 here
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
    context->setTimeout(o.rendezvous_timeout);
    store_adapter keys{store, o.name + "/" + std::to_string(o.generation) + "/",
                       o.rendezvous_timeout};
    context->connectFullMesh(keys, device);
    context->setTimeout(o.timeout);
    return std::unique_ptr<communicator>{std::make_unique<gloo_communicator>(o, context)};
  } catch (const std::exception& e) {
    return from_gloo(e, what);
  }
}

}  // namespace cudactor::gpu
