// bench/common/gpu_mode.hpp
//
// The command line of the GPU benchmarks (bench/gpu/, named *_gpu_bench so that the GPU
// bundle's runner finds them): --backend=cuda (the only backend they measure; the host
// backend's figures come from the other benchmarks), --quick, and options after "--" for the
// runtimes they start. Without a usable CUDA device they say why and exit 1: a benchmark that
// measured nothing must not look like one that ran.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/report.hpp"

namespace cudactor::bench {

inline run_mode parse_gpu_mode(int argc, char** argv) {
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      rest.insert(rest.end(), argv + i, argv + argc);
      break;
    }
    if (std::strncmp(argv[i], "--backend=", 10) == 0) {
      if (std::strcmp(argv[i] + 10, "cuda") != 0) {
        std::fprintf(stderr,
                     "%s: --backend=%s: this benchmark measures the CUDA backend only "
                     "(poller_bench, stream_bench and coordinator_bench measure the host)\n",
                     argv[0], argv[i] + 10);
        std::exit(2);
      }
      continue;
    }
    rest.push_back(argv[i]);
  }
  return run_mode::parse(static_cast<int>(rest.size()), rest.data());
}

}  // namespace cudactor::bench
