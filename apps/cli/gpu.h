// The GPU commands: `bench --gpu` and `calibrate --gpu`. They run roofline-gpu
// (the CUDA backend, a program of its own) and read its JSON lines as they
// come, or read a saved run (--results FILE) from a machine that had the GPU.
#pragma once

#include <string>
#include <vector>

namespace roofline::cli {

struct GpuCommand {
  std::string what = "all";  // bench: bandwidth, gemv, gemm or all
  std::string results_file;  // a saved run instead of running now
  bool compare = false;      // bench: predict each case and report the error
  std::string hardware;      // the device to compare with; empty: the GPU's own registry id
  std::vector<std::string> hardware_files;
  std::string out;             // calibrate: the kernel table to write
  std::string l2 = "flushed";  // or "warm"
  bool quick = false;          // the suite's quick subset
  bool json = false;
};

// roofline-gpu beside this binary, or empty where this build has none.
std::string gpu_tool_path();

// Runs (or reads) the suite and prints each case, with its prediction and
// error when `hardware` is set.
void gpu_bench(const GpuCommand& c);

// Runs (or reads) the suite and writes its kernel table (data/kernels format).
void gpu_calibrate(const GpuCommand& c);

}  // namespace roofline::cli
