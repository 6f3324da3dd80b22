// gpu/cuda_backend.hpp
//
// The backend interface over the CUDA runtime API, for one device. Streams are created
// non-blocking (the legacy default stream never serialises them) with priorities spread over
// cudaDeviceGetStreamPriorityRange; regular events use cudaEventDisableTiming; device memory
// comes from the device's stream-ordered pool (cudaMallocAsync), kept rather than returned
// to the driver on every synchronize. A sticky error (kernel fault) marks the backend
// device_lost until reset(). Work enqueued here runs at once on the calling thread and
// launches on launch_context::native_stream(); a launch the runtime rejects fails that
// enqueue alone.
//
// Built whenever the CUDA toolkit is found; usable only where a device is present
// (open_backend("auto") checks). This header needs no CUDA headers.
#pragma once

#include <memory>

#include "cudactor/gpu/backend.hpp"

namespace cudactor::gpu {

// Devices the CUDA runtime reports; no_device when there is none, no driver at all, or a
// driver too old for the runtime cudactor was built with (the message says which, with both
// versions).
[[nodiscard]] result<int> cuda_device_count();

class cuda_backend final : public backend {
 public:
  // max_in_flight bounds the signalled timeline values in flight per stream, each an event
  // recorded on it. A CUDA stream accepts about a thousand pending operations before the
  // next enqueue blocks the calling thread; kept well below that, signal() never blocks on a
  // full queue: past the bound it answers resource_exhausted and the caller holds its work.
  [[nodiscard]] static result<std::unique_ptr<cuda_backend>> open(
      int device_ordinal = 0, std::size_t max_in_flight = cuda_default_max_in_flight);
  ~cuda_backend() override;

  [[nodiscard]] backend_kind kind() const noexcept override { return backend_kind::cuda; }
  [[nodiscard]] std::size_t max_in_flight() const noexcept override;
  [[nodiscard]] const device_info& device() const noexcept override;

  [[nodiscard]] result<stream> create_stream(const stream_options& options) override;
  [[nodiscard]] status destroy_stream(stream_ref s) override;
  [[nodiscard]] result<std::string> stream_name(stream_ref s) const override;
  [[nodiscard]] result<stream_priority> priority(stream_ref s) const override;

  [[nodiscard]] result<event> create_event(event_kind kind) override;
  [[nodiscard]] status destroy_event(event_ref e) override;
  [[nodiscard]] status record(event_ref e, stream_ref s) override;
  [[nodiscard]] status wait(stream_ref s, event_ref e) override;
  [[nodiscard]] status wait_point(stream_ref s, stream_ref other, timeline_point value) override;
  [[nodiscard]] status order_after(stream_ref s, stream_ref other, timeline_point value) override;
  [[nodiscard]] query_result query(event_ref e) override;
  [[nodiscard]] result<std::chrono::nanoseconds> elapsed(event_ref start, event_ref end) override;

  [[nodiscard]] result<buffer> allocate(stream_ref s, std::size_t bytes) override;
  [[nodiscard]] result<buffer> allocate_managed(std::size_t bytes) override;
  [[nodiscard]] result<buffer> allocate_pinned(std::size_t bytes) override;
  [[nodiscard]] status free_async(stream_ref s, buffer& memory) override;
  [[nodiscard]] status copy(stream_ref s, void* dst, const void* src, std::size_t bytes,
                            copy_kind direction) override;
  [[nodiscard]] status fill(stream_ref s, void* dst, std::uint8_t value,
                            std::size_t bytes) override;
  [[nodiscard]] status prefetch(stream_ref s, const void* data, std::size_t bytes,
                                prefetch_target target) override;

  [[nodiscard]] status enqueue(stream_ref s, work_fn work) override;
  [[nodiscard]] status add_callback(stream_ref s, host_callback callback) override;
  [[nodiscard]] result<std::unique_ptr<work_graph>> build_graph(
      std::vector<graph_node> nodes) override;

  [[nodiscard]] result<timeline_point> signal(stream_ref s) override;
  [[nodiscard]] signalled_work enqueue_signalled(stream_ref s, work_fn work) override;
  [[nodiscard]] result<std::shared_ptr<timeline>> timeline_of(stream_ref s) override;

  [[nodiscard]] status synchronize(stream_ref s) override;
  [[nodiscard]] status synchronize() override;

  [[nodiscard]] status health() const override;
  [[nodiscard]] status reset() override;

  [[nodiscard]] result<void*> native_handle(stream_ref s) const override;
  [[nodiscard]] result<void*> native_handle(event_ref e) const override;

 protected:
  [[nodiscard]] status release_memory(void* data, memory_kind kind, stream_ref s) override;

 private:
  struct impl;
  cuda_backend(int device_ordinal, std::size_t max_in_flight);
  std::unique_ptr<impl> impl_;
};

}  // namespace cudactor::gpu
