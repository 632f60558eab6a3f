// The CUDA backend's host-side pieces, checked without a GPU: the L2 flush
// and GEMV launch arithmetic, input generation, the correctness check against
// wrong results, the JSON-lines writer and reader, and kernel tables.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench_plan.h"
#include "roofline/error.h"
#include "roofline/gpu_run.h"
#include "roofline/hardware.h"

namespace roofline {
namespace {

using gpu::check_samples;
using gpu::output_tolerance;

// ---------------------------------------------------------------- arithmetic

TEST(GpuPlan, FlushIsTwiceTheL2WithAFloor) {
  // H200: the driver reports 60 MiB (62,914,560 B); twice is 125,829,120 B.
  EXPECT_EQ(gpu::l2_flush_bytes(62914560), 125829120u);
  // B200: 126 MiB -> 252 MiB.
  EXPECT_EQ(gpu::l2_flush_bytes(std::size_t{126} << 20), std::size_t{252} << 20);
  // A 6 MB L2 (L4-class) still gets the 64 MiB floor.
  EXPECT_EQ(gpu::l2_flush_bytes(6u << 20), std::size_t{64} << 20);
  // Unknown (0) counts as 128 MiB -> 256 MiB.
  EXPECT_EQ(gpu::l2_flush_bytes(0), std::size_t{256} << 20);
  // Always whole 256-byte chunks (16-byte vectors for every lane).
  EXPECT_EQ(gpu::l2_flush_bytes(50000001) % 256, 0u);
  EXPECT_GE(gpu::l2_flush_bytes(50000001), 100000002u);
}

TEST(GpuPlan, GemvSplitsKWhenRowsAreFew) {
  // n = 1024 rows on 132 SMs: 1024 warps < 16 x 132 = 2112 wanted; 2 warps a
  // row give 2048, still short; 4 give 4096. Rows per 8-warp block: 2, so
  // 512 blocks.
  gpu::GemvLaunch p = gpu::plan_gemv(1024, 4096, 2, 132);
  EXPECT_EQ(p.warps_per_row, 4);
  EXPECT_EQ(p.rows_per_block, 2);
  EXPECT_EQ(p.blocks, 512);
  // n = 4096: 4096 warps >= 2112 with one warp a row: 8 rows a block, 512 blocks.
  p = gpu::plan_gemv(4096, 4096, 2, 132);
  EXPECT_EQ(p.warps_per_row, 1);
  EXPECT_EQ(p.blocks, 512);
  // n = 14336 (Llama-3-8B gate): 1792 blocks of 8 rows.
  EXPECT_EQ(gpu::plan_gemv(14336, 4096, 2, 132).blocks, 1792);
  // k = 64 fp16 is 8 vectors a row: no split could give a warp one vector per lane.
  p = gpu::plan_gemv(1024, 64, 2, 132);
  EXPECT_EQ(p.warps_per_row, 1);
  EXPECT_EQ(p.blocks, 128);
  // Never more than the 8 warps of a block.
  EXPECT_LE(gpu::plan_gemv(1, 1 << 16, 2, 132).warps_per_row, gpu::kGemvWarps);
  // Blocks x rows per block covers every row, with less than one block spare.
  for (std::int64_t n : {1, 7, 100, 1000, 4095, 57344}) {
    p = gpu::plan_gemv(n, 8192, 2, 132);
    EXPECT_GE(p.blocks * p.rows_per_block, n) << n;
    EXPECT_LT((p.blocks - 1) * p.rows_per_block, n) << n;
    EXPECT_EQ(p.rows_per_block * p.warps_per_row, gpu::kGemvWarps);
  }
}

TEST(GpuPlan, InputsAreExactEighthsAndE2m1Codes) {
  std::set<float> seen;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    const float v = gpu::eighths_value(gpu::kSeedA, i);
    EXPECT_EQ(v * 8, std::round(v * 8));
    EXPECT_LE(std::fabs(v), 0.875f);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 15u);  // -7/8 .. 7/8, all of them
  // Another seed gives another sequence.
  int same = 0;
  for (std::uint64_t i = 0; i < 1000; ++i)
    same += gpu::eighths_value(1, i) == gpu::eighths_value(2, i);
  EXPECT_LT(same, 200);  // 1/15 expected by chance
  EXPECT_EQ(gpu::e2m1_value(0x7), 6.f);
  EXPECT_EQ(gpu::e2m1_value(0x9), -0.5f);
  EXPECT_EQ(gpu::e2m1_value(0x8), -0.f);
}

TEST(GpuPlan, SamplesCoverBothHalvesOfTheResult) {
  std::set<std::int64_t> rows, cols;
  for (int s = 0; s < gpu::kCheckSamples; ++s) {
    const gpu::SampleIndex at = gpu::sample_index(s, 4096, 6144);
    ASSERT_GE(at.i, 0);
    ASSERT_LT(at.i, 4096);
    ASSERT_GE(at.j, 0);
    ASSERT_LT(at.j, 6144);
    rows.insert(at.i / 2048);
    cols.insert(at.j / 3072);
  }
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(cols.size(), 2u);
  EXPECT_EQ(gpu::sample_index(5, 1, 1).i, 0);  // a GEMV has one row
}

// ---------------------------------------------------------------- the check

// The samples of an m x n x k product whose output is computed by `result(i,
// j)` from the same inputs the GPU would get.
template <typename Result>
std::vector<double> samples_of(std::int64_t m, std::int64_t n, Result result) {
  std::vector<double> v;
  for (int s = 0; s < gpu::kCheckSamples; ++s) {
    const gpu::SampleIndex at = gpu::sample_index(s, m, n);
    v.push_back(result(at.i, at.j));
  }
  return v;
}

double dot(std::int64_t i, std::int64_t j, std::int64_t k, std::int64_t from, std::int64_t to) {
  double sum = 0;
  for (std::int64_t p = from; p < to; ++p) {
    sum += static_cast<double>(gpu::eighths_value(gpu::kSeedA, i * k + p)) *
           gpu::eighths_value(gpu::kSeedW, j * k + p);
  }
  return sum;
}

// Rounds to a float with `bits` significand bits (bf16: 8, fp16: 11).
double round_to_bits(double x, int bits) {
  if (x == 0) return 0;
  int e = 0;
  const double f = std::frexp(x, &e);
  return std::ldexp(std::round(std::ldexp(f, bits)), e - bits);
}

class GpuCheck : public ::testing::Test {
 protected:
  static constexpr std::int64_t kM = 96, kN = 96, kK = 2048;
  std::vector<double> reference =
      samples_of(kM, kN, [](auto i, auto j) { return dot(i, j, kK, 0, kK); });
};

TEST_F(GpuCheck, CorrectResultsPassInEveryOutputFormat) {
  const auto bf16 =
      samples_of(kM, kN, [](auto i, auto j) { return round_to_bits(dot(i, j, kK, 0, kK), 8); });
  const auto fp16 =
      samples_of(kM, kN, [](auto i, auto j) { return round_to_bits(dot(i, j, kK, 0, kK), 11); });
  const gpu::CheckResult b = check_samples(reference, bf16, output_tolerance("bf16"));
  const gpu::CheckResult f = check_samples(reference, fp16, output_tolerance("fp16"));
  EXPECT_TRUE(b.passed) << b.rel_error;
  EXPECT_TRUE(f.passed) << f.rel_error;
  // Rounding to 8 significant bits errs by at most u = 2^-8 per entry.
  EXPECT_LT(b.rel_error, 0x1p-8);
  EXPECT_LT(f.rel_error, 0x1p-11);
  EXPECT_GT(b.rel_error, 0);
  // A bf16-rounded output fails the fp16 tolerance: the tolerances are not loose.
  EXPECT_FALSE(check_samples(reference, bf16, output_tolerance("fp16")).passed);
}

TEST_F(GpuCheck, ZeroOutputFails) {
  const gpu::CheckResult c = check_samples(reference, std::vector<double>(reference.size(), 0.0),
                                           output_tolerance("bf16"));
  EXPECT_FALSE(c.passed);
  EXPECT_DOUBLE_EQ(c.rel_error, 1.0);  // ||0 - r|| / ||r||
}

TEST_F(GpuCheck, HalfSummedOutputFails) {
  const auto half = samples_of(kM, kN, [](auto i, auto j) { return dot(i, j, kK, 0, kK / 2); });
  const gpu::CheckResult c = check_samples(reference, half, output_tolerance("bf16"));
  EXPECT_FALSE(c.passed);
  // The missing half is about as large as what is there: sqrt(1/2).
  EXPECT_NEAR(c.rel_error, std::sqrt(0.5), 0.15);
}

TEST_F(GpuCheck, TransposedOutputFails) {
  const auto transposed = samples_of(kM, kN, [](auto i, auto j) { return dot(j, i, kK, 0, kK); });
  const gpu::CheckResult c = check_samples(reference, transposed, output_tolerance("bf16"));
  EXPECT_FALSE(c.passed);
  EXPECT_NEAR(c.rel_error, std::sqrt(2.0), 0.3);  // two independent sums
}

TEST_F(GpuCheck, NanOrUnwrittenOutputFails) {
  auto got = reference;
  got[17] = std::nan("");
  const gpu::CheckResult c = check_samples(reference, got, output_tolerance("bf16"));
  EXPECT_FALSE(c.passed);
  EXPECT_TRUE(std::isnan(c.rel_error));
  EXPECT_FALSE(check_samples(reference, std::vector<double>(reference.size(), INFINITY), 1).passed);
  EXPECT_FALSE(check_samples(reference, {}, 1).passed);
}

// ---------------------------------------------------------------- JSON lines

TEST(GpuJsonLine, NonFiniteNumbersAreNullAndStringsEscaped) {
  gpu::JsonLine j;
  j.add("type", "gemm")
      .add("rel_error", std::nan(""))
      .add("t", 1.5e-6)
      .add("n", std::int64_t{57344});
  j.add("ok", false).add("why", "a \"quoted\"\nline\\");
  const auto back = nlohmann::json::parse(j.str());
  EXPECT_TRUE(back["rel_error"].is_null());
  EXPECT_DOUBLE_EQ(back["t"].get<double>(), 1.5e-6);
  EXPECT_EQ(back["n"], 57344);
  EXPECT_EQ(back["ok"], false);
  EXPECT_EQ(back["why"], "a \"quoted\"\nline\\");
  EXPECT_EQ(j.str().find('\n'), std::string::npos);  // one line
}

TEST(GpuJsonLine, PercentileInterpolates) {
  EXPECT_DOUBLE_EQ(gpu::percentile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(gpu::percentile({1, 2, 3, 4, 5}, 0.1), 1.4);  // position 0.4
  EXPECT_TRUE(std::isnan(gpu::percentile({}, 0.5)));
}

// Lines as roofline-gpu writes them (cuda/main.cpp).
const char* kDevice =
    R"({"type":"device","gpu":"NVIDIA H200","sm_count":132,"compute_capability":"9.0","memory_bytes":1.5e11,)"
    R"("l2_bytes":62914560,"l2_flush_bytes":125829120,"driver_version":13000,"runtime_version":13000,)"
    R"("started_utc":"2026-11-30T14:28:06Z"})";
const char* kBandwidth =
    R"({"type":"bandwidth","bytes":2e9,"memcpy_Bps":4.28e12,"copy_Bps":3.96e12,"read_Bps":4.55e12,)"
    R"("memcpy_p10_s":0.00093,"memcpy_p90_s":0.00094,"copy_median_s":0.00101,"copy_p10_s":0.00100,)"
    R"("copy_p90_s":0.00102,"read_median_s":0.00044,"read_p10_s":0.00043,"read_p90_s":0.00045,)"
    R"("repetitions":39,"sm_clock_mhz":1965})";
// 4096 x 4096 x 4096 bf16 at 166 us: 137.4 GFLOP / 166 us = 828 TFLOP/s.
const char* kGemm =
    R"({"type":"gemm","m":4096,"n":4096,"k":4096,"precision":"bf16","output":"bf16","kernel":"cublaslt",)"
    R"("median_s":1.66e-4,"p10_s":1.6e-4,"p90_s":1.7e-4,"min_s":1.59e-4,"repetitions":200,"l2":"flushed",)"
    R"("flops":1.37438953472e11,"bytes":100663296,"flops_per_s":8.28e14,"bandwidth_Bps":6.06e11,"algorithm":0,)"
    R"("fast_accum":false,"check":"passed","rel_error":0.0016,"tolerance":0.015625,"sm_clock_mhz":1980,)"
    R"("label":"square"})";
const char* kFailed =
    R"({"type":"gemm","m":16,"n":4096,"k":4096,"precision":"fp8","output":"bf16","kernel":"cublaslt",)"
    R"("median_s":1.2e-5,"p10_s":1.1e-5,"p90_s":1.3e-5,"min_s":1e-5,"repetitions":500,"l2":"flushed",)"
    R"("flops":536870912,"bytes":16908288,"flops_per_s":4.4e13,"bandwidth_Bps":1.4e12,"algorithm":1,)"
    R"("fast_accum":true,"check":"failed","rel_error":null,"tolerance":0.015625,"label":"x"})";
const char* kError =
    R"({"type":"gemm","m":1,"n":4096,"k":4096,"precision":"nvfp4","error":"cuBLASLt has no algorithm","label":"x"})";
const char* kDone = R"({"type":"done","cases":3,"failed":2,"not_started":0,"seconds":25.7})";

std::string lines(std::initializer_list<const char*> l) {
  std::string s;
  for (const char* x : l) s += std::string(x) + "\n";
  return s;
}

TEST(GpuRunParse, ReadsEveryKindOfLine) {
  const measure::GpuRun run = measure::parse_gpu_run(
      lines({kDevice, kBandwidth, kGemm, kFailed, kError, kDone}), "run.jsonl");
  EXPECT_EQ(run.device.gpu, "NVIDIA H200");
  EXPECT_EQ(run.device.started_utc, "2026-11-30T14:28:06Z");
  ASSERT_TRUE(run.bandwidth.has_value());
  EXPECT_DOUBLE_EQ(run.bandwidth->copy_Bps, 3.96e12);
  ASSERT_EQ(run.cases.size(), 3u);
  EXPECT_TRUE(run.cases[0].passed());
  EXPECT_EQ(run.cases[0].sm_clock_mhz, 1980);
  // A null error is a failed check, not unparseable output.
  EXPECT_TRUE(run.cases[1].ran());
  EXPECT_FALSE(run.cases[1].passed());
  EXPECT_TRUE(std::isnan(run.cases[1].rel_error));
  EXPECT_TRUE(run.cases[1].fast_accum);
  EXPECT_FALSE(run.cases[2].ran());
  EXPECT_EQ(run.cases[2].error, "cuBLASLt has no algorithm");
  EXPECT_TRUE(run.finished);
  EXPECT_FALSE(run.truncated);
}

TEST(GpuRunParse, ACutOffLastLineIsTruncationNotAnError) {
  std::string text = lines({kDevice, kGemm});
  text += std::string(kGemm).substr(0, 80);  // killed mid-line
  const measure::GpuRun run = measure::parse_gpu_run(text, "run.jsonl");
  EXPECT_TRUE(run.truncated);
  EXPECT_FALSE(run.finished);
  EXPECT_EQ(run.cases.size(), 1u);
}

void expect_parse_error(const std::string& text, const std::string& fragment) {
  try {
    (void)measure::parse_gpu_run(text, "run.jsonl");
    ADD_FAILURE() << "accepted: " << text.substr(0, 120);
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(GpuRunParse, RejectsWhatIsNotItsOutput) {
  // A bad line in the middle names its number.
  expect_parse_error(lines({kDevice, "{not json", kGemm}), "line 2");
  // The device line comes first.
  expect_parse_error(lines({kGemm}), "first line must be the \"device\" line");
  expect_parse_error("", "no \"device\" line");
  // Unknown keys and types, bad values.
  std::string extra = kGemm;
  extra.insert(1, R"("surprise":1,)");
  expect_parse_error(lines({kDevice, extra.c_str()}), "surprise: unknown key");
  expect_parse_error(lines({kDevice, R"({"type":"attention"})"}), "type: must be one of");
  std::string negative = kGemm;
  negative.replace(negative.find("\"median_s\":1.66e-4"), 18, "\"median_s\":-1.0000");
  expect_parse_error(lines({kDevice, negative.c_str()}), "median_s");
  std::string disordered = kGemm;
  disordered.replace(disordered.find("\"p90_s\":1.7e-4"), 14, "\"p90_s\":1.0e-4");
  expect_parse_error(lines({kDevice, disordered.c_str()}), "ordered");
  // A null error with a passed check is a contradiction.
  std::string contradiction = kFailed;
  contradiction.replace(contradiction.find("\"check\":\"failed\""), 16, "\"check\":\"passed\"");
  expect_parse_error(lines({kDevice, contradiction.c_str()}), "null rel_error cannot pass");
  expect_parse_error(lines({kDevice, kDone, kGemm}), "nothing may follow");
  expect_parse_error(std::string(measure::kMaxGpuRunBytes + 1, ' '), "limit");
}

// ---------------------------------------------------------------- comparison and tables

TEST(GpuKernelTable, EfficiencyIsTheRooflineTimeOverTheMeasured) {
  const Registry reg = Registry::load({});
  const Device& h200 = reg.get("h200");
  const measure::GpuRun run =
      measure::parse_gpu_run(lines({kDevice, kBandwidth, kGemm, kFailed, kError, kDone}), "run");
  const measure::GpuComparison c = measure::compare_gpu_run(run, h200);
  ASSERT_EQ(c.rows.size(), 1u);  // only the case that ran and passed
  // Ideal: 1.374e11 FLOP / 989.4e12 FLOP/s = 138.9 us (compute-bound: 100.7 MB
  // at 4.8 TB/s is 21 us); 138.9 / 166 = 0.837.
  EXPECT_NEAR(c.rows[0].efficiency, 1.37438953472e11 / 989.4e12 / 1.66e-4, 1e-3);
  EXPECT_EQ(c.rows[0].bound, "compute");

  const nlohmann::json table = measure::kernel_table_json(run, h200, "run.jsonl");
  const measure::KernelTable back = measure::parse_kernel_table(table.dump(), "table");
  EXPECT_EQ(back.device, "h200");
  EXPECT_EQ(back.gpu, "NVIDIA H200");
  EXPECT_EQ(back.date, "2026-11-30");
  EXPECT_EQ(back.l2, "flushed");
  ASSERT_EQ(back.entries.size(), 1u);
  EXPECT_DOUBLE_EQ(back.entries[0].time_s, 1.66e-4);
  EXPECT_DOUBLE_EQ(back.copy_Bps, 3.96e12);

  // Strict on the way back in.
  nlohmann::json bad = table;
  bad["entries"][0]["efficiency"] =
      1.3;  // faster than the roofline: a cached operand or a wrong peak
  EXPECT_THROW((void)measure::parse_kernel_table(bad.dump(), "t"), ParseError);
  bad = table;
  bad["entries"][0]["extra"] = 1;
  EXPECT_THROW((void)measure::parse_kernel_table(bad.dump(), "t"), ParseError);
  bad = table;
  bad["measured"]["source"] = "nowhere";
  EXPECT_THROW((void)measure::parse_kernel_table(bad.dump(), "t"), ParseError);
  bad = table;
  bad.erase("entries");
  EXPECT_THROW((void)measure::parse_kernel_table(bad.dump(), "t"), ParseError);

  // Nothing passed: nothing to compare.
  const measure::GpuRun failed = measure::parse_gpu_run(lines({kDevice, kFailed}), "run");
  EXPECT_THROW((void)measure::compare_gpu_run(failed, h200), Unsupported);
}

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/" + relative, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The H200 table checked into data/kernels/ loads, and says what a cuBLASLt
// run on that GPU should: large bf16 GEMMs near 80% of the 989 TF peak, the
// largest GEMV near the copy bandwidth, nothing above the roofline.
TEST(GpuKernelTable, TheShippedH200TableLoadsAndIsPlausible) {
  const measure::KernelTable t =
      measure::parse_kernel_table(read_source_file("kernels/h200-cublaslt.json"), "h200");
  EXPECT_EQ(t.device, "h200");
  EXPECT_EQ(t.gpu, "NVIDIA H200");
  EXPECT_EQ(t.l2, "flushed");
  EXPECT_GT(t.entries.size(), 250u);
  std::set<std::string> precisions;
  double best_bf16 = 0;
  for (const auto& e : t.entries) {
    precisions.insert(e.precision);
    EXPECT_LE(e.efficiency, 1.0) << e.m << "x" << e.n << "x" << e.k;
    if (e.precision == "bf16" && e.bound == "compute")
      best_bf16 = std::max(best_bf16, e.efficiency);
  }
  EXPECT_EQ(precisions, (std::set<std::string>{"bf16", "fp16", "fp8"}));
  EXPECT_GT(best_bf16, 0.7);
  // The largest GEMV (the 940 MB Llama-3-70B gate+up) streams near the copy
  // bandwidth: 4.03 TB/s of the 4.8 datasheet, 0.84.
  double largest_gemv = 0, its_efficiency = 0;
  for (const auto& e : t.entries) {
    if (e.op == "gemv" && static_cast<double>(e.n) * e.k > largest_gemv) {
      largest_gemv = static_cast<double>(e.n) * e.k;
      its_efficiency = e.efficiency;
    }
  }
  EXPECT_GT(its_efficiency, 0.75);
  EXPECT_GE(its_efficiency * 4.8e12, 0.95 * t.copy_Bps);
  // The run's own file is kept beside it and parses.
  const measure::GpuRun run = measure::parse_gpu_run(
      read_source_file("kernels/runs/h200-2026-11-30/gpu.jsonl"), "gpu.jsonl");
  EXPECT_TRUE(run.finished);
  EXPECT_EQ(run.cases.size(), t.entries.size());
}

}  // namespace
}  // namespace roofline
