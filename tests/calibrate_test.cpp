#include "roofline/calibrate.h"

#include <gtest/gtest.h>

#include "roofline/error.h"
#include "roofline/nvml.h"
#include "roofline/predict.h"

namespace roofline::measure {
namespace {

// Cold weights from a small pool: the default pool (twice the last-level
// cache) costs a second to make.
WeightPool& small_pool() {
  static WeightPool pool(std::size_t{16} << 20);
  return pool;
}

// Small sizes keep this suite to a few seconds on two cores.
CalibrationOptions quick() {
  CalibrationOptions o;
  o.gemm.pool = &small_pool();
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
  CompareOptions o;
  o.gemm.repetitions = 3;
  o.gemm.pool = &small_pool();
  o.repeats = 2;
  o.bandwidth_probe = {1, 2048, 2048, "gemv 2048"};
  o.matmul_probe = {256, 256, 256, "square 256"};
  const CompareReport r = compare_gemms(d, shapes, o);
  ASSERT_EQ(r.cases.size(), 2u);
  EXPECT_EQ(r.repeats, 2);
  EXPECT_TRUE(r.interleaved);
  for (const auto& x : r.cases) {
    EXPECT_GT(x.predicted_s, 0);
    EXPECT_GT(x.measured_s, 0);
    ASSERT_EQ(x.errors_pct.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_NEAR(x.errors_pct[i],
                  (x.predicted_per_round_s[i] - x.measured_per_round_s[i]) /
                      x.measured_per_round_s[i] * 100,
                  1e-9);
    }
    EXPECT_EQ(x.error_spread_pct.count, 2);
    EXPECT_DOUBLE_EQ(x.error_pct, x.error_spread_pct.median);
  }
  EXPECT_LE(r.median_abs_error_pct, r.max_abs_error_pct);
  EXPECT_EQ(r.probe_bandwidth_Bps.count, 4);  // one probe per step: 2 shapes x 2 rounds
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["cases"].size(), 2u);
  EXPECT_EQ(j["cases"][0]["errors_pct"].size(), 2u);
  EXPECT_TRUE(j.contains("probe_matmul_flops_per_s"));
  EXPECT_NE(compare_summary(r).find("median |error|"), std::string::npos);
  EXPECT_NE(compare_table(r).text().find("p10..p90"), std::string::npos);
}

// percentile interpolates linearly between order statistics (NumPy's
// default): for 1..5, the 10th percentile sits at rank 0.4 (1 + 0.4 x 1 =
// 1.4), the 90th at rank 3.6 (4 + 0.6 x 1 = 4.6).
TEST(CompareStats, PercentilesAndSpread) {
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2, 5, 4}, 0.5), 3);
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2, 5, 4}, 0.1), 1.4);
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2, 5, 4}, 0.9), 4.6);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0.5), 2.5);  // even count: between the middle two
  EXPECT_DOUBLE_EQ(percentile({7}, 0.9), 7);
  EXPECT_DOUBLE_EQ(percentile({2, 9}, 0), 2);
  EXPECT_DOUBLE_EQ(percentile({2, 9}, 1), 9);
  const Spread s = spread_of({-20, 5, 1, -3, 12});
  EXPECT_DOUBLE_EQ(s.median, 1);
  EXPECT_DOUBLE_EQ(s.min, -20);
  EXPECT_DOUBLE_EQ(s.max, 12);
  EXPECT_DOUBLE_EQ(s.p10, -20 + 0.4 * 17);  // ranks 0 and 1: -20 and -3
  EXPECT_DOUBLE_EQ(s.p90, 5 + 0.6 * 7);     // ranks 3 and 4: 5 and 12
  EXPECT_EQ(s.count, 5);
  EXPECT_THROW((void)percentile({}, 0.5), InvalidArgument);
  EXPECT_THROW((void)percentile({1, 2}, 1.5), InvalidArgument);
  EXPECT_THROW((void)percentile({1, std::nan("")}, 0.5), InvalidArgument);
  EXPECT_THROW((void)spread_of({}), InvalidArgument);
}

TEST(CompareStats, ScheduleVisitsEveryShapeOncePerRoundFromARotatingStart) {
  const std::vector<CompareStep> steps = interleaved_schedule(3, 4);
  ASSERT_EQ(steps.size(), 12u);
  for (int r = 0; r < 4; ++r) {
    std::vector<int> seen(3, 0);
    for (int i = 0; i < 3; ++i) {
      const CompareStep& s = steps[static_cast<std::size_t>(r * 3 + i)];
      EXPECT_EQ(s.round, r);
      ++seen[s.shape];
    }
    EXPECT_EQ(seen, std::vector<int>({1, 1, 1})) << "round " << r;
    EXPECT_EQ(steps[static_cast<std::size_t>(r * 3)].shape, static_cast<std::size_t>(r % 3));
  }
  EXPECT_TRUE(interleaved_schedule(0, 5).empty());
  EXPECT_THROW((void)interleaved_schedule(3, 0), InvalidArgument);
  EXPECT_THROW((void)interleaved_schedule(3, kMaxCompareRepeats + 1), InvalidArgument);
}

// A profile with round figures: STREAM 50 GB/s, fp32 peak 400 GFLOP/s, GEMV
// at 80% of STREAM, matmul at 50% of peak, no call overhead.
Device synthetic_profile() {
  Calibration c;
  c.stream.bandwidth_Bps = 50e9;
  c.stream.best_kernel = "copy";
  c.stream.threads = 2;
  c.peak.fp32_flops_per_s = 400e9;
  c.peak.fp64_flops_per_s = 200e9;
  c.peak.isa = "avx2+fma";
  c.peak.threads = 2;
  c.gemv.shape = {1, 8192, 8192, "gemv 8192"};
  c.overhead.shape = {1, 64, 64, "gemv 64"};
  c.overhead.median_time_s = 0;
  c.bandwidth_fraction = 0.8;
  c.matmul_fraction = 0.5;
  return parse_device(host_device_json(c, "test").dump(), "synthetic.json");
}

// The CPU model's time for a shape at bandwidth bw and math rate rate
// (roofline.cpp, realistic, no overhead): bytes / bw for a GEMV; for m > 1
// bytes / bw + 2 weight bytes / bw (packing) + flops / rate.
double model_time(const GemmShape& s, double bw, double rate) {
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n),
               k = static_cast<double>(s.k);
  const double bytes = 4 * (m * k + k * n + m * n);
  if (s.m == 1) return bytes / bw;
  return bytes / bw + 2 * 4 * k * n / bw + 2 * m * n * k / rate;
}

GemmMeasurement fake_measurement(const GemmShape& s, double time_s) {
  GemmMeasurement g{};
  g.shape = s;
  g.median_time_s = g.min_time_s = time_s;
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n),
               k = static_cast<double>(s.k);
  g.flops = 2 * m * n * k;
  g.bytes = 4 * (m * k + k * n + m * n);
  g.flops_per_s = g.flops / time_s;
  g.bandwidth_Bps = g.bytes / time_s;
  g.repetitions = 3;
  g.weight_copies = 1;
  g.verified = true;
  return g;
}

TEST(CompareStats, HostFiguresInvertTheModelAndReplaceTheProfiles) {
  // A square 1024 at 30 GB/s and 150 GFLOP/s: its traffic (12 MiB of operands
  // and 8 MiB of packing, 0.70 ms) is well under half its 15 ms, so the math
  // rate comes back exactly.
  const GemmShape gemv{1, 8192, 8192, "gemv"}, square{1024, 1024, 1024, "square"};
  const HostFigures f = host_figures(fake_measurement(gemv, model_time(gemv, 30e9, 150e9)),
                                     fake_measurement(square, model_time(square, 30e9, 150e9)));
  EXPECT_NEAR(f.bandwidth_Bps, 30e9, 1);
  EXPECT_NEAR(f.matmul_flops_per_s, 150e9, 1e-3);
  // A GEMM that is mostly traffic does not measure the math: its own rate.
  const GemmShape skinny{2, 4096, 4096, "skinny"};
  const GemmMeasurement sk = fake_measurement(skinny, model_time(skinny, 30e9, 150e9));
  EXPECT_DOUBLE_EQ(host_figures(fake_measurement(gemv, 1e-2), sk).matmul_flops_per_s,
                   sk.flops_per_s);

  const Device d = synthetic_profile();
  const Device now = with_host_figures(d, f);
  EXPECT_EQ(d.bandwidth_fraction.value, 0.8);  // the profile itself is untouched
  const RooflineResult r =
      predict_gemm(now, GemmProblem{128, 4096, 4096, Format::kFp32, Format::kFp32});
  EXPECT_NEAR(r.effective_bandwidth_Bps, 30e9, 1e-3);
  EXPECT_NEAR(r.effective_flops_per_s, 150e9, 1e-3);
  EXPECT_NEAR(r.time_s, model_time({128, 4096, 4096, ""}, 30e9, 150e9), 1e-12);
  // Figures above the profile's (a profile taken on a busy machine) are kept.
  EXPECT_NEAR(with_host_figures(d, {60e9, 500e9}).bandwidth_fraction.value, 60e9 / 50e9, 1e-12);
  EXPECT_THROW((void)with_host_figures(d, {0, 1e9}), InvalidArgument);
  EXPECT_THROW((void)with_host_figures(d, {1e9, std::nan("")}), InvalidArgument);
}

// A machine whose speed changes from step to step (other work coming and
// going): each step's three measurements (two probes and the shape, taken
// call by call together) see one speed. Probing before every GEMM tracks it
// exactly; the profile's fixed figures do not.
TEST(CompareStats, InterleavedProbesTrackADriftingMachine) {
  const Device d = synthetic_profile();  // effective 40 GB/s, 200 GFLOP/s
  const double speeds[] = {1.0, 0.4, 0.7, 1.3, 0.55};
  int step = 0;
  const GemmMeasurer machine = [&](const std::vector<GemmShape>& shapes, const GemmOptions&) {
    const double f = speeds[step++ % 5];
    std::vector<GemmMeasurement> out;
    for (const GemmShape& s : shapes) {
      out.push_back(fake_measurement(s, model_time(s, 40e9 * f, 200e9 * f)));
    }
    return out;
  };
  const std::vector<GemmShape> shapes = {
      {16, 4096, 4096, "a"}, {128, 1024, 4096, "b"}, {512, 4096, 4096, "c"}};
  CompareOptions o;
  o.repeats = 4;
  const CompareReport tracked = compare_gemms(d, shapes, o, {}, machine);
  EXPECT_EQ(step, 12);
  ASSERT_EQ(tracked.cases.size(), 3u);
  for (const auto& c : tracked.cases) {
    ASSERT_EQ(c.errors_pct.size(), 4u);
    for (double e : c.errors_pct) EXPECT_NEAR(e, 0, 1e-6) << c.shape.label;
  }
  EXPECT_NEAR(tracked.median_abs_error_pct, 0, 1e-6);
  EXPECT_EQ(tracked.probe_bandwidth_Bps.count, 12);
  EXPECT_NEAR(tracked.probe_bandwidth_Bps.min, 40e9 * 0.4, 1);
  EXPECT_NEAR(tracked.probe_bandwidth_Bps.max, 40e9 * 1.3, 1);

  o.interleave = false;
  step = 0;
  const CompareReport fixed = compare_gemms(d, shapes, o, {}, machine);
  // Step i runs at speed f = speeds[i % 5] and the profile predicts speed 1,
  // so it errs by (1 - 1/f) / (1/f) = (f - 1) x 100%. The schedule puts shape a
  // at steps 0, 5, 7, 9 (speeds 1, 1, 0.7, 0.55: errors 0, 0, -30, -45, median
  // -15%), b at 1, 3, 8, 10 (0.4, 1.3, 1.3, 1: -60, +30, +30, 0, median +15%)
  // and c at 2, 4, 6, 11 (0.7, 0.55, 0.4, 0.4: median -52.5%).
  EXPECT_NEAR(fixed.cases[0].error_pct, -15, 1e-9);
  EXPECT_NEAR(fixed.cases[1].error_pct, 15, 1e-9);
  EXPECT_NEAR(fixed.cases[2].error_pct, -52.5, 1e-9);
  EXPECT_NEAR(fixed.median_abs_error_pct, 15, 1e-9);
  EXPECT_NEAR(fixed.max_abs_error_pct, 52.5, 1e-9);
  EXPECT_EQ(fixed.probe_bandwidth_Bps.count, 0);
  EXPECT_NE(compare_summary(fixed).find("as given"), std::string::npos);
}

TEST(CompareStats, AMeasurementThatDoesNotVerifyStopsTheRun) {
  const GemmMeasurer broken = [](const std::vector<GemmShape>& shapes, const GemmOptions&) {
    std::vector<GemmMeasurement> out;
    for (const GemmShape& s : shapes) {
      out.push_back(fake_measurement(s, 1e-3));
      out.back().verified = false;
    }
    return out;
  };
  EXPECT_THROW((void)compare_gemms(synthetic_profile(), {{16, 64, 64, "x"}}, {}, {}, broken),
               Unsupported);
  CompareOptions bad;
  bad.repeats = 0;
  EXPECT_THROW((void)compare_gemms(synthetic_profile(), {{16, 64, 64, "x"}}, bad, {}, broken),
               InvalidArgument);
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
