// The CUDA backend's results: roofline-gpu writes one JSON object per line
// (cuda/main.cpp); this reads them back, compares each case with the
// roofline's prediction for a device, and turns a run into a kernel table,
// the measured efficiency of each kernel shape against the roofline, that is
// checked into data/kernels/ and read back strictly.
//
// Example:
//   GpuRun run = parse_gpu_run(text, "gpu.jsonl");
//   GpuComparison c = compare_gpu_run(run, registry.get("h200"));
//   nlohmann::json table = kernel_table_json(run, registry.get("h200"), "run-2026-11-30");
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/engine.h"
#include "roofline/hardware.h"

namespace roofline::measure {

// Most bytes and lines of a results file accepted (a full suite is ~300 lines
// of ~600 bytes).
inline constexpr std::size_t kMaxGpuRunBytes = std::size_t{16} << 20;
inline constexpr std::size_t kMaxGpuRunLineBytes = std::size_t{64} << 10;

struct GpuDeviceLine {
  std::string gpu;
  std::string compute_capability;
  std::int64_t sm_count = 0;
  double memory_bytes = 0;
  double l2_bytes = 0;
  double l2_flush_bytes = 0;
  std::int64_t driver_version = 0, runtime_version = 0;
  std::string started_utc;  // empty in runs from before it was written
};

struct GpuBandwidthLine {
  double bytes = 0;
  double memcpy_Bps = 0, copy_Bps = 0, read_Bps = 0;
  double sm_clock_mhz = 0;  // 0: not reported
};

struct GpuCase {
  std::string type;  // "gemm" or "gemv"
  std::int64_t m = 0, n = 0, k = 0;
  std::string precision;  // fp16, bf16, fp8, nvfp4
  std::string label;
  std::string error;  // non-empty: the case did not run, and says why
  // The rest is set only when it ran.
  std::string output, kernel, l2, check;  // check: "passed" or "failed"
  double median_s = 0, p10_s = 0, p90_s = 0, min_s = 0;
  std::int64_t repetitions = 0;
  double flops = 0, bytes = 0;
  double rel_error = 0;  // NaN when the backend wrote null (a non-finite output)
  double tolerance = 0;
  double sm_clock_mhz = 0, power_w = 0, temperature_c = 0;  // 0: not reported
  double copy_bandwidth_fraction = 0;                       // GEMV only; 0: not reported
  std::int64_t algorithm = -1;
  bool fast_accum = false;

  [[nodiscard]] bool ran() const { return error.empty(); }
  [[nodiscard]] bool passed() const { return ran() && check == "passed"; }
};

struct GpuRun {
  GpuDeviceLine device;
  std::optional<GpuBandwidthLine> bandwidth;
  std::vector<GpuCase> cases;
  std::vector<std::string> skipped;  // "precision: reason"
  bool finished = false;             // the closing "done" line was there
  std::int64_t not_started = 0;      // cases the suite's deadline left out
  double seconds = 0;
  bool truncated = false;  // the last line was cut off (the run was killed)
};

// Parses the lines of one run. Every line is a JSON object of a known type
// with exactly its known keys; a first line other than "device" is an error.
// A last line without its newline that does not parse is taken as cut off by a
// timeout (truncated), not as an error. Throws ParseError "<origin>: line N:
// ...".
[[nodiscard]] GpuRun parse_gpu_run(std::string_view text, const std::string& origin);
// The same from a saved file (a regular file of at most kMaxGpuRunBytes).
[[nodiscard]] GpuRun load_gpu_run(const std::string& path);

struct GpuComparisonRow {
  const GpuCase* measured = nullptr;
  double predicted_s = 0;  // realistic mode on the device
  double ideal_s = 0;      // datasheet roofline
  double error_pct = 0;    // (predicted - measured) / measured x 100
  double efficiency = 0;   // ideal / measured: the fraction of the roofline reached
  std::string bound;       // of the ideal roofline: "memory" or "compute"
};

struct GpuComparison {
  std::vector<GpuComparisonRow> rows;  // the cases that ran and passed their check
  double median_abs_error_pct = 0, max_abs_error_pct = 0, median_signed_error_pct = 0;
};

// Predicts every passed case on `device` (those `include` accepts, when
// given). Throws Unsupported when none passed.
[[nodiscard]] GpuComparison compare_gpu_run(
    const GpuRun& run, const Device& device,
    const std::function<bool(const GpuCase&)>& include = {});

// The kernel table of a run: per case the measured median and its spread and
// the efficiency against `device`'s datasheet roofline. `run_source` says where
// the run's file is kept. Throws Unsupported when no case passed.
[[nodiscard]] nlohmann::json kernel_table_json(const GpuRun& run, const Device& device,
                                               const std::string& run_source);

// A kernel table read back (data/kernels/*-cublaslt.json).
struct KernelTableEntry {
  std::string op;  // "gemm" or "gemv"
  std::string kernel, precision;
  std::int64_t m = 0, n = 0, k = 0;
  double time_s = 0, p10_s = 0, p90_s = 0, efficiency = 0;
  std::string bound;
};
struct KernelTable {
  std::string id, device, gpu, library, date, confidence, l2;
  double memcpy_Bps = 0, copy_Bps = 0, read_Bps = 0;
  std::vector<KernelTableEntry> entries;
};
// Strict: unknown or missing keys, non-finite or non-positive figures are
// errors. Throws ParseError naming the origin and the key.
[[nodiscard]] KernelTable parse_kernel_table(std::string_view text, const std::string& origin);

// A kernel file for --kernel-file: a GEMM efficiency table (the format of
// data/kernels/gemm/, with "schema") or a kernel table of `calibrate --gpu`,
// made into one (bf16 and fp16 kernels under "bf16", fp8 under "fp8"; engine
// "measured"). At most 8 MB. Throws ParseError naming the file and key.
[[nodiscard]] GemmTable load_kernel_file(const std::string& path);
[[nodiscard]] GemmTable kernel_file_table(std::string_view text, const std::string& origin);

}  // namespace roofline::measure
