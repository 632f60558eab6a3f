// The CUDA benchmark backend: GEMMs through cuBLASLt (fp16, bf16, fp8 e4m3 and,
// on Blackwell, nvfp4), a GEMV kernel for m = 1, and device bandwidth. Every
// timed repetition starts with a cold L2 (unless asked otherwise) and is
// enqueued back to back with the others, so that neither cached operands nor
// host launch cost enter the time; results are checked against a host
// reference. Built only where nvcc is found; bench_plan.h holds the arithmetic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_plan.h"

namespace roofline::gpu {

struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  int major = 0, minor = 0;
  double memory_bytes = 0;
  std::size_t l2_bytes = 0;
  int driver_version = 0, runtime_version = 0;  // e.g. 13000 for CUDA 13.0
};

// Throws roofline::Unsupported("no CUDA device: ...") when none is usable.
DeviceInfo device_info();

struct TimingOptions {
  bool flush_l2 = true;    // flush before each repetition; false: operands stay warm in L2
  double target_s = 0.04;  // GPU time spent in timed repetitions, about
  int min_repetitions = 10;
  int max_repetitions = 2000;
  double warmup_s = 0.02;  // per case, after the process-wide warm_up_clocks()
};

struct Timing {
  double median_s = 0, p10_s = 0, p90_s = 0, min_s = 0;
  int repetitions = 0;
  bool l2_flushed = false;
};

// Runs a bf16 GEMM back to back for `seconds` so that the SM clock leaves its
// idle state (a few hundred MHz) before anything is timed.
void warm_up_clocks(double seconds);

struct GemmResult {
  std::int64_t m = 0, n = 0, k = 0;
  std::string precision;  // inputs: "fp16", "bf16", "fp8", "nvfp4"
  std::string output;     // "fp16" or "bf16"
  std::string kernel;     // "cublaslt" or "gemv"
  int algorithm = -1;     // which of cuBLASLt's heuristic answers ran (0 = its first)
  bool fast_accum = false;
  GemvLaunch launch;  // the GEMV kernel's launch (kernel == "gemv")
  Timing timing;
  double flops = 0, bytes = 0;  // 2mnk; compulsory bytes of inputs, scales and output
  CheckResult check;
};

// C[m,n] = A[m,k] W^T with W stored [n][k] (the layout of a Linear layer's
// weight; fp8 and nvfp4 need it). m = 1 with fp16/bf16 runs the GEMV kernel
// unless `gemv_kernel` is false (then cuBLASLt, as for every other m).
GemmResult gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& precision,
                const TimingOptions& options, bool gemv_kernel = true);

struct BandwidthResult {
  double bytes = 0;  // of each buffer
  Timing memcpy_timing, copy_timing, read_timing;
  double memcpy_Bps = 0;  // cudaMemcpy device to device, read + write counted
  double copy_Bps = 0;    // a vectorized copy kernel, read + write counted
  double read_Bps = 0;    // a reduction that only reads
};
BandwidthResult bandwidth(double bytes, const TimingOptions& options);

}  // namespace roofline::gpu
