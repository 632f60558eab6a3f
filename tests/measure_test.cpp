#include "roofline/measure.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "roofline/error.h"

namespace roofline::measure {
namespace {

// No CPU socket sustains 2 TB/s from DRAM: 12 channels of DDR5-8800 give
// ~845 GB/s, HBM-equipped Xeon Max ~1 TB/s. An 8 MiB array may sit in cache,
// whose bandwidth over a few cores also stays below this on any current CPU.
constexpr double kMaxPlausibleCpuBandwidthBps = 2e12;

// Per core: 4 GHz x 2 FMA ports x 32 fp32 lanes x 2 FLOP per FMA. AVX-512 has
// 16 fp32 lanes; the factor 2 of headroom covers boost clocks up to 8 GHz.
constexpr double kMaxPlausibleFp32FlopsPerCore = 4e9 * 2 * 32 * 2;

constexpr std::size_t kMiB = std::size_t{1} << 20;

int hardware_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

StreamOptions small_stream() {
  StreamOptions o;
  o.array_bytes = 8 * kMiB;
  o.repetitions = 3;
  return o;
}

TEST(Measure, StreamSmallArrayIsPlausibleAndVerified) {
  const StreamReport r = run_stream(small_stream());
  EXPECT_TRUE(r.verified);
  EXPECT_EQ(r.array_bytes, 8 * kMiB);
  EXPECT_EQ(r.threads, hardware_threads());
  ASSERT_EQ(r.kernels.size(), 4u);
  const char* names[] = {"copy", "scale", "add", "triad"};
  // STREAM counting: copy c=a and scale b=s*c touch 2 arrays of 8 B per
  // element; add c=a+b and triad a=b+s*c touch 3.
  const double bytes_per_element[] = {16, 16, 24, 24};
  const double elements = static_cast<double>(8 * kMiB / sizeof(double));
  double max_median = 0.0;
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    const StreamKernelResult& k = r.kernels[i];
    EXPECT_EQ(k.name, names[i]);
    EXPECT_EQ(k.bytes_per_iteration, bytes_per_element[i]) << k.name;
    EXPECT_GT(k.bandwidth_Bps, 0.0) << k.name;
    EXPECT_LT(k.bandwidth_Bps, kMaxPlausibleCpuBandwidthBps) << k.name;
    EXPECT_LT(k.best_Bps, kMaxPlausibleCpuBandwidthBps) << k.name;
    EXPECT_GE(k.best_Bps, k.bandwidth_Bps) << k.name;  // fastest pass vs median pass
    EXPECT_GT(k.median_time_s, 0.0) << k.name;
    // bandwidth = bytes per element x elements / median time.
    EXPECT_NEAR(k.bandwidth_Bps * k.median_time_s, k.bytes_per_iteration * elements,
                1e-9 * k.bytes_per_iteration * elements)
        << k.name;
    max_median = std::max(max_median, k.bandwidth_Bps);
  }
  EXPECT_EQ(r.bandwidth_Bps, max_median);
  const auto best =
      std::find_if(r.kernels.begin(), r.kernels.end(),
                   [&](const StreamKernelResult& k) { return k.name == r.best_kernel; });
  ASSERT_NE(best, r.kernels.end());
  EXPECT_EQ(best->bandwidth_Bps, r.bandwidth_Bps);
}

TEST(Measure, StreamHonoursThreadsAndOddArraySize) {
  StreamOptions o = small_stream();
  o.threads = 3;  // more than this machine may have, and not a divisor of the size
  o.array_bytes = 3 * kMiB + 8 * 7;  // slices cannot all be equal
  const StreamReport r = run_stream(o);
  EXPECT_EQ(r.threads, 3);
  EXPECT_EQ(r.array_bytes, 3 * kMiB + 8 * 7);
  EXPECT_TRUE(r.verified);
}

TEST(Measure, StreamProgressIsMonotonicAndEnds) {
  std::vector<std::string> stages;
  std::vector<double> fractions;
  StreamOptions o = small_stream();
  o.array_bytes = 2 * kMiB;
  (void)run_stream(o, [&](std::string_view stage, double fraction) {
    stages.emplace_back(stage);
    fractions.push_back(fraction);
  });
  ASSERT_FALSE(stages.empty());
  EXPECT_EQ(stages.front(), "allocate");
  EXPECT_EQ(stages.back(), "done");
  EXPECT_EQ(fractions.back(), 1.0);
  // allocate + (warm-up + 3 repetitions) measure + verify + done
  EXPECT_EQ(stages.size(), 1u + 4u + 1u + 1u);
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  for (double f : fractions) {
    EXPECT_GE(f, 0.0);
    EXPECT_LE(f, 1.0);
  }
}

TEST(Measure, StreamProgressExceptionStopsTheRun) {
  StreamOptions o = small_stream();
  o.array_bytes = 2 * kMiB;
  o.threads = 2;
  int measure_calls = 0;
  EXPECT_THROW((void)run_stream(o,
                                [&](std::string_view stage, double) {
                                  if (stage == "measure" && ++measure_calls == 2) {
                                    throw std::runtime_error("cancelled");
                                  }
                                }),
               std::runtime_error);
  EXPECT_EQ(measure_calls, 2);
}

TEST(Measure, StreamRejectsBadOptions) {
  auto with = [](auto edit) {
    StreamOptions o = small_stream();
    edit(o);
    return o;
  };
  EXPECT_THROW((void)run_stream(with([](StreamOptions& o) { o.array_bytes = 1; })),
               InvalidArgument);
  EXPECT_THROW(
      (void)run_stream(with([](StreamOptions& o) { o.array_bytes = kStreamMaxArrayBytes + 1; })),
      InvalidArgument);
  EXPECT_THROW((void)run_stream(with([](StreamOptions& o) { o.threads = -1; })), InvalidArgument);
  EXPECT_THROW((void)run_stream(with([](StreamOptions& o) { o.repetitions = 0; })),
               InvalidArgument);
  EXPECT_THROW(
      (void)run_stream(with([](StreamOptions& o) { o.repetitions = kStreamMaxRepetitions + 1; })),
      InvalidArgument);
}

TEST(Measure, LastLevelCacheIsUnknownOrPlausible) {
  const std::size_t llc = last_level_cache_bytes();
  if (llc != 0) {
    // Real L2/L3 caches span 64 KiB (small cores' L2) to a few GiB (stacked L3).
    EXPECT_GE(llc, std::size_t{64} << 10);
    EXPECT_LE(llc, std::size_t{4} << 30);
  }
}

TEST(Measure, PeakUsesAllCoresAndStaysBelowPhysicalBound) {
  PeakOptions o;
  o.seconds = 0.05;
  const PeakReport r = run_peak(o);
  EXPECT_EQ(r.threads, hardware_threads());
  EXPECT_FALSE(r.isa.empty());
  EXPECT_GE(r.vector_bits, 128);
  EXPECT_GT(r.fp32_flops_per_s, 0.0);
  EXPECT_GT(r.fp64_flops_per_s, 0.0);
  EXPECT_LT(r.fp32_flops_per_s, kMaxPlausibleFp32FlopsPerCore * r.threads);
  EXPECT_LT(r.fp64_flops_per_s, kMaxPlausibleFp32FlopsPerCore * r.threads);
}

TEST(Measure, PeakOnOneThreadIsPlausible) {
  // One thread, so that a busy core elsewhere on a small machine does not stall
  // it at a barrier. Which precision is faster is a timing and is not asserted
  // (fp32 is ~2x fp64 on every SIMD ISA, but a loaded CI machine flipped it);
  // the report's shape and the physical bound are.
  PeakOptions o;
  o.threads = 1;
  o.seconds = 0.1;
  const PeakReport r = run_peak(o);
  EXPECT_EQ(r.threads, 1);
  EXPECT_GT(r.fp32_flops_per_s, 0.0);
  EXPECT_GT(r.fp64_flops_per_s, 0.0);
  EXPECT_LT(r.fp32_flops_per_s, kMaxPlausibleFp32FlopsPerCore);
  EXPECT_LT(r.fp64_flops_per_s, kMaxPlausibleFp32FlopsPerCore);
  EXPECT_GE(r.vector_bits, 128);
}

TEST(Measure, PeakRejectsBadOptions) {
  for (double s : {0.0, -1.0, 61.0, std::numeric_limits<double>::quiet_NaN()}) {
    PeakOptions bad;
    bad.seconds = s;
    EXPECT_THROW((void)run_peak(bad), InvalidArgument) << s;
  }
  PeakOptions bad;
  bad.threads = -2;
  EXPECT_THROW((void)run_peak(bad), InvalidArgument);
  bad.threads = kMaxThreads + 1;
  EXPECT_THROW((void)run_peak(bad), InvalidArgument);
}

TEST(Measure, SgemmSmallSquareIsVerified) {
  const GemmMeasurement r = measure_sgemm({64, 64, 64, "square"});
  EXPECT_TRUE(r.verified);
  EXPECT_LT(r.max_rel_error, kGemmVerifyTolerance);
  EXPECT_GE(r.max_rel_error, 0.0);
  EXPECT_EQ(r.flops, 2.0 * 64 * 64 * 64);   // 524'288
  EXPECT_EQ(r.bytes, 4.0 * (64 * 64 * 3));  // 49'152
  EXPECT_GE(r.repetitions, kGemmMinRepetitions);
  EXPECT_LE(r.repetitions, kGemmMaxAdaptiveRepetitions);
  EXPECT_LE(r.min_time_s, r.median_time_s);
  EXPECT_GT(r.min_time_s, 0.0);
  EXPECT_DOUBLE_EQ(r.flops_per_s, r.flops / r.median_time_s);
  EXPECT_DOUBLE_EQ(r.bandwidth_Bps, r.bytes / r.median_time_s);
  EXPECT_EQ(r.shape.label, "square");
}

TEST(Measure, SgemmNonSquareCountsEachOperand) {
  GemmOptions o;
  o.repetitions = 5;
  const GemmMeasurement r = measure_sgemm({37, 19, 1000, "odd"}, o);
  EXPECT_TRUE(r.verified) << r.max_rel_error;
  EXPECT_EQ(r.repetitions, 5);
  EXPECT_EQ(r.flops, 1'406'000.0);  // 2 * 37 * 19 * 1000
  // 4 * (m k + k n + m n) = 4 * (37'000 + 19'000 + 703) = 226'812
  EXPECT_EQ(r.bytes, 226'812.0);
}

TEST(Measure, SgemvPathIsVerified) {
  GemmOptions o;
  o.repetitions = 3;
  const GemmMeasurement r = measure_sgemm({1, 300, 200, "gemv"}, o);
  EXPECT_TRUE(r.verified) << r.max_rel_error;
  EXPECT_EQ(r.flops, 120'000.0);                      // 2 * 1 * 300 * 200
  EXPECT_EQ(r.bytes, 4.0 * (200 + 200 * 300 + 300));  // 242'000
  EXPECT_GT(r.flops_per_s, 0.0);
}

TEST(Measure, SgemmRejectsBadShapesAndOptions) {
  const std::int64_t huge = 1'000'000'000;
  for (const GemmShape& s : std::vector<GemmShape>{{0, 64, 64, ""},
                                                   {64, 0, 64, ""},
                                                   {64, 64, 0, ""},
                                                   {-1, 64, 64, ""},
                                                   {64, -1, 64, ""},
                                                   {huge, 64, 64, ""},
                                                   {64, 64, huge, ""},
                                                   // each dimension allowed, 48 GiB in all
                                                   {65536, 65536, 65536, ""}}) {
    EXPECT_THROW((void)measure_sgemm(s), InvalidArgument) << s.m << "x" << s.n << "x" << s.k;
  }
  GemmOptions bad_reps;
  bad_reps.repetitions = -1;
  EXPECT_THROW((void)measure_sgemm({8, 8, 8, ""}, bad_reps), InvalidArgument);
  GemmOptions bad_threads;
  bad_threads.threads = -1;
  EXPECT_THROW((void)measure_sgemm({8, 8, 8, ""}, bad_threads), InvalidArgument);
}

TEST(Measure, SgemmThreadsOptionIsRestored) {
  const int before = openblas_threads();
  EXPECT_GE(before, 1);
  GemmOptions o;
  o.threads = 1;
  o.repetitions = 3;
  EXPECT_TRUE(measure_sgemm({32, 48, 40, ""}, o).verified);
  EXPECT_EQ(openblas_threads(), before);
}

TEST(Measure, WeightPoolWindowsWalkThePoolAndWrap) {
  WeightPool pool(std::size_t{1} << 20);  // 262,144 floats
  ASSERT_EQ(pool.floats(), 262'144u);
  float* const first = pool.next(100'000);
  // The next window starts right after, on a cache line (100,000 floats is
  // 6,250 lines of 16); a third would end past 262,144, so it wraps.
  EXPECT_EQ(pool.next(100'000) - first, 100'000);
  EXPECT_EQ(pool.next(100'000), first);
  EXPECT_EQ(pool.next(3) - first, 100'000);
  EXPECT_EQ(pool.next(1) - first, 100'016);  // 100,003 rounded up to a line
  EXPECT_THROW((void)pool.next(0), InvalidArgument);
  EXPECT_THROW((void)pool.next(262'145), InvalidArgument);
  EXPECT_THROW(WeightPool(std::size_t{64} << 30), InvalidArgument);
}

TEST(Measure, ColdWeightsComeFromThePoolWarmFromOneBuffer) {
  WeightPool pool(std::size_t{4} << 20);  // 1,048,576 floats
  GemmOptions cold;
  cold.repetitions = 3;
  cold.pool = &pool;
  const GemmMeasurement c = measure_sgemm({8, 256, 512, "cold"}, cold);
  EXPECT_TRUE(c.verified) << c.max_rel_error;
  EXPECT_EQ(c.weight_copies, 8);  // 1,048,576 / (256 x 512)
  GemmOptions warm = cold;
  warm.cold_weights = false;
  EXPECT_EQ(measure_sgemm({8, 256, 512, "warm"}, warm).weight_copies, 1);
  // Weights larger than the pool get a buffer of their own.
  EXPECT_EQ(measure_sgemm({2, 2048, 1024, "big"}, cold).weight_copies, 1);
}

TEST(Measure, InterleavedShapesAreMeasuredAlikeAndInOrder) {
  WeightPool pool(std::size_t{8} << 20);
  GemmOptions o;
  o.pool = &pool;
  const std::vector<GemmShape> shapes = {
      {1, 512, 512, "gemv"}, {64, 64, 64, "square"}, {16, 256, 128, "skinny"}};
  const std::vector<GemmMeasurement> r = measure_sgemms_interleaved(shapes, o);
  ASSERT_EQ(r.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r[i].shape.label, shapes[i].label);
    EXPECT_TRUE(r[i].verified) << r[i].max_rel_error;
    EXPECT_EQ(r[i].repetitions, r[0].repetitions);  // one call of each per round
    EXPECT_GE(r[i].repetitions, kGemmMinRepetitions);
  }
  EXPECT_TRUE(measure_sgemms_interleaved({}, o).empty());
  EXPECT_THROW((void)measure_sgemms_interleaved({{8, 8, 8, ""}, {0, 8, 8, ""}}, o),
               InvalidArgument);
}

TEST(Measure, DefaultShapeSetsAreValid) {
  const auto gemm = default_gemm_shapes();
  const auto gemv = default_gemv_shapes();
  ASSERT_FALSE(gemm.empty());
  ASSERT_FALSE(gemv.empty());
  EXPECT_LE(gemm.size() + gemv.size(), 20u);  // the set must stay quick to run
  for (const auto& s : gemm) {
    EXPECT_GT(s.m, 1) << s.label;  // GEMMs proper; m = 1 lives in the GEMV set
    EXPECT_GT(s.n, 0) << s.label;
    EXPECT_GT(s.k, 0) << s.label;
    EXPECT_FALSE(s.label.empty());
  }
  for (const auto& s : gemv) {
    EXPECT_EQ(s.m, 1) << s.label;
    EXPECT_GT(s.n, 0) << s.label;
    EXPECT_GT(s.k, 0) << s.label;
    EXPECT_FALSE(s.label.empty());
  }
  // Llama-3-8B's MLP: gate/up maps hidden 4096 to intermediate 14336.
  EXPECT_TRUE(std::any_of(gemv.begin(), gemv.end(),
                          [](const GemmShape& s) { return s.n == 14336 && s.k == 4096; }));
}

}  // namespace
}  // namespace roofline::measure
