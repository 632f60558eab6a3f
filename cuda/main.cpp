// roofline-gpu: the CUDA benchmarks, a program of its own so that `roofline`
// does not load the CUDA libraries at every start, and so that it builds with
// the CUDA toolkit alone (cuda/CMakeLists.txt) on a machine that has nothing
// else. It writes one JSON object per line, each as soon as its case ends;
// `roofline bench --gpu` and `roofline calibrate --gpu` read them.
//
//   roofline-gpu probe
//   roofline-gpu one M N K fp16|bf16|fp8|nvfp4 [--l2 flushed|warm]
//   roofline-gpu suite [bandwidth,gemv,gemm | all] [--precisions P,...] [--quick]
//                      [--l2 flushed|warm] [--warmup-s S] [--deadline-s S]
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_plan.h"
#include "gpu_bench.h"
#include "roofline/error.h"
#include "roofline/nvml.h"

using namespace roofline;
using namespace roofline::gpu;

namespace {

constexpr const char* kUsage =
    "usage: roofline-gpu probe | one M N K fp16|bf16|fp8|nvfp4 [--l2 flushed|warm] | "
    "suite [bandwidth,gemv,gemm|all] [--precisions P,...] [--quick] [--l2 flushed|warm] "
    "[--warmup-s S] [--deadline-s S]";

void emit(const JsonLine& line) { std::cout << line.str() << "\n" << std::flush; }

std::int64_t parse_dimension(const char* text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] < '0' || text[0] > '9' || v < 1 ||
      v > 65536) {
    throw InvalidArgument(
        std::string("a GEMM dimension must be an integer from 1 to 65536, got '") +
        std::string(text).substr(0, 20) + "'");
  }
  return v;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The conditions a row was measured under: the SM clock right after its timed
// repetitions (NVML), power and temperature, where the driver says them.
void add_conditions(JsonLine& j) {
  const nvml::Status s = nvml::sample();
  if (!s.available || s.gpus.empty()) return;
  const nvml::GpuSample& g = s.gpus.front();
  if (g.sm_clock_mhz > 0) j.add("sm_clock_mhz", static_cast<std::int64_t>(g.sm_clock_mhz));
  if (g.power_w > 0) j.add("power_w", g.power_w);
  if (g.temperature_c > 0) j.add("temperature_c", static_cast<std::int64_t>(g.temperature_c));
}

void add_timing(JsonLine& j, const Timing& t) {
  j.add("median_s", t.median_s)
      .add("p10_s", t.p10_s)
      .add("p90_s", t.p90_s)
      .add("min_s", t.min_s)
      .add("repetitions", t.repetitions)
      .add("l2", t.l2_flushed ? "flushed" : "warm");
}

// Now, as 2026-11-30T14:28:06Z.
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

JsonLine device_line(const DeviceInfo& info) {
  JsonLine j;
  j.add("type", "device")
      .add("gpu", info.name)
      .add("sm_count", info.sm_count)
      .add("compute_capability", std::to_string(info.major) + "." + std::to_string(info.minor))
      .add("memory_bytes", info.memory_bytes)
      .add("l2_bytes", static_cast<std::int64_t>(info.l2_bytes))
      .add("l2_flush_bytes", static_cast<std::int64_t>(l2_flush_bytes(info.l2_bytes)))
      .add("driver_version", info.driver_version)
      .add("runtime_version", info.runtime_version)
      .add("started_utc", utc_now());
  return j;
}

JsonLine gemm_line(const GemmResult& r, double copy_Bps) {
  JsonLine j;
  j.add("type", r.kernel == "gemv" ? "gemv" : "gemm")
      .add("m", r.m)
      .add("n", r.n)
      .add("k", r.k)
      .add("precision", r.precision)
      .add("output", r.output)
      .add("kernel", r.kernel);
  add_timing(j, r.timing);
  j.add("flops", r.flops)
      .add("bytes", r.bytes)
      .add("flops_per_s", r.flops / r.timing.median_s)
      .add("bandwidth_Bps", r.bytes / r.timing.median_s);
  if (r.kernel == "gemv") {
    j.add("warps_per_row", r.launch.warps_per_row).add("blocks", r.launch.blocks);
    if (copy_Bps > 0) j.add("copy_bandwidth_fraction", r.bytes / r.timing.median_s / copy_Bps);
  } else {
    j.add("algorithm", r.algorithm).add("fast_accum", r.fast_accum);
  }
  j.add("check", r.check.passed ? "passed" : "failed")
      .add("rel_error", r.check.rel_error)
      .add("tolerance", r.check.tolerance);
  add_conditions(j);
  return j;
}

JsonLine error_line(const char* type, const Shape& s, const std::string& precision,
                    const std::string& why) {
  JsonLine j;
  j.add("type", type)
      .add("m", s.m)
      .add("n", s.n)
      .add("k", s.k)
      .add("precision", precision)
      .add("error", why);
  return j;
}

struct SuiteOptions {
  std::vector<std::string> parts = {"bandwidth", "gemv", "gemm"};
  std::vector<std::string> precisions = {"bf16", "fp16", "fp8", "nvfp4"};
  bool quick = false;
  double warmup_s = 0.2;
  double deadline_s = 0;  // > 0: no case starts after this many seconds
  TimingOptions timing;
};

int run_suite(const SuiteOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  const DeviceInfo info = device_info();
  emit(device_line(info));
  warm_up_clocks(o.warmup_s);
  int cases = 0, failed = 0;
  double copy_Bps = 0;
  auto wants = [&](const std::string& part) {
    for (const auto& p : o.parts) {
      if (p == part) return true;
    }
    return false;
  };
  auto has_precision = [&](const std::string& p) {
    for (const auto& q : o.precisions) {
      if (q == p) return true;
    }
    return false;
  };
  if (wants("bandwidth") || wants("gemv")) {
    ++cases;
    try {
      const BandwidthResult b = bandwidth(o.quick ? 5e8 : 2e9, o.timing);
      copy_Bps = b.copy_Bps;
      JsonLine j;
      j.add("type", "bandwidth")
          .add("bytes", b.bytes)
          .add("memcpy_Bps", b.memcpy_Bps)
          .add("copy_Bps", b.copy_Bps)
          .add("read_Bps", b.read_Bps)
          .add("memcpy_p10_s", b.memcpy_timing.p10_s)
          .add("memcpy_p90_s", b.memcpy_timing.p90_s)
          .add("copy_median_s", b.copy_timing.median_s)
          .add("copy_p10_s", b.copy_timing.p10_s)
          .add("copy_p90_s", b.copy_timing.p90_s)
          .add("read_median_s", b.read_timing.median_s)
          .add("read_p10_s", b.read_timing.p10_s)
          .add("read_p90_s", b.read_timing.p90_s)
          .add("repetitions", b.copy_timing.repetitions);
      add_conditions(j);
      emit(j);
    } catch (const Error& e) {
      ++failed;
      emit(JsonLine().add("type", "bandwidth").add("error", e.what()));
    }
  }
  int not_started = 0;
  auto past_deadline = [&] {
    return o.deadline_s > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >
               o.deadline_s;
  };
  auto run_case = [&](const char* type, const Shape& s, const std::string& precision,
                      bool gemv_kernel = true) {
    if (past_deadline()) {
      ++not_started;
      return;
    }
    ++cases;
    try {
      const GemmResult r = gemm(s.m, s.n, s.k, precision, o.timing, gemv_kernel);
      if (!r.check.passed) ++failed;
      emit(gemm_line(r, copy_Bps).add("label", s.label));
    } catch (const Error& e) {
      ++failed;
      emit(error_line(type, s, precision, e.what()).add("label", s.label));
    }
  };
  if (wants("gemv")) {
    for (const Shape& s : gemv_shapes()) {
      for (const char* p : {"fp16", "bf16"}) {
        if (has_precision(p)) run_case("gemv", s, p);
      }
    }
  }
  if (wants("gemm")) {
    std::vector<std::int64_t> tokens = gemm_token_counts();
    std::vector<Shape> weights = gemm_weight_shapes();
    if (o.quick) {
      tokens = {1, 16, 128, 1024, 4096};
      weights.resize(3);
    }
    for (const std::string& p : o.precisions) {
      if (p == "nvfp4" && info.major < 10) {
        emit(
            JsonLine()
                .add("type", "skipped")
                .add("precision", p)
                .add(
                    "reason",
                    "nvfp4 needs Blackwell's FP4 tensor cores (compute capability 10.x or 12.x); " +
                        info.name + " is " + std::to_string(info.major) + "." +
                        std::to_string(info.minor)));
        continue;
      }
      for (const Shape& w : weights) {
        for (const std::int64_t m : tokens) {
          run_case("gemm", {m, w.n, w.k, w.label}, p);
          // At m = 1 the 16-bit formats ran the GEMV kernel: cuBLASLt too.
          if (m == 1 && (p == "fp16" || p == "bf16"))
            run_case("gemm", {m, w.n, w.k, w.label}, p, false);
        }
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  emit(JsonLine()
           .add("type", "done")
           .add("cases", cases)
           .add("failed", failed)
           .add("not_started", not_started)
           .add("seconds", seconds));
  return 0;
}

bool parse_l2(const std::string& v) {
  if (v == "flushed") return true;
  if (v == "warm") return false;
  throw InvalidArgument("--l2 takes flushed or warm");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) throw InvalidArgument(kUsage);
    const std::string what = argv[1];
    if (what == "probe") {
      emit(device_line(device_info()));
      return 0;
    }
    if (what == "one") {
      if (argc != 6 && !(argc == 8 && std::string(argv[6]) == "--l2"))
        throw InvalidArgument(kUsage);
      TimingOptions t;
      if (argc == 8) t.flush_l2 = parse_l2(argv[7]);
      const std::int64_t m = parse_dimension(argv[2]), n = parse_dimension(argv[3]),
                         k = parse_dimension(argv[4]);
      warm_up_clocks(0.1);
      const GemmResult r = gemm(m, n, k, argv[5], t);
      // The first keys are the ones the server and the Python module read.
      JsonLine j;
      j.add("gpu", device_info().name)
          .add("measured_time_us", r.timing.median_s * 1e6)
          .add("measured_bandwidth_gb_s", r.bytes / r.timing.median_s / 1e9)
          .add("measured_tflops", r.flops / r.timing.median_s / 1e12)
          .add("max_rel_error", r.check.rel_error)
          .add("verified", r.check.passed)
          .add("repetitions", r.timing.repetitions)
          .add("l2", r.timing.l2_flushed ? "flushed" : "warm")
          .add("kernel", r.kernel);
      add_conditions(j);
      emit(j);
      return 0;
    }
    if (what == "suite") {
      SuiteOptions o;
      for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--quick") {
          o.quick = true;
        } else if (arg == "--precisions" && has_value) {
          o.precisions = split(argv[++i]);
        } else if (arg == "--l2" && has_value) {
          o.timing.flush_l2 = parse_l2(argv[++i]);
        } else if (arg == "--warmup-s" && has_value) {
          o.warmup_s = std::atof(argv[++i]);
          if (!(o.warmup_s >= 0 && o.warmup_s <= 10))
            throw InvalidArgument("--warmup-s takes 0 to 10 seconds");
        } else if (arg == "--deadline-s" && has_value) {
          o.deadline_s = std::atof(argv[++i]);
          if (!(o.deadline_s >= 0 && o.deadline_s <= 86400))
            throw InvalidArgument("--deadline-s takes 0 to 86400");
        } else if (arg.rfind("--", 0) != 0 && i == 2) {
          o.parts = arg == "all" ? SuiteOptions().parts : split(arg);
        } else {
          throw InvalidArgument("unknown argument '" + arg.substr(0, 40) + "'; " + kUsage);
        }
      }
      for (const auto& p : o.parts) {
        if (p != "bandwidth" && p != "gemv" && p != "gemm") {
          throw InvalidArgument("unknown suite '" + p.substr(0, 20) +
                                "' (bandwidth, gemv, gemm, all)");
        }
      }
      for (const auto& p : o.precisions) {
        if (p != "fp16" && p != "bf16" && p != "fp8" && p != "nvfp4") {
          throw InvalidArgument("unknown precision '" + p.substr(0, 20) +
                                "' (fp16, bf16, fp8, nvfp4)");
        }
      }
      return run_suite(o);
    }
    throw InvalidArgument("unknown command '" + what.substr(0, 20) + "'; " + kUsage);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 1;
  }
}
