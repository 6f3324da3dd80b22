// actors/detail/stream_directory.hpp
//
// Which backend stream stands behind each of the runtime's streams now. The actors' protocol
// names a stream by its runtime-wide stream_id only: the backend stream behind it belongs to
// its stream actor and changes when that actor makes it anew (a reset after a lost device). A
// stream actor placing a device-side wait on another stream, and the coordinator reading
// another stream's timeline, look the stream up here, so no message carries a backend handle.
//
// Each stream actor writes its own entry (when it is spawned and when it makes its stream
// anew); anyone in the process reads. Every cross-stream wait reads an entry, so a read takes
// no lock: an entry carries a sequence number that is odd while it is written, and a reader
// that saw a write in progress reads again.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "cudactor/gpu/stream.hpp"
#include "cudactor/messaging/types.hpp"

namespace cudactor::detail {

class stream_directory {
 public:
  // Room for streams 0 to `streams` - 1, none published yet.
  explicit stream_directory(std::size_t streams);
  stream_directory(const stream_directory&) = delete;
  stream_directory& operator=(const stream_directory&) = delete;

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  // Stream `id` is backed by `view` from now on (ignored for an id out of range). One writer
  // per entry: the stream's own actor.
  void publish(stream_id id, gpu::stream_ref view) noexcept;
  // The backend stream behind `id` now; empty for an id out of range or not published yet.
  [[nodiscard]] gpu::stream_ref view(stream_id id) const noexcept;

 private:
  struct entry {
    std::atomic<std::uint32_t> sequence{0};  // odd while the entry is written
    std::atomic<std::uint32_t> instance{0}, slot{0}, generation{0};
  };
  std::unique_ptr<entry[]> entries_;
  std::size_t size_;
};

}  // namespace cudactor::detail
