// bench/gpu/pipeline_gpu_bench.cpp
//
// Copy/compute overlap on a CUDA device: the pipeline example (examples/pipeline.cpp: chunks
// copied in, computed on, copied out, as one graph through the coordinator) over 3 streams
// against 1 stream, both measured by the example in the same process, here run `rounds` times
// on the CUDA backend and summarized. The example is the one owner of the pipeline; this
// program only runs it (beside this program: ../examples/pipeline, or $CUDACTOR_PIPELINE)
// and reads the two wall times and its check of the values off its output. A wrong value or
// a failed run ends the benchmark with exit code 1.
//
//   pipeline_gpu_bench --backend=cuda [--quick] [-- options for the example]
// Prints a table, then one JSON object on the last line.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/gpu_mode.hpp"
#include "common/report.hpp"

using namespace cudactor::bench;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "pipeline_gpu_bench: %s\n", what.c_str());
  std::exit(1);
}

// Single quotes around each word for sh -c; a quote inside is closed, escaped, reopened.
std::string quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
  return out + "'";
}

struct times {
  double one_ms = 0, three_ms = 0;
};

times run_once(const std::string& command) {
  FILE* out = ::popen(command.c_str(), "r");
  if (out == nullptr) fail("cannot start: " + command);
  std::string text;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, out) != nullptr) text += buffer;
  const int status = ::pclose(out);
  if (status != 0) fail("the example failed (status " + std::to_string(status) + "):\n" + text);
  if (text.find("every value equals the host reference") == std::string::npos) {
    fail("the example's values differ from the host reference:\n" + text);
  }
  times t;
  bool one = false, three = false;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? end : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    int streams = 0;
    double ms = 0;
    char rest = 0;
    if (std::sscanf(line.c_str(), "%d %lf%c", &streams, &ms, &rest) == 2) {
      if (streams == 1) one = true, t.one_ms = ms;
      if (streams == 3) three = true, t.three_ms = ms;
    }
  }
  if (!one || !three) fail("no wall times for 1 and 3 streams in:\n" + text);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const auto mode = parse_gpu_mode(argc, argv);
  const int rounds = mode.quick ? 3 : 7;
  const char* given = std::getenv("CUDACTOR_PIPELINE");
  const std::string program =
      given != nullptr
          ? std::string{given}
          : (std::filesystem::path{argv[0]}.parent_path() / ".." / "examples" / "pipeline")
                .string();
  std::vector<std::string> args{program, "--cudactor.backend=cuda",
                                "--cudactor.metrics.no-exposer"};
  if (mode.quick) {
    args.insert(args.end(), {"--chunks=12", "--width=262144", "--rounds=8", "--repeat=2"});
  } else {
    args.insert(args.end(), {"--chunks=24", "--width=1048576", "--rounds=16", "--repeat=3"});
  }
  args.insert(args.end(), mode.passed_on.begin(), mode.passed_on.end());
  std::string command;
  for (const auto& a : args) command += (command.empty() ? "" : " ") + quoted(a);
  command += " 2>&1";

  samples one, three, speedup;
  for (int round = 0; round < rounds; ++round) {
    const auto t = run_once(command);
    one.add(t.one_ms);
    three.add(t.three_ms);
    speedup.add(t.one_ms / t.three_ms);
  }
  auto span = [](const samples& x) {
    auto [lo, hi] = std::minmax_element(x.xs.begin(), x.xs.end());
    return fixed(*lo, 2) + "-" + fixed(*hi, 2);
  };
  table t({"streams", "wall ms (median)", "range"});
  t.add({"1", fixed(one.median(), 2), span(one)});
  t.add({"3", fixed(three.median(), 2), span(three)});
  t.add({"speedup 3 over 1", fixed(speedup.median(), 2) + "x", span(speedup)});
  std::printf("pipeline_gpu_bench: %s, %d rounds\n", command.c_str(), rounds);
  t.print("copy in / compute / copy out per chunk, one graph through the coordinator");

  json_line json;
  json.add("benchmark", std::string{"pipeline_gpu_bench"});
  json.add("quick", mode.quick);
  json.add("one_stream_ms", one.median());
  json.add("three_streams_ms", three.median());
  json.add("speedup_3_over_1", speedup.median());
  json.print();
  return 0;
}
