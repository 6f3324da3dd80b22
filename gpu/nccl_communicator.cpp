// gpu/nccl_communicator.cpp
#include "cudactor/gpu/nccl_communicator.hpp"

#if CUDACTOR_WITH_CUDA

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "cudactor/gpu/detail/cuda_status.hpp"
#include "cudactor/gpu/late_failure.hpp"

namespace cudactor::gpu {
namespace {

// NCCL's entry points, loaded once from libnccl.so.2 (never linked: it is 200 MiB, and a
// machine without it still runs everything but NCCL).
struct nccl_api {
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRankConfig) init_rank_config = nullptr;
  decltype(&::ncclCommGetAsyncError) async_error = nullptr;
  decltype(&::ncclCommAbort) abort = nullptr;
  decltype(&::ncclGetErrorString) error_string = nullptr;
  decltype(&::ncclGetLastError) last_error = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclReduce) reduce = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclReduceScatter) reduce_scatter = nullptr;
  std::string missing;  // why it could not be loaded; empty when it was
};

template <class F>
bool bind(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

const nccl_api& api() {
  static const nccl_api loaded = [] {
    nccl_api a;
    void* lib = nullptr;
    for (const char* path : {"libnccl.so.2", "/usr/local/cuda/lib/libnccl.so.2",
                             "/usr/local/cuda/lib64/libnccl.so.2"}) {
      lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) break;
    }
    if (lib == nullptr) {
      const char* why = dlerror();
      a.missing = std::string{"NCCL could not be loaded (libnccl.so.2): "} +
                  (why != nullptr ? why : "not found");
      return a;
    }
    const bool all =
        bind(lib, "ncclGetUniqueId", a.get_unique_id) &&
        bind(lib, "ncclCommInitRankConfig", a.init_rank_config) &&
        bind(lib, "ncclCommGetAsyncError", a.async_error) && bind(lib, "ncclCommAbort", a.abort) &&
        bind(lib, "ncclGetErrorString", a.error_string) &&
        bind(lib, "ncclGetLastError", a.last_error) && bind(lib, "ncclAllReduce", a.all_reduce) &&
        bind(lib, "ncclBroadcast", a.broadcast) && bind(lib, "ncclReduce", a.reduce) &&
        bind(lib, "ncclAllGather", a.all_gather) &&
        bind(lib, "ncclReduceScatter", a.reduce_scatter);
    if (!all) a.missing = "libnccl.so.2 lacks an entry point cudactor needs (NCCL 2.14 or newer)";
    return a;  // the library stays loaded for the process
  }();
  return loaded;
}

ncclDataType_t nccl_type(element_type t) {
  switch (t) {
    case element_type::f32: return ncclFloat32;
    case element_type::f64: return ncclFloat64;
    case element_type::f16: return ncclFloat16;
    case element_type::bf16: return ncclBfloat16;
    case element_type::i32: return ncclInt32;
    case element_type::i64: return ncclInt64;
    case element_type::u8: return ncclUint8;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(reduce_op o) {
  switch (o) {
    case reduce_op::sum: return ncclSum;
    case reduce_op::prod: return ncclProd;
    case reduce_op::min: return ncclMin;
    case reduce_op::max: return ncclMax;
    case reduce_op::avg: return ncclAvg;
  }
  return ncclSum;
}

// Waits while NCCL says a non-blocking call is in progress; its final state. A collective's
// enqueue is usually done within microseconds, so the wait starts by yielding and backs off
// to sleeps of up to 1 ms: a fixed 100 us sleep charged that much to every call that was
// briefly in progress, on the stream actor's thread.
ncclResult_t settle(ncclComm_t comm, ncclResult_t r, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  auto pause = std::chrono::microseconds{0};
  while (r == ncclInProgress) {
    if (std::chrono::steady_clock::now() >= until) return ncclInProgress;
    if (pause.count() == 0) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
    }
    pause = std::min(std::max(pause * 2, std::chrono::microseconds{1}),
                     std::chrono::microseconds{1000});
    if (api().async_error(comm, &r) != ncclSuccess) return ncclInternalError;
  }
  return r;
}

std::string nccl_words(ncclComm_t comm, ncclResult_t r) {
  std::string out = api().error_string(r);
  const char* last = comm != nullptr ? api().last_error(comm) : nullptr;
  if (last != nullptr && *last != '\0') out += std::string{" ("} + last + ")";
  return out;
}

class nccl_communicator final : public communicator {
 public:
  nccl_communicator(const nccl_options& o, ncclComm_t comm, float* scratch)
      : communicator(o.name, o.generation, o.rank, o.size),
        options_(o),
        comm_(comm),
        scratch_(scratch),
        watchdog_([this] { watch(); }) {}

  ~nccl_communicator() override {
    {
      std::lock_guard<std::mutex> lock{mutex_};
      stopping_ = true;
    }
    wake_.notify_all();
    watchdog_.join();
    std::lock_guard<std::mutex> lock{mutex_};
    // A break the watchdog had no round left for, or calls still running when the last
    // reference went: the abort below ends them as if done, so their points fail first.
    if (broken_.ok() && !pending_.empty()) {
      broken_ = status{status_code::cancelled, label() + " destroyed with calls still running"};
    }
    fail_unfinished_locked();
    // Abort, not destroy: destroying waits for what is queued, which a dead peer never ends.
    abort_nccl(std::exchange(doomed_, nullptr));
    abort_nccl(std::exchange(comm_, nullptr));
    for (auto& p : pending_) (void)cudaEventDestroy(p.done);
    for (cudaEvent_t e : spare_) (void)cudaEventDestroy(e);
    if (scratch_ != nullptr) (void)cudaFree(scratch_);
  }

  status broken() const override {
    std::lock_guard<std::mutex> lock{mutex_};
    return broken_;
  }

  void abort(const std::string& why) override {
    std::lock_guard<std::mutex> lock{mutex_};
    break_locked(status{status_code::cancelled, label() + " aborted: " + why});
  }

  status run(const collective_call& call, const launch_context& on) override {
    if (on.kind() != backend_kind::cuda) {
      return {status_code::not_supported,
              "communicator '" + options_.name + "': NCCL runs collectives on CUDA streams"};
    }
    if (auto bad = check(call, options_.size); !bad.ok()) return bad;
    auto stream = static_cast<cudaStream_t>(on.native_stream());
    std::lock_guard<std::mutex> lock{mutex_};
    if (!broken_.ok()) return broken_;
    const std::uint64_t seq = next_sequence();
    const std::string what = call_name(call.kind, seq);
    if (cudaSetDevice(options_.device) != cudaSuccess) {
      return {status_code::backend_error,
              what + ": cannot select device " + std::to_string(options_.device)};
    }
    ncclResult_t r = enqueue(call, stream);
    r = settle(comm_, r, options_.timeout);
    if (r != ncclSuccess) {
      break_locked(status{status_code::op_failed, what + ": " + nccl_words(comm_, r)});
      return broken_;
    }
    // Captured into a graph (a step's, gpu/work_graph.hpp): there is no completion of its own to
    // watch now (an event recorded under capture cannot be queried); whoever launches the
    // graph asks watch_launch() after each launch.
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (const cudaError_t asked = cudaStreamIsCapturing(stream, &capturing); asked != cudaSuccess) {
      return cannot_watch(asked, what);  // enqueued, and nothing would time it out: broken
    }
    if (capturing != cudaStreamCaptureStatusNone) return {};
    return watch_locked(stream, on.fail_later(), seq, what);
  }

  status watch_launch(const launch_context& on) override {
    if (on.kind() != backend_kind::cuda) {
      return {status_code::not_supported,
              "communicator '" + options_.name + "': NCCL runs collectives on CUDA streams"};
    }
    std::lock_guard<std::mutex> lock{mutex_};
    if (!broken_.ok()) return broken_;
    const std::string what =
        "rank " + std::to_string(rank()) + " of '" + options_.name + "': a step's launch";
    // Its events are this device's (a spare one was made after run() selected it).
    if (const cudaError_t selected = cudaSetDevice(options_.device); selected != cudaSuccess) {
      return cannot_watch(selected, what);
    }
    return watch_locked(static_cast<cudaStream_t>(on.native_stream()), on.fail_later(),
                        launch_sequence, what);
  }

 private:
  // What a watched launch of a step's graph is numbered (a call's numbers start at 1).
  static constexpr std::uint64_t launch_sequence = 0;

  struct pending_op {
    std::uint64_t sequence = 0;  // the call's, or launch_sequence
    cudaEvent_t done = nullptr;
    std::chrono::steady_clock::time_point since;
    // Fails the point of the work that enqueued it, if the abort ends it (its kernels return
    // as if done); null where the backend hands none.
    std::shared_ptr<late_failure> late;
  };

  // An error of CUDA's while the completion of what was enqueued was to be watched: nothing
  // would time it out, so the communicator breaks (its abort ends it). A sticky error is left
  // as the thread's last error, for the launch to report the device lost.
  status cannot_watch(cudaError_t error, const std::string& what) {
    if (!detail::is_sticky(error)) (void)cudaGetLastError();
    status why = detail::from_cuda(error, what + ": its completion cannot be watched");
    break_locked(why);
    return why;
  }

  // An event after what was just enqueued on `stream`, for the watchdog; `late` fails the
  // enqueuing work's point if the watchdog aborts it. `what` names it in errors.
  status watch_locked(cudaStream_t stream, std::shared_ptr<late_failure> late,
                      std::uint64_t sequence, const std::string& what) {
    pending_op p{sequence, nullptr, std::chrono::steady_clock::now(), std::move(late)};
    if (!spare_.empty()) {
      p.done = spare_.back();
      spare_.pop_back();
    } else if (const cudaError_t made = cudaEventCreateWithFlags(&p.done, cudaEventDisableTiming);
               made != cudaSuccess) {
      return cannot_watch(made, what);
    }
    if (const cudaError_t recorded = cudaEventRecord(p.done, stream); recorded != cudaSuccess) {
      (void)cudaEventDestroy(p.done);
      return cannot_watch(recorded, what);
    }
    // The watchdog finds it at its next round (every 10 ms): a wake-up per collective cost a
    // thread switch and the lock on the launching thread's path.
    pending_.push_back(std::move(p));
    return {};
  }

  ncclResult_t enqueue(const collective_call& call, cudaStream_t stream) {
    const auto& nccl = api();
    const ncclDataType_t type = nccl_type(call.type);
    switch (call.kind) {
      case collective_kind::all_reduce:
        return nccl.all_reduce(call.send, call.recv, call.count, type, nccl_op(call.op), comm_,
                               stream);
      case collective_kind::broadcast:
        return nccl.broadcast(call.send != nullptr ? call.send : call.recv, call.recv, call.count,
                              type, call.root, comm_, stream);
      case collective_kind::reduce:
        return nccl.reduce(call.send, call.recv, call.count, type, nccl_op(call.op), call.root,
                           comm_, stream);
      case collective_kind::all_gather:
        return nccl.all_gather(call.send, call.recv, call.count, type, comm_, stream);
      case collective_kind::reduce_scatter:
        return nccl.reduce_scatter(call.send, call.recv, call.count, type, nccl_op(call.op), comm_,
                                   stream);
      case collective_kind::barrier:
        return nccl.all_reduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream);
    }
    return ncclInvalidArgument;
  }

  // Breaks the communicator with `why` (the first cause stays) and hands it to the watchdog,
  // which fails the points of the calls and launches still running (the abort ends their
  // kernels as if they were done) and then aborts it in NCCL. Neither on the caller's thread:
  // it may be capturing a stream (a step's record), where querying an event is refused, and
  // an abort may wait for the device (it frees the communicator's memory; with graphs that
  // captured it, until they are destroyed), which must hold neither this lock nor a stream
  // actor's thread nor the coordinator's.
  void break_locked(status why) {
    if (!broken_.ok()) return;
    broken_ = std::move(why);
    doomed_ = std::exchange(comm_, nullptr);
    wake_.notify_all();
  }
  // The watchdog's part of a break (mutex_ held): each call or launch not seen complete fails
  // its point with the cause, before the abort can end its kernels.
  void fail_unfinished_locked() {
    for (pending_op& p : pending_) {
      if (!p.late) continue;
      const cudaError_t q = cudaEventQuery(p.done);
      if (q != cudaSuccess) {
        if (!detail::is_sticky(q)) (void)cudaGetLastError();
        p.late->fail(broken_);
      }
      p.late.reset();
    }
  }
  static void abort_nccl(ncclComm_t comm) {
    if (comm != nullptr) (void)api().abort(comm);
  }

  // Every 10 ms: NCCL's asynchronous error, and the oldest collective not yet complete; and
  // the abort of a broken communicator, at once.
  void watch() {
    (void)cudaSetDevice(options_.device);  // the events it queries are this device's
    // Another thread's capture in global mode would refuse this thread's queries, and be
    // invalidated by them: this thread captures nothing.
    cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&relaxed);
    std::unique_lock<std::mutex> lock{mutex_};
    while (!stopping_) {
      if (doomed_ != nullptr) {
        fail_unfinished_locked();
        ncclComm_t doomed = std::exchange(doomed_, nullptr);
        lock.unlock();
        abort_nccl(doomed);
        lock.lock();
        continue;
      }
      wake_.wait_for(lock, std::chrono::milliseconds{10});
      if (stopping_ || comm_ == nullptr) continue;
      ncclResult_t state = ncclSuccess;
      if (api().async_error(comm_, &state) == ncclSuccess && state != ncclSuccess &&
          state != ncclInProgress) {
        break_locked(status{status_code::op_failed, label() + ": " + nccl_words(comm_, state)});
        continue;
      }
      while (!pending_.empty()) {
        const pending_op& p = pending_.front();
        const cudaError_t q = cudaEventQuery(p.done);
        if (q == cudaErrorNotReady) {
          if (std::chrono::steady_clock::now() - p.since > options_.timeout) {
            const std::string late =
                p.sequence == launch_sequence
                    ? "a launch of a step holding its collectives (from the launch to the end of "
                      "the step's graph)"
                    : "collective #" + std::to_string(p.sequence);
            break_locked(status{status_code::timeout, label() + ": " + late +
                                                          " did not complete within " +
                                                          std::to_string(options_.timeout.count()) +
                                                          " ms (a rank dead or hung): aborted"});
          }
          break;
        }
        if (q != cudaSuccess) {
          if (detail::is_sticky(q)) {
            // Not seen to complete (a fault on the device): what it ran is not to be trusted.
            break_locked(detail::from_cuda(q, label() + ": watching a collective's completion"));
          } else {
            (void)cudaGetLastError();  // asked again at the next round
          }
          break;
        }
        if (spare_.size() < max_spare_events) {
          spare_.push_back(p.done);  // recorded again by a later collective
        } else {
          (void)cudaEventDestroy(p.done);
        }
        pending_.pop_front();
      }
    }
  }

  const nccl_options options_;
  mutable std::mutex mutex_;  // guards everything below, and every use of comm_
  std::condition_variable wake_;
  ncclComm_t comm_;
  // Broken, taken from comm_: the watchdog aborts it.
  ncclComm_t doomed_ = nullptr;
  float* scratch_;
  std::deque<pending_op> pending_;
  // Events of collectives seen complete, for the next ones: at most max_spare_events kept.
  static constexpr std::size_t max_spare_events = 256;
  std::vector<cudaEvent_t> spare_;
  status broken_;
  bool stopping_ = false;
  std::thread watchdog_;  // last: it starts once everything else is made
};

}  // namespace

status nccl_available() {
  const auto& a = api();
  if (!a.missing.empty()) return {status_code::not_supported, a.missing};
  return {};
}

result<std::unique_ptr<communicator>> make_nccl_communicator(const nccl_options& o,
                                                             rendezvous_store& store) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size) {
    return status{status_code::invalid_argument, "nccl communicator: rank " + std::to_string(o.rank) +
                                              " of " + std::to_string(o.size)};
  }
  if (o.name.empty() || o.timeout.count() <= 0 || o.rendezvous_timeout.count() <= 0) {
    return status{status_code::invalid_argument,
                  "nccl communicator: a name and timeouts above 0 are needed"};
  }
  if (auto missing = nccl_available(); !missing.ok()) return missing;
  const std::string what = "nccl communicator '" + o.name + "' rank " + std::to_string(o.rank) +
                           " of " + std::to_string(o.size);
  if (cudaSetDevice(o.device) != cudaSuccess) {
    return status{status_code::no_device, what + ": no device " + std::to_string(o.device)};
  }
  const auto& nccl = api();
  const std::string key = o.name + "/" + std::to_string(o.generation) + "/nccl-id";
  ncclUniqueId id{};
  if (o.rank == 0) {
    if (auto r = nccl.get_unique_id(&id); r != ncclSuccess) {
      return status{status_code::backend_error, what + ": ncclGetUniqueId: " + nccl_words(nullptr, r)};
    }
    std::vector<char> bytes(sizeof id);
    std::memcpy(bytes.data(), &id, sizeof id);
    if (auto s = store.set(key, std::move(bytes)); !s.ok()) return s;
  } else {
    auto got = store.get(key, o.rendezvous_timeout);
    if (!got) return got.error();
    if (got.value().size() != sizeof id) {
      return status{status_code::invalid_argument, what + ": the unique id has " +
                                                std::to_string(got.value().size()) +
                                                " bytes, not " + std::to_string(sizeof id)};
    }
    std::memcpy(&id, got.value().data(), sizeof id);
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every call returns at once: nothing waits on a peer that died
  ncclComm_t comm = nullptr;
  ncclResult_t r = nccl.init_rank_config(&comm, o.size, id, o.rank, &config);
  if (comm != nullptr) r = settle(comm, r, o.rendezvous_timeout);
  if (r != ncclSuccess) {
    const std::string words = r == ncclInProgress
                                  ? "the other ranks did not connect within " +
                                        std::to_string(o.rendezvous_timeout.count()) + " ms"
                                  : nccl_words(comm, r);
    if (comm != nullptr) (void)nccl.abort(comm);
    return status{r == ncclInProgress ? status_code::timeout : status_code::backend_error, what + ": " + words};
  }
  float* scratch = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&scratch), sizeof(float)) != cudaSuccess) {
    (void)nccl.abort(comm);
    return status{status_code::out_of_memory, what + ": no room for the barrier's scratch"};
  }
  return std::unique_ptr<communicator>{std::make_unique<nccl_communicator>(o, comm, scratch)};
}

}  // namespace cudactor::gpu

#else  // a build without CUDA

namespace cudactor::gpu {

status nccl_available() {
  return {status_code::not_supported, "NCCL needs the CUDA backend, which this build does not have"};
}

result<std::unique_ptr<communicator>> make_nccl_communicator(const nccl_options&,
                                                             rendezvous_store&) {
  return nccl_available();
}

}  // namespace cudactor::gpu

#endif
