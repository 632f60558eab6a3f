#include "roofline/calibrate.h"

#include <gtest/gtest.h>

#include "roofline/error.h"
#include "roofline/nvml.h"
#include "roofline/predict.h"

namespace roofline::measure {
namespace {

// Small sizes keep this suite to a few seconds on two cores.
CalibrationOptions quick() {
  CalibrationOptions o;
  o.stream.array_bytes = 8 << 20;
  o.stream.repetitions = 3;
  o.peak.seconds = 0.05;
  o.gemm.repetitions = 3;
  o.gemm_shapes = {{256, 256, 256, "square 256"}};
  o.gemv_shape = {1, 2048, 2048, "gemv 2048"};
  return o;
}

TEST(Calibrate, ProfileLoadsAsADevice) {
  const Calibration c = calibrate(quick());
  EXPECT_GT(c.matmul_fraction, 0);
  EXPECT_LE(c.matmul_fraction, 1);
  EXPECT_GT(c.bandwidth_fraction, 0);
  EXPECT_LE(c.bandwidth_fraction, 1);
  const Device d = parse_device(host_device_json(c, "2026-11-29").dump(), "host.json");
  EXPECT_EQ(d.id, "host");
  EXPECT_TRUE(d.is_cpu());
  EXPECT_EQ(d.memory_bandwidth_Bps.confidence, Confidence::kMeasured);
  EXPECT_DOUBLE_EQ(d.memory_bandwidth_Bps.value, c.stream.bandwidth_Bps);
  EXPECT_DOUBLE_EQ(d.peak(Format::kFp32), c.peak.fp32_flops_per_s);
  // A CPU profile has no SM waves, and its memory time is the bytes over the
  // measured STREAM bandwidth times the measured GEMV fraction. (Which side
  // bounds it depends on the measurement, so it is not asserted.)
  const RooflineResult r =
      predict_gemm(d, GemmProblem{1, 1024, 1024, Format::kFp32, Format::kFp32});
  EXPECT_DOUBLE_EQ(r.wave_efficiency, 1.0);
  EXPECT_NEAR(r.memory_time_s, r.bytes / (c.stream.bandwidth_Bps * c.bandwidth_fraction), 1e-15);
  // A GEMV does not pack its weights; a GEMM (m > 1) on a CPU reads and writes
  // them once more into the packed buffer: 2 x 1024 x 1024 x 4 bytes at the
  // effective bandwidth. The BLAS packs a panel, then multiplies it, so the
  // weight stream, the packing and the math add up instead of overlapping.
  EXPECT_EQ(r.packing_time_s, 0.0);
  EXPECT_NEAR(r.time_s, std::max(r.memory_time_s, r.compute_time_s) + r.overhead_s, 1e-15);
  const RooflineResult g =
      predict_gemm(d, GemmProblem{16, 1024, 1024, Format::kFp32, Format::kFp32});
  const double effective_Bps = c.stream.bandwidth_Bps * c.bandwidth_fraction;
  EXPECT_NEAR(g.packing_time_s, 2.0 * 1024 * 1024 * 4 / effective_Bps, 1e-15);
  EXPECT_NEAR(g.time_s, g.memory_time_s + g.compute_time_s + g.packing_time_s + g.overhead_s,
              1e-15);
  // Neither the ideal roofline nor a GPU packs.
  ModelOptions ideal;
  ideal.mode = Mode::kIdeal;
  EXPECT_EQ(predict_gemm(d, GemmProblem{16, 1024, 1024, Format::kFp32, Format::kFp32}, ideal)
                .packing_time_s,
            0.0);
}

TEST(Calibrate, CompareReportsEveryShape) {
  const Calibration c = calibrate(quick());
  const Device d = parse_device(host_device_json(c, "today").dump(), "host.json");
  const std::vector<GemmShape> shapes = {{1, 1024, 1024, "gemv"}, {64, 512, 512, "gemm"}};
  GemmOptions o;
  o.repetitions = 3;
  const CompareReport r = compare_gemms(d, shapes, o);
  ASSERT_EQ(r.cases.size(), 2u);
  for (const auto& x : r.cases) {
    EXPECT_GT(x.predicted_s, 0);
    EXPECT_GT(x.measured_s, 0);
    EXPECT_NEAR(x.error_pct, (x.predicted_s - x.measured_s) / x.measured_s * 100, 1e-9);
  }
  EXPECT_LE(r.median_abs_error_pct, r.max_abs_error_pct);
}

TEST(Calibrate, DecoderLayerAgainstItsPrediction) {
  const Calibration c = calibrate(quick());
  const Device d = parse_device(host_device_json(c, "today").dump(), "host.json");
  LayerConfig cfg;
  cfg.hidden = 512;
  cfg.heads = 8;
  cfg.kv_heads = 2;
  cfg.head_dim = 64;
  cfg.intermediate = 1024;
  cfg.context = 256;
  cfg.repetitions = 5;
  const LayerReport r = run_decoder_layer(d, cfg);
  EXPECT_GT(r.measured_s, 0);
  EXPECT_GT(r.predicted_s, 0);
  // Weights: q,o 512x512, k,v 512x128, MLP 3 x 512 x 1024, all fp32; plus the
  // attn, mlp and final norm weights, 3 x 512 in bf16.
  EXPECT_DOUBLE_EQ(r.weight_bytes,
                   4.0 * (2 * 512 * 512 + 2 * 512 * 128 + 3 * 512 * 1024) + 3 * 512 * 2);
  cfg.heads = 7;  // kv_heads 2 does not divide 7
  EXPECT_THROW((void)run_decoder_layer(d, cfg), InvalidArgument);
}

TEST(Nvml, SaysWhenItIsNotAvailable) {
  const nvml::Status s = nvml::sample();
  if (!s.available) {
    EXPECT_NE(s.message.find("NVML not available"), std::string::npos);
    EXPECT_TRUE(s.gpus.empty());
  } else {
    EXPECT_FALSE(s.gpus.empty());
  }
}

}  // namespace
}  // namespace roofline::measure
