// gpu/host_backend.hpp
//
// CUDA's stream and event semantics on CPU threads, so everything above the device layer
// runs and is tested on machines without a GPU. Streams are in-order queues served by a
// small worker pool (higher-priority streams first); "kernels" are host callables, copies are
// memcpy, device memory is host memory under a configurable budget. A stream waiting on
// another stream's event parks without holding a worker.
//
// It can also inject the faults tests need: an operation that fails alone (the stream goes
// on; the next completion point on the stream reports it), a device fault that loses the
// device (every pending operation on every stream fails, new work is refused until reset()),
// an operation that hangs until released, and a slow one.
//
// A failure is reported by the first event recorded after it on the same stream, once, and
// by the next timeline signal whether or not an event reported it first (the timeline is what
// barriers and wait_point read: a timing event recorded after the work must not take the
// failure from it); place a point after each operation to attribute failures exactly.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "cudactor/gpu/backend.hpp"

namespace cudactor::gpu {

namespace detail {
class host_completion;
}

struct host_backend_options {
  unsigned workers = 0;                             // 0: between 2 and 4, by hardware threads
  std::size_t memory_limit = std::size_t{4} << 30;  // bytes of "device" memory handed out
  std::string name = "host";
  // How long an idle worker looks for new work (yielding its core) before it sleeps. Zero
  // sleeps at once: on a machine with few cores the spin takes time from the threads that
  // feed the streams and watch them; with many streams kept busy a short spin saves a
  // wake-up per burst. docs/performance-history.md says what was measured.
  std::chrono::microseconds idle_spin{0};
  // Signalled timeline values in flight per stream, as the CUDA backend bounds them: a
  // program that passes here does not overrun a GPU's stream.
  std::size_t max_in_flight = cuda_default_max_in_flight;
};

// Releases an operation injected with host_backend::inject_hang(). Copyable; releasing twice
// is harmless.
class hang_release {
 public:
  hang_release() = default;
  void release() const;
  [[nodiscard]] bool released() const;

 private:
  friend class host_backend;
  explicit hang_release(std::shared_ptr<detail::host_completion> gate) : gate_(std::move(gate)) {}
  std::shared_ptr<detail::host_completion> gate_;
};

class host_backend final : public backend {
 public:
  explicit host_backend(host_backend_options options = {});
  ~host_backend() override;

  [[nodiscard]] backend_kind kind() const noexcept override { return backend_kind::host; }
  [[nodiscard]] const device_info& device() const noexcept override;
  [[nodiscard]] unsigned workers() const noexcept;
  [[nodiscard]] std::size_t max_in_flight() const noexcept override;

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
  [[nodiscard]] bool begin_batch() noexcept override;
  void end_batch() noexcept override;
  [[nodiscard]] result<std::shared_ptr<timeline>> timeline_of(stream_ref s) override;

  [[nodiscard]] status synchronize(stream_ref s) override;
  [[nodiscard]] status synchronize() override;

  [[nodiscard]] status health() const override;
  [[nodiscard]] status reset() override;

  [[nodiscard]] result<void*> native_handle(stream_ref s) const override;
  [[nodiscard]] result<void*> native_handle(event_ref e) const override;

  // --- fault injection -------------------------------------------------------------------
  // An operation that fails alone when the stream reaches it, like a kernel reporting failure.
  [[nodiscard]] status inject_failure(stream_ref s, std::string why);
  // An operation that does not finish until released; it holds its stream, not a worker.
  [[nodiscard]] result<hang_release> inject_hang(stream_ref s);
  // An operation that takes `duration`; it holds its stream, not a worker.
  [[nodiscard]] status inject_delay(stream_ref s, std::chrono::nanoseconds duration);
  // An operation that, when reached, loses the device, as a kernel fault does on CUDA.
  [[nodiscard]] status inject_device_fault(stream_ref s, std::string why);
  // Loses the device now.
  void lose_device(std::string why);

  // Device memory currently allocated, in bytes.
  [[nodiscard]] std::size_t memory_in_use() const;
  // How often a host thread waited for the device: synchronize() (either form), reset() and
  // waits on a stream's timeline. What must stay 0 while only actors drive the device.
  [[nodiscard]] std::uint64_t host_waits() const noexcept;

 protected:
  [[nodiscard]] status release_memory(void* data, memory_kind kind, stream_ref s) override;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace cudactor::gpu
