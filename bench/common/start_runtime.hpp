// bench/common/start_runtime.hpp
//
// A runtime for a benchmark: on the backend named, with metrics on as shipped (on a free
// port, so that benchmarks may run side by side), `args`, then the options the user passed on
// after "--". Bad options end the benchmark with exit code 2, a runtime that did not start
// (no device for CUDA) with the reason and exit code 1.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cudactor/actors/runtime.hpp"

namespace cudactor::bench {

inline std::unique_ptr<runtime> start_runtime_on(const std::string& backend, runtime_config& config,
                                                 std::vector<std::string> args,
                                                 const std::vector<std::string>& passed_on) {
  args.insert(args.begin(), {"--cudactor.backend=" + backend, "--cudactor.metrics.port=0"});
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
  return std::move(rt.value());
}

// For the GPU benchmarks (bench/gpu/): a runtime that is not on CUDA (options passed on
// said otherwise) is refused too, so that no host figure passes for a GPU one.
inline std::unique_ptr<runtime> start_cuda_runtime(runtime_config& config,
                                                   std::vector<std::string> args,
                                                   const std::vector<std::string>& passed_on) {
  auto rt = start_runtime_on("cuda", config, std::move(args), passed_on);
  if (rt->device().kind() != gpu::backend_kind::cuda) {
    std::fprintf(stderr, "runtime: not on CUDA: %s\n", rt->backend_reason().c_str());
    std::exit(1);
  }
  return rt;
}

}  // namespace cudactor::bench
