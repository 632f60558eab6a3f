#include "roofline/strategy.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "roofline/error.h"
#include "roofline/quality.h"
#include "roofline/recommend.h"

namespace roofline {
namespace {

const Registry& registry() {
  static const Registry r = Registry::built_in();
  return r;
}

TEST(Strategies, SixNamedStrategiesAndTheBaselines) {
  std::vector<std::string> names;
  for (const auto& s : built_in_strategies()) names.push_back(s.name);
  for (const char* n : {"fp16_baseline", "fp8_balanced", "int8_smoothquant", "int4_weight_only",
                        "nvfp4_blackwell", "long_context_kv", "bf16_baseline"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  const Strategy fp8 = load_strategy("fp8_balanced");
  EXPECT_EQ(fp8.weights, Format::kFp8);
  EXPECT_EQ(fp8.ops[static_cast<std::size_t>(OpKind::kLmHead)].weights, Format::kBf16);
}

nlohmann::json custom() {
  return nlohmann::json::parse(
      R"({"name": "mine", "description": "test", "weights": "fp8", "act": "bf16",
      "kv": "fp8", "ops": {"down_proj": {"weights": "bf16"}}})");
}

TEST(Strategies, CustomPlansAreValidatedStrictly) {
  EXPECT_EQ(parse_strategy(custom().dump(), "c.json").name, "mine");
  auto doc = custom();
  doc["ops"]["warp_drive"] = {{"weights", "fp8"}};
  EXPECT_THROW((void)parse_strategy(doc.dump(), "c.json"), ParseError);
  doc = custom();
  doc["weights"] = "fp7";
  EXPECT_THROW((void)parse_strategy(doc.dump(), "c.json"), ParseError);
  doc = custom();
  doc["act"] = "q4_0";  // storage-only formats cannot be activations
  EXPECT_THROW((void)parse_strategy(doc.dump(), "c.json"), ParseError);
  doc = custom();
  doc["colour"] = "blue";
  EXPECT_THROW((void)parse_strategy(doc.dump(), "c.json"), ParseError);
  EXPECT_THROW((void)load_strategy("turbo"), NotFound);
}

// A plan may name the routed experts' math (W4A8 MoE kernels): on a device
// with that math it reaches the precision plan; on one without, the plan
// leaves it to the engine and says so; a dense model ignores it.
TEST(Strategies, ExpertActivationsReachThePlan) {
  auto doc = custom();
  doc["weights"] = "mxfp4";
  doc["expert_act"] = "mxfp8";
  const Strategy st = parse_strategy(doc.dump(), "c.json");
  ASSERT_TRUE(st.expert_act);
  EXPECT_EQ(*st.expert_act, Format::kMxfp8);
  const ModelSpec moe = load_model("gpt-oss-120b");
  EXPECT_EQ(resolve(st, moe, registry().get("b200")).precision.expert_act, Format::kMxfp8);
  const ResolvedStrategy hopper = resolve(st, moe, registry().get("h200"));
  EXPECT_FALSE(hopper.precision.expert_act);
  EXPECT_FALSE(hopper.notes.empty());
  EXPECT_FALSE(
      resolve(st, load_model("llama-3.1-8b"), registry().get("b200")).precision.expert_act);
  doc["expert_act"] = "mxfp3";
  EXPECT_THROW((void)parse_strategy(doc.dump(), "c.json"), ParseError);
}

TEST(Strategies, ResolveChecksTheDevice) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Strategy nv = load_strategy("nvfp4_blackwell");
  // Blackwell computes nvfp4: nothing changes.
  const ResolvedStrategy b200 = resolve(nv, m, registry().get("b200"));
  EXPECT_FALSE(b200.weight_only);
  EXPECT_FALSE(b200.act_fallback);
  EXPECT_EQ(b200.precision.act, Format::kNvfp4);
  // Hopper has no FP4 tensor cores: activations fall back, weights run weight-only, and it is said.
  const ResolvedStrategy h100 = resolve(nv, m, registry().get("h100"));
  EXPECT_TRUE(h100.act_fallback);
  EXPECT_TRUE(h100.weight_only);
  EXPECT_EQ(h100.precision.act, Format::kBf16);
  ASSERT_EQ(h100.notes.size(), 2u);
  EXPECT_NE(h100.notes[1].find("weight-only"), std::string::npos);
  // The per-op override reaches the operator graph: lm_head stays bf16.
  Scenario s;
  s.precision = b200.precision;
  const OpGraph g = build_ops(m, registry().get("b200"), s);
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    if (op.kind == OpKind::kLmHead) {
      EXPECT_EQ(op.compute, Format::kBf16);
    }
    if (op.kind == OpKind::kQProj) {
      EXPECT_EQ(op.compute, Format::kNvfp4);
    }
  }
}

// torchao, Llama-3.1-8B: FP8 rowwise W8A8 7.4197 vs bf16 7.3315 word perplexity = +1.203%.
TEST(Quality, EstimatesComeFromPublishedResults) {
  const ModelSpec m = load_model("llama-3.1-8b");
  PrecisionPlan p;
  p.weights = Format::kFp8;
  p.act = Format::kFp8;
  p.kv = Format::kBf16;
  const QualityEstimate fp8 = estimate_quality(m, p);
  EXPECT_NEAR(fp8.loss_pct, (7.4197 / 7.3315 - 1) * 100, 1e-9);
  EXPECT_TRUE(fp8.quantified);
  // 16 bits everywhere: the reference.
  PrecisionPlan bf16;
  bf16.weights = Format::kBf16;
  EXPECT_DOUBLE_EQ(estimate_quality(m, bf16).loss_pct, 0);
  // Llama-3-8B W4A16 int4: the mean of AWQ (6.54) and GPTQ (6.56) over 6.14.
  PrecisionPlan int4;
  int4.weights = Format::kInt4;
  const double expected = ((6.54 / 6.14 - 1) + (6.56 / 6.14 - 1)) / 2 * 100;
  EXPECT_NEAR(estimate_quality(m, int4).loss_pct, expected, 1e-9);
  // A 4-bit KV cache adds its derived bound (KVQuant: < 0.1 ppl on 5.47 = 1.8%).
  int4.kv = Format::kNvfp4;
  EXPECT_NEAR(estimate_quality(m, int4).loss_pct, expected + 1.8, 1e-9);
  // 70B models are more robust: Llama-2-70B SmoothQuant 3.36 / 3.32 vs Llama-2-7B 5.54 / 5.47.
  PrecisionPlan w8a8;
  w8a8.weights = Format::kInt8;
  w8a8.act = Format::kInt8;
  EXPECT_LT(estimate_quality(load_model("llama-2-70b"), w8a8).loss_pct,
            estimate_quality(load_model("llama-2-7b"), w8a8).loss_pct);
}

RecommendOptions decode(std::int64_t ctx, std::int64_t batch = 1) {
  RecommendOptions o;
  o.phase = Phase::kDecode;
  o.seq_len = ctx;
  o.batch = batch;
  return o;
}

// The original description's example: Llama-3 8B decode at 4K on GB10.
TEST(Recommend, OriginalExampleOnGb10) {
  const ModelSpec m = load_model("llama-3-8b");
  const Recommendation r = recommend(m, registry().get("b10"), decode(4096));
  // Within the default 3% quality budget FP8 W8A8 wins, at ~1.8x.
  EXPECT_EQ(r.best.strategy, "fp8_balanced");
  EXPECT_GT(r.best.predicted_speedup, 1.7);
  EXPECT_LT(r.best.predicted_speedup, 2.0);
  EXPECT_EQ(r.best.attention, AttentionKernel::kFlashDecoding);
  EXPECT_EQ(r.alternatives.size(), built_in_strategies().size());
  // NVFP4 is faster but over budget; with a larger budget it (or int4) wins.
  RecommendOptions loose = decode(4096);
  loose.max_quality_loss_pct = 10;
  const Recommendation l = recommend(m, registry().get("b10"), loose);
  EXPECT_GT(l.best.predicted_speedup, 2.5);
  EXPECT_TRUE(l.best.strategy == "nvfp4_blackwell" || l.best.strategy == "int4_weight_only")
      << l.best.strategy;
  EXPECT_GE(r.rationale.size(), 4u);
}

// Decode, prefill and long context lead to different choices.
TEST(Recommend, ContextAware) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& h100 = registry().get("h100");
  const Recommendation longctx = recommend(m, h100, decode(131072, 8));
  EXPECT_EQ(longctx.best.strategy, "long_context_kv");
  RecommendOptions prefill;
  prefill.phase = Phase::kPrefill;
  prefill.seq_len = 8192;
  prefill.max_quality_loss_pct = 10;
  const Recommendation pre = recommend(m, registry().get("b200"), prefill);
  EXPECT_EQ(pre.best.strategy,
            "nvfp4_blackwell");  // native FP4 tensor cores in a compute-bound pass
  for (const auto& c : pre.alternatives) {
    if (c.strategy == "int4_weight_only") {
      EXPECT_LT(c.predicted_speedup, 1.0);  // dequantization in compute-bound prefill
    }
  }
}

TEST(Recommend, ConstraintsRejectCandidates) {
  const ModelSpec m = load_model("llama-3.1-70b");
  RecommendOptions o = decode(4096);
  o.max_quality_loss_pct = 100;
  const Recommendation r = recommend(m, registry().get("h100"), o);
  for (const auto& c : r.alternatives) {
    if (c.strategy == "bf16_baseline") {
      EXPECT_FALSE(c.feasible);  // 141 GB of weights on an 80 GB device
      EXPECT_NE(c.rejected_because.front().find("memory"), std::string::npos);
    }
  }
  o.latency_target_s = 1e-6;
  const Recommendation none = recommend(m, registry().get("h100"), o);
  EXPECT_FALSE(none.any_feasible);
  o.max_quality_loss_pct = -1;
  EXPECT_THROW((void)recommend(m, registry().get("h100"), o), InvalidArgument);
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// Issue 13 item 1: per-operator formats drive time, memory and quality alike.
// For a dense model at batch 1, a decode step streams every linear weight once,
// so the weight memory is the streamed weight bytes plus the embedding table
// (only one row of it is read per token) minus that row.
void expect_consistent(const Strategy& st, const ModelSpec& m, const Device& d) {
  const ResolvedStrategy plan = resolve(st, m, d);
  Scenario s;
  s.precision = plan.precision;
  s.seq_len = 1024;
  const Prediction p = predict(m, d, s);
  const ParamCounts c = count_parameters(m);
  const double embedding_table = bytes_for(m.native_weights, c.embedding);
  const double one_row = bytes_for(m.native_weights, static_cast<double>(m.hidden));
  EXPECT_NEAR(p.memory.weights_bytes, p.weight_bytes + embedding_table - one_row,
              1e-6 * p.memory.weights_bytes)
      << st.name;
}

TEST(Strategy, PerOperatorFormatsDriveTimeMemoryAndQualityAlike) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Registry registry = Registry::built_in();
  const Device& d = registry.get("b200");
  for (const Strategy& st : built_in_strategies()) expect_consistent(st, m, d);
  // fp8 everywhere with the FFN in NVFP4 (the issue's plan).
  const Strategy mixed = parse_strategy(R"({"name": "ffn_nvfp4", "description": "FFN in nvfp4",
      "weights": "fp8", "act": "fp8", "kv": "fp8",
      "ops": {"gate_proj": {"weights": "nvfp4"}, "up_proj": {"weights": "nvfp4"},
              "down_proj": {"weights": "nvfp4"}, "lm_head": {"weights": "bf16", "act": "bf16"}}})",
                                        "test");
  expect_consistent(mixed, m, d);
  const ResolvedStrategy fp8 = resolve(load_strategy("fp8_balanced"), m, d);
  const ResolvedStrategy ffn = resolve(mixed, m, d);
  Scenario s;
  s.seq_len = 1024;
  s.precision = fp8.precision;
  const Prediction a = predict(m, d, s);
  s.precision = ffn.precision;
  const Prediction b = predict(m, d, s);
  // The FFN is 3 x 4096 x 14336 x 32 = 5.64 G parameters: at 4.5 instead of 8
  // bits, 2.47 GB less, in the streamed bytes and in memory alike.
  const double saved = 5.637144576e9 * (8.0 - 4.5) / 8;
  EXPECT_NEAR(a.weight_bytes - b.weight_bytes, saved, 1e-3 * saved);
  EXPECT_NEAR(a.memory.weights_bytes - b.memory.weights_bytes, saved, 1e-3 * saved);
  // Quality: the FFN's 81% of the linear weights (5.64 of 6.98 G) take NVFP4's
  // published loss, larger than FP8's, so the estimate rises and says why.
  const QualityEstimate qa = estimate_quality(m, fp8.precision);
  const QualityEstimate qb = estimate_quality(m, ffn.precision);
  EXPECT_GT(qb.linear_loss_pct, qa.linear_loss_pct);
  bool named = false;
  for (const auto& line : qb.basis)
    named = named || line.find("nvfp4: 81% of the linear weights") != std::string::npos;
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace roofline
