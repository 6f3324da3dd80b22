// bench/common/cuda_runtime.hpp
//
// A runtime on the CUDA backend for the GPU benchmarks (bench/gpu/), with `args` and then the
// options the user passed on after "--". No device, or a runtime that did not start, ends the
// benchmark with the reason and exit code 1.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cudactor/actors/runtime.hpp"

namespace cudactor::bench {

inline std::unique_ptr<runtime> start_cuda_runtime(runtime_config& config,
                                                   std::vector<std::string> args,
                                                   const std::vector<std::string>& passed_on) {
  // Metrics on, as shipped, on a free port.
  args.insert(args.begin(), {"--cudactor.backend=cuda", "--cudactor.metrics.port=0"});
  args.insert(args.end(), passed_on.begin(), passed_on.end());
  if (auto err = config.parse(std::move(args))) {
    std::fprintf(stderr, "options: %s\n", caf::to_string(err).c_str());
    std::exit(2);
  }
  auto rt = runtime::start(config);
  if (!rt) {
    std::fprintf(stderr, "runtime: %s\n", rt.error().to_string().c_str());
    std::exit(1);
  }
  if (rt.value()->device().kind() != gpu::backend_kind::cuda) {
    std::fprintf(stderr, "runtime: not on CUDA: %s\n", rt.value()->backend_reason().c_str());
    std::exit(1);
  }
  return std::move(rt.value());
}

}  // namespace cudactor::bench
