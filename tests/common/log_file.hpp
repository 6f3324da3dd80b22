// tests/common/log_file.hpp
//
// Reading what a child process wrote to its log: the whole file, and waiting for the line a
// server prints once it listens ("... listening on 127.0.0.1:PORT").
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "common/child_process.hpp"

namespace cudactor::test {

inline std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The number printed right after `marker` in `log`, once it is there; nothing if `child`
// exits first or a minute passes.
inline std::optional<std::uint16_t> wait_for_port(const std::string& log, child_process& child,
                                                  const std::string& marker) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  while (std::chrono::steady_clock::now() < until && child.running()) {
    const std::string text = read_file(log);
    if (auto at = text.find(marker); at != std::string::npos) {
      return static_cast<std::uint16_t>(std::atoi(text.c_str() + at + marker.size()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  return std::nullopt;
}

}  // namespace cudactor::test
