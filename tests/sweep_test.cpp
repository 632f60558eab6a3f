#include "roofline/sweep.h"

#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/request.h"

namespace roofline {
namespace {

const Registry& registry() {
  static const Registry r = Registry::built_in();
  return r;
}

SweepSpec small_spec() {
  SweepSpec s;
  s.models = {load_model("llama-3.1-8b"), load_model("mixtral-8x7b")};
  s.devices = {&registry().get("h100"), &registry().get("a100")};
  s.phases = {Phase::kDecode, Phase::kPrefill};
  s.batches = {1, 8};
  s.seq_lens = {512, 4096};
  s.weights = {std::nullopt, Format::kFp8};
  s.acts = {Format::kBf16, Format::kFp8};
  return s;
}

std::string run(const SweepSpec& s, SweepFormat f, unsigned threads) {
  std::string out;
  run_sweep(
      s, f, [&](std::string_view chunk) { out.append(chunk); }, {}, threads);
  return out;
}

TEST(Sweep, OneRowPerCombinationInOrder) {
  const SweepSpec s = small_spec();
  EXPECT_EQ(sweep_rows(s), 2u * 2 * 2 * 2 * 2 * 2 * 2);
  const std::string csv = run(s, SweepFormat::kCsv, 2);
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("model,hardware,phase,batch,seq_len,", 0), 0u);
  int rows = 0, errors = 0;
  std::string first;
  while (std::getline(in, line)) {
    if (rows == 0) first = line;
    ++rows;
    // fp8 activations on the A100 (no fp8 tensor cores) are error rows, not failures.
    if (line.find("a100-80gb") != std::string::npos &&
        line.find(",fp8,fp8,") != std::string::npos) {
      EXPECT_NE(line.find("cannot compute in fp8"), std::string::npos) << line;
      ++errors;
    }
  }
  EXPECT_EQ(rows, 128);
  EXPECT_EQ(errors, 32);  // A100 rows with fp8 activations: 2 models x 2 phases x 2 batches x 2
                          // lengths x 2 weights
  // The first row is the first element of every list.
  EXPECT_EQ(first.rfind("llama-3.1-8b,h100-sxm,decode,1,512,native,bf16,bf16,auto,1,,", 0), 0u)
      << first;
}

TEST(Sweep, ThreadCountDoesNotChangeTheOutput) {
  const SweepSpec s = small_spec();
  EXPECT_EQ(run(s, SweepFormat::kCsv, 1), run(s, SweepFormat::kCsv, 2));
  EXPECT_EQ(run(s, SweepFormat::kJsonLines, 1), run(s, SweepFormat::kJsonLines, 3));
}

TEST(Sweep, JsonIsOneValidArray) {
  const auto j = nlohmann::json::parse(run(small_spec(), SweepFormat::kJson, 2));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 128u);
  EXPECT_EQ(j[0]["model"], "llama-3.1-8b");
  EXPECT_GT(j[0]["time_s"].get<double>(), 0);
  int errors = 0;
  for (const auto& row : j) errors += row.contains("error");
  EXPECT_EQ(errors, 32);
}

TEST(Sweep, RowsMatchSinglePredictions) {
  SweepSpec s = small_spec();
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 2));
  Scenario sc;
  sc.phase = Phase::kPrefill;
  sc.batch = 8;
  sc.seq_len = 4096;
  const Prediction p = predict(s.models[1], registry().get("h100"), sc);
  bool found = false;
  for (const auto& row : j) {
    if (row["model"] == "mixtral-8x7b" && row["hardware"] == "h100-sxm" &&
        row["phase"] == "prefill" && row["batch"] == 8 && row["seq_len"] == 4096 &&
        row["weights"] == "native" && row["act"] == "bf16") {
      EXPECT_NEAR(row["time_s"].get<double>(), p.time_s, p.time_s * 1e-5);  // 6 significant digits
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

// The activation list's default, "engine", is predict's without --act: vLLM's
// W8A8 for fp8 weights on the H100, weight-only fp8 on the A100 (no fp8 math),
// bf16 for the native bf16 checkpoint; each row as a single prediction.
TEST(Sweep, TheEnginesActivationsAreTheDefault) {
  SweepSpec s = small_spec();
  s.models = {s.models[0]};
  s.phases = {Phase::kDecode};
  s.batches = {8};
  s.seq_lens = {4096};
  s.acts = {std::nullopt};
  s.options.engine = &EngineRegistry::built_in().get("vllm");
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 2));
  ASSERT_EQ(j.size(), 4u);  // 2 devices x 2 weights
  int checked = 0;
  for (const auto& row : j) {
    ASSERT_FALSE(row.contains("error")) << row.dump();
    const bool fp8 = row["weights"] == "fp8", hopper = row["hardware"] == "h100-sxm";
    EXPECT_EQ(row["act"], fp8 && hopper ? "fp8" : "bf16") << row.dump();
    EXPECT_EQ(row["kv"], "bf16") << row.dump();
    ScenarioRequest r;
    r.weights = fp8 ? "fp8" : "";
    r.batch = 8;
    r.engine = s.options.engine;
    const Device& d = registry().get(row["hardware"].get<std::string>());
    const Prediction p = predict(s.models[0], d, build_scenario(r, s.models[0], &d), s.options);
    EXPECT_NEAR(row["time_s"].get<double>(), p.time_s, p.time_s * 1e-5) << row.dump();
    ++checked;
  }
  EXPECT_EQ(checked, 4);
  EXPECT_EQ(parse_sweep_act("engine"), std::nullopt);
  EXPECT_EQ(parse_sweep_act("fp8"), Format::kFp8);
  EXPECT_THROW((void)parse_sweep_act("engines"), NotFound);
}

TEST(Sweep, StrategiesReplaceTheFormatLists) {
  SweepSpec s = small_spec();
  s.strategies = {load_strategy("fp8_balanced"), load_strategy("nvfp4_blackwell")};
  EXPECT_EQ(sweep_rows(s),
            2u * 2 * 2 * 2 * 2 * 2);  // models, devices, phases, batches, lengths, strategies
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 2));
  ASSERT_EQ(j.size(), 64u);
  int fallbacks = 0;
  for (const auto& row : j) {
    EXPECT_FALSE(row.contains("error")) << row.dump();  // strategies fall back instead of failing
    if (row["strategy"] == "nvfp4_blackwell" && row["hardware"] == "a100-80gb")
      fallbacks += row["act"] == "bf16";
  }
  EXPECT_EQ(fallbacks, 16);
}

// visit_sweep gives the rows of run_sweep as values: each row once, whatever
// the thread count, with the text rows' numbers (to their 6 digits) and errors.
TEST(Sweep, VisitedRowsAreTheTextRows) {
  const SweepSpec s = small_spec();
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 2));
  for (unsigned threads : {1u, 3u}) {
    std::vector<int> seen(j.size(), 0);
    std::vector<double> time(j.size(), -1);
    std::vector<std::string> error(j.size());
    std::mutex m;
    visit_sweep(
        s,
        [&](std::uint64_t i, const SweepPoint& pt, const Prediction* p, std::string_view why) {
          const std::lock_guard<std::mutex> lock(m);
          ++seen[i];
          EXPECT_EQ(j[i]["model"], s.models[pt.model].id);
          EXPECT_EQ(j[i]["hardware"], s.devices[pt.device]->id);
          EXPECT_EQ(j[i]["batch"], pt.scenario.batch);
          EXPECT_EQ(j[i]["seq_len"], pt.scenario.seq_len);
          EXPECT_EQ(j[i]["act"], format_id(pt.scenario.precision.act));
          EXPECT_EQ((p == nullptr), !why.empty());
          if (p) time[i] = p->time_s;
          error[i] = why;
        },
        threads);
    for (std::size_t i = 0; i < j.size(); ++i) {
      EXPECT_EQ(seen[i], 1) << i;
      if (j[i].contains("error")) {
        EXPECT_EQ(error[i], j[i]["error"].get<std::string>());
      } else {
        EXPECT_NEAR(time[i], j[i]["time_s"].get<double>(), time[i] * 1e-5) << i;
      }
    }
  }
}

// An engine release reaches every row with what it runs differently on the
// row's device and tensor-parallel size (data/engines/vllm.json): vLLM
// 0.11.0's Triton attention masks gpt-oss's sliding windows on the A100
// (window_masking), not on the H100, whose FlashAttention 3 takes sinks; there
// the release runs the MXFP4 experts on Marlin (moe_kernel_releases, before 0.12.0).
TEST(Sweep, AnEngineReleaseReachesEachDeviceAndTensorParallelSize) {
  SweepSpec s;
  s.models = {load_model("gpt-oss-20b")};
  s.devices = {&registry().get("a100"), &registry().get("h100")};
  s.seq_lens = {32768};
  s.tps = {1, 2};
  const EngineRegistry& engines = EngineRegistry::built_in();
  s.options.engine = &engines.get("vllm");
  s.engine_version = "0.11.0";
  std::vector<double> time(4, -1), current(4, -1);
  std::vector<bool> masked(4), marlin(4);
  std::mutex mu;
  visit_sweep(
      s,
      [&](std::uint64_t i, const SweepPoint& pt, const Prediction* p, std::string_view why) {
        ASSERT_NE(p, nullptr) << why;
        const Device& d = *s.devices[pt.device];
        const Prediction alone =
            predict(s.models[0], d, pt.scenario,
                    with_engine_release(s.options, d, "0.11.0", pt.scenario.tp, engines));
        const Prediction now = predict(s.models[0], d, pt.scenario, s.options);
        const std::lock_guard<std::mutex> lock(mu);
        EXPECT_EQ(p->time_s, alone.time_s) << i;
        time[i] = p->time_s;
        current[i] = now.time_s;
        masked[i] = p->window_masking != nullptr;
        marlin[i] = p->moe_release != nullptr && p->moe_release->family == "marlin" &&
                    !p->moe_release->before_version.empty();
      },
      2);
  // Rows: (a100, tp 1), (a100, tp 2), (h100, tp 1), (h100, tp 2); every one
  // differs from the current release's.
  EXPECT_EQ(masked, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(marlin, (std::vector<bool>{false, false, true, true}));
  EXPECT_GT(time[0], current[0]);
  EXPECT_GT(time[1], current[1]);
  EXPECT_NE(time[2], current[2]);
  EXPECT_NE(time[3], current[3]);
  // The text rows are the same predictions.
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 1));
  ASSERT_EQ(j.size(), 4u);
  constexpr double kSixDigits = 1e-5;  // the text rows' precision
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(j[i]["time_s"].get<double>(), time[i], kSixDigits * time[i]) << i;
  s.engine_version = "0.11 beta!";
  EXPECT_THROW(run(s, SweepFormat::kCsv, 1), InvalidArgument);
}

TEST(Sweep, WhatTheVisitorThrowsReachesTheCaller) {
  const SweepSpec s = small_spec();
  EXPECT_THROW(visit_sweep(
                   s,
                   [](std::uint64_t i, const SweepPoint&, const Prediction*, std::string_view) {
                     if (i == 5) throw InvalidArgument("stop");
                   },
                   2),
               InvalidArgument);
  EXPECT_THROW(visit_sweep(s, {}, kMaxSweepThreads + 1), InvalidArgument);
  EXPECT_THROW(visit_sweep(s, {}, 1, 10), InvalidArgument);  // more rows than allowed
}

TEST(Sweep, SizeIsCapped) {
  SweepSpec s = small_spec();
  s.batches.assign(10'000, 1);
  s.seq_lens.assign(10'000, 1);
  EXPECT_THROW((void)sweep_rows(s), InvalidArgument);
  s.batches.clear();
  EXPECT_THROW((void)sweep_rows(s), InvalidArgument);
}

// ---------------------------------------------------------------- GEMM sweeps

GemmSweepSpec gemm_spec() {
  GemmSweepSpec s;
  s.devices = {&registry().get("h100"), &registry().get("a100")};
  s.ms = {1, 16, 4096};
  s.ns = {4096};
  s.ks = {4096, 14336};
  s.weights = {Format::kBf16, Format::kFp8};
  s.acts = {Format::kBf16, Format::kFp8};
  return s;
}

std::string run(const GemmSweepSpec& s, SweepFormat f, unsigned threads) {
  std::string out;
  run_sweep(
      s, f, [&](std::string_view chunk) { out.append(chunk); }, {}, threads);
  return out;
}

// Splits one CSV line without quoted fields.
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(line);
  while (std::getline(in, item, ',')) out.push_back(item);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

TEST(GemmSweep, GoldenRowsFromTheirDerivation) {
  GemmSweepSpec s;
  s.devices = {&registry().get("h100"), &registry().get("gb10")};
  s.ms = {1, 4096};
  s.ns = {4096};
  s.ks = {4096};
  s.weights = {Format::kBf16};
  s.acts = {Format::kBf16};
  s.options.mode = Mode::kIdeal;
  ASSERT_EQ(sweep_rows(s), 4u);
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 2));
  ASSERT_EQ(j.size(), 4u);
  // Row order: devices, then m (the last list varies fastest).
  EXPECT_EQ(j[0]["hardware"], "h100-sxm");
  EXPECT_EQ(j[0]["m"], 1);
  EXPECT_EQ(j[1]["m"], 4096);
  EXPECT_EQ(j[2]["hardware"], "gb10");
  // GEMM 4096^3 bf16 on H100 SXM, ideal (data/hardware/h100-sxm.json: bf16 dense
  // 989.4 TFLOP/s, 3.35 TB/s):
  //   flops = 2 m n k = 2 * 4096^3                  = 137,438,953,472
  //   bytes = A m k 2 + B k n 2 + C m n 2 = 3 * 4096^2 * 2 = 100,663,296 (67,108,864 read)
  //   ai    = flops / bytes = 4096 / 3              = 1,365.33 FLOP/B
  //   ridge = 989.4e12 / 3.35e12                    = 295.343 FLOP/B < ai: compute bound
  //   time  = flops / 989.4e12                      = 138.911 us (memory: 30.0487 us)
  const auto& big = j[1];
  EXPECT_EQ(big["mode"], "ideal");
  EXPECT_EQ(big["compute_format"], "bf16");
  EXPECT_EQ(big["bound"], "compute");
  EXPECT_NEAR(big["flops"].get<double>(), 137'438'953'472.0, 137'438'953'472.0 * 5e-6);
  EXPECT_NEAR(big["bytes"].get<double>(), 100'663'296.0, 100'663'296.0 * 5e-6);
  EXPECT_NEAR(big["bytes_read"].get<double>(), 67'108'864.0, 67'108'864.0 * 5e-6);
  EXPECT_NEAR(big["ai"].get<double>(), 1'365.33, 0.01);
  EXPECT_NEAR(big["ridge_ai"].get<double>(), 295.343, 0.001);
  EXPECT_NEAR(big["time_s"].get<double>(), 138.911e-6, 0.001e-6);
  EXPECT_NEAR(big["compute_time_s"].get<double>(), 138.911e-6, 0.001e-6);
  EXPECT_NEAR(big["memory_time_s"].get<double>(), 30.0487e-6, 0.0001e-6);
  EXPECT_NEAR(big["attained_flops_per_s"].get<double>(), 989.4e12, 0.001e12);
  EXPECT_EQ(big["weight_only"], false);
  // GEMV 1x4096x4096 bf16 on GB10, ideal (273 GB/s): memory bound,
  //   bytes = W 4096*4096*2 + x 4096*2 + y 4096*2 = 33,570,816; time = bytes / 273e9 = 122.97 us.
  const auto& gemv = j[2];
  EXPECT_EQ(gemv["bound"], "memory");
  EXPECT_NEAR(gemv["bytes"].get<double>(), 33'570'816.0, 33'570'816.0 * 5e-6);
  EXPECT_NEAR(gemv["time_s"].get<double>(), 122.97e-6, 0.01e-6);
  EXPECT_NEAR(gemv["ai"].get<double>(), 33'554'432.0 / 33'570'816.0, 1e-5);
}

TEST(GemmSweep, OneRowPerCombinationInOrderWithErrorRows) {
  const GemmSweepSpec s = gemm_spec();
  EXPECT_EQ(sweep_rows(s), 2u * 3 * 1 * 2 * 2 * 2);
  const std::string csv = run(s, SweepFormat::kCsv, 2);
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  const auto header = fields(line);
  ASSERT_EQ(header.size(), 23u) << line;
  EXPECT_EQ(line.rfind("hardware,mode,m,n,k,weights,act,compute_format,time_s,", 0), 0u);
  int rows = 0, errors = 0;
  std::vector<std::string> first;
  while (std::getline(in, line)) {
    ++rows;
    if (rows == 1) first = fields(line);
    // fp8 activations on the A100 (no fp8 tensor cores) are error rows, not failures.
    if (line.rfind("a100-80gb,", 0) == 0 && line.find(",fp8,") != std::string::npos &&
        fields(line)[6] == "fp8") {
      EXPECT_NE(line.find("cannot compute in fp8"), std::string::npos) << line;
      ++errors;
    } else {
      EXPECT_EQ(fields(line).size(), 23u) << line;
      EXPECT_EQ(fields(line).back(), "") << line;
    }
  }
  EXPECT_EQ(rows, 48);
  EXPECT_EQ(errors, 12);  // A100 x 3 m x 2 k x 2 weights with fp8 activations
  EXPECT_EQ((std::vector<std::string>(first.begin(), first.begin() + 8)),
            (std::vector<std::string>{"h100-sxm", "realistic", "1", "4096", "4096", "bf16", "bf16",
                                      "bf16"}));
  // fp8 weights with bf16 activations run weight-only on the A100 (dequantized to bf16).
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 1));
  bool found = false;
  for (const auto& row : j) {
    if (row["hardware"] == "a100-80gb" && row["weights"] == "fp8" && row["act"] == "bf16") {
      EXPECT_EQ(row["weight_only"], true);
      EXPECT_EQ(row["compute_format"], "bf16");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(GemmSweep, RowsMatchSingleGemms) {
  const GemmSweepSpec s = gemm_spec();
  const auto j = nlohmann::json::parse(run(s, SweepFormat::kJson, 3));
  ASSERT_EQ(j.size(), 48u);
  for (const auto& row : j) {
    if (row.contains("error")) continue;
    GemmProblem p;
    p.m = row["m"].get<std::int64_t>();
    p.n = row["n"].get<std::int64_t>();
    p.k = row["k"].get<std::int64_t>();
    p.weights = parse_format(row["weights"].get<std::string>());
    p.act = parse_format(row["act"].get<std::string>());
    const RooflineResult r = predict_gemm(registry().get(row["hardware"].get<std::string>()), p);
    EXPECT_NEAR(row["time_s"].get<double>(), r.time_s, r.time_s * 5e-6) << row.dump();
    EXPECT_NEAR(row["flops"].get<double>(), r.flops, r.flops * 5e-6);
    EXPECT_NEAR(row["bytes"].get<double>(), r.bytes, r.bytes * 5e-6);
    EXPECT_EQ(row["bound"], std::string(bound_name(r.bound)));
  }
}

TEST(GemmSweep, ThreadCountDoesNotChangeTheOutput) {
  const GemmSweepSpec s = gemm_spec();
  EXPECT_EQ(run(s, SweepFormat::kCsv, 1), run(s, SweepFormat::kCsv, 4));
  EXPECT_EQ(run(s, SweepFormat::kJsonLines, 1), run(s, SweepFormat::kJsonLines, 2));
}

TEST(GemmSweep, BadInputIsRefusedBeforeAnyRow) {
  auto refused = [](const GemmSweepSpec& s) {
    std::string out;
    EXPECT_THROW(run_sweep(s, SweepFormat::kCsv, [&](std::string_view c) { out.append(c); }),
                 InvalidArgument);
    EXPECT_TRUE(out.empty()) << out.substr(0, 200);
  };
  GemmSweepSpec s = gemm_spec();
  s.ms = {16, 0};
  refused(s);
  s.ms = {-4096};
  refused(s);
  s = gemm_spec();
  s.ks = {kMaxGemmDimension + 1};
  refused(s);
  s = gemm_spec();
  s.acts = {Format::kQ4_0};  // storage-only: no device computes in it
  refused(s);
  s = gemm_spec();
  s.weights.clear();
  refused(s);
  s = gemm_spec();
  s.ms.assign(10'000, 1);
  s.ns.assign(10'000, 1);  // 10^8 x 8 rows, past kMaxSweepRows
  refused(s);
  EXPECT_EQ(sweep_rows(gemm_spec(), 48), 48u);
  EXPECT_THROW((void)sweep_rows(gemm_spec(), 47), InvalidArgument);
  std::string out;
  EXPECT_THROW(run_sweep(
                   gemm_spec(), SweepFormat::kCsv, [&](std::string_view c) { out.append(c); }, {},
                   kMaxSweepThreads + 1),
               InvalidArgument);
}

}  // namespace
}  // namespace roofline
