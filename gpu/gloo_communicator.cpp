// gpu/gloo_communicator.cpp
#include "cudactor/gpu/gloo_communicator.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
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
    if (!key.empty() && key.find_first_not_of("0123456789") == std::string::npos) {
      published_[std::atoi(key.c_str())] = got.value();  // rank <key>'s pair addresses
    }
    return std::move(got.value());
  }

  // What each rank published under its number: the addresses of its pairs, one per other
  // rank in rank order (Gloo's rendezvous::Context), each a tcp::Address's bytes.
  [[nodiscard]] const std::map<int, std::vector<char>>& published() const { return published_; }
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
  std::map<int, std::vector<char>> published_;
};

bool same_endpoint(const sockaddr_storage& a, const sockaddr_storage& b) noexcept {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0;
  }
  return false;
}

// Gloo compares a pair's two listening addresses to choose who connects (tcp::Pair::connect):
// the greater one connects, the lesser accepts.
int compare_endpoints(const sockaddr_storage& a, const sockaddr_storage& b) noexcept {
  if (a.ss_family == AF_INET && b.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    const int by_address = std::memcmp(&x.sin_addr, &y.sin_addr, sizeof x.sin_addr);
    return by_address != 0 ? by_address : x.sin_port - y.sin_port;
  }
  const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
  const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
  const int by_address = std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr);
  return by_address != 0 ? by_address : x.sin6_port - y.sin6_port;
}

// The sockets of one context's connections, and the one way to fail what waits on them.
//
// Gloo (0.5, and upstream since) ends a wait on a connection only when the connection fails
// or the wait times out: closing a pair (Context::closeConnections) closes its socket, but a
// call waiting on it here still waits out its timeout, and the entry Gloo itself uses to wake
// waits lies behind headers Debian does not ship whole. So an interrupt shuts the sockets
// down: Gloo's device thread then reads the end of each stream, as when a peer closes, and
// fails every send and receive pending on it; the peers read the end of theirs likewise.
// Gloo does not hand out its descriptors: a connection is told by its addresses, which are
// the pairs' listening addresses: the side that accepted keeps its pair's own address as the
// local end, the side that connected has the peer pair's as the remote one. Each listening
// address was bound once by one pair, so this finds exactly the context's sockets, also with
// several ranks of one group in one process.
class connection_ends {
 public:
  connection_ends() = default;

  // From the made context and what the ranks published; a pair whose peer address is not
  // there, or not of the form Gloo writes, is left out (and found by no interrupt).
  connection_ends(gloo::Context& context, const std::map<int, std::vector<char>>& published) {
    if (context.size < 2) return;
    for (int i = 0; i < context.size; ++i) {
      if (i == context.rank) continue;
      const auto blob = published.find(i);
      if (blob == published.end() ||
          blob->second.size() % static_cast<std::size_t>(context.size - 1) != 0) {
        continue;
      }
      const std::size_t width = blob->second.size() / static_cast<std::size_t>(context.size - 1);
      const std::size_t at =
          static_cast<std::size_t>(context.rank > i ? context.rank - 1 : context.rank) * width;
      try {
        const gloo::transport::tcp::Address peer{
            std::vector<char>(blob->second.begin() + static_cast<std::ptrdiff_t>(at),
                              blob->second.begin() + static_cast<std::ptrdiff_t>(at + width))};
        const auto* self =
            dynamic_cast<const gloo::transport::tcp::Address*>(&context.getPair(i)->address());
        if (self == nullptr) continue;
        const auto& mine = self->getSockaddr();
        const auto& theirs = peer.getSockaddr();
        if (compare_endpoints(mine, theirs) < 0) {
          accepted_.push_back(mine);
        } else {
          connected_.push_back(theirs);
        }
      } catch (const std::exception&) {
        // Not an address Gloo wrote: this pair is left out.
      }
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return accepted_.size() + connected_.size(); }

  // Shuts down every socket of the process that is one of these connections; how many.
  // Each descriptor is duplicated before it is looked at, so a descriptor that Gloo closes
  // meanwhile and the process reuses is never the one shut down.
  std::size_t shut_down() const noexcept {
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return 0;
    std::size_t shut = 0;
    const int own = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
      char* end = nullptr;
      const long fd = std::strtol(entry->d_name, &end, 10);
      if (end == entry->d_name || *end != '\0' || fd == own) continue;
      // Sockets only: closing a duplicate of a file would drop this process's record locks
      // on it (and run its flush).
      struct stat info {};
      if (::fstat(static_cast<int>(fd), &info) != 0 || !S_ISSOCK(info.st_mode)) continue;
      const int copy = ::fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 0);
      if (copy < 0) continue;
      if (ours(copy)) {
        (void)::shutdown(copy, SHUT_RDWR);
        ++shut;
      }
      ::close(copy);
    }
    ::closedir(dir);
    return shut;
  }

 private:
  bool ours(int fd) const noexcept {
    sockaddr_storage local{}, remote{};
    socklen_t length = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) return false;
    if (local.ss_family != AF_INET && local.ss_family != AF_INET6) return false;
    length = sizeof remote;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &length) != 0) return false;
    for (const auto& a : accepted_) {
      if (same_endpoint(local, a)) return true;
    }
    for (const auto& c : connected_) {
      if (same_endpoint(remote, c)) return true;
    }
    return false;
  }

  std::vector<sockaddr_storage> accepted_;   // our pair's listening address: the local end
  std::vector<sockaddr_storage> connected_;  // the peer pair's: the remote end
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
  gloo_communicator(const gloo_options& o, std::shared_ptr<gloo::rendezvous::Context> context,
                    connection_ends ends)
      : communicator(o.name, o.generation, o.rank, o.size),
        options_(o),
        context_(std::move(context)),
        ends_(std::move(ends)) {}

  status broken() const override {
    std::lock_guard<std::mutex> lock{mutex_};
    return broken_;
  }

  void abort(const std::string& why) override {
    std::lock_guard<std::mutex> lock{mutex_};
    if (!broken_.ok()) return;
    broken_ = status{status_code::cancelled, label() + " aborted: " + why};
    aborted_.notify_all();
    // A call in progress here fails now, and the other ranks' calls as they read that the
    // connections ended (gloo_communicator_test measures both).
    interrupt();
  }

  // A graph's calls ran inside its launch, on the launching thread, each bounded by the
  // context's timeout: by now they have ended.
  status watch_launch(const launch_context&) override { return broken(); }

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
    // Broken either way: ending every connection now fails the other ranks' calls too, which
    // would otherwise wait on a rank that waits on this one until their timeout (in Gloo's
    // ring, the ranks that are not the lost one's neighbours).
    interrupt();
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

  // Ends every connection of the context and what waits on it. Not Context::closeConnections
  // once the sockets are shut down: closing a pair before Gloo's device thread has read the
  // end would leave a wait on it to its timeout. Only where no socket was found (a context
  // whose addresses were not understood) are the pairs closed instead, which still ends the
  // peers' waits.
  void interrupt() noexcept {
    if (ends_.size() > 0 && ends_.shut_down() > 0) return;
    try {
      context_->closeConnections();
    } catch (const std::exception&) {
      // Already closing.
    }
  }

  const gloo_options options_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  const connection_ends ends_;
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
    connection_ends ends{*context, keys.published()};
    return std::unique_ptr<communicator>{
        std::make_unique<gloo_communicator>(o, context, std::move(ends))};
  } catch (const std::exception& e) {
    return from_gloo(e, what);
  }
}

}  // namespace cudactor::gpu
