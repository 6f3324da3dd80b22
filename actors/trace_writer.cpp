#include "cudactor/actors/trace_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

namespace cudactor {

namespace {

constexpr std::size_t chunk_bytes = std::size_t{256} << 10;

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A duration in microseconds, as trace-event JSON wants it.
std::string us(std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns) / 1e3);
  return text;
}

void append_escaped(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
          out += esc;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

gpu::result<std::shared_ptr<trace_writer>> trace_writer::open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return gpu::status{gpu::status_code::invalid_argument,
                       "trace: cannot create '" + path + "': " + std::strerror(errno)};
  }
  return std::shared_ptr<trace_writer>{new trace_writer{path, file, steady_ns()}};
}

trace_writer::trace_writer(std::string path, std::FILE* file, std::int64_t origin_ns)
    : path_(std::move(path)), file_(file), origin_ns_(origin_ns) {
  buffer_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  event(R"({"name":"process_name","ph":"M","pid":1,"args":{"name":"cudactor coordinator"}})");
  writer_ = std::thread{[this] { write_loop(); }};
}

trace_writer::~trace_writer() { close(); }

std::string trace_writer::micros(std::int64_t ns) const { return us(ns - origin_ns_); }

void trace_writer::event(const std::string& json) {
  if (!first_) buffer_ += ",\n";
  first_ = false;
  buffer_ += json;
  if (buffer_.size() >= chunk_bytes) hand_off();
}

void trace_writer::name_stream(std::uint32_t stream, std::string_view name) {
  if (closed_) return;
  std::string e = R"({"name":"thread_name","ph":"M","pid":1,"tid":)" + std::to_string(stream + 1) +
                  R"(,"args":{"name":)";
  append_escaped(e, name);
  e += "}}";
  event(e);
  // Tracks in the pool's order, not by name.
  event(R"({"name":"thread_sort_index","ph":"M","pid":1,"tid":)" + std::to_string(stream + 1) +
        R"(,"args":{"sort_index":)" + std::to_string(stream + 1) + "}}");
}

void trace_writer::add(const traced_op& op) {
  if (closed_) return;
  ++operations_;
  char id[24];
  std::snprintf(id, sizeof id, "\"0x%llx\"", static_cast<unsigned long long>(op.id));
  if (op.registered_ns != 0) {
    const std::int64_t until = op.dispatched_ns != 0 ? op.dispatched_ns : op.ended_ns;
    std::string head = R"({"cat":"queued","pid":1,"tid":0,"id":)" + std::string{id} + ",\"name\":";
    append_escaped(head, op.name);
    event(head + R"(,"ph":"b","ts":)" + micros(op.registered_ns) + "}");
    event(head + R"(,"ph":"e","ts":)" + micros(until) + "}");
  }
  if (op.on_stream) {
    const bool timed = op.started_ns != 0 && op.finished_ns != 0;
    const std::int64_t from = timed ? op.started_ns : op.dispatched_ns;
    const std::int64_t to = timed ? op.finished_ns : op.ended_ns;
    std::string e = R"({"ph":"X","pid":1,"tid":)" + std::to_string(op.stream + 1) + ",\"name\":";
    append_escaped(e, op.name);
    e += ",\"cat\":";
    append_escaped(e, op.type);
    e += ",\"ts\":" + micros(from) + ",\"dur\":" + us(std::max<std::int64_t>(0, to - from));
    e += ",\"args\":{\"op\":" + std::to_string(op.id) + ",\"state\":";
    append_escaped(e, op.state);
    e += std::string{",\"timed\":"} + (timed ? "true" : "false");
    if (op.step_op >= 0) e += ",\"step_op\":" + std::to_string(op.step_op);
    e += ",\"queued_us\":" + us(op.dispatched_ns - op.registered_ns);
    e += ",\"end_seen_after_us\":" + us(std::max<std::int64_t>(0, op.ended_ns - to));
    e += "}}";
    event(e);
  }
}

void trace_writer::hand_off() {
  if (buffer_.empty()) return;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    chunks_.push_back(std::move(buffer_));
  }
  buffer_.clear();
  wake_.notify_one();
}

void trace_writer::write_loop() {
  for (;;) {
    std::string chunk;
    {
      std::unique_lock<std::mutex> lock{mutex_};
      wake_.wait(lock, [this] { return stopping_ || !chunks_.empty(); });
      if (chunks_.empty()) return;  // stopping, and everything written
      chunk = std::move(chunks_.front());
      chunks_.pop_front();
    }
    if (std::fwrite(chunk.data(), 1, chunk.size(), file_) != chunk.size()) {
      std::lock_guard<std::mutex> lock{mutex_};
      write_failed_ = true;
    }
  }
}

void trace_writer::close() noexcept {
  if (closed_) return;
  closed_ = true;
  try {
    buffer_ += "\n]}\n";
    hand_off();
  } catch (...) {
    std::lock_guard<std::mutex> lock{mutex_};
    write_failed_ = true;
  }
  {
    std::lock_guard<std::mutex> lock{mutex_};
    stopping_ = true;
  }
  wake_.notify_one();
  if (writer_.joinable()) writer_.join();
  const bool flushed = std::fclose(file_) == 0;
  if (write_failed_ || !flushed) {
    std::fprintf(stderr, "cudactor: trace '%s' could not be written completely\n", path_.c_str());
  }
}

}  // namespace cudactor
