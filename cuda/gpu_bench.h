// The CUDA benchmark backend: GEMM through cuBLASLt (fp16, bf16, fp8 e4m3, and
// nvfp4 on Blackwell),
// a hand-written GEMV kernel, and a device-to-device bandwidth test, timed
// with CUDA events after warm-up (medians). Built only where nvcc is found.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace roofline::cuda {

struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  int major = 0, minor = 0;
  double memory_bytes = 0;
};

// Throws roofline::Unsupported("no CUDA device: ...") when none is usable.
DeviceInfo device_info();

struct GemmResult {
  std::int64_t m = 0, n = 0, k = 0;
  std::string precision;  // "fp16", "bf16", "fp8", "nvfp4"
  double median_time_s = 0;
  double flops_per_s = 0;
  double bandwidth_Bps = 0;  // compulsory bytes / time
  int repetitions = 0;
  double max_rel_error = 0;  // sampled entries against a host reference
  bool verified = false;
};

// C[m,n] = A[m,k] B[k,n] with cuBLASLt; m = 1 uses the GEMV kernel for fp16/bf16.
// nvfp4 needs a Blackwell GPU (compute capability 10.x or 12.x) and n, k multiples of 32.
GemmResult gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& precision,
                int repetitions = 20);

struct BandwidthResult {
  double bytes = 0;
  double copy_Bps = 0;    // cudaMemcpyDeviceToDevice, read + write counted
  double kernel_Bps = 0;  // a vectorized copy kernel, read + write counted
  double read_Bps = 0;    // a reduction that only reads
};
BandwidthResult bandwidth(double bytes = 2e9, int repetitions = 20);

}  // namespace roofline::cuda
