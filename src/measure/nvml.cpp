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

// nvmlTemperature_v1_t and its version word, NVML_STRUCT_VERSION(Temperature, 1).
struct nvmlTemperature_t {
  unsigned version;
  int sensor_type;
  int temperature;
};
constexpr unsigned kTemperatureVersion1 = sizeof(nvmlTemperature_t) | (1u << 24);

// The four calls without which nothing can be listed are required; every
// metric is optional, so that a driver lacking one symbol (older drivers have
// no nvmlDeviceGetTemperatureV, newer ones may drop nvmlDeviceGetTemperature)
// still fills the others.
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
  nvmlReturn_t (*temperature_v)(nvmlDevice_t, nvmlTemperature_t*) = nullptr;
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
                    bind(a.handle, "nvmlDeviceGetName", &a.name);
    if (!ok) {
      a.error = "NVML not available: the loaded library lacks nvmlInit_v2 or the device calls";
      a.handle = nullptr;
      return;
    }
    (void)bind(a.handle, "nvmlDeviceGetUtilizationRates", &a.utilization);
    (void)bind(a.handle, "nvmlDeviceGetMemoryInfo", &a.memory);
    (void)bind(a.handle, "nvmlDeviceGetPowerUsage", &a.power);
    (void)bind(a.handle, "nvmlDeviceGetClockInfo", &a.clock);
    (void)bind(a.handle, "nvmlDeviceGetTemperatureV", &a.temperature_v);
    (void)bind(a.handle, "nvmlDeviceGetTemperature", &a.temperature);
    if (a.init() != kSuccess) {
      a.error = "NVML not available: nvmlInit failed (driver not loaded?)";
      a.handle = nullptr;
    }
  });
  return a;
}

unsigned temperature_of(const Api& a, nvmlDevice_t dev) {
  if (a.temperature_v) {
    nvmlTemperature_t t{kTemperatureVersion1, kTemperatureGpu, 0};
    if (a.temperature_v(dev, &t) == kSuccess && t.temperature > 0)
      return static_cast<unsigned>(t.temperature);
  }
  unsigned c = 0;
  if (a.temperature && a.temperature(dev, kTemperatureGpu, &c) == kSuccess) return c;
  return 0;
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
    if (a.utilization && a.utilization(dev, &u) == kSuccess) {
      g.utilization_pct = u.gpu;
      g.memory_utilization_pct = u.memory;
    }
    nvmlMemory_t m{};
    if (a.memory && a.memory(dev, &m) == kSuccess) {
      g.memory_used_bytes = m.used;
      g.memory_total_bytes = m.total;
    }
    unsigned mw = 0;
    if (a.power && a.power(dev, &mw) == kSuccess) g.power_w = mw / 1000.0;
    if (a.clock) {
      (void)a.clock(dev, kClockSm, &g.sm_clock_mhz);
      (void)a.clock(dev, kClockMem, &g.memory_clock_mhz);
    }
    g.temperature_c = temperature_of(a, dev);
    s.gpus.push_back(g);
  }
  return s;
}

}  // namespace roofline::nvml
