// Runs a helper program with a deadline and bounded output: how the server asks
// the CUDA backend (roofline-gpu) for a measurement without linking CUDA.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace roofline::server {

struct ProcessResult {
  int exit_code = -1;      // -1 when it did not exit by itself
  bool timed_out = false;  // killed at the deadline
  std::string out;         // stdout, at most max_output bytes
  std::string err;         // stderr, at most max_output bytes
};

// argv[0] is the program's path. Throws Unsupported when it cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s,
                          std::size_t max_output = 1 << 20);

}  // namespace roofline::server
