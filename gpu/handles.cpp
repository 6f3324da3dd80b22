// Out-of-line members of the owning handles (stream, event, buffer): all they do is hand
// their resource back to the backend that issued it, never throwing.
#include "cudactor/gpu/backend.hpp"

namespace cudactor::gpu {

stream::stream(stream&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), ref_(std::exchange(other.ref_, {})) {}

stream& stream::operator=(stream&& other) noexcept {
  if (this != &other) {
    reset().ignore();  // failures are counted by reset()
    owner_ = std::exchange(other.owner_, nullptr);
    ref_ = std::exchange(other.ref_, {});
  }
  return *this;
}

stream::~stream() { reset().ignore(); }

status stream::reset() noexcept {
  if (owner_ == nullptr) return {};
  backend* owner = std::exchange(owner_, nullptr);
  status result;
  try {
    result = owner->destroy_stream(std::exchange(ref_, {}));
  } catch (...) {
    result = status{status_code::backend_error, "exception while destroying a stream"};
  }
  owner->count_failed_release(result);
  return result;
}

event::event(event&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      ref_(std::exchange(other.ref_, {})),
      kind_(other.kind_) {}

event& event::operator=(event&& other) noexcept {
  if (this != &other) {
    reset().ignore();
    owner_ = std::exchange(other.owner_, nullptr);
    ref_ = std::exchange(other.ref_, {});
    kind_ = other.kind_;
  }
  return *this;
}

event::~event() { reset().ignore(); }

status event::reset() noexcept {
  if (owner_ == nullptr) return {};
  backend* owner = std::exchange(owner_, nullptr);
  status result;
  try {
    result = owner->destroy_event(std::exchange(ref_, {}));
  } catch (...) {
    result = status{status_code::backend_error, "exception while destroying an event"};
  }
  owner->count_failed_release(result);
  return result;
}

buffer::buffer(buffer&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      kind_(other.kind_),
      stream_(std::exchange(other.stream_, {})) {}

buffer& buffer::operator=(buffer&& other) noexcept {
  if (this != &other) {
    reset().ignore();
    owner_ = std::exchange(other.owner_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    kind_ = other.kind_;
    stream_ = std::exchange(other.stream_, {});
  }
  return *this;
}

buffer::~buffer() { reset().ignore(); }

status buffer::reset() noexcept {
  if (owner_ == nullptr) return {};
  backend* owner = std::exchange(owner_, nullptr);
  status result;
  try {
    result = owner->release_memory(std::exchange(data_, nullptr), kind_, stream_);
  } catch (...) {
    result = status{status_code::backend_error, "exception while freeing memory"};
  }
  size_ = 0;
  stream_ = {};
  owner->count_failed_release(result);
  return result;
}

void* buffer::release() noexcept {
  owner_ = nullptr;
  size_ = 0;
  stream_ = {};
  return std::exchange(data_, nullptr);
}

}  // namespace cudactor::gpu
