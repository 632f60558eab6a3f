#include "roofline/nvml.h"

#include <dlfcn.h>

#include <mutex>

namespace roofline::nvml {
namespace {

// The subset of nvml.h used here (NVML API, stable ABI since CUDA 10).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned gpu;
  unsigned memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr nvmlReturn_t kSuccess = 0;
constexpr int kClockSm = 1;
constexpr int kClockMem = 2;
constexpr int kTemperatureGpu = 0;

struct Api {
  void* handle = nullptr;
  std::string error;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
};

template <typename F>
bool bind(void* h, const char* symbol, F* out) {
  *out = reinterpret_cast<F>(dlsym(h, symbol));
  return *out != nullptr;
}

const Api& api() {
  static std::once_flag once;
  static Api a;
  std::call_once(once, [] {
    for (const char* lib : {"libnvidia-ml.so.1", "libnvidia-ml.so"}) {
      a.handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
      if (a.handle) break;
    }
    if (!a.handle) {
      a.error =
          "NVML not available: libnvidia-ml.so.1 could not be loaded (no NVIDIA driver on this "
          "machine)";
      return;
    }
    const bool ok = bind(a.handle, "nvmlInit_v2", &a.init) &&
                    bind(a.handle, "nvmlDeviceGetCount_v2", &a.count) &&
                    bind(a.handle, "nvmlDeviceGetHandleByIndex_v2", &a.by_index) &&
                    bind(a.handle, "nvmlDeviceGetName", &a.name) &&
                    bind(a.handle, "nvmlDeviceGetUtilizationRates", &a.utilization) &&
                    bind(a.handle, "nvmlDeviceGetMemoryInfo", &a.memory) &&
                    bind(a.handle, "nvmlDeviceGetPowerUsage", &a.power) &&
                    bind(a.handle, "nvmlDeviceGetClockInfo", &a.clock) &&
                    bind(a.handle, "nvmlDeviceGetTemperature", &a.temperature);
    if (!ok) {
      a.error = "NVML not available: the loaded library lacks expected symbols";
      a.handle = nullptr;
      return;
    }
    if (a.init() != kSuccess) {
      a.error = "NVML not available: nvmlInit failed (driver not loaded?)";
      a.handle = nullptr;
    }
  });
  return a;
}

}  // namespace

Status sample() {
  Status s;
  const Api& a = api();
  if (!a.handle) {
    s.message = a.error;
    return s;
  }
  unsigned n = 0;
  if (a.count(&n) != kSuccess) {
    s.message = "NVML not available: cannot count devices";
    return s;
  }
  s.available = true;
  for (unsigned i = 0; i < n && i < 64; ++i) {
    nvmlDevice_t dev = nullptr;
    if (a.by_index(i, &dev) != kSuccess) continue;
    GpuSample g;
    g.index = i;
    char name[96] = {0};
    if (a.name(dev, name, sizeof name - 1) == kSuccess) g.name = name;
    nvmlUtilization_t u{};
    if (a.utilization(dev, &u) == kSuccess) {
      g.utilization_pct = u.gpu;
      g.memory_utilization_pct = u.memory;
    }
    nvmlMemory_t m{};
    if (a.memory(dev, &m) == kSuccess) {
      g.memory_used_bytes = m.used;
      g.memory_total_bytes = m.total;
    }
    unsigned mw = 0;
    if (a.power(dev, &mw) == kSuccess) g.power_w = mw / 1000.0;
    (void)a.clock(dev, kClockSm, &g.sm_clock_mhz);
    (void)a.clock(dev, kClockMem, &g.memory_clock_mhz);
    (void)a.temperature(dev, kTemperatureGpu, &g.temperature_c);
    s.gpus.push_back(g);
  }
  return s;
}

}  // namespace roofline::nvml
