#include "roofline/roofline.h"

#include <gtest/gtest.h>

#include "roofline/error.h"

namespace roofline {
namespace {

// Relative tolerance for golden values derived by hand (rounding in the
// derivation comments is below this).
constexpr double kGoldenRelTol = 1e-9;

const Registry& registry() {
  static const Registry r = Registry::built_in();
  return r;
}

ModelOptions ideal() {
  ModelOptions o;
  o.mode = Mode::kIdeal;
  return o;
}

GemmProblem gemm(std::int64_t m, std::int64_t n, std::int64_t k, Format w = Format::kFp16,
                 Format a = Format::kFp16) {
  return GemmProblem{m, n, k, w, a};
}

// GEMV 4096x4096 fp16 on GB10, ideal:
//   flops = 2 * 4096 * 4096                  = 33,554,432
//   bytes = W 4096*4096*2 + x 4096*2 + y 4096*2 = 33,554,432 + 8,192 + 8,192 = 33,570,816
//   time  = 33,570,816 B / 273e9 B/s          = 122.97 us (memory-bound)
//   ridge = 62.5e12 / 273e9                    = 228.9 FLOP/B
TEST(Roofline, GoldenGemvOnGb10Ideal) {
  const auto r = predict_gemm(registry().get("gb10"), gemm(1, 4096, 4096), ideal());
  EXPECT_DOUBLE_EQ(r.flops, 33'554'432);
  EXPECT_DOUBLE_EQ(r.bytes, 33'570'816);
  EXPECT_DOUBLE_EQ(r.bytes_read, 33'554'432 + 8'192);
  EXPECT_DOUBLE_EQ(r.bytes_written, 8'192);
  EXPECT_NEAR(r.time_s, 33'570'816 / 273e9, 33'570'816 / 273e9 * kGoldenRelTol);
  EXPECT_NEAR(r.time_s * 1e6, 122.97, 0.01);
  EXPECT_EQ(r.bound, Bound::kMemory);
  EXPECT_NEAR(r.ai, 33'554'432.0 / 33'570'816, kGoldenRelTol);
  EXPECT_NEAR(r.ridge_ai, 62.5e12 / 273e9, 1e-9);
  EXPECT_DOUBLE_EQ(r.overhead_s, 0);
  EXPECT_FALSE(r.weight_only);
}

// GEMM 4096^3 bf16 on H100 SXM, ideal:
//   flops = 2 * 4096^3 = 137,438,953,472; bytes = 3 * 4096^2 * 2 = 100,663,296
//   compute = 137.44e9 / 989.4e12 = 138.91 us; memory = 100.66e6 / 3.35e12 = 30.05 us
TEST(Roofline, GoldenSquareGemmOnH100IsComputeBound) {
  const auto r = predict_gemm(registry().get("h100"),
                              gemm(4096, 4096, 4096, Format::kBf16, Format::kBf16), ideal());
  EXPECT_DOUBLE_EQ(r.flops, 137'438'953'472.0);
  EXPECT_DOUBLE_EQ(r.bytes, 100'663'296.0);
  EXPECT_NEAR(r.compute_time_s, 137'438'953'472.0 / 989.4e12, 1e-15);
  EXPECT_NEAR(r.memory_time_s, 100'663'296.0 / 3.35e12, 1e-15);
  EXPECT_EQ(r.bound, Bound::kCompute);
  EXPECT_DOUBLE_EQ(r.time_s, r.compute_time_s);
  EXPECT_NEAR(r.attained_flops_per_s, 989.4e12, 1e3);
}

// Realistic mode on the same GEMM: 32 x 32 = 1,024 tiles of 128x128 on 132 SMs
// = 8 waves, efficiency 1024 / (8 * 132) = 0.9697; matmul fraction 0.803 (BF16
// MAMF); + 4 us launch.
TEST(Roofline, RealisticModeAppliesFractionsWavesAndLaunch) {
  const Device& h100 = registry().get("h100");
  const auto r = predict_gemm(h100, gemm(4096, 4096, 4096, Format::kBf16, Format::kBf16));
  EXPECT_EQ(r.mode, Mode::kRealistic);
  EXPECT_NEAR(r.wave_efficiency, 1024.0 / (8 * 132), 1e-12);
  EXPECT_DOUBLE_EQ(r.matmul_fraction, h100.matmul_fraction_for(Format::kBf16).value);
  const double expected_compute =
      137'438'953'472.0 / (989.4e12 * r.matmul_fraction * 1024.0 / 1056);
  EXPECT_NEAR(r.compute_time_s, expected_compute, expected_compute * kGoldenRelTol);
  EXPECT_DOUBLE_EQ(r.overhead_s, h100.launch_overhead_s.value);
  EXPECT_NEAR(r.time_s, expected_compute + r.overhead_s, 1e-12);
  EXPECT_EQ(r.packing_time_s, 0.0);  // GPUs do not pack (CPU BLAS does)
}

// Realistic GEMV on GB10: memory time = 33,570,816 / (273e9 * bandwidth fraction).
TEST(Roofline, RealisticGemvUsesAchievableBandwidth) {
  const Device& gb10 = registry().get("gb10");
  const auto r = predict_gemm(gb10, gemm(1, 4096, 4096));
  const double bw = 273e9 * gb10.bandwidth_fraction.value;
  EXPECT_NEAR(r.memory_time_s, 33'570'816 / bw, 1e-15);
  EXPECT_EQ(r.bound, Bound::kMemory);
  EXPECT_GT(r.time_s, predict_gemm(gb10, gemm(1, 4096, 4096), ideal()).time_s);
  // m = 1 pads to a 16-row tile: fill = 1/16; 32 tiles on 48 SMs = 1 wave at 32/48.
  EXPECT_NEAR(r.wave_efficiency, (32.0 / 48) / 16, 1e-12);
}

// Skinny GEMM m=16, n=k=4096 on H100: 1 x 32 tiles < 132 SMs, so k splits
// min(floor(132/32) = 4, 4096/256 = 16) = 4 ways: 128 blocks in one wave of 132.
TEST(Roofline, SkinnyGemmsSplitKToFillTheSms) {
  const auto r = predict_gemm(registry().get("h100"), gemm(16, 4096, 4096));
  EXPECT_NEAR(r.wave_efficiency, 128.0 / 132, 1e-12);
  // Short k limits the split: k = 512 allows only 2 ways -> 64 / 132.
  const auto shallow = predict_gemm(registry().get("h100"), gemm(16, 4096, 512));
  EXPECT_NEAR(shallow.wave_efficiency, 64.0 / 132, 1e-12);
}

// int4 (g128) weights on H100: no INT4 tensor cores, so weight-only:
//   weight bytes = 8,716,288 (131,072 groups x 66.5 B); math in fp16;
//   dequant ops = k*n * 1 m-tile * 4 = 67,108,864.
TEST(Roofline, WeightOnlyFormatShrinksBytesAndCountsDequant) {
  const Device& h100 = registry().get("h100");
  const auto r = predict_gemm(h100, gemm(1, 4096, 4096, Format::kInt4, Format::kFp16), ideal());
  EXPECT_TRUE(r.weight_only);
  EXPECT_EQ(r.compute_format, Format::kFp16);
  EXPECT_DOUBLE_EQ(r.bytes_read, 8'716'288 + 8'192);
  EXPECT_DOUBLE_EQ(r.dequant_ops, 4096.0 * 4096 * 4);
  EXPECT_NEAR(r.compute_time_s, r.flops / 989.4e12 + r.dequant_ops / 66.9e12, 1e-15);
  const auto fp16 = predict_gemm(h100, gemm(1, 4096, 4096), ideal());
  EXPECT_LT(r.time_s, fp16.time_s / 3.5);  // ~3.85x fewer bytes, still memory-bound
  // Many m-tiles: each 128-row block re-dequantizes the weights it loads.
  const auto big =
      predict_gemm(h100, gemm(4096, 4096, 4096, Format::kInt4, Format::kFp16), ideal());
  EXPECT_DOUBLE_EQ(big.dequant_ops, 4096.0 * 4096 * 32 * 4);
}

TEST(Roofline, Nvfp4IsNativeOnBlackwellAndWeightOnlyOnHopper) {
  const auto b200 = predict_gemm(registry().get("b200"),
                                 gemm(4096, 4096, 4096, Format::kNvfp4, Format::kNvfp4), ideal());
  EXPECT_FALSE(b200.weight_only);
  EXPECT_EQ(b200.compute_format, Format::kNvfp4);
  EXPECT_DOUBLE_EQ(b200.peak_flops_per_s, 9000e12);
  EXPECT_EQ(b200.output_format, Format::kBf16);
  const auto h100 = predict_gemm(registry().get("h100"),
                                 gemm(1, 4096, 4096, Format::kNvfp4, Format::kFp8), ideal());
  EXPECT_TRUE(h100.weight_only);
  EXPECT_EQ(h100.compute_format, Format::kFp8);
}

TEST(Roofline, MixedFp4Fp8RunsNativelyAtTheSlowerRate) {
  const auto r = predict_gemm(registry().get("b200"),
                              gemm(4096, 4096, 4096, Format::kNvfp4, Format::kFp8), ideal());
  EXPECT_FALSE(r.weight_only);
  EXPECT_EQ(r.compute_format, Format::kFp8);
  EXPECT_DOUBLE_EQ(r.peak_flops_per_s, 4500e12);
}

TEST(Roofline, StorageOnlyWeightsAreAlwaysDequantized) {
  const auto r =
      predict_gemm(registry().get("rtx-4090"), gemm(1, 4096, 4096, Format::kQ4_K_M, Format::kFp16));
  EXPECT_TRUE(r.weight_only);
  EXPECT_DOUBLE_EQ(r.bytes_read, 4096.0 * 4096 * 4.5 / 8 + 8'192);
}

TEST(Roofline, LowerPrecisionWeightsShortenMemoryBoundGemv) {
  const Device& b200 = registry().get("b200");
  double previous = 1e9;
  for (Format f : {Format::kFp32, Format::kFp16, Format::kFp8, Format::kNvfp4}) {
    const Format act = (f == Format::kFp32) ? Format::kFp32 : f;
    const auto r = predict_gemm(b200, gemm(1, 8192, 8192, f, act), ideal());
    EXPECT_LT(r.time_s, previous) << format_id(f);
    EXPECT_EQ(r.bound, Bound::kMemory) << format_id(f);
    previous = r.time_s;
  }
}

TEST(Roofline, UnsupportedActivationFormatsAreErrors) {
  EXPECT_THROW(
      (void)predict_gemm(registry().get("a100"), gemm(1, 64, 64, Format::kFp8, Format::kFp8)),
      Unsupported);
  EXPECT_THROW(
      (void)predict_gemm(registry().get("h100"), gemm(1, 64, 64, Format::kQ4_0, Format::kQ4_0)),
      InvalidArgument);
  // GB10 computes tf32 but its rate is unpublished: refuse rather than guess.
  try {
    (void)predict_gemm(registry().get("gb10"), gemm(1, 64, 64, Format::kTf32, Format::kTf32));
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("not published"), std::string::npos);
  }
}

TEST(Roofline, DimensionsAreValidated) {
  const Device& d = registry().get("h100");
  EXPECT_THROW((void)predict_gemm(d, gemm(0, 64, 64)), InvalidArgument);
  EXPECT_THROW((void)predict_gemm(d, gemm(1, -5, 64)), InvalidArgument);
  EXPECT_THROW((void)predict_gemm(d, gemm(1, 64, kMaxGemmDimension + 1)), InvalidArgument);
  // The largest allowed GEMM is finite everywhere.
  const auto r = predict_gemm(d, gemm(kMaxGemmDimension, kMaxGemmDimension, kMaxGemmDimension));
  EXPECT_TRUE(std::isfinite(r.time_s));
}

TEST(Roofline, BoundFollowsTheRidge) {
  // Growing m moves a GEMM from memory- to compute-bound on every device.
  for (const Device& d : registry().devices()) {
    if (!d.computes(Format::kFp16) || !d.peaks[format_index(Format::kFp16)]->known()) continue;
    const auto small = predict_gemm(d, gemm(1, 8192, 8192), ideal());
    const auto large = predict_gemm(d, gemm(8192, 8192, 8192), ideal());
    EXPECT_EQ(small.bound, Bound::kMemory) << d.id;
    EXPECT_EQ(large.bound, Bound::kCompute) << d.id;
    EXPECT_LT(small.ai, small.ridge_ai) << d.id;
    EXPECT_GT(large.ai, large.ridge_ai) << d.id;
  }
}

}  // namespace
}  // namespace roofline
