#include "cudactor/gpu/detail/cuda_scratch.hpp"

#include <string>

#include "cudactor/gpu/detail/cuda_status.hpp"

namespace cudactor::gpu::detail {

namespace {

// Calls made while the thread captures a stream are restricted (thread-local mode): these
// are not captured and do not synchronize, so they may run as in relaxed mode.
class relaxed_capture {
 public:
  relaxed_capture() noexcept { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~relaxed_capture() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  relaxed_capture(const relaxed_capture&) = delete;
  relaxed_capture& operator=(const relaxed_capture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

// A failed allocation leaves its error as the thread's last one, which the launch reads to
// tell a failed launch: cleared. An error there before it is the launch's own: no allocation
// is tried then (its error would replace that one), and the error stays.
void clear_own_error(cudaError_t before) noexcept {
  if (before == cudaSuccess) (void)cudaGetLastError();
}
constexpr const char* after_failed_launch = ": a launch of this work failed before it";

std::string scratch_of(std::size_t bytes) { return std::to_string(bytes) + " bytes of scratch"; }

// More than the device has: refused as CUDA would refuse memory it lacks, whatever code CUDA
// gives a size it cannot even reserve.
status beyond_device(std::size_t bytes, std::size_t device_bytes, const std::string& doing) {
  return {status_code::out_of_memory, doing + " " + scratch_of(bytes) +
                                          ": more than the device's " +
                                          std::to_string(device_bytes) + " bytes"};
}

}  // namespace

// --- a lone run ---------------------------------------------------------------------------

cuda_run_scratch::~cuda_run_scratch() {
  for (void* data : taken_) (void)cudaFreeAsync(data, stream_);
}

result<void*> cuda_run_scratch::take(std::size_t bytes) {
  if (bytes > device_bytes_) return beyond_device(bytes, device_bytes_, "allocating");
  taken_.reserve(taken_.size() + 1);
  const cudaError_t before = cudaPeekAtLastError();
  if (before != cudaSuccess) {
    // Left for the launch to report as this work's failure, which a failed allocation's
    // error would replace.
    return (*check_)(before, "allocating " + scratch_of(bytes) + after_failed_launch);
  }
  void* data = nullptr;
  const cudaError_t made = cudaMallocAsync(&data, bytes, stream_);
  if (made != cudaSuccess) {
    clear_own_error(before);
    return (*check_)(made, "allocating " + scratch_of(bytes));
  }
  taken_.push_back(data);
  return data;
}

status cuda_run_scratch::give_back() {
  status first;
  for (void* data : taken_) {
    status freed = (*check_)(cudaFreeAsync(data, stream_), "giving back scratch");
    if (!freed.ok() && first.ok()) first = std::move(freed);
  }
  taken_.clear();
  return first;
}

// --- a graph's pool -----------------------------------------------------------------------

status cuda_graph_pool::open() {
  if (pool_ != nullptr) return {};
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = ordinal_;
  if (auto bad = from_cuda(cudaMemPoolCreate(&pool_, &props), "creating a graph's scratch pool");
      !bad.ok()) {
    pool_ = nullptr;
    return bad;
  }
  status made = from_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                          "creating a graph's scratch stream");
  if (made.ok()) {
    made = from_cuda(cudaEventCreateWithFlags(&allocated_, cudaEventDisableTiming),
                     "creating a graph's scratch event");
  }
  if (made.ok()) {
    made = from_cuda(cudaEventCreateWithFlags(&used_, cudaEventDisableTiming),
                     "creating a graph's scratch event");
  }
  if (!made.ok()) release({});
  return made;
}

result<void*> cuda_graph_pool::allocate(std::size_t bytes) {
  if (bytes > device_bytes_) {
    return beyond_device(bytes, device_bytes_, "allocating from a graph's pool");
  }
  const relaxed_capture relaxed;
  const cudaError_t before = cudaPeekAtLastError();
  if (before != cudaSuccess) {
    return from_cuda(
        before, "allocating " + scratch_of(bytes) + " from a graph's pool" + after_failed_launch);
  }
  if (auto bad = open(); !bad.ok()) {
    clear_own_error(before);
    return bad;
  }
  void* data = nullptr;
  const cudaError_t made = cudaMallocFromPoolAsync(&data, bytes, pool_, stream_);
  if (made != cudaSuccess) {
    clear_own_error(before);
    return from_cuda(made, "allocating " + scratch_of(bytes) + " from a graph's pool");
  }
  pending_ = true;
  return data;
}

status cuda_graph_pool::before_launch(cudaStream_t s) {
  // CUDA orders the launches of one executable graph, not those of the one it replaced (a
  // node's shape changed) on another stream: their nodes' scratch is the same.
  if (launched_ && s != last_) {
    if (auto bad = from_cuda(cudaStreamWaitEvent(s, used_, 0),
                             "waiting for a graph's last launch on another stream");
        !bad.ok()) {
      return bad;
    }
  }
  if (!pending_) return {};
  if (auto bad = from_cuda(cudaEventRecord(allocated_, stream_), "marking a graph's scratch");
      !bad.ok()) {
    return bad;
  }
  if (auto bad = from_cuda(cudaStreamWaitEvent(s, allocated_, 0), "waiting for a graph's scratch");
      !bad.ok()) {
    return bad;
  }
  pending_ = false;
  return {};
}

status cuda_graph_pool::after_launch(cudaStream_t s) {
  if (pool_ == nullptr) return {};
  if (auto bad = from_cuda(cudaEventRecord(used_, s), "marking a graph's use of its scratch");
      !bad.ok()) {
    return bad;
  }
  launched_ = true;
  last_ = s;
  return {};
}

void cuda_graph_pool::release(const std::vector<graph_scratch::block>& blocks) noexcept {
  // Nothing to report to (a graph's destructor, a pool that could not be opened): every call
  // is best effort, in stream order; the caller clears what error they leave.
  if (stream_ != nullptr) {
    if (launched_ && used_ != nullptr) (void)cudaStreamWaitEvent(stream_, used_, 0);
    for (const graph_scratch::block& b : blocks) (void)cudaFreeAsync(b.data, stream_);
  }
  if (used_ != nullptr) (void)cudaEventDestroy(used_);
  if (allocated_ != nullptr) (void)cudaEventDestroy(allocated_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);  // its frees still run
  if (pool_ != nullptr) (void)cudaMemPoolDestroy(pool_);     // released once they ran
  used_ = allocated_ = nullptr;
  stream_ = nullptr;
  pool_ = nullptr;
}

}  // namespace cudactor::gpu::detail
