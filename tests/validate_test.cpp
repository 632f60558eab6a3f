#include "roofline/validate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/model.h"
#include "roofline/predict.h"

namespace roofline {
namespace {

TEST(Validate, BuiltInCasesAllHaveSourcesAndEvaluate) {
  const auto cases = built_in_validation();
  ASSERT_GE(cases.size(), 20u);
  const Registry reg = Registry::built_in();
  const ValidationReport r = validate_cases(cases, reg);
  EXPECT_EQ(r.evaluated, static_cast<int>(cases.size()));
  for (const auto& row : r.rows) {
    EXPECT_TRUE(row.error.empty()) << row.c.id << ": " << row.error;
    EXPECT_FALSE(row.c.source.empty()) << row.c.id;
    EXPECT_GT(row.predicted, 0) << row.c.id;
  }
  EXPECT_GT(r.max_abs_error_pct, 0);
  EXPECT_LE(r.median_abs_error_pct, r.max_abs_error_pct);
}

// The realistic mode must be closer to measurements than the pure roofline:
// the achievable fractions and overheads are there for that reason.
TEST(Validate, RealisticModeBeatsThePureRoofline) {
  const auto cases = built_in_validation();
  const Registry reg = Registry::built_in();
  ModelOptions ideal;
  ideal.mode = Mode::kIdeal;
  EXPECT_LT(validate_cases(cases, reg).median_abs_error_pct,
            validate_cases(cases, reg, ideal).median_abs_error_pct);
}

nlohmann::json one_case() {
  return nlohmann::json::parse(
      R"({"sources": {"s": "a paper"}, "cases": [{"id": "X", "hardware": "h100",
      "model": "llama-3.1-8b", "framework": "f", "weights": "bf16", "act": "bf16", "kv": "bf16", "batch": 1,
      "prompt": 1, "gen": 128, "metric": "decode_tokens_per_s", "value": 150, "source": "s"}]})");
}

// A single case: the error is (predicted - measured) / measured.
TEST(Validate, ErrorIsRelativeToTheMeasurement) {
  const auto cases = parse_validation(one_case().dump(), "v.json");
  const Registry reg = Registry::built_in();
  const ValidationReport r = validate_cases(cases, reg);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_NEAR(r.rows[0].error_pct, (r.rows[0].predicted - 150) / 150 * 100, 1e-9);
  EXPECT_DOUBLE_EQ(r.median_abs_error_pct, std::fabs(r.rows[0].error_pct));
}

// Optimism reads every metric one way: a rate predicted above its
// measurement and a duration predicted below it are both faster. A decode
// rate measured at 1 token/s (far below any prediction: error > 0) and an
// end-to-end time measured at 1,000 s (far above: error < 0) are both
// optimistic, though their signed errors have opposite signs.
TEST(Validate, OptimismTurnsDurationsSigns) {
  auto doc = one_case();
  doc["cases"][0]["value"] = 1;
  doc["cases"].push_back(doc["cases"][0]);
  doc["cases"][1]["id"] = "Y";
  doc["cases"][1]["metric"] = "e2e_s";
  doc["cases"][1]["value"] = 1000;
  const ValidationReport r =
      validate_cases(parse_validation(doc.dump(), "v.json"), Registry::built_in());
  ASSERT_EQ(r.evaluated, 2);
  EXPECT_GT(r.rows[0].error_pct, 0);
  EXPECT_LT(r.rows[1].error_pct, 0);
  EXPECT_EQ(r.optimistic, 2);
  // The median of two is their mean; the duration counts as its speed,
  // measured / predicted - 1 = -e1 / (1 + e1 / 100).
  const double e1 = r.rows[1].error_pct;
  EXPECT_NEAR(r.median_optimism_pct, (r.rows[0].error_pct - e1 / (1 + e1 / 100)) / 2, 1e-9);
}

// Each case counts in the group of its source's key, beside its engine's and
// metric's: two cases of one source and one of another give two groups.
TEST(Validate, CasesAreGroupedByTheirSourcesKey) {
  auto doc = one_case();
  doc["sources"]["t"] = "another paper";
  doc["cases"].push_back(doc["cases"][0]);
  doc["cases"][1]["id"] = "Y";
  doc["cases"][1]["value"] = 100;
  doc["cases"].push_back(doc["cases"][0]);
  doc["cases"][2]["id"] = "Z";
  doc["cases"][2]["source"] = "t";
  const auto cases = parse_validation(doc.dump(), "v.json");
  EXPECT_EQ(cases[0].source_key, "s");
  EXPECT_EQ(cases[0].source, "a paper");
  const ValidationReport r = validate_cases(cases, Registry::built_in());
  std::map<std::string, int> rows;
  for (const auto& g : r.groups) {
    if (g.group.rfind("source=", 0) == 0) rows[g.group] = g.rows;
  }
  EXPECT_EQ(rows, (std::map<std::string, int>{{"source=s", 2}, {"source=t", 1}}));
}

TEST(Validate, SchemaIsStrict) {
  auto doc = one_case();
  doc["cases"][0]["colour"] = "red";
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
  doc = one_case();
  doc["cases"][0]["metric"] = "vibes";
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
  doc = one_case();
  doc["cases"][0]["source"] = "nowhere";
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
  doc = one_case();
  doc["cases"][0]["value"] = -1;
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
  doc = one_case();
  doc["cases"][0].erase("batch");
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
}

nlohmann::json one_serving_case(const std::string& metric) {
  auto doc = one_case();
  auto& c = doc["cases"][0];
  c["framework"] = "vllm";
  c["hardware"] = "h200";
  c["model"] = "llama-3.1-70b";
  c["weights"] = c["act"] = c["kv"] = "fp8";
  c["batch"] = 16;  // clients
  c["prompt"] = 1024;
  c["gen"] = 256;
  c["tp"] = 2;
  c["requests"] = 160;
  c["metric"] = metric;
  c["value"] = metric == "serving_ttft_s" ? 0.2 : 0.02;
  return doc;
}

// A serving case is the serving simulation of its benchmark: `batch` clients,
// its lengths, its TP, its request count (160 requests of 16 clients: 10
// rounds), the engine's own settings.
// one_serving_case's benchmark as roofline serving runs it: 16 clients of
// 1024/256 tokens, 10 rounds, Llama-3.1-70B fp8 at TP 2 on H200s with vLLM.
ServingScenario one_serving_benchmark() {
  ServingScenario s;
  s.isl = 1024;
  s.osl = 256;
  s.concurrency = 16;
  s.rounds = 10;
  s.step.tp = 2;
  s.step.precision.weights = s.step.precision.act = s.step.precision.kv = Format::kFp8;
  return s;
}

ServingResult serve_with_vllm(const ServingScenario& s, const Registry& reg) {
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("vllm");
  return predict_serving(load_model("llama-3.1-70b"), reg.get("h200"), s, o);
}

TEST(Validate, ServingCasesAreTheServingSimulation) {
  const Registry reg = Registry::built_in();
  const ServingResult expected = serve_with_vllm(one_serving_benchmark(), reg);
  ASSERT_GT(expected.tpot_s, 0);
  for (const std::string metric : {"serving_ttft_s", "serving_tpot_s"}) {
    const auto cases = parse_validation(one_serving_case(metric).dump(), "v.json");
    ASSERT_EQ(cases.size(), 1u);
    EXPECT_EQ(cases[0].tp, 2);
    EXPECT_EQ(cases[0].requests, 160);
    const ValidationReport r = validate_cases(cases, reg, {}, "case");
    ASSERT_TRUE(r.rows[0].error.empty()) << r.rows[0].error;
    EXPECT_EQ(r.rows[0].engine, "vllm");
    EXPECT_DOUBLE_EQ(r.rows[0].predicted,
                     metric == "serving_ttft_s" ? expected.ttft_s : expected.tpot_s);
  }
}

// A case's engine build reaches the prediction: a May 2024 llama.cpp prompt of
// Q4_K_M weights runs slower (dequantize, then cuBLAS) than today's MMQ.
TEST(Validate, CasesCarryTheEngineBuild) {
  const Registry reg = Registry::built_in();
  auto doc = one_case();
  auto& c = doc["cases"][0];
  c["hardware"] = "a100-80gb";
  c["framework"] = "llama.cpp";
  c["weights"] = "q4_k_m";
  c["act"] = "fp16";
  c["kv"] = "fp16";
  c["prompt"] = 512;
  c["gen"] = 0;
  c["metric"] = "prefill_tokens_per_s";
  c["value"] = 6000;
  const auto current = parse_validation(doc.dump(), "v.json");
  EXPECT_EQ(current[0].engine_build, 0);
  c["engine_build"] = "2024-05";
  const auto dated = parse_validation(doc.dump(), "v.json");
  EXPECT_EQ(dated[0].engine_build, 20240531);
  const double now = validate_cases(current, reg, {}, "case").rows[0].predicted;
  const double then = validate_cases(dated, reg, {}, "case").rows[0].predicted;
  EXPECT_LT(then, now);
  for (const nlohmann::json& bad :
       {nlohmann::json("May 2024"), nlohmann::json(202405), nlohmann::json("2024-13")}) {
    c["engine_build"] = bad;
    EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError) << bad;
  }
}

// llama-bench's pp2048 @ d4096: a prefill case may say how many tokens are
// cached before its prompt ("cached"), and is predicted at that depth.
TEST(Validate, PrefillCasesCarryTheCachedTokens) {
  const Registry reg = Registry::built_in();
  auto doc = one_case();
  auto& c = doc["cases"][0];
  c["prompt"] = 2048;
  c["gen"] = 0;
  c["metric"] = "prefill_tokens_per_s";
  c["value"] = 9000;
  const double alone =
      validate_cases(parse_validation(doc.dump(), "v.json"), reg).rows[0].predicted;
  c["cached"] = 4096;
  const auto deep = parse_validation(doc.dump(), "v.json");
  EXPECT_EQ(deep[0].cached, 4096);
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 2048;
  s.cached = 4096;
  const ModelSpec m = load_model("llama-3.1-8b");
  EXPECT_DOUBLE_EQ(validate_cases(deep, reg).rows[0].predicted,
                   2048 / predict(m, reg.get("h100"), s).time_s);
  EXPECT_LT(validate_cases(deep, reg).rows[0].predicted, alone);
  for (const nlohmann::json& bad :
       {nlohmann::json(0), nlohmann::json(-5), nlohmann::json("4k"), nlohmann::json(kMaxSeqLen)}) {
    c["cached"] = bad;
    EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError) << bad;
  }
  // A decode case's depth is its prompt.
  auto decode_case = one_case();
  decode_case["cases"][0]["cached"] = 4096;
  EXPECT_THROW((void)parse_validation(decode_case.dump(), "v.json"), ParseError);
}

// Tensor parallelism reaches static-batch cases too: at TP 2 a decode step
// streams half the weights a GPU, so it is faster than at TP 1.
TEST(Validate, TensorParallelCasesSplitTheModel) {
  const Registry reg = Registry::built_in();
  auto doc = one_case();
  const double tp1 = validate_cases(parse_validation(doc.dump(), "v.json"), reg).rows[0].predicted;
  doc["cases"][0]["tp"] = 2;
  const double tp2 = validate_cases(parse_validation(doc.dump(), "v.json"), reg).rows[0].predicted;
  EXPECT_GT(tp2, tp1);
}

// TensorRT-LLM's throughput tables give output tokens/s per GPU (output
// tokens x batch / total latency / TP): the same static batch as
// output_tokens_per_s, over the instance's GPUs.
TEST(Validate, PerGpuThroughputIsTheInstancesOverItsGpus) {
  const Registry reg = Registry::built_in();
  auto doc = one_case();
  doc["cases"][0]["tp"] = 4;
  doc["cases"][0]["batch"] = 64;
  doc["cases"][0]["prompt"] = 128;
  doc["cases"][0]["metric"] = "output_tokens_per_s";
  const double total =
      validate_cases(parse_validation(doc.dump(), "v.json"), reg).rows[0].predicted;
  doc["cases"][0]["metric"] = "output_tokens_per_s_per_gpu";
  const double per_gpu =
      validate_cases(parse_validation(doc.dump(), "v.json"), reg).rows[0].predicted;
  EXPECT_DOUBLE_EQ(per_gpu, total / 4);
}

TEST(Validate, ServingCasesNeedTheirLengthsAndSaneSizes) {
  const auto rejects = [](const std::function<void(nlohmann::json&)>& edit) {
    auto doc = one_serving_case("serving_tpot_s");
    edit(doc["cases"][0]);
    EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError) << doc.dump();
  };
  rejects([](nlohmann::json& c) { c["prompt"] = 0; });            // input length not stated
  rejects([](nlohmann::json& c) { c["gen"] = 1; });               // no TPOT from one token
  rejects([](nlohmann::json& c) { c["requests"] = 8; });          // fewer requests than clients
  rejects([](nlohmann::json& c) { c["requests"] = 1LL << 40; });  // absurd
  rejects([](nlohmann::json& c) { c["tp"] = 0; });
  rejects([](nlohmann::json& c) { c["tp"] = 1 << 20; });
  rejects([](nlohmann::json& c) { c["ep"] = 3; });            // does not divide tp 2
  rejects([](nlohmann::json& c) { c["attention_dp"] = 4; });  // more groups than GPUs
  rejects([](nlohmann::json& c) { c["attention_dp"] = 0; });
  rejects([](nlohmann::json& c) {  // attention data parallelism belongs to serving cases only
    c.erase("requests");
    c["metric"] = "decode_tokens_per_s";
    c["attention_dp"] = 2;
  });
  rejects([](nlohmann::json& c) { c["tp"] = 2.5; });
  rejects([](nlohmann::json& c) {  // a request count belongs to serving cases only
    c["metric"] = "decode_tokens_per_s";
  });
  rejects([](nlohmann::json& c) { c["prompt_min"] = 1025; });  // above the prompt
  rejects([](nlohmann::json& c) { c["gen_min"] = 0; });
  rejects([](nlohmann::json& c) { c["token_budget"] = 1LL << 40; });
  rejects([](nlohmann::json& c) { c["max_running"] = -1; });
  rejects([](nlohmann::json& c) { c["metric"] = "serving_ttft_p99_s"; });
  rejects([](nlohmann::json& c) {  // random lengths belong to serving cases only
    c.erase("requests");
    c["metric"] = "decode_tokens_per_s";
    c["gen_min"] = 128;
  });
  rejects(
      [](nlohmann::json& c) { c["recipe"] = "aiconfigurator"; });  // cases: engine, trtllm-bench
  rejects([](nlohmann::json& c) { c["kv_memory_share"] = 2; });
  rejects([](nlohmann::json& c) { c["kv_memory_share"] = "0.9"; });
  rejects([](nlohmann::json& c) { c["pp"] = 0; });
  rejects([](nlohmann::json& c) { c["pp"] = 1000; });  // tp 2 x pp 1000 GPUs
  rejects([](nlohmann::json& c) {  // a benchmark's settings belong to serving cases only
    c.erase("requests");
    c["metric"] = "decode_tokens_per_s";
    c["recipe"] = "trtllm-bench";
  });
}

// A burst's throughput, as `trtllm-bench throughput` reports it (every
// output token over the time to the last one): the serving simulation of all
// its requests sent at once, with the recipe, KV share and pipeline stages
// the case gives.
TEST(Validate, ABurstsThroughputIsTheTrtllmBenchRun) {
  const Registry reg = Registry::built_in();
  auto doc = one_serving_case("serving_output_tokens_per_s");
  auto& c = doc["cases"][0];
  c["framework"] = "tensorrt-llm";
  c["batch"] = c["requests"] = 64;
  c["pp"] = 2;
  c["recipe"] = "trtllm-bench";
  c["kv_memory_share"] = 0.95;
  c["value"] = 5000;
  ServingScenario s = one_serving_benchmark();
  s.concurrency = 64;
  s.rounds = 1;
  s.step.pp = 2;
  s.recipe = ServingRecipe::kBenchmarkTuning;
  s.kv_memory_share = 0.95;
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("trtllm");
  const ServingResult expected =
      predict_serving(load_model("llama-3.1-70b"), reg.get("h200"), s, o);
  ASSERT_GT(expected.output_tokens_per_s, 0);
  const auto cases = parse_validation(doc.dump(), "v.json");
  EXPECT_EQ(cases[0].pp, 2);
  const ValidationReport r = validate_cases(cases, reg, {}, "case");
  ASSERT_TRUE(r.rows[0].error.empty()) << r.rows[0].error;
  EXPECT_DOUBLE_EQ(r.rows[0].predicted, expected.output_tokens_per_s);
  // Without the recipe the engine runs its own limits: another prediction.
  c.erase("recipe");
  EXPECT_NE(
      validate_cases(parse_validation(doc.dump(), "v.json"), reg, {}, "case").rows[0].predicted,
      expected.output_tokens_per_s);
}

// A serving case's attention data parallelism (SGLang's --dp-size with
// --enable-dp-attention) reaches the simulation as roofline serving's
// --attention-dp: Llama-3.1-70B fp8 at TP 2 in two attention groups.
TEST(Validate, ServingCasesCarryAttentionDataParallelism) {
  const Registry reg = Registry::built_in();
  ServingScenario s = one_serving_benchmark();
  s.step.attention_dp = 2;
  const ServingResult expected = serve_with_vllm(s, reg);
  const ServingResult plain = serve_with_vllm(one_serving_benchmark(), reg);
  ASSERT_GT(expected.tpot_s, 0);
  EXPECT_NE(expected.tpot_s, plain.tpot_s);
  auto doc = one_serving_case("serving_tpot_s");
  doc["cases"][0]["attention_dp"] = 2;
  const auto cases = parse_validation(doc.dump(), "v.json");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].attention_dp, 2);
  const ValidationReport r = validate_cases(cases, reg, {}, "case");
  ASSERT_TRUE(r.rows[0].error.empty()) << r.rows[0].error;
  EXPECT_DOUBLE_EQ(r.rows[0].predicted, expected.tpot_s);
  EXPECT_EQ(parse_validation(one_serving_case("serving_tpot_s").dump(), "v.json")[0].attention_dp,
            1);  // absent: one group
}

// A serving case's random lengths, the deployment's scheduler limits and the
// medians reach the simulation as they would from roofline serving.
TEST(Validate, ServingCasesCarryLengthsLimitsAndMedians) {
  const Registry reg = Registry::built_in();
  ServingScenario s = one_serving_benchmark();
  s.isl_min = 819;
  s.osl_min = 204;
  s.token_budget = 4096;
  s.max_running = 8;
  const ServingResult expected = serve_with_vllm(s, reg);
  ASSERT_GT(expected.ttft.p50, 0);
  for (const std::string metric : {"serving_ttft_p50_s", "serving_tpot_p50_s", "serving_ttft_s"}) {
    auto doc = one_serving_case(metric);
    auto& c = doc["cases"][0];
    c["prompt_min"] = 819;
    c["gen_min"] = 204;
    c["token_budget"] = 4096;
    c["max_running"] = 8;
    const auto cases = parse_validation(doc.dump(), "v.json");
    ASSERT_EQ(cases.size(), 1u);
    EXPECT_EQ(cases[0].prompt_min, 819);
    EXPECT_EQ(cases[0].max_running, 8);
    const ValidationReport r = validate_cases(cases, reg, {}, "case");
    ASSERT_TRUE(r.rows[0].error.empty()) << r.rows[0].error;
    const double want = metric == "serving_ttft_p50_s"   ? expected.ttft.p50
                        : metric == "serving_tpot_p50_s" ? expected.tpot.p50
                                                         : expected.ttft.mean;
    EXPECT_DOUBLE_EQ(r.rows[0].predicted, want) << metric;
  }
}

// A case's engine release and its deployment's overlap scheduling reach the
// simulation as they would from roofline serving: vLLM 0.11.0 forms each batch
// as its step starts unless the deployment turned --async-scheduling on.
TEST(Validate, ServingCasesCarryTheReleaseAndSchedulerSwitches) {
  const Registry reg = Registry::built_in();
  ServingScenario s = one_serving_benchmark();
  s.engine_version = "0.11.0";
  const ServingResult as_released = serve_with_vllm(s, reg);
  s.overlap = DeploymentSwitch::kOn;
  const ServingResult opted_in = serve_with_vllm(s, reg);
  ASSERT_FALSE(as_released.formed_a_step_ahead);
  ASSERT_TRUE(opted_in.formed_a_step_ahead);
  auto doc = one_serving_case("serving_ttft_s");
  auto& c = doc["cases"][0];
  c["engine_version"] = "0.11.0";
  const auto released = parse_validation(doc.dump(), "v.json");
  EXPECT_EQ(released[0].engine_version, "0.11.0");
  EXPECT_EQ(released[0].overlap, DeploymentSwitch::kEngine);
  EXPECT_DOUBLE_EQ(validate_cases(released, reg, {}, "case").rows[0].predicted,
                   as_released.ttft.mean);
  c["overlap_scheduling"] = "on";
  const auto opted = parse_validation(doc.dump(), "v.json");
  EXPECT_EQ(opted[0].overlap, DeploymentSwitch::kOn);
  EXPECT_DOUBLE_EQ(validate_cases(opted, reg, {}, "case").rows[0].predicted, opted_in.ttft.mean);

  for (const nlohmann::json& bad :
       {nlohmann::json("0.11;rm"), nlohmann::json("v0.11.0"), nlohmann::json("0..11"),
        nlohmann::json(11), nlohmann::json("0.11.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0")}) {
    auto d = one_serving_case("serving_ttft_s");
    d["cases"][0]["engine_version"] = bad;
    EXPECT_THROW((void)parse_validation(d.dump(), "v.json"), ParseError) << bad;
  }
  // Chunked prefill turned off reaches it too (vLLM chunks by default).
  s.overlap = DeploymentSwitch::kEngine;
  s.chunked_prefill = DeploymentSwitch::kOff;
  const ServingResult whole = serve_with_vllm(s, reg);
  c.erase("overlap_scheduling");
  c["chunked_prefill"] = "off";
  const auto unchunked = parse_validation(doc.dump(), "v.json");
  EXPECT_EQ(unchunked[0].chunked_prefill, DeploymentSwitch::kOff);
  EXPECT_DOUBLE_EQ(validate_cases(unchunked, reg, {}, "case").rows[0].predicted, whole.ttft.mean);
  for (const char* key : {"overlap_scheduling", "chunked_prefill"}) {
    for (const nlohmann::json& bad :
         {nlohmann::json("engine"), nlohmann::json("yes"), nlohmann::json(true)}) {
      auto d = one_serving_case("serving_ttft_s");
      d["cases"][0][key] = bad;
      EXPECT_THROW((void)parse_validation(d.dump(), "v.json"), ParseError) << key << bad;
    }
  }
  {  // releases as engines name them
    auto d = one_serving_case("serving_ttft_s");
    d["cases"][0]["engine_version"] = "1.2.0rc6.post2";
    EXPECT_EQ(parse_validation(d.dump(), "v.json")[0].engine_version, "1.2.0rc6.post2");
  }
  // Both belong to serving cases only.
  auto d = one_case();
  d["cases"][0]["engine_version"] = "0.11.0";
  EXPECT_THROW((void)parse_validation(d.dump(), "v.json"), ParseError);
}

// LLMPerf's inter-token latency is a request's time from sending to its last
// token over its tokens streamed (ray-project/llmperf token_benchmark_ray.py:
// the sum of the gaps, the TTFT first, divided by the chunks received), so it
// carries the TTFT: (TTFT + (gen - 1) x TPOT) / gen, above the TPOT.
TEST(Validate, LlmperfInterTokenLatencyCarriesTheFirstToken) {
  const Registry reg = Registry::built_in();
  const ServingResult expected = serve_with_vllm(one_serving_benchmark(), reg);
  const auto cases =
      parse_validation(one_serving_case("serving_itl_llmperf_p50_s").dump(), "v.json");
  const ValidationReport r = validate_cases(cases, reg, {}, "case");
  ASSERT_TRUE(r.rows[0].error.empty()) << r.rows[0].error;
  // Every output is 256 tokens: the median request's end-to-end time over 256.
  EXPECT_DOUBLE_EQ(r.rows[0].predicted, expected.e2e.p50 / 256);
  // One request's identity, e2e = TTFT + 255 TPOT, taken at the means: the
  // latency lies between the TPOT and the TPOT plus the TTFT's share.
  const double tolerance = 0.05;  // medians against means of near-identical requests
  EXPECT_GT(r.rows[0].predicted, expected.tpot.mean);
  EXPECT_NEAR(r.rows[0].predicted, (expected.ttft.mean + 255 * expected.tpot.mean) / 256,
              tolerance * r.rows[0].predicted);

  // Outputs of random lengths have no such closed form: refused.
  auto doc = one_serving_case("serving_itl_llmperf_p50_s");
  doc["cases"][0]["gen_min"] = 128;
  EXPECT_THROW((void)parse_validation(doc.dump(), "v.json"), ParseError);
  doc["cases"][0]["gen_min"] = 256;  // uniform on [256, 256]: one length
  EXPECT_NO_THROW((void)parse_validation(doc.dump(), "v.json"));
}

TEST(Validate, UnknownDevicesBecomeRowErrors) {
  auto doc = one_case();
  doc["cases"][0]["hardware"] = "h9000";
  const Registry reg = Registry::built_in();
  const ValidationReport r = validate_cases(parse_validation(doc.dump(), "v.json"), reg);
  EXPECT_EQ(r.evaluated, 0);
  EXPECT_NE(r.rows[0].error.find("h9000"), std::string::npos);
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

const char* const kServingHeader =
    "id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,"
    "moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,"
    "prefill_batch_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,"
    "prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size,decode_batch_size,"
    "decode_num_workers,decode_tp_size,decode_pp_size,decode_attention_dp_size,"
    "decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n";

// One aggregated Llama-3.1-70B fp8 run on an H200 at TP 2, concurrency 16.
std::string serving_row(const std::string& model, const std::string& tpot = "20.5",
                        const std::string& tp = "2") {
  return "r1,vllm,0.12.0," + model + ",h200_sxm,fp8,agg,1024,256,fp8,fp8,16," + tp +
         ",1,1,,,,,,,,,,,,,,,,," + "150.0," + tpot + "\n";
}

// Under attention data parallelism batch_size is a rank's batch: the clients
// are the id's "_c<N>_", else batch x attention_dp.
TEST(ServingRuns, AttentionDpRowsCountEveryRanksClients) {
  const std::string row_dp =
      "r_agg_c64_tp4,vllm,0.12.0,m,h200_sxm,fp8,agg,1024,256,fp8,fp8,16,4,1,4,,,,,,,,,,,,,,,,,"
      "150.0,20.5\n";
  const std::string row_no_id =
      "r2,vllm,0.12.0,m,h200_sxm,fp8,agg,1024,256,fp8,fp8,16,4,1,4,,,,,,,,,,,,,,,,,150.0,20.5\n";
  const std::string row_cfg_first =
      "x_cfg12_c8_y,vllm,0.12.0,m,h200_sxm,fp8,agg,1024,256,fp8,fp8,8,2,1,,,,,,,,,,,,,,,,,,"
      "150.0,20.5\n";
  const auto runs =
      parse_serving_runs(std::string(kServingHeader) + row_dp + row_no_id + row_cfg_first, "t.csv");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].concurrency, 64);
  EXPECT_EQ(runs[1].concurrency, 16 * 4);
  EXPECT_EQ(runs[2].concurrency, 8);  // the first "_c<digits>_" of the id
}

// A blank attention_dp_size with batch_size the id's clients over tp_size (a
// rank's batch) is attention DP over the tp_size GPUs: AIConfigurator writes
// that deployment tp_size 1, attention_dp_size N. A written 1, a batch_size
// equal to the clients, or no clients in the id leave the row as written.
TEST(ServingRuns, ARanksBatchWithABlankAttentionDpIsReadAsAttentionDp) {
  auto row = [](const std::string& id, const std::string& batch, const std::string& dp) {
    return id + ",trtllm,1.3.0rc1,m,b200_sxm,fp4,agg,4000,1000,nvfp4,nvfp4," + batch + ",4,1," +
           dp + ",1,4,,,,,,,,,,,,,,,588.6,90.8\n";
  };
  const auto runs = parse_serving_runs(std::string(kServingHeader) +
                                           row("a_agg_4000x1000_c224_tp4_epnone_1", "56", "") +
                                           row("b_agg_4000x1000_c224_tp4_epnone_1", "56", "1") +
                                           row("c_agg_4000x1000_c56_tp4_epnone_1", "56", "") +
                                           row("d_agg_4000x1000_c_tp4_epnone_1", "56", "") +
                                           row("e_agg_4000x1000_c200_tp4_epnone_1", "56", ""),
                                       "t.csv");
  ASSERT_EQ(runs.size(), 5u);
  EXPECT_EQ(runs[0].tp, 1);
  EXPECT_EQ(runs[0].attention_dp, 4);
  EXPECT_EQ(runs[0].concurrency, 224);  // 56 a rank x 4 ranks
  EXPECT_NE(runs[0].layout_note.find("read as attention DP 4"), std::string::npos)
      << runs[0].layout_note;
  for (std::size_t i = 1; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].tp, 4) << runs[i].id;
    EXPECT_EQ(runs[i].attention_dp, 1) << runs[i].id;
    EXPECT_TRUE(runs[i].layout_note.empty()) << runs[i].id;
  }
  EXPECT_EQ(runs[3].concurrency, 56);   // no clients in the id: batch_size as written
  EXPECT_EQ(runs[4].concurrency, 200);  // the id's clients, not batch x tp: as written
}

// Rows written tp_size N x N with moe_tp_size = moe_ep_size = N, or tp_size N
// and attention_dp_size N with moe 1 x N x N, are the deployment of N GPUs
// with expert parallelism N (their ids say "_tpN_epN_"; unlabelled, only past
// 8 GPUs); rows whose id names other sizes, or whose factors differ, stand as
// written.
TEST(ServingRuns, TpTimesEpRowsAreTheirDeployment) {
  auto row = [](const std::string& id, const std::string& tp, const std::string& dp,
                const std::string& moe_tp, const std::string& moe_ep) {
    return id + ",sglang,0.5,m,b200_sxm,fp8,agg,1024,1024,fp8,fp8,16," + tp + ",1," + dp + "," +
           moe_tp + "," + moe_ep + ",,,,,,,,,,,,,,,150.0,20.5\n";
  };
  const auto runs = parse_serving_runs(
      std::string(kServingHeader) + row("a_agg_1024x1024_c16_tp4_ep4_7", "16", "1", "4", "4") +
          row("b_agg_1024x1024_c16_cfg3", "64", "1", "8", "8") +
          row("c_agg_1024x1024_c128_tp4_ep4_9", "1", "16", "4", "4") +
          row("d_agg_128x128_c16_tp4_epnone_2", "4", "", "2", "2") +
          row("e_agg_1024x1024_c16_cfg4", "8", "1", "2", "4") +
          row("f_agg_1024x1024_c16_tp8_ep2_1", "16", "1", "4", "4") +
          row("g_agg_1024x1024_c16_cfg5", "4", "1", "2", "2") +
          row("h_agg_1024x1024_c128_tp2_ep2_3", "2", "2", "1", "4") +
          row("i_agg_1024x1024_c16_cfg6", "4", "4", "1", "16") +
          row("j_agg_1024x1024_c16_cfg7", "2", "2", "1", "4") +
          row("k_agg_1024x1024_c16_tp4_ep1_8", "2", "2", "1", "4"),
      "t.csv");
  ASSERT_EQ(runs.size(), 11u);
  auto layout = [](const ServingRun& r) {
    return std::array<std::int64_t, 4>{r.tp, r.attention_dp, r.moe_tp, r.moe_ep};
  };
  using L = std::array<std::int64_t, 4>;
  EXPECT_EQ(layout(runs[0]), (L{4, 1, 1, 4}));  // the id's TP 4, EP 4: 4 GPUs
  EXPECT_NE(runs[0].layout_note.find("read as 4 GPUs"), std::string::npos) << runs[0].layout_note;
  EXPECT_TRUE(runs[3].layout_note.empty());
  EXPECT_EQ(layout(runs[1]), (L{8, 1, 1, 8}));   // no label: the equal factors
  EXPECT_EQ(layout(runs[2]), (L{1, 4, 1, 4}));   // attention DP 4, EP 4
  EXPECT_EQ(runs[2].concurrency, 128);           // the id's clients
  EXPECT_EQ(layout(runs[3]), (L{4, 1, 2, 2}));   // the id says TP 4: 4 GPUs as written
  EXPECT_EQ(layout(runs[4]), (L{8, 1, 2, 4}));   // unequal factors: as written
  EXPECT_EQ(layout(runs[5]), (L{16, 1, 4, 4}));  // the id names other sizes: as written
  EXPECT_EQ(layout(runs[6]), (L{4, 1, 2, 2}));   // no label, within 8 GPUs: as written
  EXPECT_EQ(layout(runs[7]), (L{2, 1, 1, 2}));   // TP 2 x attention DP 2, moe 1 x 4: its id's
  EXPECT_EQ(runs[7].concurrency, 128);           // 2 GPUs, TP 2, EP 2, the id's clients
  EXPECT_NE(runs[7].layout_note.find("read as 2 GPUs"), std::string::npos) << runs[7].layout_note;
  EXPECT_EQ(layout(runs[8]), (L{4, 1, 1, 4}));   // no label, 16 GPUs written: 4
  EXPECT_EQ(layout(runs[9]), (L{2, 2, 1, 4}));   // no label, within 8 GPUs: as written
  EXPECT_EQ(layout(runs[10]), (L{2, 2, 1, 4}));  // the id names other sizes: as written
}

TEST(ServingRuns, BuiltInDevelopmentSetLoadsWholly) {
  const std::vector<ServingRun> runs = built_in_serving_runs();
  // reference/serving-measurements/README.md: 2,101 runs (1,502 agg, 599 disagg).
  ASSERT_EQ(runs.size(), 2101u);
  EXPECT_EQ(
      std::count_if(runs.begin(), runs.end(), [](const ServingRun& r) { return r.mode == "agg"; }),
      1502);
}

// A run recorded under two ids counts once as a repeat: every field but the
// id must match as read (another TPOT, or clients the id reads otherwise, is
// another run).
TEST(ServingRuns, RepeatedRunsAreCounted) {
  const std::string a = serving_row("m");
  std::string b = a;
  b.replace(0, 2, "r9");                           // the same run, another id
  const std::string c = serving_row("m", "20.6");  // another TPOT: another run
  const auto runs = parse_serving_runs(std::string(kServingHeader) + a + b + c + b, "t.csv");
  EXPECT_EQ(repeated_serving_runs(runs), 2);
  EXPECT_EQ(repeated_serving_runs(parse_serving_runs(std::string(kServingHeader) + a + c, "t.csv")),
            0);
  // The development set: 157 of its 2,101 rows repeat another's every column
  // but the id; 14 of those are read differently, their ids labelling the
  // TP x EP layout one way and the other not (undo_tp_times_ep: 13 written
  // tp_size N x N, 1 written TP 2 x attention DP 2 within 8 GPUs), so 143
  // repeat as read.
  EXPECT_EQ(repeated_serving_runs(built_in_serving_runs()), 143);
}

// One configuration measured at 10 ms and 5 ms TPOT: the best single
// prediction, 2ab / (a + b) = 6.67 ms, misses both by (10 - 5) / 15 = 33.3%.
// Rows of another configuration (TP 4) or within kConflictRatio are no conflict.
TEST(ServingRuns, ConflictingMeasurementsBoundTheErrorAnyModelCanReach) {
  std::string fast = serving_row("m", "5.0"), slow = serving_row("m", "10.0");
  slow.replace(0, 2, "r2");
  slow.replace(slow.find("0.12.0"), 6, "0.13.0");  // another release of the engine
  const std::string other_layout = serving_row("m", "20.0", "4");
  const std::string close = serving_row("n", "6.0"), close2 = serving_row("n", "7.0");
  const auto runs = parse_serving_runs(
      std::string(kServingHeader) + slow + other_layout + fast + close + close2, "t.csv");
  const auto conflicts = measurement_conflicts(runs);
  ASSERT_EQ(conflicts.size(), 1u);  // 7 / 6 = 1.17 is under the 1.25 ratio
  const MeasurementConflict& c = conflicts.front();
  ASSERT_EQ(c.ids.size(), 2u);
  EXPECT_EQ(c.tpot_ms.front(), 5.0);  // fastest first
  EXPECT_DOUBLE_EQ(c.ratio, 2.0);
  constexpr double kFloorPct = 100.0 * 5 / 15;
  EXPECT_DOUBLE_EQ(c.floor_error_pct, kFloorPct);
  EXPECT_TRUE(c.across_releases);
  EXPECT_EQ(measurement_conflicts(runs, 1.1).size(), 2u);  // a lower bar takes the 1.17 pair
  // The development set's aggregated rows: 14 configurations 25% or more apart as
  // the columns give them, 12 across releases, most of those TensorRT-LLM
  // 1.2.0rc6.post2 against post3 (docs/VALIDATION.md, session 19). The post3 runs
  // were InferenceX's MTP benchmarks (their harness note): with their draft
  // tokens they are other configurations; so are the vLLM 0.17.0 MiniMax-M2.5
  // runs, whose script enabled expert parallelism on every row, against the
  // 0.19.0 ones. 3 conflicts remain, 1 across releases.
  std::vector<ServingRun> aggregated, as_written;
  for (const ServingRun& r : built_in_serving_runs())
    if (r.mode == "agg") aggregated.push_back(r);
  // The same file read as a user's: every harness setting off.
  for (const ServingRun& r :
       load_serving_runs(std::string(ROOFLINE_SOURCE_DATA_DIR) + "/validation/serving-dev.csv"))
    if (r.mode == "agg") as_written.push_back(r);
  ASSERT_EQ(as_written.size(), aggregated.size());
  const auto across = [](const std::vector<MeasurementConflict>& v) {
    return std::count_if(v.begin(), v.end(), [](const auto& x) { return x.across_releases; });
  };
  const auto columns_only = measurement_conflicts(as_written);
  EXPECT_EQ(columns_only.size(), 14u);
  EXPECT_EQ(across(columns_only), 12);
  const auto dev = measurement_conflicts(aggregated);
  EXPECT_EQ(dev.size(), 3u);
  EXPECT_EQ(across(dev), 1);
}

// Harness notes are strict: known keys only, every setting sourced, whole
// draft counts from 1 to kMaxDraftTokens, one note per set of rows.
TEST(ServingHarnesses, NotesAreStrict) {
  const auto doc = [](const std::string& harness_fields, const std::string& extra = "") {
    return R"({"about": "a", "sources": {"s": "a script"}, "harnesses": [{"id": "h",
      "benchmark": "b", "match": {"backend": "trtllm", "backend_version": "1.0",
      "system": "b200_sxm", "model_path": "deepseek-ai/DeepSeek-R1", "precision": "fp8"},
      "source": "s")" +
           harness_fields + "}" + extra + "]}";
  };
  const std::string mtp =
      R"(, "speculative_decoding": {"method": "mtp", "draft_tokens": 3,
      "draft_tokens_with_attention_dp": 1, "source": "s"})";
  const std::string limits =
      R"(, "deployment": {"max_batch_attention_dp_divisor": 8, "token_budget_headroom": 64,
      "token_budget_round_to": 64, "source": "s"}, "client": {"range_ratio": 0.8, "source": "s"})";
  const auto notes = parse_serving_harnesses(doc(mtp + limits), "h.json");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].draft_tokens, 3);
  EXPECT_EQ(notes[0].draft_tokens_with_attention_dp, 1);
  EXPECT_EQ(notes[0].max_batch_attention_dp_divisor, 8);
  EXPECT_EQ(notes[0].token_budget_round_to, 64);
  EXPECT_EQ(notes[0].range_ratio, 0.8);
  EXPECT_EQ(notes[0].source, "a script; a script; a script; a script");
  EXPECT_EQ(parse_serving_harnesses(doc(""), "h.json")[0].draft_tokens, 0);  // no settings: none
  const auto bad = [&](const std::string& text, const char* needle) {
    try {
      (void)parse_serving_harnesses(text, "h.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  bad(doc(mtp + R"(, "acceptance": 0.7)"), "acceptance");  // unknown key
  bad(doc(R"(, "speculative_decoding": {"method": "mtp", "draft_tokens": 3,
      "draft_tokens_with_attention_dp": 1})"),
      "source");  // a setting without its source
  bad(doc(R"(, "speculative_decoding": {"method": "mtp", "draft_tokens": 0,
      "draft_tokens_with_attention_dp": 1, "source": "s"})"),
      "draft_tokens");
  bad(doc(R"(, "speculative_decoding": {"method": "mtp", "draft_tokens": 2.5,
      "draft_tokens_with_attention_dp": 1, "source": "s"})"),
      "draft_tokens");
  bad(doc(R"(, "speculative_decoding": {"method": "mtp", "draft_tokens": 17,
      "draft_tokens_with_attention_dp": 1, "source": "s"})"),
      "draft_tokens");
  bad(doc(R"(, "speculative_decoding": {"method": "ngram", "draft_tokens": 3,
      "draft_tokens_with_attention_dp": 1, "source": "s"})"),
      "method");
  const auto fixed = parse_serving_harnesses(
      doc(R"(, "deployment": {"kv_cache": "fp8", "max_running": 512, "token_budget": 8192,
      "source": "s"}, "moe": {"expert_act": "mxfp8", "source": "s"})"),
      "h.json");
  EXPECT_EQ(fixed[0].max_running, 512);
  EXPECT_EQ(fixed[0].token_budget, 8192);
  EXPECT_EQ(fixed[0].kv, Format::kFp8);
  EXPECT_EQ(fixed[0].expert_act, Format::kMxfp8);
  bad(doc(R"(, "deployment": {"max_running": 512, "max_batch_attention_dp_divisor": 8,
      "token_budget_headroom": 64, "token_budget_round_to": 64, "source": "s"})"),
      "not both");
  bad(doc(R"(, "deployment": {"source": "s"})"), "max_running");  // a deployment of nothing
  bad(doc(R"(, "deployment": {"max_running": "all", "source": "s"})"), "clients");
  EXPECT_TRUE(parse_serving_harnesses(
                  doc(R"(, "deployment": {"max_running": "clients", "source": "s"})"), "h.json")[0]
                  .max_running_is_clients);
  bad(doc(R"(, "deployment": {"kv_cache": "fp9", "source": "s"})"), "kv_cache");
  bad(doc(R"(, "deployment": {"kv_cache": "q4_k_m", "source": "s"})"), "kv_cache");
  bad(doc(R"(, "moe": {"expert_act": "fp9", "source": "s"})"), "expert_act");
  bad(doc(R"(, "moe": {"expert_act": "q4_0", "source": "s"})"), "expert_act");  // storage-only
  bad(doc(R"(, "client": {"range_ratio": 1.5, "source": "s"})"), "range_ratio");
  bad(doc(R"(, "client": {"range_ratio": 0, "source": "s"})"), "range_ratio");
  bad(doc(R"(, "deployment": {"max_batch_attention_dp_divisor": 0, "token_budget_headroom": 64,
      "token_budget_round_to": 64, "source": "s"})"),
      "max_batch_attention_dp_divisor");
  bad(doc(R"(, "deployment": {"max_batch_attention_dp_divisor": 8, "token_budget_headroom": 64,
      "source": "s"})"),
      "token_budget_round_to");  // a limit missing
  // The budget's formula without a divisor (the script sets no max_batch), at
  // a floor; batch waiting for some rows.
  const auto waiting = parse_serving_harnesses(
      doc(R"(, "deployment": {"token_budget_headroom": 64, "token_budget_round_to": 64,
      "token_budget_at_least": 8192, "batch_wait": {"timeout_iters": 40,
      "max_tokens_ratio": 0.8, "when": {"isl": 1024, "osl": 1024, "clients_at_least": 64}},
      "source": "s"})"),
      "h.json");
  EXPECT_EQ(waiting[0].max_batch_attention_dp_divisor, 0);
  EXPECT_EQ(waiting[0].token_budget_at_least, 8192);
  EXPECT_EQ(waiting[0].batch_wait_iters, 40);
  EXPECT_EQ(waiting[0].batch_wait_ratio, 0.8);
  EXPECT_EQ(waiting[0].batch_wait_when.clients_at_least, 64);
  EXPECT_EQ(waiting[0].batch_wait_when.tp_below, 0);
  bad(doc(R"(, "deployment": {"token_budget_at_least": 8192, "source": "s"})"),
      "token_budget_headroom");  // a floor without its formula
  // Attention-DP balance: both counts, 0 allowed, nothing else.
  const auto balanced =
      parse_serving_harnesses(doc(R"(, "deployment": {"attention_dp_balance": {"timeout_iters": 60,
      "batching_wait_iters": 0}, "source": "s"})"),
                              "h.json");
  EXPECT_TRUE(balanced[0].adp_balance);
  EXPECT_EQ(balanced[0].adp_timeout_iters, 60);
  EXPECT_EQ(balanced[0].adp_batching_wait_iters, 0);
  EXPECT_FALSE(waiting[0].adp_balance);
  bad(doc(R"(, "deployment": {"attention_dp_balance": {"timeout_iters": 60}, "source": "s"})"),
      "batching_wait_iters");
  bad(doc(R"(, "deployment": {"attention_dp_balance": {"timeout_iters": -1,
      "batching_wait_iters": 0}, "source": "s"})"),
      "timeout_iters");
  bad(doc(R"(, "deployment": {"attention_dp_balance": {"timeout_iters": 6.5,
      "batching_wait_iters": 0}, "source": "s"})"),
      "timeout_iters");
  bad(doc(R"(, "deployment": {"attention_dp_balance": {"timeout_iters": 60,
      "batching_wait_iters": 0, "enable_balance": true}, "source": "s"})"),
      "enable_balance");
  // Expert parallelism on every row: true alone is a deployment; false is no setting.
  EXPECT_TRUE(parse_serving_harnesses(
                  doc(R"(, "deployment": {"expert_parallel": true, "source": "s"})"), "h.json")[0]
                  .expert_parallel);
  bad(doc(R"(, "deployment": {"expert_parallel": false, "source": "s"})"), "expert_parallel");
  bad(doc(R"(, "deployment": {"expert_parallel": 4, "source": "s"})"), "expert_parallel");
  // The layout by rules: each turns expert parallelism, attention DP or both on.
  const auto layout =
      parse_serving_harnesses(doc(R"(, "deployment": {"layout": [{"when": {"clients_at_least": 256},
      "expert_parallel": true, "attention_dp": true}, {"expert_parallel": true}],
      "source": "s"})"),
                              "h.json");
  ASSERT_EQ(layout[0].layouts.size(), 2u);
  EXPECT_TRUE(layout[0].layouts[0].attention_dp && layout[0].layouts[0].expert_parallel);
  EXPECT_EQ(layout[0].layouts[0].when.clients_at_least, 256);
  EXPECT_TRUE(layout[0].layouts[1].expert_parallel && !layout[0].layouts[1].attention_dp);
  bad(doc(R"(, "deployment": {"layout": [{"when": {"isl": 1024}}], "source": "s"})"),
      "expert_parallel");  // a rule that turns nothing on
  bad(doc(R"(, "deployment": {"layout": [{"attention_dp": false}], "source": "s"})"),
      "attention_dp");
  bad(doc(R"(, "deployment": {"layout": [{"expert_parallel": 1}], "source": "s"})"),
      "expert_parallel");
  bad(doc(R"(, "deployment": {"layout": [], "source": "s"})"), "layout");
  bad(doc(R"(, "deployment": {"layout": [{"expert_parallel": true, "tp": 8}], "source": "s"})"),
      "tp");  // conditions go in "when"
  bad(doc(R"(, "deployment": {"expert_parallel": true, "layout": [{"attention_dp": true}],
      "source": "s"})"),
      "layout");
  // The KV cache's memory share alone is a deployment; a share in (0, 1], or
  // rules (the first a row meets), one for the rows with attention DP.
  const auto share = parse_serving_harnesses(
      doc(R"(, "deployment": {"kv_memory": 0.82, "source": "s"})"), "h.json");
  ASSERT_EQ(share[0].kv_memory.size(), 1u);
  EXPECT_DOUBLE_EQ(share[0].kv_memory[0].share, 0.82);
  const auto shares = parse_serving_harnesses(
      doc(R"(, "deployment": {"kv_memory": [{"share": 0.7, "when": {"attention_dp": true}},
      {"share": 0.8}], "source": "s"})"),
      "h.json");
  ASSERT_EQ(shares[0].kv_memory.size(), 2u);
  EXPECT_TRUE(shares[0].kv_memory[0].when.attention_dp);
  EXPECT_FALSE(shares[0].kv_memory[1].when.attention_dp);
  ServingRun with_dp;
  with_dp.attention_dp = 8;
  ServingRun without_dp;
  EXPECT_TRUE(shares[0].kv_memory[0].when.met(with_dp));
  EXPECT_FALSE(shares[0].kv_memory[0].when.met(without_dp));
  bad(doc(R"(, "deployment": {"kv_memory": [{"share": 0.7, "when": {"attention_dp": false}}],
      "source": "s"})"),
      "attention_dp");
  bad(doc(R"(, "deployment": {"kv_memory": [], "source": "s"})"), "kv_memory");
  bad(doc(R"(, "deployment": {"kv_memory": [{"share": 2}], "source": "s"})"), "share");
  bad(doc(R"(, "deployment": {"kv_memory": 0, "source": "s"})"), "kv_memory");
  bad(doc(R"(, "deployment": {"kv_memory": 1.2, "source": "s"})"), "kv_memory");
  bad(doc(R"(, "deployment": {"kv_memory": "0.9", "source": "s"})"), "kv_memory");
  // CUDA graphs the deployment turns down: alone a deployment; the engine's
  // defaults are no setting, and only the three names parse.
  EXPECT_EQ(
      parse_serving_harnesses(
          doc(R"(, "deployment": {"cuda_graphs": "decode-only", "source": "s"})"), "h.json")[0]
          .graphs,
      GraphPolicy::kDecodeOnly);
  EXPECT_EQ(parse_serving_harnesses(doc(R"(, "deployment": {"kv_memory": 0.9, "source": "s"})"),
                                    "h.json")[0]
                .graphs,
            GraphPolicy::kEngine);
  bad(doc(R"(, "deployment": {"cuda_graphs": "engine", "source": "s"})"), "leave it out");
  bad(doc(R"(, "deployment": {"cuda_graphs": "FULL_DECODE_ONLY", "source": "s"})"), "cuda_graphs");
  bad(doc(R"(, "deployment": {"cuda_graphs": false, "source": "s"})"), "cuda_graphs");
  // The largest captured graph (vLLM's --max-cudagraph-capture-size): alone a
  // deployment; a whole number of tokens.
  EXPECT_EQ(parse_serving_harnesses(
                doc(R"(, "deployment": {"graph_capture_size": 2048, "source": "s"})"), "h.json")[0]
                .graph_capture_size,
            2048);
  bad(doc(R"(, "deployment": {"graph_capture_size": 0, "source": "s"})"), "graph_capture_size");
  bad(doc(R"(, "deployment": {"graph_capture_size": 2.5, "source": "s"})"), "graph_capture_size");
  bad(doc(R"(, "deployment": {"graph_capture_size": "2048", "source": "s"})"),
      "graph_capture_size");
  // A MoE kernel family: alone a deployment; only the four families parse.
  EXPECT_EQ(parse_serving_harnesses(
                doc(R"(, "deployment": {"moe_kernel": "triton", "source": "s"})"), "h.json")[0]
                .moe_kernel,
            "triton");
  bad(doc(R"(, "deployment": {"moe_kernel": "deep_gemm", "source": "s"})"), "moe_kernel");
  bad(doc(R"(, "deployment": {"moe_kernel": 1, "source": "s"})"), "moe_kernel");
  // Token budgets by rules (vLLM's --max-num-batched-tokens "$((ISL * 2))"):
  // the first a row meets; they are fixed limits, not the formula's terms.
  const auto budgets = parse_serving_harnesses(
      doc(R"(, "deployment": {"token_budget": [{"tokens": 2048, "when": {"isl": 1024}},
      {"tokens": 16384, "when": {"isl": 8192}}], "source": "s"})"),
      "h.json");
  ASSERT_EQ(budgets[0].token_budgets.size(), 2u);
  EXPECT_EQ(budgets[0].token_budgets[1].tokens, 16384);
  EXPECT_EQ(budgets[0].token_budgets[1].when.isl, 8192);
  EXPECT_EQ(budgets[0].token_budget, 0);
  bad(doc(R"(, "deployment": {"token_budget": [], "source": "s"})"), "token_budget");
  bad(doc(R"(, "deployment": {"token_budget": [{"tokens": 0}], "source": "s"})"), "tokens");
  bad(doc(R"(, "deployment": {"token_budget": [{"tokens": 2048, "budget": 1}], "source": "s"})"),
      "budget");
  bad(doc(R"(, "deployment": {"token_budget": [{"tokens": 2048}], "token_budget_headroom": 64,
      "token_budget_round_to": 64, "source": "s"})"),
      "not both");
  // Receive intervals: rules in order, the first a row meets; model names in a list.
  const auto recv = parse_serving_harnesses(
      doc(R"(, "deployment": {"scheduler_recv_interval": [{"steps": 30, "when":
      {"clients_at_least": 16, "tp": 8}}, {"steps": 10}], "source": "s"})"),
      "h.json");
  ASSERT_EQ(recv[0].recv_intervals.size(), 2u);
  EXPECT_EQ(recv[0].recv_intervals[0].steps, 30);
  EXPECT_EQ(recv[0].recv_intervals[0].when.tp, 8);
  EXPECT_EQ(recv[0].recv_intervals[1].when.clients_at_least, 0);
  bad(doc(R"(, "deployment": {"scheduler_recv_interval": [], "source": "s"})"),
      "scheduler_recv_interval");
  bad(doc(R"(, "deployment": {"scheduler_recv_interval": [{"steps": 0}], "source": "s"})"),
      "steps");
  bad(doc(R"(, "deployment": {"scheduler_recv_interval": [{"steps": 10, "every": 2}],
      "source": "s"})"),
      "every");
  std::string two_names = doc("");
  two_names.replace(two_names.find(R"("deepseek-ai/DeepSeek-R1")"), 25,
                    R"(["deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3"])");
  EXPECT_EQ(parse_serving_harnesses(two_names, "h.json")[0].model_paths.size(), 2u);
  std::string no_names = doc("");
  no_names.replace(no_names.find(R"("deepseek-ai/DeepSeek-R1")"), 25, "[]");
  bad(no_names, "model_path");
  bad(doc(R"(, "deployment": {"max_running": 8, "batch_wait": {"timeout_iters": 0,
      "max_tokens_ratio": 0.8}, "source": "s"})"),
      "timeout_iters");
  bad(doc(R"(, "deployment": {"max_running": 8, "batch_wait": {"timeout_iters": 20,
      "max_tokens_ratio": 1.2}, "source": "s"})"),
      "max_tokens_ratio");
  bad(doc(R"(, "deployment": {"max_running": 8, "batch_wait": {"timeout_iters": 20,
      "max_tokens_ratio": 0.9, "when": {"tp_above": 8}}, "source": "s"})"),
      "tp_above");  // unknown condition
  std::string unsourced = doc(mtp);
  unsourced.replace(unsourced.find(R"("source": "s")"), 13, R"("source": "t")");
  bad(unsourced, "not in sources");
  // The same rows twice, under another id or the same one.
  std::string again = doc(mtp);
  again = again.substr(again.find("{\"id\""));
  again = again.substr(0, again.rfind(']'));
  std::string renamed = again;
  renamed.replace(renamed.find(R"("id": "h")"), 9, R"("id": "k")");
  bad(doc(mtp, ", " + renamed), "covers the same rows");
  bad(doc(mtp, ", " + again), "given twice");
  // A note left without a layout covers every one, so it overlaps one that names a layout.
  std::string with_layout = renamed;
  with_layout.replace(with_layout.find(R"("precision": "fp8")"), 18,
                      R"("precision": "fp8", "tp": 4)");
  bad(doc(mtp, ", " + with_layout), "covers the same rows");
  std::string other_layout = with_layout;
  other_layout.replace(other_layout.find(R"("id": "k")"), 9, R"("id": "m")");
  other_layout.replace(other_layout.find(R"("tp": 4)"), 7, R"("tp": 8)");
  EXPECT_EQ(
      parse_serving_harnesses(R"({"about": "a", "sources": {"s": "a script"}, "harnesses": [)" +
                                  with_layout + ", " + other_layout + "]}",
                              "h.json")
          .size(),
      2u);  // two layouts apart
  // Row ids' beginnings: one or a list of 1 to 8 non-empty strings; notes
  // apart only where neither beginning starts the other.
  std::string by_id = renamed;
  by_id.replace(by_id.find(R"("precision": "fp8")"), 18,
                R"("precision": "fp8", "id_prefix": ["2026_03_25_", "2026_04_06_"])");
  bad(doc(mtp, ", " + by_id), "covers the same rows");  // the first note takes every id
  std::string first_by_id = again;
  first_by_id.replace(first_by_id.find(R"("precision": "fp8")"), 18,
                      R"("precision": "fp8", "id_prefix": "dsr1_")");
  const auto apart =
      parse_serving_harnesses(R"({"about": "a", "sources": {"s": "a script"}, "harnesses": [)" +
                                  first_by_id + ", " + by_id + "]}",
                              "h.json");
  ASSERT_EQ(apart.size(), 2u);
  EXPECT_EQ(apart[1].id_prefixes.size(), 2u);
  std::string nested = by_id;
  nested.replace(nested.find(R"(["2026_03_25_", "2026_04_06_"])"), 30, R"("dsr1_h200")");
  bad(R"({"about": "a", "sources": {"s": "a script"}, "harnesses": [)" + first_by_id + ", " +
          nested + "]}",
      "covers the same rows");  // "dsr1_" starts "dsr1_h200"
  for (const std::string& ids : {std::string("[]"), std::string(R"([""])"), std::string("7"),
                                 std::string(R"(["a", "b", "c", "d", "e", "f", "g", "h", "i"])")}) {
    std::string t = doc("");
    t.replace(t.find(R"("precision": "fp8")"), 18, R"("precision": "fp8", "id_prefix": )" + ids);
    bad(t, "id_prefix");
  }
  bad("[1]", "object");
}

// A note's layout rules set what the rows do not record, by the first rule
// each row (as written) meets: a TP 8 row of 256 clients becomes attention DP 8
// (written TP 1) with EP 8, a TP 8 row of 16 clients EP 8 alone; a row the
// rules miss, or one that records its own EP, keeps its layout. The script's
// budget then counts each attention-DP rank: 8 x round_up(256 + 1,024 + 64, 64)
// = 8 x 1,344.
TEST(ServingHarnesses, LayoutRulesSetWhatTheRowsDoNotRecord) {
  const std::string text = R"({"about": "a", "sources": {"s": "a script"}, "harnesses": [{"id": "h",
      "benchmark": "b", "match": {"backend": "trtllm", "backend_version": "1.0",
      "system": "b200_sxm", "model_path": "deepseek-ai/DeepSeek-R1", "precision": "fp8"},
      "deployment": {"token_budget_headroom": 64, "token_budget_round_to": 64,
      "layout": [{"when": {"clients_at_least": 256}, "expert_parallel": true,
      "attention_dp": true}, {"when": {"clients_at_least": 9}, "expert_parallel": true}],
      "source": "s"}, "source": "s"}]})";
  const auto notes = parse_serving_harnesses(text, "h.json");
  std::string csv = std::string(kServingHeader);
  for (const char* row :
       {"a,trtllm,1.0,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,1024,fp8,fp8,256,8,1,1,8,1,"
        ",,,,,,,,,,,,,,195.2,5.38\n",
        "b,trtllm,1.0,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,1024,fp8,fp8,16,8,1,1,8,1,"
        ",,,,,,,,,,,,,,195.2,5.38\n",
        "c,trtllm,1.0,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,1024,fp8,fp8,4,8,1,1,8,1,"
        ",,,,,,,,,,,,,,195.2,5.38\n",
        "d,trtllm,1.0,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,1024,fp8,fp8,16,8,1,1,4,2,"
        ",,,,,,,,,,,,,,195.2,5.38\n"})
    csv += row;
  std::vector<ServingRun> runs = parse_serving_runs(csv, "t.csv");
  ASSERT_EQ(runs.size(), 4u);
  apply_serving_harnesses(notes, &runs);
  EXPECT_EQ(runs[0].tp, 1);
  EXPECT_EQ(runs[0].attention_dp, 8);
  EXPECT_EQ(runs[0].moe_ep, 8);
  EXPECT_EQ(runs[0].moe_tp, 1);
  EXPECT_EQ(runs[0].token_budget, 8 * 1344);
  EXPECT_NE(runs[0].layout_note.find("attention DP 8 and expert parallelism 8"), std::string::npos)
      << runs[0].layout_note;
  EXPECT_EQ(runs[1].tp, 8);
  EXPECT_EQ(runs[1].attention_dp, 1);
  EXPECT_EQ(runs[1].moe_ep, 8);
  EXPECT_EQ(runs[1].moe_tp, 1);
  EXPECT_EQ(runs[2].moe_ep, 1);  // 4 clients: no rule
  EXPECT_TRUE(runs[2].layout_note.empty());
  EXPECT_EQ(runs[3].moe_ep, 2);  // the row's own EP stands
  for (const ServingRun& r : runs) EXPECT_EQ(r.harness, "h");
}

// The built-in notes cover exactly the development set's rows of InferenceX's
// runs: TensorRT-LLM 1.2.0rc6.post3 DeepSeek-R1 on B200 (3 draft tokens a step,
// 1 under attention data parallelism, the scripts' limits, range ratio 0.8),
// its 1.2.0rc6.post2 sweeps without MTP (batch waiting for fp8 1,024/1,024 at
// 64 clients or more), vLLM 0.15.1 gpt-oss-120b on B200, SGLang 0.5.9 Qwen3.5
// at TP 4 EP 1 on B200, vLLM 0.17.0 MiniMax-M2.5 fp8 on B200 (expert
// parallelism on every row), every Llama-3.1-70B row (batch waiting for
// TensorRT-LLM's 1,024/1,024 rows below TP 8), vLLM's Kimi-K2.5 int4 rows on
// H200 (0.16.0) and B200 (0.15.1), vLLM 0.19.0 MiniMax-M2.5 fp8 on B200 of
// PR #947's sweeps (2 x isl tokens a step), vLLM 0.18.0 gpt-oss-120b on H100
// and H200 and MiniMax-M2.5 on H200, TensorRT-LLM 1.2.0rc2.post2 gpt-oss-120b
// on B200, and SGLang GLM-5 fp8 on B200 and H200. A file read as a user's own
// carries none.
// The limits by the scripts' formulas, per rank: fp8 at 4 clients, TP 8:
// batch 4, round_up(4 x 4 + 1,024 + 64, 64) = 1,152 tokens; fp8 at 256 clients
// over 8 attention-DP ranks: batch 256 / 8 = 32, 8 x round_up(2 x 32 + 1,088, 64)
// = 8 x 1,152; fp4 at 64 clients of 8,192-token prompts over 8 ranks: batch
// 64 / 4 = 16, 8 x round_up(2 x 16 + 8,192 + 64, 64) = 8 x 8,320, running 8 x 16.
// InferenceX's TensorRT-LLM DeepSeek-R1 scripts (fp8 and fp4 on B200, with and
// without MTP; fp8 with MTP on H200) write attention_dp_config with
// enable_balance, timeout_iters 60 and batching_wait_iters 0 when they turn
// attention DP on; its gpt-oss B200 script writes enable_balance alone
// (TensorRT-LLM's defaults, 50 and 10): exactly those notes' rows with
// attention DP carry it.
TEST(ServingHarnesses, InferenceXsAttentionDpRowsBalance) {
  const std::set<std::string> notes = {
      "inferencex-dsr1-fp8-b200-trtllm",         "inferencex-dsr1-fp4-b200-trtllm",
      "inferencex-dsr1-fp8-b200-trtllm-mtp",     "inferencex-dsr1-fp4-b200-trtllm-mtp",
      "inferencex-dsr1-fp8-h200-trtllm-mtp",     "inferencex-gptoss-b200-trtllm",
      "inferencex-dsr1-fp8-b200-trtllm-mtp-1.1", "inferencex-dsr1-fp4-b200-trtllm-mtp-1.1",
      "inferencex-dsr1-fp8-h200-trtllm-2025-11", "inferencex-dsr1-fp4-b200-trtllm-2025-11"};
  // The sweeps of 2025-11-02 turn attention DP on by their rules: 2 H200 rows
  // (64 clients of 8,192-token prompts) and 7 B200 rows.
  constexpr int kNovemberDp = 2 + 7;
  // The set's aggregated TensorRT-LLM rows with attention DP from those sweeps:
  // 1.2.0rc6.post2 on B200 9 (fp4 7, fp8 2), 1.2.0rc6.post3 11 (fp4 6, fp8 5),
  // 4 of the 1.1.0rc2.post2 H200 rows (the MTP sweep's, by their ids), 2
  // gpt-oss rows of 1.2.0rc2.post2 (attention DP 4, and 4 written over moe 2 x 2),
  // and 6 of the 1.1.0rc2.post2 B200 MTP sweep (fp8 2, fp4 4).
  constexpr int kBalancedRows = 9 + 11 + 4 + 2 + 6 + kNovemberDp;
  int balanced = 0, without_dp = 0;
  for (const ServingRun& r : built_in_serving_runs()) {
    const bool scripted = notes.count(r.harness) > 0;
    EXPECT_EQ(r.adp_balance, scripted && r.attention_dp > 1) << r.id;
    without_dp += scripted && r.attention_dp == 1;
    if (!r.adp_balance) continue;
    ++balanced;
    const bool defaults = r.harness == "inferencex-gptoss-b200-trtllm";
    EXPECT_EQ(r.adp_timeout_iters, defaults ? 50 : 60) << r.id;
    EXPECT_EQ(r.adp_batching_wait_iters, defaults ? 10 : 0) << r.id;
  }
  EXPECT_EQ(balanced, kBalancedRows);
  EXPECT_GT(without_dp, 0);
}

TEST(ServingHarnesses, TheBuiltInNoteCoversInferenceXsMtpRuns) {
  int covered = 0, with_dp = 0, qwen = 0, llama = 0, post2 = 0, checked_post2 = 0;
  int waiting_70b = 0, waiting_post2 = 0, minimax = 0, sglang_rows = 0, outside_sweep = 0;
  int h200_mtp = 0, h200_without = 0, h200_checked = 0, decode_only = 0, kimi = 0, minimax_019 = 0;
  int gptoss_018 = 0, minimax_018 = 0, gptoss_trt = 0, glm5 = 0, gptoss_h200_trt = 0;
  int b200_mtp_11 = 0, b200_without_11 = 0, dsr1_nov = 0, gptoss_b200_trt = 0;
  std::array<int, 3> checked{};
  for (const ServingRun& r : built_in_serving_runs()) {
    const bool inferencex_mtp = r.backend == "trtllm" && r.backend_version == "1.2.0rc6.post3" &&
                                r.system == "b200_sxm" && r.model_path == "deepseek-ai/DeepSeek-R1";
    const bool inferencex_gptoss = r.backend == "vllm" && r.backend_version == "0.15.1" &&
                                   r.system == "b200_sxm" && r.model_path == "openai/gpt-oss-120b";
    // SGLang's Qwen3.5 MTP sweep is the set's only TP 4 EP 1 layout of that model on B200.
    const bool inferencex_qwen = r.backend == "sglang" && r.backend_version == "0.5.9" &&
                                 r.system == "b200_sxm" &&
                                 r.model_path == "Qwen/Qwen3.5-397B-A17B" && r.precision == "fp8" &&
                                 r.tp == 4 && r.moe_ep == 1;
    // Every Llama-3.1-70B row is InferenceX's (dated the day it dropped the model).
    const bool inferencex_70b = r.model_path == "meta-llama/Llama-3.1-70B";
    // TensorRT-LLM 1.2.0rc6.post2 DeepSeek-R1 on B200 without MTP: InferenceX's
    // sweeps of PRs #594 (fp8) and #620 (fp4); AIConfigurator's database names
    // some of the same runs DeepSeek-V3.
    const bool inferencex_post2 =
        r.backend == "trtllm" && r.backend_version == "1.2.0rc6.post2" && r.system == "b200_sxm" &&
        (r.model_path == "deepseek-ai/DeepSeek-R1" || r.model_path == "deepseek-ai/DeepSeek-V3");
    // vLLM 0.17.0 MiniMax-M2.5 fp8 on B200: InferenceX's sweeps, expert
    // parallelism on every row (its script's `-ge 1`).
    const bool inferencex_minimax =
        r.backend == "vllm" && r.backend_version == "0.17.0" && r.system == "b200_sxm" &&
        r.model_path == "MiniMaxAI/MiniMax-M2.5" && r.precision == "fp8";
    // SGLang 0.5.9: DeepSeek-R1 (or -V3, the database's name) on B200 and H200
    // (InferenceX PR #943) and Qwen3.5 fp8 at TP 8 EP 1 and TP 4 EP 4 on B200
    // (PRs #804 and #918); the B200 scripts take requests in every 30 decode
    // steps from 16 clients, every 10 below (the TP 4 DeepSeek one always 10).
    const bool sglang_059 = r.backend == "sglang" && r.backend_version == "0.5.9";
    // Within the clients each search swept (rows past them are other runs).
    const bool dsr1_059 = sglang_059 && (r.model_path == "deepseek-ai/DeepSeek-R1" ||
                                         r.model_path == "deepseek-ai/DeepSeek-V3");
    const std::int64_t dsr1_clients = r.system == "h200_sxm" ? 64
                                      : r.precision == "fp4" ? 128
                                      : r.tp == 4            ? 32
                                                             : 64;
    const bool inferencex_dsr1_sglang = dsr1_059 && r.concurrency <= dsr1_clients;
    const bool inferencex_qwen_stp = sglang_059 && r.system == "b200_sxm" &&
                                     r.model_path == "Qwen/Qwen3.5-397B-A17B" &&
                                     r.precision == "fp8" &&
                                     ((r.tp == 8 && r.moe_ep == 1 && r.concurrency <= 16) ||
                                      (r.tp == 4 && r.moe_ep == 4 && r.concurrency <= 128));
    outside_sweep += dsr1_059 && !inferencex_dsr1_sglang;
    // TensorRT-LLM 1.1.0rc2.post2 DeepSeek-R1 on H200: the MTP sweep of
    // InferenceX PR #392, named apart by its rows' source files (the same image
    // ran the sweep without MTP, the cfg181 and cfg183 rows, which the
    // database names DeepSeek-V3).
    const bool h200_columns =
        r.backend == "trtllm" && r.backend_version == "1.1.0rc2.post2" && r.system == "h200_sxm" &&
        (r.model_path == "deepseek-ai/DeepSeek-R1" || r.model_path == "deepseek-ai/DeepSeek-V3");
    const bool inferencex_h200_mtp =
        h200_columns && (r.id.starts_with("2026_03_25_deepseek_r1_h200_sxm_trtllm_fp8_agg_") ||
                         r.id.starts_with("2026_04_06_deepseek_r1_h200_sxm_trtllm_fp8_agg_"));
    h200_without += h200_columns && !inferencex_h200_mtp;
    // vLLM Kimi-K2.5 int4: InferenceX's H200 sweeps on 0.16.0 (PR #847) and
    // its B200 sweep on 0.15.1 (PR #935); every such row of the set.
    const bool inferencex_kimi = r.backend == "vllm" && r.model_path == "moonshotai/Kimi-K2.5" &&
                                 r.precision == "int4" &&
                                 ((r.backend_version == "0.16.0" && r.system == "h200_sxm") ||
                                  (r.backend_version == "0.15.1" && r.system == "b200_sxm"));
    // vLLM 0.19.0 MiniMax-M2.5 fp8 on B200: InferenceX PR #947's sweeps, by
    // their ids (the database's rows of 2026-04-22 ran the script of 2026-04-21).
    const std::string_view database_ids[] = {"minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c16_cfg690",
                                             "minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c16_cfg691",
                                             "minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c64_cfg690",
                                             "minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c32_cfg691",
                                             "minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c256_cfg634",
                                             "minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c32_cfg633",
                                             "minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c8_cfg633"};
    const bool inferencex_minimax_019 =
        r.backend == "vllm" && r.backend_version == "0.19.0" && r.system == "b200_sxm" &&
        r.precision == "fp8" &&
        (r.id.starts_with("2026_03_25_minimax_m2_5_b200_sxm_vllm_fp8_") ||
         r.id.starts_with("2026_04_06_minimax_m2_5_b200_sxm_vllm_fp8_") ||
         std::find(std::begin(database_ids), std::end(database_ids), r.id) !=
             std::end(database_ids));
    // InferenceX's vLLM 0.18.0 gpt-oss-120b (H100, H200) and MiniMax-M2.5 (H200)
    // sweeps, and its TensorRT-LLM 1.2.0rc2.post2 gpt-oss-120b sweep on B200:
    // every such row of the set.
    const bool vllm_018 = r.backend == "vllm" && r.backend_version == "0.18.0";
    const bool inferencex_gptoss_018 = vllm_018 && r.model_path == "openai/gpt-oss-120b" &&
                                       (r.system == "h100_sxm" || r.system == "h200_sxm");
    const bool inferencex_minimax_018 =
        vllm_018 && r.model_path == "MiniMaxAI/MiniMax-M2.5" && r.system == "h200_sxm";
    const bool inferencex_gptoss_trt = r.backend == "trtllm" &&
                                       r.backend_version == "1.2.0rc2.post2" &&
                                       r.model_path == "openai/gpt-oss-120b";
    // InferenceX's SGLang GLM-5 fp8 sweeps: B200 on a nightly (PR #915), H200
    // on the glm5-hopper image (PR #914); every such row of the set.
    const bool inferencex_glm5 = r.backend == "sglang" && r.model_path == "zhipuai/GLM-5" &&
                                 r.precision == "fp8" &&
                                 ((r.backend_version == "nightly-dev" && r.system == "b200_sxm") ||
                                  (r.backend_version == "glm5-hopper" && r.system == "h200_sxm"));
    // InferenceX's TensorRT-LLM gpt-oss-120b sweeps on H200 (the gpt-oss-dev
    // image): 2025-11-02's rows carry no version, and their script passed
    // --ep_size=$TP though the rows record EP 1; 2025-12-15's carry the image's
    // tag and their own EP. Both: trtllm-serve's limits, the checkpoint's bf16
    // cache, 0.85 of the free memory, the workflow's 0.8.
    const bool gptoss_h200_trt_nov = r.backend == "trtllm" && r.backend_version.empty() &&
                                     r.system == "h200_sxm" &&
                                     r.model_path == "openai/gpt-oss-120b";
    const bool gptoss_h200_trt_dec =
        r.backend == "trtllm" && r.backend_version == "gpt-oss-dev" && r.system == "h200_sxm";
    // The B200 MTP sweep PR #392 started on 2026-01-14 (TensorRT-LLM
    // 1.1.0rc2.post2): every fp8 row of that image, and the 11 fp4 rows of
    // that day by their ids (its other 6 fp4 rows ran without MTP in December).
    const bool dsr1_b200_mtp_11 = r.backend == "trtllm" && r.backend_version == "1.1.0rc2.post2" &&
                                  r.system == "b200_sxm" &&
                                  r.model_path == "deepseek-ai/DeepSeek-R1";
    // InferenceX's TensorRT-LLM DeepSeek-R1 sweeps of 2025-11-02 (no version):
    // fp8 on H200, fp4 on B200, under both of the database's names; the
    // scripts' EP and attention DP by their rules.
    const bool dsr1_2025_11 =
        r.backend == "trtllm" && r.backend_version.empty() &&
        (r.model_path == "deepseek-ai/DeepSeek-R1" || r.model_path == "deepseek-ai/DeepSeek-V3") &&
        ((r.system == "h200_sxm" && r.precision == "fp8") ||
         (r.system == "b200_sxm" && r.precision == "fp4"));
    if (dsr1_2025_11) {
      ++dsr1_nov;
      const bool h200 = r.system == "h200_sxm";
      EXPECT_EQ(r.harness, h200 ? "inferencex-dsr1-fp8-h200-trtllm-2025-11"
                                : "inferencex-dsr1-fp4-b200-trtllm-2025-11");
      EXPECT_EQ(r.kv, Format::kFp8);
      EXPECT_DOUBLE_EQ(r.kv_memory_share, h200 ? 0.75 : 0.8);
      EXPECT_EQ(r.range_ratio, 0.8);
      EXPECT_EQ(r.adp_balance, r.attention_dp > 1);
      // EP over the GPUs on every row: each lies past the scripts' EP thresholds.
      EXPECT_EQ(r.moe_ep, r.tp * r.attention_dp) << r.id;
      EXPECT_EQ(r.moe_tp, 1) << r.id;
      EXPECT_NE(r.layout_note.find("by the script's rules"), std::string::npos) << r.id;
      // Attention DP where the scripts turn it on: 256 clients, or past 32 at
      // 8,192-token prompts on B200; past 32 (8,192 tokens) or 64 on H200.
      const bool dp = r.concurrency >= 256 || (r.isl == 8192 && r.concurrency > 32) ||
                      (h200 && r.concurrency > 64);
      EXPECT_EQ(r.attention_dp > 1, dp) << r.id;
      continue;
    }
    if (dsr1_b200_mtp_11 && !r.harness.empty()) {
      ++b200_mtp_11;
      EXPECT_EQ(r.harness, r.precision == "fp8" ? "inferencex-dsr1-fp8-b200-trtllm-mtp-1.1"
                                                : "inferencex-dsr1-fp4-b200-trtllm-mtp-1.1");
      EXPECT_EQ(r.draft_tokens, r.attention_dp > 1 ? 1 : 3) << r.id;
      EXPECT_EQ(r.kv, Format::kFp8);
      EXPECT_DOUBLE_EQ(r.kv_memory_share, 0.8);
      EXPECT_EQ(r.range_ratio, 0.8);
      continue;
    }
    if (dsr1_b200_mtp_11) {  // December's fp4 rows without MTP
      ++b200_without_11;
      EXPECT_EQ(r.precision, "fp4");
      EXPECT_EQ(r.draft_tokens, 0);
    }
    // InferenceX's TensorRT-LLM gpt-oss-120b sweeps on B200 without a version
    // (2025-11-02 to 2025-12-02): trtllm-serve's limits, an fp8 cache at 0.85
    // of free memory, the workflows' 0.8; every row below 256 clients.
    if (r.backend == "trtllm" && r.backend_version.empty() && r.system == "b200_sxm" &&
        r.model_path == "openai/gpt-oss-120b") {
      ++gptoss_b200_trt;
      EXPECT_EQ(r.harness, "inferencex-gptoss-b200-trtllm-2025");
      EXPECT_EQ(r.kv, Format::kFp8);
      EXPECT_DOUBLE_EQ(r.kv_memory_share, 0.85);
      EXPECT_EQ(r.max_running, 512);
      EXPECT_EQ(r.token_budget, 20000);
      EXPECT_EQ(r.range_ratio, 0.8);
      EXPECT_LT(r.concurrency, 256);
      EXPECT_EQ(r.attention_dp, 1);
      continue;
    }
    if (gptoss_h200_trt_nov || gptoss_h200_trt_dec) {
      ++gptoss_h200_trt;
      EXPECT_EQ(r.harness, gptoss_h200_trt_nov ? "inferencex-gptoss-h200-trtllm-2025-11"
                                               : "inferencex-gptoss-h200-trtllm-dev");
      EXPECT_EQ(r.range_ratio, 0.8);
      EXPECT_EQ(r.kv, Format::kBf16);
      EXPECT_DOUBLE_EQ(r.kv_memory_share, 0.85);
      EXPECT_EQ(r.max_running, r.concurrency);
      EXPECT_EQ(r.token_budget, 20000);
      if (gptoss_h200_trt_nov) {  // TP 2, 4 and 8, every GPU with whole experts
        EXPECT_GT(r.tp, 1) << r.id;
        EXPECT_EQ(r.moe_ep, r.tp) << r.id;
        EXPECT_EQ(r.moe_tp, 1) << r.id;
      }
      continue;
    }
    if (inferencex_glm5) {
      ++glm5;
      const bool b200 = r.system == "b200_sxm";
      EXPECT_EQ(r.range_ratio, 0.8) << r.id;
      EXPECT_DOUBLE_EQ(r.kv_memory_share, 0.85);
      EXPECT_EQ(r.kv, b200 ? Format::kFp8 : Format::kBf16) << r.id;
      EXPECT_EQ(r.max_running, b200 ? r.concurrency : 0) << r.id;
      EXPECT_EQ(r.token_budget, b200 ? 32768 : 0) << r.id;
      EXPECT_EQ(r.moe_kernel, b200 ? "flashinfer-trtllm" : "") << r.id;
      EXPECT_EQ(r.recv_interval, 0);
      continue;
    }
    if (inferencex_gptoss_018 || inferencex_minimax_018 || inferencex_gptoss_trt) {
      EXPECT_EQ(r.range_ratio, 0.8) << r.id;
      EXPECT_EQ(r.draft_tokens, 0);
      if (inferencex_gptoss_018) {  // 8,192 tokens a step, a request a client
        ++gptoss_018;
        // VLLM_MXFP4_USE_MARLIN=1: Marlin, read at another checkpoint's measured curve.
        EXPECT_EQ(r.moe_kernel, "marlin") << r.id;
        EXPECT_EQ(r.token_budget, 8192);
        EXPECT_EQ(r.max_running, r.concurrency);
        EXPECT_DOUBLE_EQ(r.kv_memory_share, 0.9);
      } else if (inferencex_minimax_018) {  // the experts over every GPU: EP = TP
        ++minimax_018;
        EXPECT_EQ(r.moe_ep, r.tp * r.attention_dp) << r.id;
        EXPECT_DOUBLE_EQ(r.kv_memory_share, 0.95);
        EXPECT_FALSE(r.kv);
      } else {  // trtllm-serve's limits; the ADP balance at its defaults with attention DP
        ++gptoss_trt;
        EXPECT_EQ(r.kv, Format::kFp8);
        EXPECT_DOUBLE_EQ(r.kv_memory_share, 0.85);
        EXPECT_EQ(r.max_running, 512);
        EXPECT_EQ(r.token_budget, 20000);
        EXPECT_EQ(r.adp_balance, r.attention_dp > 1) << r.id;
        if (r.adp_balance) {
          EXPECT_EQ(r.adp_timeout_iters, 50);
          EXPECT_EQ(r.adp_batching_wait_iters, 10);
        }
      }
      continue;
    }
    if (inferencex_kimi || inferencex_minimax_019) {
      // No drafts, a 0.8 range ratio; Kimi: the script's --max-num-seqs $CONC,
      // 0.95 of the memory and vLLM's auto (bf16) cache; MiniMax: its fp8
      // cache, 0.90 of the memory and --max-num-batched-tokens $((ISL * 2)).
      EXPECT_EQ(r.harness, inferencex_kimi
                               ? (r.system == "h200_sxm" ? "inferencex-kimi-int4-h200-vllm"
                                                         : "inferencex-kimi-int4-b200-vllm")
                               : "inferencex-minimax-b200-vllm-0.19");
      EXPECT_EQ(r.range_ratio, 0.8);
      EXPECT_EQ(r.draft_tokens, 0);
      EXPECT_EQ(r.recv_interval, 0);
      EXPECT_EQ(r.kv, inferencex_kimi ? Format::kBf16 : Format::kFp8) << r.id;
      EXPECT_DOUBLE_EQ(r.kv_memory_share, inferencex_kimi ? 0.95 : 0.9);
      EXPECT_EQ(r.max_running, inferencex_kimi ? r.concurrency : 0) << r.id;
      EXPECT_EQ(r.token_budget, inferencex_kimi ? 0 : 2 * r.isl) << r.id;
      (inferencex_kimi ? kimi : minimax_019) += 1;
      continue;
    }
    // Only InferenceX's B200 vLLM Llama scripts set cudagraph_mode FULL_DECODE_ONLY.
    const bool decode_only_graphs = inferencex_70b && r.backend == "vllm" && r.system == "b200_sxm";
    EXPECT_EQ(r.graphs, decode_only_graphs ? GraphPolicy::kDecodeOnly : GraphPolicy::kEngine)
        << r.id;
    decode_only += decode_only_graphs;
    EXPECT_EQ(!r.harness.empty(), inferencex_mtp || inferencex_gptoss || inferencex_qwen ||
                                      inferencex_70b || inferencex_post2 || inferencex_minimax ||
                                      inferencex_dsr1_sglang || inferencex_qwen_stp ||
                                      inferencex_h200_mtp)
        << r.id;
    if (inferencex_h200_mtp) {
      // The H200 script's formula: 4 clients of 1,024 tokens, batch 4,
      // round_up(4 x 4 + 1,024 + 64, 64) = 1,152 tokens; 256 clients over 8
      // attention-DP ranks, batch 32, 8 x round_up(2 x 32 + 1,088, 64) = 8 x 1,152.
      ++h200_mtp;
      EXPECT_EQ(r.harness, "inferencex-dsr1-fp8-h200-trtllm-mtp");
      EXPECT_EQ(r.draft_tokens, r.attention_dp > 1 ? 1 : 3) << r.id;
      EXPECT_EQ(r.kv, Format::kFp8);
      EXPECT_EQ(r.range_ratio, 0.8);
      if (r.attention_dp == 1 && r.concurrency == 4 && r.isl == 1024) {
        EXPECT_EQ(r.max_running, 4);
        EXPECT_EQ(r.token_budget, 1152);
        ++h200_checked;
      }
      if (r.attention_dp == 8 && r.concurrency == 256 && r.isl == 1024) {
        EXPECT_EQ(r.max_running, 256);
        EXPECT_EQ(r.token_budget, 8 * 1152);
        ++h200_checked;
      }
      continue;
    }
    const std::int64_t by_clients = r.concurrency >= 16 ? 30 : 10;
    if (inferencex_dsr1_sglang || inferencex_qwen_stp) {
      ++sglang_rows;
      EXPECT_EQ(r.range_ratio, 0.8);
      EXPECT_EQ(r.draft_tokens, 0);
      if (r.system == "h200_sxm") {  // no interval, SGLang's auto (bf16) cache, its running cap
        EXPECT_EQ(r.recv_interval, 0);
        EXPECT_EQ(r.kv, Format::kBf16);
        EXPECT_EQ(r.max_running, 0);
        EXPECT_EQ(r.token_budget, 32768);
        continue;
      }
      EXPECT_EQ(r.kv, Format::kFp8);
      const bool dsr1_tp4 = inferencex_dsr1_sglang && r.precision == "fp8" && r.tp == 4;
      EXPECT_EQ(r.recv_interval, dsr1_tp4 ? 10 : by_clients) << r.id;
      const std::int64_t running = inferencex_qwen_stp    ? 128
                                   : r.precision == "fp4" ? 256
                                   : dsr1_tp4             ? 32
                                                          : 128;
      const std::int64_t budget = r.precision == "fp4" ? 16384 : dsr1_tp4 ? 8192 : 32768;
      EXPECT_EQ(r.max_running, running) << r.id;
      EXPECT_EQ(r.token_budget, budget) << r.id;
      continue;
    }
    if (!inferencex_qwen) {
      EXPECT_EQ(r.recv_interval, 0) << r.id;
    }
    if (inferencex_minimax) {  // the experts over every GPU of the instance: EP = TP
      ++minimax;
      EXPECT_EQ(r.moe_ep, r.tp * r.attention_dp) << r.id;
      EXPECT_EQ(r.moe_tp, 1);
      EXPECT_NE(r.layout_note.find("expert parallelism"), std::string::npos) << r.layout_note;
      EXPECT_FALSE(r.kv);  // AIConfigurator's fp8 reading stands (the note says why)
      EXPECT_EQ(r.range_ratio, 0.8);
      EXPECT_EQ(r.token_budget, 0);
      continue;
    }
    // TensorRT-LLM's batch waiting where the scripts set it (else none).
    const bool waits_70b =
        inferencex_70b && r.backend == "trtllm" && r.isl == 1024 && r.osl == 1024 && r.tp < 8;
    const bool waits_post2 = inferencex_post2 && r.precision == "fp8" && r.isl == 1024 &&
                             r.osl == 1024 && r.concurrency >= 64;
    EXPECT_EQ(r.batch_wait_iters, waits_70b ? 20 : waits_post2 ? 40 : 0) << r.id;
    EXPECT_EQ(r.batch_wait_ratio, waits_70b ? 0.9 : waits_post2 ? 0.8 : 0) << r.id;
    waiting_70b += waits_70b;
    waiting_post2 += waits_post2;
    if (inferencex_70b) {  // vLLM: 8,192 tokens a step; TensorRT-LLM: 16,384
      ++llama;
      EXPECT_EQ(r.range_ratio, 0.8);
      EXPECT_EQ(r.kv, Format::kFp8);
      EXPECT_EQ(r.draft_tokens, 0);
      if (r.backend == "vllm") {
        EXPECT_EQ(r.token_budget, 8192);
        EXPECT_EQ(r.max_running, r.system == "b200_sxm" ? 512 : r.concurrency) << r.id;
      } else {
        EXPECT_EQ(r.token_budget, 16384);
        EXPECT_EQ(r.max_running, 0);  // trtllm-serve's own cap
      }
      continue;
    }
    if (inferencex_post2) {
      // max_num_tokens max(8,192, round_up(clients + isl + 64, 64)) a rank:
      // 64 clients of 1,024 tokens at TP 8, round_up(1,152) = 1,152, so 8,192;
      // 128 clients of 8,192 over 8 attention-DP ranks, 8 x 8,384 = 67,072.
      ++post2;
      EXPECT_EQ(r.harness, "inferencex-dsr1-" + r.precision + "-b200-trtllm");  // both names
      EXPECT_EQ(r.kv, Format::kFp8);
      EXPECT_EQ(r.range_ratio, 0.8);
      EXPECT_EQ(r.draft_tokens, 0);
      EXPECT_EQ(r.max_running, 0);  // no max_batch_size: trtllm-serve's own cap
      const std::int64_t step = (r.concurrency + r.isl + 64 + 63) / 64 * 64;
      EXPECT_EQ(r.token_budget, r.attention_dp * std::max<std::int64_t>(8192, step)) << r.id;
      if (r.attention_dp == 1 && r.concurrency == 64 && r.isl == 1024) {
        EXPECT_EQ(r.token_budget, 8192);
      }
      if (r.attention_dp == 8 && r.concurrency == 128 && r.isl == 8192) {
        EXPECT_EQ(r.token_budget, 67072);
        ++checked_post2;
      }
      continue;
    }
    if (inferencex_qwen) {  // one running request a client, 32,768 tokens a step, 3 drafts
      ++qwen;
      EXPECT_EQ(r.harness, "inferencex-qwen35-b200-sglang-mtp");
      EXPECT_EQ(r.recv_interval, by_clients);
      EXPECT_EQ(r.draft_tokens, 3);
      EXPECT_EQ(r.max_running, r.concurrency);
      EXPECT_EQ(r.token_budget, 32768);
      EXPECT_EQ(r.kv, Format::kFp8);
      continue;
    }
    if (!inferencex_mtp && !inferencex_gptoss) {
      EXPECT_EQ(r.draft_tokens, 0) << r.id;
      EXPECT_FALSE(r.expert_act) << r.id;
      continue;
    }
    ++covered;
    EXPECT_EQ(r.kv, Format::kFp8) << r.id;  // both scripts set an fp8 cache
    if (inferencex_gptoss) {  // vLLM: fixed limits, MXFP8 expert activations, no drafts
      EXPECT_EQ(r.harness, "inferencex-gptoss-b200-vllm");
      EXPECT_EQ(r.expert_act, Format::kMxfp8);
      EXPECT_EQ(r.max_running, 512);
      EXPECT_EQ(r.token_budget, 8192);
      EXPECT_EQ(r.draft_tokens, 0);
      EXPECT_EQ(r.range_ratio, 0.8);
      continue;
    }
    with_dp += r.attention_dp > 1;
    EXPECT_EQ(r.harness, "inferencex-dsr1-" + r.precision + "-b200-trtllm-mtp");
    EXPECT_EQ(r.draft_tokens, r.attention_dp > 1 ? 1 : 3) << r.id;
    EXPECT_EQ(r.range_ratio, 0.8);
    const auto at = [&](std::int64_t clients, std::int64_t isl) {
      return r.concurrency == clients && r.isl == isl;
    };
    if (r.precision == "fp8" && r.attention_dp == 1 && at(4, 1024)) {
      EXPECT_EQ(r.max_running, 4);
      EXPECT_EQ(r.token_budget, 1152);
    }
    if (r.precision == "fp8" && r.attention_dp == 8 && at(256, 1024)) {
      EXPECT_EQ(r.max_running, 256);
      EXPECT_EQ(r.token_budget, 8 * 1152);
    }
    if (r.precision == "fp4" && r.attention_dp == 8 && at(64, 8192)) {
      EXPECT_EQ(r.max_running, 128);
      EXPECT_EQ(r.token_budget, 8 * 8320);
    }
    checked[0] += r.precision == "fp8" && r.attention_dp == 1 && at(4, 1024);
    checked[1] += r.precision == "fp8" && r.attention_dp == 8 && at(256, 1024);
    checked[2] += r.precision == "fp4" && r.attention_dp == 8 && at(64, 8192);
    EXPECT_EQ(r.mode, "agg") << r.id;
  }
  for (int n : checked) EXPECT_GE(n, 1);  // each of the three derivations met a row
  EXPECT_EQ(covered, 44 + 36);
  EXPECT_GT(qwen, 0);
  EXPECT_EQ(llama, 108 + 113);         // TensorRT-LLM's and vLLM's rows, every one aggregated
  EXPECT_EQ(with_dp, 11);              // attention_dp_size above 1 in the CSV
  EXPECT_EQ(post2, 12 + 12 + 8 + 14);  // fp8 and fp4, as DeepSeek-R1 and as DeepSeek-V3
  EXPECT_GE(checked_post2, 1);
  EXPECT_EQ(waiting_70b, 27);  // TensorRT-LLM's 1,024/1,024 rows below TP 8
  EXPECT_GE(waiting_post2, 2);
  EXPECT_EQ(minimax, 24);
  EXPECT_GT(sglang_rows, 100);
  EXPECT_GT(outside_sweep, 0);  // TP 8 fp8 rows of 128-512 clients: no note
  EXPECT_EQ(h200_mtp, 20);
  EXPECT_EQ(decode_only, 28 + 32);  // the set's vLLM Llama-3.1-70B B200 rows, fp8 and fp4
  EXPECT_EQ(h200_without, 8);       // cfg181 and cfg183: measured before the MTP scripts existed
  EXPECT_EQ(h200_checked, 2);
  EXPECT_EQ(kimi, 23 + 25);             // the set's H200 0.16.0 and B200 0.15.1 rows
  EXPECT_EQ(minimax_019, 35 + 23 + 7);  // 2026-04-03 02:34 UTC, 2026-04-03, the database's 7
  EXPECT_EQ(gptoss_018, 30 + 33);       // H100 and H200
  EXPECT_EQ(minimax_018, 28);
  EXPECT_EQ(gptoss_trt, 31);
  EXPECT_EQ(glm5, 18 + 15);               // B200 and H200
  EXPECT_EQ(gptoss_h200_trt, 23 + 26);    // 2025-11-02 and 2025-12-15
  EXPECT_EQ(b200_mtp_11, 9 + 11);         // fp8 and fp4, 2026-01-14
  EXPECT_EQ(b200_without_11, 6);          // fp4, 2025-12-15
  EXPECT_EQ(dsr1_nov, 16 + 17);           // H200 fp8 and B200 fp4, 2025-11-02
  EXPECT_EQ(gptoss_b200_trt, 8 + 1 + 3);  // 2025-11-02, 2025-11-14 and 2025-12-02
  const std::string user_row =
      "u1,trtllm,1.2.0rc6.post3,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,1024,fp8,fp8,4,8,1,"
      "1,,,,,,,,,,,,,,,,,195.2,5.38\n";
  const auto user = parse_serving_runs(std::string(kServingHeader) + user_row, "mine.csv");
  EXPECT_TRUE(user[0].harness.empty());
  EXPECT_EQ(user[0].draft_tokens, 0);
}

// A row whose benchmark ran MTP: its decode step drafts 3 tokens, verifies 4,
// and yields the 2.82 tokens a step measured for DeepSeek-R1's head chained 3
// times (data/models/index.json, TensorRT-LLM's blog), so its TPOT is the
// speculative step over 2.82; the serving check simulates the same drafts.
// The row as written (no drafts) is slower.
TEST(ServingRuns, AHarnessNotesDraftTokensDecodeSpeculatively) {
  const Registry registry = Registry::built_in();
  const std::string row =
      "r1,trtllm,1.2.0rc6.post3,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,1024,fp8,fp8,4,8,1,"
      "1,,,,,,,,,,,,,,,,,195.2,5.38\n";
  std::vector<ServingRun> runs = parse_serving_runs(std::string(kServingHeader) + row, "t.csv");
  std::vector<ServingRun> plain = runs;
  apply_serving_harnesses(built_in_serving_harnesses(), &runs);
  ASSERT_EQ(runs[0].draft_tokens, 3);
  const DecodeStepReport r = validate_decode_steps(runs, registry, {}, "case");
  const DecodeStepReport p = validate_decode_steps(plain, registry, {}, "case");
  ASSERT_EQ(r.predicted, 1) << r.rows[0].refused;
  ASSERT_EQ(p.predicted, 1);
  EXPECT_NE(r.rows[0].formats.find("MTP 3 at 2.82 tokens a step"), std::string::npos)
      << r.rows[0].formats;
  ASSERT_EQ(r.harness_rows.size(), 1u);
  EXPECT_EQ(r.harness_rows[0].second, 1);
  Scenario s;
  s.batch = 4;
  s.seq_len = 1024 + 512;
  s.tp = 8;
  s.precision.weights = s.precision.experts = s.precision.act = Format::kFp8;
  s.precision.kv = Format::kFp8;  // the quantized checkpoint's cache (AIConfigurator's rule)
  s.draft_tokens = 3;
  s.acceptance = acceptance_for_tokens_per_step(3, 2.82);
  constexpr double kTokensPerStep = 2.82;  // the measured figure at 3 drafts
  EXPECT_NEAR(tokens_per_step(s), kTokensPerStep, 1e-12);
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("trtllm");
  o.graph_max_batch = 4;
  const double step = predict(load_model("deepseek-v3"), registry.get("b200"), s, o).time_s;
  EXPECT_DOUBLE_EQ(r.rows[0].predicted_ms, step / kTokensPerStep * 1e3);
  EXPECT_LT(r.rows[0].predicted_ms, p.rows[0].predicted_ms);
  // The serving check with the note's drafts alone (its limits and random
  // lengths cleared), so that the bounds below follow from the drafts.
  runs[0].range_ratio = 0;
  runs[0].max_running = runs[0].token_budget = 0;
  const DecodeStepReport served = validate_serving(runs, registry);
  const DecodeStepReport served_plain = validate_serving(plain, registry);
  ASSERT_EQ(served.predicted, 1) << served.rows[0].refused;
  // A speculative step costs at least a plain one, so its TPOT lies between
  // the plain TPOT over the tokens a step yields and the plain TPOT.
  EXPECT_GT(served.rows[0].predicted_ms, served_plain.rows[0].predicted_ms / kTokensPerStep);
  EXPECT_LT(served.rows[0].predicted_ms, served_plain.rows[0].predicted_ms);
}

TEST(ServingRuns, ParsingIsStrict) {
  const std::string good = std::string(kServingHeader) + serving_row("meta-llama/Llama-3.1-70B");
  const auto runs = parse_serving_runs(good, "t.csv");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].concurrency, 16);
  EXPECT_EQ(runs[0].tp, 2);
  EXPECT_EQ(runs[0].attention_dp, 1);  // empty: not used
  EXPECT_DOUBLE_EQ(runs[0].tpot_ms, 20.5);
  auto fails_with = [](const std::string& text, const std::string& what) {
    try {
      (void)parse_serving_runs(text, "t.csv");
      ADD_FAILURE() << "accepted: " << what;
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails_with(std::string("id,extra\n"), "extra: unknown column");
  fails_with(std::string(kServingHeader).replace(0, 3, ""), "missing column");
  fails_with(std::string(kServingHeader) + serving_row("m", "nan"), "silicon_tpot_ms");
  fails_with(std::string(kServingHeader) + serving_row("m", "-1"), "silicon_tpot_ms");
  fails_with(std::string(kServingHeader) + serving_row("m", "1", "99999999"), "tp_size");
  fails_with(std::string(kServingHeader) + "r1,vllm\n", "2 fields, the header has 33");
  fails_with(std::string(kServingHeader) + "\"quoted\"\n", "quoted fields");
  fails_with("", "no header line");
}

TEST(ServingRuns, DecodeStepsArePredictedOrRefusedWithAReason) {
  const Registry registry = Registry::built_in();
  const std::string text = std::string(kServingHeader) + serving_row("meta-llama/Llama-3.1-70B") +
                           serving_row("example/no-such-model");
  const DecodeStepReport r =
      validate_decode_steps(parse_serving_runs(text, "t.csv"), registry, {}, "case");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.predicted, 1);
  EXPECT_EQ(r.refused, 1);
  EXPECT_NE(r.rows[1].refused.find("no preset for this model"), std::string::npos)
      << r.rows[1].refused;
  // The predicted row is the plain decode step: batch 16 over 1024 + 256/2
  // cached tokens at TP 2, W8A8 fp8 with the fp8 profile's fp8 KV cache, with
  // vLLM's profile.
  const DecodeStepRow& row = r.rows[0];
  EXPECT_EQ(row.model, "llama-3.1-70b");
  EXPECT_EQ(row.device, "h200");
  EXPECT_EQ(row.engine, "vllm");
  Scenario s;
  s.batch = 16;
  s.seq_len = 1024 + 128;
  s.tp = 2;
  s.precision.weights = Format::kFp8;
  s.precision.act = Format::kFp8;
  s.precision.kv = Format::kFp8;
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("vllm");
  const double expected_ms =
      predict(load_model("llama-3.1-70b"), registry.get("h200"), s, o).time_s * 1e3;
  EXPECT_DOUBLE_EQ(row.predicted_ms, expected_ms);
  EXPECT_DOUBLE_EQ(row.error_pct, (expected_ms - 20.5) / 20.5 * 100);
  ASSERT_FALSE(r.groups.empty());
  EXPECT_EQ(r.groups[0].group, "all");
  EXPECT_EQ(r.groups[0].rows, 1);
}

// An fp8 latent cache under SGLang on Hopper would cost a whole-pool cast a
// step (over 100 ms for DeepSeek-R1 at TP 8); the runs' TPOTs rule it out, so
// an AIConfigurator SGLang run of an MLA model on Hopper is read with a bf16
// cache, and one on Blackwell (TRT-LLM MLA reads fp8) keeps its fp8 cache.
TEST(ServingRuns, AnEngineThatCastsItsLatentCacheIsReadWithABf16Cache) {
  const Registry registry = Registry::built_in();
  auto row = [](const std::string& system) {
    return "r1,sglang,0.5.9,deepseek-ai/DeepSeek-R1," + system +
           ",fp8,agg,1024,1024,fp8_block,fp8_block,8,8,1,1,,,,,,,,,,,,,,,,,250.0,12.5\n";
  };
  const DecodeStepReport r = validate_decode_steps(
      parse_serving_runs(std::string(kServingHeader) + row("h200_sxm") + row("b200_sxm"), "t.csv"),
      registry, {}, "case");
  ASSERT_EQ(r.predicted, 2) << r.rows[0].refused;
  const ModelSpec m = load_model("deepseek-v3");
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("sglang");
  o.graph_max_batch = 8;
  auto step = [&](const char* device, Format kv) {
    Scenario s;
    s.batch = 8;
    s.seq_len = 1024 + 512;
    s.tp = 8;
    s.precision.weights = s.precision.experts = s.precision.act = Format::kFp8;
    s.precision.kv = kv;
    return predict(m, registry.get(device), s, o).time_s * 1e3;
  };
  EXPECT_DOUBLE_EQ(r.rows[0].predicted_ms, step("h200", Format::kBf16));
  EXPECT_NE(r.rows[0].formats.find("bf16 cache"), std::string::npos) << r.rows[0].formats;
  EXPECT_DOUBLE_EQ(r.rows[1].predicted_ms, step("b200", Format::kFp8));
}

// AIConfigurator's SDK gives a quantized checkpoint (here the -FP8 release of
// Qwen3-235B-A22B) an fp8 KV cache, and its fp8 and fp4 precision profiles give
// one to a bf16 checkpoint too (Llama-3.1-70B run at fp8); a bf16 run keeps a
// bf16 cache. The decode step of each row says so: a mutation that drops
// either rule, or applies it to the bf16 run, fails one of the three.
TEST(ServingRuns, Fp8ProfilesAndQuantizedCheckpointsKeepAnFp8KvCache) {
  const Registry registry = Registry::built_in();
  const std::string bf16_run =
      "r1,vllm,0.12.0,meta-llama/"
      "Llama-3.1-70B,h200_sxm,bf16,agg,1024,256,,,16,2,1,1,,,,,,,,,,,,,,,,"
      ",150.0,20.5\n";
  const std::string text = std::string(kServingHeader) +
                           serving_row("Qwen/Qwen3-235B-A22B-FP8", "20.5", "8") +
                           serving_row("meta-llama/Llama-3.1-70B") + bf16_run;
  const DecodeStepReport r =
      validate_decode_steps(parse_serving_runs(text, "t.csv"), registry, {}, "case");
  ASSERT_EQ(r.predicted, 3);
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("vllm");
  o.graph_max_batch = 16;  // the row's batch: its deployment's graph sizes
  const auto step = [](std::int64_t tp, Format kv) {
    Scenario s;
    s.batch = 16;
    s.seq_len = 1024 + 128;
    s.tp = tp;
    s.precision.weights = s.precision.experts = Format::kFp8;
    s.precision.act = Format::kFp8;
    s.precision.kv = kv;
    return s;
  };
  const Device& h200 = registry.get("h200");
  const ModelSpec qwen = load_model("qwen3-235b-a22b");
  EXPECT_DOUBLE_EQ(r.rows[0].predicted_ms,
                   predict(qwen, h200, step(8, Format::kFp8), o).time_s * 1e3);
  const ModelSpec llama = load_model("llama-3.1-70b");
  Scenario fp8_run = step(2, Format::kFp8);
  fp8_run.precision.experts.reset();
  EXPECT_DOUBLE_EQ(r.rows[1].predicted_ms, predict(llama, h200, fp8_run, o).time_s * 1e3);
  Scenario bf16 = step(2, Format::kBf16);
  bf16.precision = {};
  bf16.precision.kv = Format::kBf16;
  EXPECT_DOUBLE_EQ(r.rows[2].predicted_ms, predict(llama, h200, bf16, o).time_s * 1e3);
  // The cache's format shows in the step (vLLM's measured fp8-cache decode
  // attention on the H200 is the slower one here, 16.04 against 15.92 ms).
  Scenario bf16_cache = fp8_run;
  bf16_cache.precision.kv = Format::kBf16;
  EXPECT_NE(predict(llama, h200, bf16_cache, o).time_s, predict(llama, h200, fp8_run, o).time_s);
}

// With the prompts' share, a step is the plain step plus batch / osl of what
// one whole prompt adds to a step (the run: isl 1024, osl 256, concurrency 16).
TEST(ServingRuns, PromptShareAddsBatchOverOslOfOnePrompt) {
  const Registry registry = Registry::built_in();
  const std::string text = std::string(kServingHeader) + serving_row("meta-llama/Llama-3.1-70B");
  const DecodeStepReport r =
      validate_decode_steps(parse_serving_runs(text, "t.csv"), registry, {}, "case", nullptr, true);
  ASSERT_EQ(r.predicted, 1);
  Scenario s;
  s.batch = 16;  // 16 requests of 1,280 tokens fit in two H200s beside 70B fp8 weights
  s.seq_len = 1024 + 128;
  s.tp = 2;
  s.precision.weights = Format::kFp8;
  s.precision.act = Format::kFp8;
  s.precision.kv = Format::kFp8;  // the fp8 profile's cache
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("vllm");
  const ModelSpec m = load_model("llama-3.1-70b");
  const double plain = predict(m, registry.get("h200"), s, o).time_s;
  s.prefill_tokens = 1024;
  s.prefill_prompt = 1024;
  const double with_prompt = predict(m, registry.get("h200"), s, o).time_s;
  EXPECT_NEAR(r.rows[0].predicted_ms, (plain + 16.0 / 256 * (with_prompt - plain)) * 1e3, 1e-9);
}

TEST(ServingRuns, EveryAggregatedRowOfTheDevelopmentSetIsCounted) {
  const DecodeStepReport r =
      validate_decode_steps(built_in_serving_runs(), Registry::built_in(), {}, "case");
  EXPECT_EQ(r.predicted + r.refused, 1502);
  EXPECT_EQ(r.skipped_disaggregated, 599);
  int refusals = 0;
  for (const auto& [reason, n] : r.refusals) refusals += n;
  EXPECT_EQ(refusals, r.refused);
}

// The development set's Qwen3-235B-A22B-FP8, Kimi-K2.5 and MiniMax-M2.5 rows have
// presets now: none of them is refused for want of one, and some of each are predicted.
TEST(ServingRuns, NewPresetsCoverTheirDevelopmentSetRows) {
  const std::vector<ServingRun> all = built_in_serving_runs();
  for (const std::string model :
       {"Qwen/Qwen3-235B-A22B-FP8", "moonshotai/Kimi-K2.5", "MiniMaxAI/MiniMax-M2.5"}) {
    std::vector<ServingRun> runs;
    std::copy_if(all.begin(), all.end(), std::back_inserter(runs),
                 [&](const ServingRun& r) { return r.model_path == model; });
    ASSERT_FALSE(runs.empty()) << model;
    const DecodeStepReport r = validate_decode_steps(runs, Registry::built_in(), {}, "case");
    for (const auto& row : r.rows)
      EXPECT_EQ(row.refused.find("no preset"), std::string::npos) << model << ": " << row.refused;
    EXPECT_GT(r.predicted, 0) << model;
  }
}

// One predicted aggregated row of a serving check, for the TTFT-by-length fits.
DecodeStepRow ttft_row(const std::string& model, std::int64_t isl, double measured_ms,
                       double predicted_ms) {
  DecodeStepRow row;
  row.engine = "sglang";
  row.model = model;
  row.device = "b200";
  row.run.mode = "agg";
  row.run.tp = 8;
  row.run.concurrency = 4;
  row.run.osl = 1024;
  row.run.isl = isl;
  row.run.ttft_ms = measured_ms;
  row.predicted_ttft_ms = predicted_ms;
  return row;
}

TEST(TtftLengthFits, FitTheFixedAndPerTokenPartsOfEachSweep) {
  constexpr double kTol = 1e-9;
  DecodeStepReport report;
  // Sweep "a" at 1,024 and 8,192 tokens, the longer measured twice (390 and
  // 410 ms: their mean, 400, counts). Two points: the line through them.
  //   measured: per token (400 - 200) / 7,168 ms, fixed 200 - 1,024 x that;
  //   predicted: per token (300 - 150) / 7,168 ms, fixed 150 - 1,024 x that.
  report.rows.push_back(ttft_row("a", 1024, 200, 150));
  report.rows.push_back(ttft_row("a", 8192, 390, 300));
  report.rows.push_back(ttft_row("a", 8192, 410, 300));
  // Sweep "c" at three lengths, by least squares: the measurements lie on
  // 50 ms + 50 us a token; the predictions 100, 140, 200 ms give a slope of
  // sum(dx dy) / sum(dx^2) = (1,000 x 46.67 + 1,000 x 53.33) / 2e6 = 0.05 ms
  // a token and an intercept of 146.67 - 2,000 x 0.05 = 46.67 ms.
  report.rows.push_back(ttft_row("c", 1000, 100, 100));
  report.rows.push_back(ttft_row("c", 2000, 150, 140));
  report.rows.push_back(ttft_row("c", 3000, 200, 200));
  // Left out: a sweep at one length, another format's row of sweep "a" (its
  // own sweep, at one length), a refused row, a disaggregated row.
  report.rows.push_back(ttft_row("one-length", 1024, 100, 90));
  DecodeStepRow other_format = ttft_row("a", 4096, 1e4, 1e4);
  other_format.formats = "nvfp4";
  report.rows.push_back(other_format);
  DecodeStepRow refused = ttft_row("a", 4096, 1e4, 1e4);
  refused.refused = "unknown model";
  report.rows.push_back(refused);
  DecodeStepRow disagg = ttft_row("a", 2048, 1e4, 1e4);
  disagg.run.mode = "disagg";
  report.rows.push_back(disagg);

  const std::vector<TtftLengthFit> fits = ttft_length_fits(report);
  ASSERT_EQ(fits.size(), 2u);
  const TtftLengthFit& a = fits[0];
  EXPECT_EQ(a.model, "a");
  EXPECT_EQ(a.isl, (std::vector<std::int64_t>{1024, 8192}));
  EXPECT_NEAR(a.measured_per_token_us, 200.0 / 7168 * 1e3, kTol);
  EXPECT_NEAR(a.measured_fixed_ms, 200 - 1024 * 200.0 / 7168, kTol);
  EXPECT_NEAR(a.predicted_per_token_us, 150.0 / 7168 * 1e3, kTol);
  EXPECT_NEAR(a.predicted_fixed_ms, 150 - 1024 * 150.0 / 7168, kTol);
  const TtftLengthFit& c = fits[1];
  EXPECT_EQ(c.isl.size(), 3u);
  EXPECT_NEAR(c.measured_per_token_us, 50, kTol);
  EXPECT_NEAR(c.measured_fixed_ms, 50, kTol);
  EXPECT_NEAR(c.predicted_per_token_us, 50, kTol);
  EXPECT_NEAR(c.predicted_fixed_ms, 440.0 / 3 - 100, kTol);

  // The medians: fixed gaps 300 / 7 (= 171.43 - 128.57) and 10 / 3; per-token
  // ratios 150 / 200 and 1.
  std::vector<TtftLengthFit> many_clients = fits;
  many_clients[1].concurrency = kFewClients + 1;  // "c" past the few clients
  const std::vector<TtftLengthSummary> groups = summarize_ttft_length_fits(many_clients);
  // all, clients<=8, engine=sglang, model=a, model=c
  ASSERT_EQ(groups.size(), 5u);
  EXPECT_EQ(groups[0].group, "all");
  EXPECT_EQ(groups[0].sweeps, 2);
  EXPECT_EQ(groups[0].rising, 2);
  EXPECT_NEAR(groups[0].median_fixed_gap_ms, (300.0 / 7 + 10.0 / 3) / 2, kTol);
  EXPECT_NEAR(groups[0].median_per_token_ratio, (0.75 + 1) / 2, kTol);
  EXPECT_EQ(groups[1].group, "clients<=8");
  EXPECT_EQ(groups[1].sweeps, 1);  // "a" alone
  EXPECT_NEAR(groups[1].median_fixed_gap_ms, 300.0 / 7, kTol);
  EXPECT_EQ(groups[2].group, "engine=sglang");
  EXPECT_EQ(groups[3].group, "model=a");
  EXPECT_NEAR(groups[3].median_fixed_gap_ms, 300.0 / 7, kTol);
  EXPECT_EQ(groups[4].group, "model=c");
  EXPECT_TRUE(summarize_ttft_length_fits({}).empty());
}

TEST(ErrorStatistics, PercentilesInterpolateAndStatsUseAbsoluteErrors) {
  // Sorted 1, 2, 3, 4, 5: the median is 3; p90 sits at index 3.6: 4 + 0.6 x 1.
  EXPECT_DOUBLE_EQ(percentile({5, 1, 4, 2, 3}, 0.5), 3);
  EXPECT_DOUBLE_EQ(percentile({5, 1, 4, 2, 3}, 0.9), 4.6);
  EXPECT_DOUBLE_EQ(percentile({}, 0.5), 0);
  const ErrorStats s = error_stats("g", {-10, 20, -30});
  EXPECT_EQ(s.rows, 3);
  EXPECT_DOUBLE_EQ(s.median_abs_pct, 20);
  EXPECT_DOUBLE_EQ(s.max_abs_pct, 30);
  EXPECT_DOUBLE_EQ(s.median_signed_pct, -10);
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// Leave one source out for the published cases: every measured device's
// cases come twice, with and without its kernel tables, and the tables
// change at least one device's predictions (they are not inert).
TEST(Validation, LeaveOneDeviceOutPairsEveryMeasuredDevice) {
  const std::vector<ErrorStats> groups =
      leave_one_device_out_cases(built_in_validation(), Registry::built_in());
  ASSERT_FALSE(groups.empty());
  ASSERT_EQ(groups.size() % 2, 0u);
  bool any_differs = false;
  for (std::size_t i = 0; i < groups.size(); i += 2) {
    ASSERT_EQ(groups[i].group.rfind("with-own=", 0), 0u);
    ASSERT_EQ(groups[i + 1].group.rfind("held-out=", 0), 0u);
    EXPECT_EQ(groups[i].group.substr(9), groups[i + 1].group.substr(9));
    EXPECT_EQ(groups[i].rows, groups[i + 1].rows);
    any_differs |= groups[i].median_abs_pct != groups[i + 1].median_abs_pct;
  }
  EXPECT_TRUE(any_differs);
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// A report of hand-set rows, grouped as validate_cases groups them.
ValidationReport report_of(const std::vector<std::tuple<std::string, std::string, double>>& rows) {
  ValidationReport r;
  std::map<std::string, std::vector<double>> engines;
  std::vector<double> all, abs_errors;
  int n = 0;
  for (const auto& [engine, metric, error] : rows) {
    ValidationRow row;
    row.c.id = "C" + std::to_string(++n);
    row.c.metric = metric;
    row.engine = engine;
    row.error_pct = error;
    r.rows.push_back(row);
    engines[engine].push_back(error);
    all.push_back(error);
    abs_errors.push_back(std::fabs(error));
  }
  r.evaluated = static_cast<int>(all.size());
  r.median_abs_error_pct = percentile(abs_errors, 0.5);
  r.median_signed_error_pct = percentile(all, 0.5);
  r.groups.push_back(error_stats("all", all));
  for (const auto& [e, errors] : engines) r.groups.push_back(error_stats("engine=" + e, errors));
  return r;
}

// Issue 11's four targets, each read from the rows by hand.
TEST(ValidationTargets, PublishedTargetsReadTheCasesEnginesAndFamilies) {
  // Engine a: five ttft cases biased +8% (a family), |errors| 6..10: median 8%.
  // Engine b: four tpot cases at -40, -2, 3, 50 (below kMinFamilyCases: no family),
  // two of them past 35%.
  const ValidationReport r = report_of({{"a", "ttft", 6},
                                        {"a", "ttft", 7},
                                        {"a", "ttft", 8},
                                        {"a", "ttft", 9},
                                        {"a", "ttft", 10},
                                        {"b", "tpot", -40},
                                        {"b", "tpot", -2},
                                        {"b", "tpot", 3},
                                        {"b", "tpot", 50}});
  const std::vector<TargetCheck> t = published_targets(r);
  ASSERT_EQ(t.size(), 4u);
  // Nine |errors| sorted 2 3 6 7 8 9 10 40 50: the median is 8.
  EXPECT_EQ(t[0].target, "median |error|");
  EXPECT_DOUBLE_EQ(t[0].value, 8);
  EXPECT_TRUE(t[0].holds);
  EXPECT_TRUE(t[0].misses.empty());
  EXPECT_FALSE(t[0].count);
  // C9 (+50) then C6 (-40), worst first; a count of cases, not a percentage.
  EXPECT_EQ(t[1].target, "cases past 35%");
  EXPECT_TRUE(t[1].count);
  EXPECT_DOUBLE_EQ(t[1].value, 2);
  EXPECT_FALSE(t[1].holds);
  EXPECT_EQ(t[1].misses, "C9 +50%, C6 -40%");
  // Engine b's |errors| 2 3 40 50: median 21.5, past 15; a's 8 holds.
  EXPECT_DOUBLE_EQ(t[2].value, 21.5);
  EXPECT_FALSE(t[2].holds);
  EXPECT_EQ(t[2].misses, "b 21.5% (4 cases)");
  // Only a's five-case family counts: signed median +8, past +-5.
  EXPECT_DOUBLE_EQ(t[3].value, 8);
  EXPECT_FALSE(t[3].holds);
  EXPECT_EQ(t[3].misses, "a x ttft +8.0% (5 cases)");
  EXPECT_TRUE(published_targets(ValidationReport{}).empty());
}

// More than five cases past 35% name the worst five and count the rest; a
// case that could not be predicted counts in none.
TEST(ValidationTargets, ManyCasesPastTheBoundAreNamedWorstFirst) {
  ValidationReport r = report_of({{"a", "m", 36},
                                  {"a", "m", -37},
                                  {"a", "m", 38},
                                  {"a", "m", -39},
                                  {"a", "m", 40},
                                  {"a", "m", 41},
                                  {"a", "m", 42}});
  r.rows[6].error = "unknown device";  // C7 (+42) not predicted
  const TargetCheck cases = published_targets(r)[1];
  EXPECT_DOUBLE_EQ(cases.value, 6);
  EXPECT_EQ(cases.misses, "C6 +41%, C5 +40%, C4 -39%, C3 +38%, C2 -37% and 1 more");
}

// Issue 12's serving targets read the aggregated groups; the decode-step
// target reads "all".
TEST(ValidationTargets, ServingAndDecodeStepTargetsReadTheirGroups) {
  DecodeStepReport r;
  // TPOT |errors| 5, 8, 30: median 8 (holds 10), p90 at index 1.8 = 8 + 0.8 x 22 = 25.6 (misses
  // 25).
  r.groups = {error_stats("all", {5, -8, 30, 90}), error_stats("mode=agg", {5, -8, 30})};
  // TTFT |errors| 10, 20, 40: median 20 (holds 20).
  r.ttft_groups = {error_stats("mode=agg", {-10, -20, 40})};
  const std::vector<TargetCheck> s = serving_targets(r);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0].value, 8);
  EXPECT_TRUE(s[0].holds);
  EXPECT_DOUBLE_EQ(s[1].value, 25.6);
  EXPECT_FALSE(s[1].holds);
  EXPECT_EQ(s[1].misses, "25.6% over 3 rows (signed median +5.0%)");
  EXPECT_DOUBLE_EQ(s[2].value, 20);
  EXPECT_TRUE(s[2].holds);
  // |errors| 5 8 30 90: median 19, past issue 11's 12%.
  const std::vector<TargetCheck> d = decode_step_targets(r);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_DOUBLE_EQ(d[0].value, 19);
  EXPECT_FALSE(d[0].holds);
  EXPECT_TRUE(serving_targets(DecodeStepReport{}).empty());
  EXPECT_TRUE(decode_step_targets(DecodeStepReport{}).empty());
}

}  // namespace
}  // namespace roofline
