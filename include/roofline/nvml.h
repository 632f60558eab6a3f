// NVML (the NVIDIA Management Library), loaded at run time with dlopen: no
// link-time dependency, and a clear "not available" where there is no driver.
#pragma once

#include <string>
#include <vector>

namespace roofline::nvml {

// Each metric is 0 where the driver does not give it (its NVML call is
// missing or fails).
struct GpuSample {
  unsigned index = 0;
  std::string name;
  unsigned utilization_pct = 0;         // GPU busy, percent
  unsigned memory_utilization_pct = 0;  // memory controller busy, percent
  unsigned long long memory_used_bytes = 0;
  unsigned long long memory_total_bytes = 0;
  double power_w = 0;
  unsigned sm_clock_mhz = 0;
  unsigned memory_clock_mhz = 0;
  unsigned temperature_c = 0;
};

struct Status {
  bool available = false;
  std::string message;  // why not, when not available
  std::vector<GpuSample> gpus;
};

// Loads NVML on first use (thread-safe) and samples every GPU. Never throws.
[[nodiscard]] Status sample();

}  // namespace roofline::nvml
