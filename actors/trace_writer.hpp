// actors/trace_writer.hpp
//
// Every coordinator operation as Chrome trace-event JSON, the format Perfetto and
// chrome://tracing open: per operation an async "queued" span (registered -> dispatched) and,
// on its stream's track, a complete event from when it started to when it finished on the
// stream (timing events around it stamp both; without them, dispatched -> end seen, marked
// "timed": false). A replay of a recorded step also has a span per operation of the step
// where the backend told when each ran (args.step_op: its graph index). Times are
// microseconds from when the file was opened.
//
// add() only appends to a buffer; full buffers go to a thread of the writer's own, so the
// coordinator never waits for the disk. close() (or the destructor) writes the rest and the
// closing brackets; the file is valid JSON only after it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "cudactor/gpu/status.hpp"

namespace cudactor {

struct traced_op {
  std::uint64_t id = 0;
  std::string_view name;
  std::string_view type;
  std::string_view state;
  bool on_stream = false;  // it was dispatched to `stream`
  std::uint32_t stream = 0;
  // Steady-clock nanoseconds; 0: it did not happen (never dispatched, not timed).
  std::int64_t registered_ns = 0;
  std::int64_t dispatched_ns = 0;
  std::int64_t started_ns = 0;
  std::int64_t finished_ns = 0;
  std::int64_t ended_ns = 0;
  // An operation of the replay `id` is (a recorded step's, by its graph index): a span inside
  // the replay's, on the stream it ran on, with no queue of its own. -1: not one.
  std::int64_t step_op = -1;
};

class trace_writer {
 public:
  // Creates (truncates) the file; invalid_argument naming it when that fails.
  [[nodiscard]] static gpu::result<std::shared_ptr<trace_writer>> open(const std::string& path);

  trace_writer(const trace_writer&) = delete;
  trace_writer& operator=(const trace_writer&) = delete;
  ~trace_writer();

  // Names the track of a stream ("coordinator-0 (high)").
  void name_stream(std::uint32_t stream, std::string_view name);
  void add(const traced_op& op);
  // Writes what is left and the end of the JSON, and closes the file. Idempotent; add()
  // after it is ignored. Reports a write failure on stderr.
  void close() noexcept;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] std::uint64_t operations() const noexcept { return operations_; }

 private:
  trace_writer(std::string path, std::FILE* file, std::int64_t origin_ns);
  void event(const std::string& json);
  void hand_off();
  void write_loop();
  [[nodiscard]] std::string micros(std::int64_t ns) const;

  const std::string path_;
  std::FILE* file_;
  const std::int64_t origin_ns_;
  std::string buffer_;  // the caller's side: filled by add()
  bool first_ = true;
  bool closed_ = false;
  std::uint64_t operations_ = 0;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::string> chunks_;
  bool stopping_ = false;
  bool write_failed_ = false;
  std::thread writer_;
};

}  // namespace cudactor
