// Calibration of this machine (CPU): measure it, write a device profile in
// the registry's schema (id "host", confidence "measured"), and compare the
// roofline's predictions against measured GEMMs and a decoder layer.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/measure.h"

namespace roofline::measure {

using Progress = std::function<void(std::string_view stage, double fraction)>;

struct CalibrationOptions {
  StreamOptions stream;
  PeakOptions peak;
  GemmOptions gemm;
  // Calibration shapes, disjoint from the comparison shapes so that the
  // comparison tests the model, not a lookup: square GEMMs for the matmul
  // fraction, one large GEMV for the achievable bandwidth, a tiny GEMV for the
  // per-call overhead.
  std::vector<GemmShape> gemm_shapes = {{1024, 1024, 1024, "square 1024"},
                                        {2048, 2048, 2048, "square 2048"}};
  GemmShape gemv_shape{1, 8192, 8192, "gemv 8192"};
  GemmShape overhead_shape{1, 64, 64, "gemv 64"};
};

struct Calibration {
  StreamReport stream;
  PeakReport peak;
  std::vector<GemmMeasurement> gemms;
  GemmMeasurement gemv{};
  GemmMeasurement overhead{};
  double matmul_fraction = 0;     // best calibration GEMM / FMA peak
  double bandwidth_fraction = 0;  // large GEMV bandwidth / STREAM bandwidth
};

[[nodiscard]] Calibration calibrate(const CalibrationOptions& options,
                                    const Progress& progress = {});

// The profile as a device document (parse_device() accepts it).
[[nodiscard]] nlohmann::json host_device_json(const Calibration& c, const std::string& date);

struct CompareCase {
  GemmShape shape;
  double predicted_s = 0;
  double measured_s = 0;
  double error_pct = 0;  // (predicted - measured) / measured x 100
};

struct CompareReport {
  std::vector<CompareCase> cases;
  double median_abs_error_pct = 0;
  double max_abs_error_pct = 0;
};

// Predicts each shape (fp32) on `device` and measures it with OpenBLAS.
[[nodiscard]] CompareReport compare_gemms(const Device& device,
                                          const std::vector<GemmShape>& shapes,
                                          const GemmOptions& options = {},
                                          const Progress& progress = {});

// One decoder layer's decode step on the CPU: fp32 GEMVs through OpenBLAS and
// attention over a KV cache of `context` tokens, against its prediction.
struct LayerConfig {
  std::int64_t hidden = 2048, heads = 16, kv_heads = 4, head_dim = 128, intermediate = 5632,
               context = 2048;
  int repetitions = 20;
};
struct LayerReport {
  LayerConfig config;
  double measured_s = 0;   // median
  double predicted_s = 0;  // roofline, realistic mode, on `device`
  double error_pct = 0;
  double weight_bytes = 0, kv_bytes = 0;
};
[[nodiscard]] LayerReport run_decoder_layer(const Device& device, const LayerConfig& config);

}  // namespace roofline::measure
