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
#include "roofline/report.h"

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

// ---------------------------------------------------------------------------
// Statistics of repeated measurements.

// The q-quantile (q in [0, 1]) of `samples`, interpolated linearly between the
// two nearest order statistics (NumPy's default; q = 0.5 is the median).
// Throws InvalidArgument when `samples` is empty, q is outside [0, 1] or a
// sample is not finite.
[[nodiscard]] double percentile(std::vector<double> samples, double q);

// Where repeated values lie: median, 10th and 90th percentiles, extremes.
struct Spread {
  double median = 0;
  double p10 = 0;
  double p90 = 0;
  double min = 0;
  double max = 0;
  int count = 0;
};

// The spread of `samples`; throws like percentile().
[[nodiscard]] Spread spread_of(const std::vector<double>& samples);

// ---------------------------------------------------------------------------
// Theory against measurement on this machine.

// The figures a CPU GEMM prediction uses, as measured at one moment: the
// streaming bandwidth of a large GEMV, and the math rate of a square GEMM once
// its own weight stream and packing (at that bandwidth) are taken out, as the
// realistic CPU model adds them back (roofline.cpp). A GEMM whose weight
// traffic is half its time or more does not measure the math: its rate is
// taken as measured.
struct HostFigures {
  BytesPerSecond bandwidth_Bps = 0;
  FlopsPerSecond matmul_flops_per_s = 0;
};
[[nodiscard]] HostFigures host_figures(const GemmMeasurement& gemv, const GemmMeasurement& gemm);

// `profile` (a CPU profile from calibrate) with its effective fp32 figures set
// to `f`: bandwidth fraction = f.bandwidth / the profile's bandwidth, fp32
// matmul fraction = f.matmul rate / the profile's fp32 peak (either may exceed
// 1 when the profile was measured on a busier machine). Throws InvalidArgument
// when the profile has no fp32 peak or bandwidth, or a figure of `f` is not
// positive and finite.
[[nodiscard]] Device with_host_figures(const Device& profile, const HostFigures& f);

// Most rounds compare_gemms accepts.
inline constexpr int kMaxCompareRepeats = 100;

struct CompareOptions {
  // How each shape (and each probe) is measured: cold weights by default.
  GemmOptions gemm;
  // Rounds over all the shapes, each shape measured once per round. In [1, kMaxCompareRepeats].
  int repeats = 5;
  // true: measure each shape together with the probes (bandwidth_probe and
  // matmul_probe), call by call (measure_sgemms_interleaved), and predict it
  // with the figures the probes gave over those same seconds
  // (with_host_figures), so that prediction and measurement see the same
  // machine even when other work comes and goes. false: measure the shape
  // alone and predict with the profile's figures as given.
  bool interleave = true;
  // Probe shapes, disjoint from the compared ones so that the comparison tests
  // the model, not a lookup (the calibration's large GEMV and smaller square GEMM).
  GemmShape bandwidth_probe{1, 8192, 8192, "gemv 8192"};
  GemmShape matmul_probe{1024, 1024, 1024, "square 1024"};
};

// One step of a comparison: in round `round`, measure shapes[shape].
struct CompareStep {
  int round = 0;
  std::size_t shape = 0;
};

// The order compare_gemms measures in: `repeats` rounds, each visiting every
// shape once, round r starting at shape r mod shapes so that a slow drift of
// the machine does not fall on the same shapes every round. Empty when there
// are no shapes. Throws InvalidArgument when repeats is outside [1, kMaxCompareRepeats].
[[nodiscard]] std::vector<CompareStep> interleaved_schedule(std::size_t shapes, int repeats);

struct CompareCase {
  GemmShape shape;
  double predicted_s = 0;          // median over rounds
  double measured_s = 0;           // median over rounds of each round's median call
  double error_pct = 0;            // median over rounds of (predicted - measured) / measured x 100
  Spread error_spread_pct;         // the per-round errors
  std::vector<double> errors_pct;  // per round, in round order
  std::vector<double> predicted_per_round_s, measured_per_round_s;
};

struct CompareReport {
  std::vector<CompareCase> cases;
  int repeats = 0;
  bool interleaved = false;
  double median_abs_error_pct = 0;  // median over shapes of |error_pct|
  double max_abs_error_pct = 0;     // largest |error_pct|
  // Per round, the median over shapes of |error| in that round; its spread over rounds.
  Spread round_median_abs_error_pct;
  // What the probes saw over the run (interleaved only; count 0 otherwise).
  Spread probe_bandwidth_Bps;
  Spread probe_matmul_flops_per_s;
};

// Measures shapes together: measure_sgemms_interleaved or a stand-in (tests).
// Returns one measurement per shape, in order.
using GemmMeasurer =
    std::function<std::vector<GemmMeasurement>(const std::vector<GemmShape>&, const GemmOptions&)>;

// Predicts each shape (fp32, realistic mode) on `device` and measures it with
// OpenBLAS (or `measure`), in interleaved_schedule order. Every measurement
// must verify (else Unsupported). When OpenBLAS measures, options.gemm.cold_weights
// is set and no pool is given, one WeightPool serves the whole run. Throws
// InvalidArgument on bad options.
[[nodiscard]] CompareReport compare_gemms(const Device& device,
                                          const std::vector<GemmShape>& shapes,
                                          const CompareOptions& options = {},
                                          const Progress& progress = {},
                                          const GemmMeasurer& measure = {});

// The report as JSON (SI units): per case m, n, k, label, predicted_s,
// measured_s, error_pct and error_spread_pct {median, p10, p90, min, max,
// count}, errors_pct; and the summary fields of CompareReport.
[[nodiscard]] nlohmann::json to_json(const CompareReport& r);

// The report as a table for people: shape, label, predicted, measured, error
// (median) and its p10..p90 and min..max over the rounds.
[[nodiscard]] Table compare_table(const CompareReport& r);

// One line summing the report up: median and max |error|, the rounds' spread
// and what the probes saw.
[[nodiscard]] std::string compare_summary(const CompareReport& r);

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
