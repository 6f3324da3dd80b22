#include "raw_nccl.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include "common/report.hpp"

namespace cudactor::bench {
namespace {

double now_us() { return static_cast<double>(now_ns()) / 1e3; }

}  // namespace

struct raw_nccl::impl {
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRank) init_rank = nullptr;
  decltype(&::ncclCommDestroy) destroy = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclGetErrorString) error_string = nullptr;
  void* lib = nullptr;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  std::size_t capacity = 0;
  std::string failure;

  bool cuda(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    if (failure.empty()) failure = std::string{what} + ": " + cudaGetErrorString(e);
    return false;
  }
  bool nccl(ncclResult_t r, const char* what) {
    if (r == ncclSuccess) return true;
    if (failure.empty()) failure = std::string{what} + ": " + error_string(r);
    return false;
  }
  template <class F>
  bool bind(const char* name, F& out) {
    out = reinterpret_cast<F>(dlsym(lib, name));
    if (out == nullptr && failure.empty()) failure = std::string{"libnccl.so.2 lacks "} + name;
    return out != nullptr;
  }
  bool all_reduce_once(std::size_t bytes) {
    return nccl(all_reduce(send, recv, bytes / sizeof(float), ncclFloat32, ncclSum, comm, stream),
                "ncclAllReduce");
  }
};

raw_nccl::raw_nccl(std::size_t max_bytes) : impl_(std::make_unique<impl>()) {
  auto& m = *impl_;
  m.lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (m.lib == nullptr) {
    const char* why = dlerror();
    m.failure = std::string{"NCCL could not be loaded: "} + (why != nullptr ? why : "not found");
    return;
  }
  if (!(m.bind("ncclGetUniqueId", m.get_unique_id) && m.bind("ncclCommInitRank", m.init_rank) &&
        m.bind("ncclCommDestroy", m.destroy) && m.bind("ncclAllReduce", m.all_reduce) &&
        m.bind("ncclGetErrorString", m.error_string))) {
    return;
  }
  ncclUniqueId id;
  if (!m.cuda(cudaSetDevice(0), "cudaSetDevice") ||
      !m.cuda(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
      !m.cuda(cudaMalloc(&m.send, max_bytes), "cudaMalloc") ||
      !m.cuda(cudaMalloc(&m.recv, max_bytes), "cudaMalloc") ||
      !m.cuda(cudaMemset(m.send, 0, max_bytes), "cudaMemset") ||
      !m.cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize") ||
      !m.nccl(m.get_unique_id(&id), "ncclGetUniqueId") ||
      !m.nccl(m.init_rank(&m.comm, 1, id, 0), "ncclCommInitRank")) {
    return;
  }
  m.capacity = max_bytes;
}

raw_nccl::~raw_nccl() {
  auto& m = *impl_;
  if (m.stream != nullptr) (void)cudaStreamSynchronize(m.stream);
  if (m.comm != nullptr) (void)m.destroy(m.comm);
  if (m.send != nullptr) (void)cudaFree(m.send);
  if (m.recv != nullptr) (void)cudaFree(m.recv);
  if (m.stream != nullptr) (void)cudaStreamDestroy(m.stream);
  // The library stays loaded: NCCL's threads may outlive the communicator briefly.
}

const std::string& raw_nccl::failure() const noexcept { return impl_->failure; }

std::vector<double> raw_nccl::single(std::size_t bytes, int rounds) {
  auto& m = *impl_;
  std::vector<double> us;
  if (!m.failure.empty() || bytes > m.capacity) {
    if (m.failure.empty()) m.failure = "more bytes than the buffer holds";
    return us;
  }
  us.reserve(static_cast<std::size_t>(rounds));
  for (int i = 0; i < rounds; ++i) {
    const double t0 = now_us();
    if (!m.all_reduce_once(bytes) ||
        !m.cuda(cudaStreamSynchronize(m.stream), "cudaStreamSynchronize")) {
      return {};
    }
    us.push_back(now_us() - t0);
  }
  return us;
}

double raw_nccl::pipelined(std::size_t bytes, int rounds) {
  auto& m = *impl_;
  if (!m.failure.empty() || bytes > m.capacity || rounds <= 0) {
    if (m.failure.empty()) m.failure = "more bytes than the buffer holds, or no rounds";
    return -1;
  }
  const double t0 = now_us();
  for (int i = 0; i < rounds; ++i) {
    if (!m.all_reduce_once(bytes)) return -1;
  }
  if (!m.cuda(cudaStreamSynchronize(m.stream), "cudaStreamSynchronize")) return -1;
  return (now_us() - t0) / rounds;
}

}  // namespace cudactor::bench
