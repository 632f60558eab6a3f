#include "roofline/predict.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/report.h"
#include "roofline/request.h"

namespace roofline {
namespace {

constexpr double kRelTol = 1e-9;

const Registry& registry() {
  static const Registry r = Registry::built_in();
  return r;
}

ModelOptions ideal() {
  ModelOptions o;
  o.mode = Mode::kIdeal;
  return o;
}

Scenario decode(std::int64_t batch, std::int64_t ctx) {
  Scenario s;
  s.phase = Phase::kDecode;
  s.batch = batch;
  s.seq_len = ctx;
  return s;
}

struct Sums {
  double matmul_flops = 0, attention_flops = 0, weight_bytes = 0, kv_bytes = 0;
};
Sums sums(const OpGraph& g) {
  Sums s;
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    if (op.cls == OpClass::kMatmul) {
      s.matmul_flops += op.count * op.flops;
      s.weight_bytes += op.count * op.weight_bytes;
    }
    if (op.cls == OpClass::kAttention) s.attention_flops += op.count * op.flops;
    s.kv_bytes += op.count * op.kv_bytes;
  }
  return s;
}

// Llama-3.1-8B decode, batch 1, 512 cached tokens (attends 513), bf16:
//   per layer weight matmul FLOPs 2 x (4096*4096*2 + 4096*1024*2 + 3*4096*14336)
//     = 2 x 218,103,808 = 436,207,616; x 32 = 13,958,643,712
//   lm_head 2 x 4096 x 128,256 = 1,050,673,152 -> matmuls 15,009,316,864
//   attention per layer 2 x (2 x 32 heads x 513 x 128) = 8,404,992; x 32 = 268,959,744
//   weight bytes = matmul params x 2 B = 15,009,316,864 (+ router none)
//   KV read per layer 2 x 8 x 513 x 128 x 2 B = 2,101,248; written 2 x 8 x 128 x 2 = 4,096
//     x 32 layers = 67,239,936 + 131,072 = 67,371,008
TEST(Ops, Llama31_8bDecodeByHand) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const OpGraph g = build_ops(m, registry().get("h100"), decode(1, 512), ideal());
  const Sums s = sums(g);
  EXPECT_DOUBLE_EQ(s.matmul_flops, 15'009'316'864.0);
  EXPECT_DOUBLE_EQ(s.attention_flops, 268'959'744.0);
  // Weight matmuls stream each weight once, plus q/k/v/o-free norms (not matmuls).
  EXPECT_DOUBLE_EQ(s.weight_bytes, 15'009'316'864.0);
  EXPECT_DOUBLE_EQ(s.kv_bytes, 67'371'008.0);
  // All 17 per-layer operator types appear, plus embedding, final_norm, lm_head.
  int per_layer = 0;
  for (int i = 0; i < g.size; ++i) per_layer += g.ops[static_cast<std::size_t>(i)].count == 32;
  EXPECT_EQ(per_layer, 17);
  EXPECT_EQ(g.size, 20);
}

// A decode step that carries prompt tokens (continuous batching):
// Llama-3.1-8B, batch 4 over 512 cached tokens, plus P = 1024 prompt tokens
// of 2048-token prompts (half a prompt's causal attention).
//   weight matmuls: (4 + 1024) x 436,207,616 x 32 = 14,349,485,735,936
//   lm_head: 4 decode rows + 1024 / 2048 = 0.5 finishing prompts:
//     4.5 x 1,050,673,152 = 4,728,029,184
//   decode attention: 4 x 8,404,992 x 32 = 1,075,838,976
//   prompt attention: 0.5 x 2048 x 2049 / 2 = 1,049,088 pairs;
//     per layer 2 x (2 x 32 x 1,049,088 x 128) = 17,188,257,792; x 32 = 550,024,249,344
TEST(Ops, DecodeStepCarryingPromptTokensByHand) {
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario s = decode(4, 512);
  s.prefill_tokens = 1024;
  s.prefill_prompt = 2048;
  const OpGraph g = build_ops(m, registry().get("h100"), s, ideal());
  const Sums sum = sums(g);
  EXPECT_DOUBLE_EQ(sum.matmul_flops, 14'349'485'735'936.0 + 4'728'029'184.0);
  EXPECT_DOUBLE_EQ(sum.attention_flops, 1'075'838'976.0 + 550'024'249'344.0);
  EXPECT_DOUBLE_EQ(g.tokens, 1028);
  // The step is no longer plain: prompts make it slower than the decode alone.
  const Prediction with = predict(m, registry().get("h100"), s);
  const Prediction plain = predict(m, registry().get("h100"), decode(4, 512));
  EXPECT_GT(with.time_s, plain.time_s);
  // Prompt tokens ride along with decode steps only, and need their prompt length.
  Scenario bad = s;
  bad.phase = Phase::kPrefill;
  EXPECT_THROW((void)build_ops(m, registry().get("h100"), bad, ideal()), InvalidArgument);
  bad = s;
  bad.prefill_prompt = 0;
  EXPECT_THROW((void)build_ops(m, registry().get("h100"), bad, ideal()), InvalidArgument);
}

// Llama-3.1-8B prefill, batch 1, 2048 tokens:
//   weight matmuls 2048 x 436,207,616 x 32 = 28,587,302,322,176
//   lm_head for the last token only: 1,050,673,152
//   causal attention pairs 2048 x 2049 / 2 = 2,098,176;
//   per layer 2 x (2 x 32 x 2,098,176 x 128) = 34,376,515,584; x 32 = 1,100,048,498,688
TEST(Ops, Llama31_8bPrefillByHand) {
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 2048;
  s.attention = AttentionKernel::kFa2;
  const OpGraph g = build_ops(m, registry().get("a100"), s, ideal());
  const Sums sum = sums(g);
  EXPECT_DOUBLE_EQ(sum.matmul_flops, 28'587'302'322'176.0 + 1'050'673'152.0);
  EXPECT_DOUBLE_EQ(sum.attention_flops, 1'100'048'498'688.0);
  // The unfused kernel computes the whole square: 2048^2 pairs instead.
  s.attention = AttentionKernel::kNaive;
  const OpGraph naive = build_ops(m, registry().get("a100"), s, ideal());
  EXPECT_DOUBLE_EQ(sums(naive).attention_flops, 32.0 * 2 * 2 * 32 * 2048.0 * 2048 * 128);
}

TEST(Ops, GqaKvBytesUseKvHeads) {
  ModelSpec m = load_model("llama-3.1-8b");
  const double gqa = sums(build_ops(m, registry().get("h100"), decode(4, 4096), ideal())).kv_bytes;
  m.kv_heads = 32;  // the same model as MHA
  const double mha = sums(build_ops(m, registry().get("h100"), decode(4, 4096), ideal())).kv_bytes;
  EXPECT_DOUBLE_EQ(mha / gqa, 4.0);
}

// DeepSeek-V3 decode at 4096 cached tokens reads the 576-element latent per
// layer per token: 4097 x 576 x 2 B = 4,719,744 per layer, x 61 layers.
TEST(Ops, MlaReadsTheCompressedLatent) {
  const ModelSpec m = load_model("deepseek-v3");
  Scenario s = decode(1, 4096);
  const OpGraph g = build_ops(m, registry().get("h200"), s, ideal());
  double read = 0;
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    if (op.cls == OpClass::kAttention) read += op.count * op.kv_bytes;
  }
  EXPECT_DOUBLE_EQ(read, 61.0 * 4097 * 576 * 2);
}

// Mixtral (8 experts, top-2): batch 1 touches exactly 2 experts; batch 8
// touches 8 (1 - (6/8)^8) = 7.199 (attention-and-moe.md: D(8) = 7.20).
TEST(Ops, MoeStreamsOnlyTheExpertsTouched) {
  const ModelSpec m = load_model("mixtral-8x7b");
  const OpGraph one = build_ops(m, registry().get("h100"), decode(1, 512), ideal());
  EXPECT_NEAR(one.distinct_experts, 2.0, 1e-12);
  double expert_bytes = 0;
  for (int i = 0; i < one.size; ++i) {
    const Op& op = one.ops[static_cast<std::size_t>(i)];
    if (op.moe_layer && (op.kind == OpKind::kGateProj || op.kind == OpKind::kUpProj ||
                         op.kind == OpKind::kDownProj)) {
      expert_bytes += op.count * op.weight_bytes;
    }
  }
  // 32 layers x 2 experts x 3 matrices x 4096 x 14336 x 2 B.
  EXPECT_DOUBLE_EQ(expert_bytes, 32.0 * 2 * 3 * 4096 * 14336 * 2);
  const OpGraph eight = build_ops(m, registry().get("h100"), decode(8, 512), ideal());
  EXPECT_NEAR(eight.distinct_experts, 8 * (1 - std::pow(0.75, 8)), 1e-12);
  EXPECT_NEAR(distinct_experts(256, 8, 32), 163.3, 0.05);   // DeepSeek-V3 D(32)
  EXPECT_NEAR(distinct_experts(256, 8, 128), 251.6, 0.05);  // D(128)
}

// Every field of two ops but their counts and layer flags, side by side.
void ExpectSameWork(const Op& a, const Op& b, const std::string& where) {
  static_assert(sizeof(Op) == 176, "a field was added to Op: compare it here");
  SCOPED_TRACE(where);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.cls, b.cls);
  EXPECT_EQ(a.draft_head, b.draft_head);
  for (const auto field :
       {&Op::flops, &Op::weight_bytes, &Op::act_bytes, &Op::kv_bytes, &Op::vector_ops,
        &Op::wave_efficiency, &Op::parallel_blocks, &Op::launches, &Op::gemm_m, &Op::gemm_n,
        &Op::gemm_k, &Op::gemm_groups, &Op::query_share, &Op::moe_tokens, &Op::moe_ep, &Op::ranks,
        &Op::message_elements}) {
    EXPECT_EQ(a.*field, b.*field);
  }
  EXPECT_TRUE(a.kernel_efficiency == b.kernel_efficiency ||
              (std::isnan(a.kernel_efficiency) && std::isnan(b.kernel_efficiency)));
  EXPECT_EQ(a.compute, b.compute);
  EXPECT_EQ(a.weights, b.weights);
  for (const auto flag :
       {&Op::weight_only, &Op::latent_attention, &Op::prompt_attention, &Op::engine_kernel}) {
    EXPECT_EQ(a.*flag, b.*flag);
  }
}

// The ops of `g` in layers of the class (moe, sliding), in order.
std::vector<Op> class_ops(const OpGraph& g, bool moe, bool sliding) {
  std::vector<Op> ops;
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    if (op.count > 1 && op.moe_layer == moe && op.sliding_layer == sliding) ops.push_back(op);
  }
  return ops;
}

// A second layer class with an earlier class's attention (DeepSeek-V3's MoE
// layers after its three dense ones) or MLP (gpt-oss's sliding-window layers
// after its full ones) copies that half of the graph: the copy must be the
// ops building it would give, which a model of that class alone builds.
// Realistic, with an engine, so the table-priced shapes and waves are in.
TEST(Ops, ALayerClassCopiesTheHalfAnEarlierClassBuilt) {
  const Device& d = registry().get("h200");
  ModelOptions o = with_engine({}, d, &EngineRegistry::built_in().get("sglang"));
  Scenario s = decode(16, 4096);
  s.tp = 8;
  const ModelSpec mixed = load_model("deepseek-v3");
  ModelSpec all_moe = mixed;
  all_moe.moe->first_dense_layers = 0;
  const OpGraph a = build_ops(mixed, d, s, o);
  const OpGraph b = build_ops(all_moe, d, s, o);
  const std::vector<Op> copied = class_ops(a, true, false), built = class_ops(b, true, false);
  ASSERT_EQ(copied.size(), built.size());
  ASSERT_GT(copied.size(), 20u);
  for (std::size_t i = 0; i < copied.size(); ++i) {
    ExpectSameWork(copied[i], built[i], "deepseek-v3 op " + std::to_string(i));
    EXPECT_EQ(copied[i].count, 58);  // 61 layers, 3 of them dense
  }

  o = with_engine({}, d, &EngineRegistry::built_in().get("vllm"));
  s.tp = 1;
  const ModelSpec alternating = load_model("gpt-oss-120b");
  ModelSpec all_full = alternating;
  all_full.sliding_window = 0;
  all_full.sliding_layers.clear();
  const OpGraph c = build_ops(alternating, d, s, o);
  const OpGraph e = build_ops(all_full, d, s, o);
  // The MLP half: from the router to the residual add, in the sliding class
  // (copied from the full class's) and in the all-full model (built).
  const auto mlp = [](std::vector<Op> ops) {
    const auto router = std::find_if(ops.begin(), ops.end(),
                                     [](const Op& op) { return op.kind == OpKind::kRouter; });
    return std::vector<Op>(router, ops.end());
  };
  const std::vector<Op> copied_mlp = mlp(class_ops(c, true, true));
  const std::vector<Op> built_mlp = mlp(class_ops(e, true, false));
  ASSERT_EQ(copied_mlp.size(), built_mlp.size());
  ASSERT_GE(copied_mlp.size(), 5u);
  for (std::size_t i = 0; i < copied_mlp.size(); ++i) {
    ExpectSameWork(copied_mlp[i], built_mlp[i], "gpt-oss-120b MLP op " + std::to_string(i));
    // Its config's layer_types alternate sliding and full attention over 36
    // layers, all MoE: 18 of each class, counted without a pass over them.
    EXPECT_EQ(copied_mlp[i].count, 18);
  }
  EXPECT_EQ(alternating.sliding_layer_count(), 18);
  EXPECT_EQ(alternating.full_attention_layer_count(), 18);
}

TEST(Predict, DecodeIsMemoryBoundAndPrefillComputeBound) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& h100 = registry().get("h100");
  const Prediction d = predict(m, h100, decode(1, 512));
  EXPECT_EQ(d.bound, Bound::kMemory);
  EXPECT_NEAR(d.tokens_per_s, 1 / d.time_s, 1e-9);
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 4096;
  const Prediction p = predict(m, h100, s);
  EXPECT_EQ(p.bound, Bound::kCompute);
  EXPECT_NEAR(p.tokens_per_s, 4096 / p.time_s, 1e-6);
}

// Ideal decode time is at least the weight bytes over the datasheet bandwidth.
TEST(Predict, IdealDecodeIsBoundedByWeightStreaming) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& gb10 = registry().get("gb10");
  const Prediction p = predict(m, gb10, decode(1, 1), ideal());
  const double floor = 15'009'316'864.0 / 273e9;
  EXPECT_GE(p.time_s, floor);
  EXPECT_LT(p.time_s, floor * 1.02);  // activations and KV are small at batch 1
  EXPECT_DOUBLE_EQ(p.overhead_s, 0);
  const Prediction r = predict(m, gb10, decode(1, 1));
  EXPECT_GT(r.time_s, p.time_s);
  EXPECT_GT(r.overhead_s, 0);
}

TEST(Predict, MemoryAndFit) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Prediction p = predict(m, registry().get("h100"), decode(1, 4096));
  // 70.55 B parameters in bf16 = 141 GB: does not fit in 80 GB.
  EXPECT_NEAR(p.memory.weights_bytes, 2 * count_parameters(m).total, 1e6);
  EXPECT_FALSE(p.memory.fits);
  Scenario tp2 = decode(1, 4096);
  tp2.tp = 2;
  const Prediction q = predict(m, registry().get("h100"), tp2);
  EXPECT_TRUE(q.memory.fits);
  EXPECT_GT(q.communication_s, 0);
  // KV cache per rank: 80 layers x 2 x (8/2 heads) x 128 x 4097 x 2 B.
  EXPECT_DOUBLE_EQ(q.memory.kv_cache_bytes, 80.0 * 2 * 4 * 128 * 4097 * 2);
}

TEST(Predict, WeightOnlyFormatsAreSaid) {
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario s = decode(1, 512);
  s.precision.weights = Format::kNvfp4;
  const Prediction p = predict(m, registry().get("h100"), s);
  bool any = false;
  for (int i = 0; i < p.graph.size; ++i)
    any = any || p.graph.ops[static_cast<std::size_t>(i)].weight_only;
  EXPECT_TRUE(any);
  s.precision.act = Format::kFp8;
  EXPECT_THROW((void)predict(m, registry().get("a100"), s), Unsupported);
}

TEST(Predict, KernelSupportIsChecked) {
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario s = decode(1, 512);
  s.attention = AttentionKernel::kFa3;
  EXPECT_THROW((void)predict(m, registry().get("a100"), s), Unsupported);
  EXPECT_NO_THROW((void)predict(m, registry().get("h100"), s));
  s.attention = AttentionKernel::kFa4;
  EXPECT_THROW((void)predict(m, registry().get("h100"), s), Unsupported);
  EXPECT_NO_THROW((void)predict(m, registry().get("b200"), s));
}

// At 32k context and batch 1, Flash-Decoding fills the SMs that FA2 (one
// block per head) leaves idle: its attention is faster.
TEST(Predict, FlashDecodingBeatsFa2AtLongContext) {
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario s = decode(1, 32768);
  s.attention = AttentionKernel::kFa2;
  const double fa2 = predict(m, registry().get("h100"), s).time_s;
  s.attention = AttentionKernel::kFlashDecoding;
  const double fd = predict(m, registry().get("h100"), s).time_s;
  EXPECT_LT(fd, fa2);
}

TEST(Predict, ScenarioValidation) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = registry().get("h100");
  Scenario s = decode(0, 512);
  EXPECT_THROW((void)predict(m, d, s), InvalidArgument);
  s = decode(1, 512);
  s.tp = 3;  // does not divide 32 heads
  EXPECT_THROW((void)predict(m, d, s), InvalidArgument);
  s = decode(1, 512);
  s.block_sparsity = 0;
  EXPECT_THROW((void)predict(m, d, s), InvalidArgument);
  s = decode(1, kMaxSeqLen);
  EXPECT_TRUE(std::isfinite(predict(m, d, s).time_s));
}

// generate: TTFT is the prefill; gen - 1 decode steps over contexts P .. P+G-2.
TEST(Generate, SumsDecodeStepsOverAGrowingContext) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = registry().get("h100");
  Scenario s = decode(1, 1);
  const GenerateResult g = generate(m, d, s, 512, 5, ideal());
  Scenario p;
  p.phase = Phase::kPrefill;
  p.seq_len = 512;
  EXPECT_NEAR(g.ttft_s, predict(m, d, p, ideal()).time_s, 1e-15);
  double steps = 0;
  for (int ctx = 512; ctx <= 515; ++ctx) steps += predict(m, d, decode(1, ctx), ideal()).time_s;
  EXPECT_NEAR(g.e2e_s, g.ttft_s + steps, 1e-12);
  EXPECT_NEAR(g.tpot_s, steps / 4, 1e-12);
  // Long generations sum piecewise-linear segments; close to the exact sum.
  const GenerateResult big = generate(m, d, s, 512, 200, ideal());
  double exact = 0;
  for (int ctx = 512; ctx <= 710; ++ctx) exact += predict(m, d, decode(1, ctx), ideal()).time_s;
  EXPECT_NEAR(big.e2e_s - big.ttft_s, exact, exact * 1e-4);
  EXPECT_THROW((void)generate(m, d, s, 0, 5), InvalidArgument);
}

// KV report: Llama-3-8B bf16 is 131,072 B per token; fp8 halves it. The
// crossover compares with the weights a decode step reads: the resident 2 x
// 8,030,261,248 = 16,060,522,496 B less the embedding table (128,256 x 4,096
// x 2 = 1,050,673,152 B), of which a step reads one row (8,192 B):
// 15,009,857,536 B, so 15,009,857,536 / 131,072 = 114,516.125 tokens. (It read
// 122,532 while it divided the resident bytes, embedding table included.)
TEST(Kv, BytesPerTokenSavingsAndCrossover) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = registry().get("h100");
  const KvReport r = kv_report(m, d, decode(1, 32768));
  ASSERT_FALSE(r.rows.empty());
  EXPECT_DOUBLE_EQ(r.rows[0].bytes_per_token, 131'072);
  EXPECT_DOUBLE_EQ(r.rows[0].total_bytes, 131'072.0 * 32768);
  EXPECT_NEAR(r.rows[1].saving, 0.5, 1e-6);  // fp8
  EXPECT_DOUBLE_EQ(r.resident_weight_bytes, 16'060'522'496.0);
  EXPECT_DOUBLE_EQ(r.weight_bytes, 15'009'857'536.0);
  EXPECT_DOUBLE_EQ(r.rows[0].crossover_context, 114'516.125);
  // At batch 64 a step reads the weights once (and 64 embedding rows) for 64
  // caches: (15,009,849,344 + 64 x 8,192) / 64 / 131,072 = 1,789.376 tokens each.
  EXPECT_NEAR(kv_report(m, d, decode(64, 4096)).rows[0].crossover_context, 1'789.376, 1e-3);
}

// MoE: a decode step reads the experts the batch touches (Mixtral at batch 1:
// 2 of 8 per layer), as predict streams them, not all of them.
TEST(Kv, MoeCrossoverUsesTheExpertsTheBatchTouches) {
  const ModelSpec m = load_model("mixtral-8x7b");
  const Device& d = registry().get("h100");
  const KvReport r = kv_report(m, d, decode(1, 4096));
  EXPECT_DOUBLE_EQ(r.weight_bytes, predict(m, d, decode(1, 4096)).weight_bytes);
  EXPECT_LT(r.weight_bytes, 0.3 * r.resident_weight_bytes);
  EXPECT_NEAR(r.rows[0].crossover_context, r.weight_bytes / r.rows[0].bytes_per_token, 1e-6);
}

// With a device, each row carries the decode step with that KV format: the
// same prediction as a decode step with kv set, and the first row's over it.
TEST(Kv, DecodeStepPerFormat) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = registry().get("h100");
  Scenario s = decode(4, 32768);
  s.phase = Phase::kPrefill;  // taken as decode
  const KvReport r = kv_report(m, d, s, {});
  ASSERT_EQ(r.rows.size(), kv_report(m, d, decode(4, 32768)).rows.size());
  for (const auto& row : r.rows) {
    Scenario one = decode(4, 32768);
    one.precision.kv = row.format;
    EXPECT_DOUBLE_EQ(row.decode_step_s, predict(m, d, one).time_s) << format_id(row.format);
    EXPECT_DOUBLE_EQ(row.speedup, r.rows[0].decode_step_s / row.decode_step_s);
  }
  EXPECT_GT(r.rows[1].speedup, 1.2);  // fp8 KV at 32K x 4: the KV cache is most of the bytes
}

// Every kernel of the catalog in order; those the device lacks are listed
// without times, the others timed as predict with that kernel.
TEST(Attention, ComparisonCoversTheCatalog) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = registry().get("a100");
  Scenario s = decode(1, 8192);
  s.phase = Phase::kPrefill;
  const auto rows = compare_attention(m, d, s, {});
  ASSERT_EQ(rows.size(), attention_kernels().size());
  double first = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].kernel, &attention_kernels()[i]);
    EXPECT_EQ(rows[i].supported, attention_kernels()[i].runs_on(d));
    if (!rows[i].supported) {
      EXPECT_EQ(rows[i].time_s, 0);
      continue;
    }
    Scenario one = s;
    one.attention = rows[i].kernel->kernel;
    EXPECT_DOUBLE_EQ(rows[i].time_s, predict(m, d, one).time_s);
    EXPECT_GT(rows[i].attention_time_s, 0);
    EXPECT_LT(rows[i].attention_time_s, rows[i].time_s);
    if (first == 0) first = rows[i].time_s;
    EXPECT_DOUBLE_EQ(rows[i].speedup_vs_first, first / rows[i].time_s);
  }
  for (const auto& row : rows) {
    if (row.kernel->kernel == AttentionKernel::kFa3) {
      EXPECT_FALSE(row.supported);  // Hopper only
    }
  }
}

TEST(Capacity, BatchAndContextLimitsFitExactly) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = registry().get("h100");
  const Scenario s = decode(1, 4096);
  const Capacity c = capacity(m, d, s);
  ASSERT_GT(c.max_batch, 1);
  Scenario at = s;
  at.batch = c.max_batch;
  EXPECT_TRUE(estimate_memory(m, d, at).fits);
  at.batch = c.max_batch + 1;
  EXPECT_FALSE(estimate_memory(m, d, at).fits);
  Scenario ctx = s;
  ctx.seq_len = c.max_context_by_memory;
  EXPECT_TRUE(estimate_memory(m, d, ctx).fits);
  ctx.seq_len = c.max_context_by_memory + 1;
  EXPECT_FALSE(estimate_memory(m, d, ctx).fits);
  // Memory allows far more than Llama 3.1's 131,072-token window (about
  // 450K tokens on an 80 GB H100 at 128 KB a token): the window caps the
  // reported context (issue 13 item 8; it read 854,024 on the GB10).
  EXPECT_EQ(c.context_window, 131'072);
  EXPECT_GT(c.max_context_by_memory, c.context_window);
  EXPECT_EQ(c.max_context, 131'072);
}

// Llama-3.1-70B's decode in fp8 with an fp8 cache, one sequence of 1,280 tokens.
Scenario fp8_decode_at_1280() {
  Scenario s = decode(1, 1280);
  s.precision.weights = Format::kFp8;
  s.precision.kv = Format::kFp8;
  return s;
}

// With a serving engine, the KV cache gets what the engine's rule gives it,
// as `roofline serving` sizes it: vLLM's current release 0.92 of the whole
// memory (weights and activations included), TensorRT-LLM 0.9 of what the
// weights and activations leave (data/engines, "kv_memory"). Llama-3.1-70B in
// fp8 with an fp8 cache on one H100 (81,559 MiB, 85.5 GB) leaves little
// beside its 71.6 GB of weights, so the two rules part: vLLM's room is
// 0.92 x 85.5 - 71.6 - its profiling pass (about 2.0 GB: 1,024 sampled rows
// of 128,256 logits at 14 bytes a logit on the current release's FlashInfer
// sampler, and 8,192 tokens of bf16 hidden states); TensorRT-LLM's 0.9 x
// (85.5 - 71.6 - act), about 12.1 GB (the CLI prints both; each less its
// profiling pass).
TEST(Capacity, AnEngineSizesTheKvCacheByItsOwnRule) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = registry().get("h100");
  Scenario s = fp8_decode_at_1280();
  const auto room = [&](const char* engine, std::int64_t batch) {
    Scenario at = s;
    at.batch = batch;
    const MemoryEstimate mem = estimate_memory(m, d, at);
    // Both engines' fp8 files keep the LM head in bf16: 128,256 x 8,192 x 1 B
    // (and the fp8 scale's 4) more than the plan's fp8.
    const double weights = mem.weights_bytes + 128256.0 * 8192 - 4;
    EXPECT_DOUBLE_EQ(engine_file_mix_bytes(&EngineRegistry::built_in().get(engine), m, d, at) +
                         mem.weights_bytes,
                     weights);
    // Each subtracts its profiling pass: vLLM 8,192 tokens and 1,024 sampled
    // rows on an H100, TensorRT-LLM one request of its 8,192 max_num_tokens.
    const bool vllm = engine == std::string("vllm");
    const double sampler =
        EngineRegistry::built_in().get(engine).scheduler.kv_profile_sampler_bytes("");
    const double profiled =
        std::max(mem.activation_bytes,
                 profile_pass_activation_bytes(m, d, at, 8192, vllm ? 1024 : 1, sampler));
    const double left = vllm ? 0.92 * mem.capacity_bytes - weights - profiled
                             : 0.9 * (mem.capacity_bytes - weights - profiled);
    return mem.kv_cache_bytes <= left;
  };
  const Capacity whole = capacity(m, d, s);
  EXPECT_EQ(whole.kv_memory_engine, nullptr);
  for (const char* id : {"vllm", "trtllm"}) {
    SCOPED_TRACE(id);
    const EngineProfile& e = EngineRegistry::built_in().get(id);
    const Capacity c = capacity(m, d, s, &e);
    EXPECT_EQ(c.kv_memory_engine, &e);
    ASSERT_GT(c.max_batch, 0);
    EXPECT_TRUE(room(id, c.max_batch));
    EXPECT_FALSE(room(id, c.max_batch + 1));
    EXPECT_LT(c.max_batch, whole.max_batch);
  }
  const Capacity vllm = capacity(m, d, s, &EngineRegistry::built_in().get("vllm"));
  const Capacity trtllm = capacity(m, d, s, &EngineRegistry::built_in().get("trtllm"));
  EXPECT_DOUBLE_EQ(vllm.kv_memory_share, 0.92);
  EXPECT_FALSE(vllm.kv_memory_of_free);
  EXPECT_TRUE(trtllm.kv_memory_of_free);
  EXPECT_GT(trtllm.max_batch, 3 * vllm.max_batch / 2);  // 49 against about 20 at 1,280 tokens
  // The reference engine has no rule of its own: all the memory left.
  EXPECT_EQ(capacity(m, d, s, &EngineRegistry::built_in().get("roofline")).max_batch,
            whole.max_batch);
}

// vLLM and TensorRT-LLM size their caches after a profiling pass. vLLM's
// (gpu_worker.py determine_available_memory; gpu_model_runner.py
// profile_run): a forward of its token budget, then a sampler over one row of
// logits a dummy request, top-k and top-p on every row, the forward's hidden
// states still held. For Llama-3.1-8B in bf16 at 8,192 tokens the forward
// holds 2 x 4,096 hidden values and the widest projection, 2 x 14,336 (gate
// and up), a token: 36,864 bf16 values = 73,728 bytes, x 8,192 = 603,979,776,
// and one row of fp32 logits, 128,256 x 4. The sampler over 1,024 rows holds
// 1,024 x 128,256 logits at the release's bytes a logit, beside the hidden
// states' 8,192 x 4,096 x 2 = 67,108,864 bytes: on the sort path (42.2)
// 5,609,409,740.8, on FlashInfer's (14) 1,905,786,880. The peak is the larger.
TEST(Capacity, EnginesProfilingPassesTakeTheirBudgetAndSampledRows) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = registry().get("h100");
  Scenario s;
  s.phase = Phase::kDecode;
  s.seq_len = 1024;
  const double forward = 603979776.0 + 128256.0 * 4;
  EXPECT_DOUBLE_EQ(profile_pass_activation_bytes(m, d, s, 8192, 1024, 42.2), 5609409740.8);
  EXPECT_DOUBLE_EQ(profile_pass_activation_bytes(m, d, s, 8192, 1024, 14), 1905786880.0);
  // Two rows: the forward's peak is the larger.
  EXPECT_DOUBLE_EQ(profile_pass_activation_bytes(m, d, s, 8192, 2, 14), forward);
  // The logits are whole on the rank that sizes the cache: tensor
  // parallelism splits the forward, not the sampler.
  Scenario tp2 = s;
  tp2.tp = 2;
  EXPECT_DOUBLE_EQ(profile_pass_activation_bytes(m, d, tp2, 8192, 1024, 14), 1905786880.0);
  // Without a measured sampler: one fp32 row a sequence beside the forward
  // (1,024 x 128,256 x 4 more than the forward's one).
  EXPECT_DOUBLE_EQ(profile_pass_activation_bytes(m, d, s, 8192, 1024), 1129316352.0);
  EXPECT_DOUBLE_EQ(profile_pass_activation_bytes(m, d, s, 8192, 1), forward);

  const EngineProfile& vllm = EngineRegistry::built_in().get("vllm");
  const EngineScheduler& rule = vllm.scheduler;
  EXPECT_TRUE(rule.kv_profile_pass());
  EXPECT_EQ(rule.kv_profile_pass_rows(8192, 1024), 1024);
  // The sort path's figure is its derivation (vllm-sampler-sort): PR #13594's
  // H100 run of OPT-125m lost 2,039,760 - 1,980,832 = 58,928 tokens of
  // 12 x 2 x 768 x 2 = 36,864 bytes to the sampler's pass over 1,024 rows of
  // 50,272 logits.
  constexpr double kDerivationTolerance = 0.001;  // the figure's three digits
  EXPECT_NEAR(rule.kv_profile_sort_bytes.value, 58928.0 * 36864 / (1024.0 * 50272),
              kDerivationTolerance * rule.kv_profile_sort_bytes.value);
  // Checked on another model and engine generation: PR #10511's V0 log of
  // Llama-3-8B on an H100 (256 sequences, an 8,192-token pass; Llama-3.1-8B's
  // shapes) reports a 1.26 GiB activation peak; the pass gives 1.35 GiB.
  constexpr double kV0LogTolerance = 0.10;  // V0's sampler also took logprobs
  EXPECT_NEAR(profile_pass_activation_bytes(m, d, s, 8192, 256, rule.kv_profile_sort_bytes.value),
              1.26 * 1073741824.0, kV0LogTolerance * 1.26 * 1073741824.0);
  // The path follows the release (vllm-flashinfer-sampler-default): the sort
  // before 0.9.0, FlashInfer from 0.9.0 (PR #15777) to 0.11.1 (PR #26859),
  // the sort again to 0.20.0 (PR #40376), FlashInfer since.
  for (const auto& [version, flashinfer] : {std::pair{"0.8.5", false},
                                            {"0.9.0", true},
                                            {"0.10.2", true},
                                            {"0.11.0", true},
                                            {"0.11.1", false},
                                            {"0.14.0", false},
                                            {"0.19.1", false},
                                            {"0.20.0", true},
                                            {"0.24.0", true},
                                            {"", true},
                                            {"nightly", true}}) {
    SCOPED_TRACE(version);
    EXPECT_EQ(rule.kv_profile_flashinfer(version), flashinfer);
    EXPECT_DOUBLE_EQ(rule.kv_profile_sampler_bytes(version), flashinfer ? 14 : 42.2);
  }
  // A prediction with vLLM leaves the cache what the current release's pass
  // leaves (0.92 of the whole memory).
  const Prediction p = predict(m, d, s, with_engine({}, d, &vllm));
  EXPECT_NEAR(p.memory.kv_room_bytes,
              0.92 * p.memory.capacity_bytes - p.memory.weights_bytes - 1905786880.0, 1.0);
  // TensorRT-LLM's KvCacheCreator runs one request of its max_num_tokens
  // (8,192) and samples its one row, no sampler measured: 603,979,776 +
  // 128,256 x 4 bytes, and gives 0.9 of what the weights and that pass leave.
  const EngineProfile& trtllm = EngineRegistry::built_in().get("trtllm");
  EXPECT_EQ(trtllm.scheduler.kv_profile_pass_rows(8192, 2048), 1);
  EXPECT_EQ(trtllm.scheduler.kv_profile_sampler_bytes(""), 0);
  const Prediction t = predict(m, d, s, with_engine({}, d, &trtllm));
  EXPECT_NEAR(t.memory.kv_room_bytes,
              0.9 * (t.memory.capacity_bytes - t.memory.weights_bytes - forward), 1.0);
  EXPECT_FALSE(EngineRegistry::built_in().get("sglang").scheduler.kv_profile_pass());
}

// predict()'s memory estimate says whether the KV cache fits under the
// engine's rule: at the capacity's largest batch it does, one past it not,
// though weights, cache and activations still fit in the whole memory.
TEST(Capacity, APredictionsFitFollowsTheEnginesRule) {
  const ModelSpec m = load_model("llama-3.1-70b");
  const Device& d = registry().get("h100");
  Scenario s = fp8_decode_at_1280();
  const EngineProfile& vllm = EngineRegistry::built_in().get("vllm");
  const ModelOptions o = with_engine({}, d, &vllm);
  const Capacity c = capacity(m, d, s, &vllm);
  s.batch = c.max_batch;
  const Prediction at = predict(m, d, s, o);
  EXPECT_TRUE(at.memory.fits);
  EXPECT_EQ(at.memory.kv_rule_engine, &vllm);
  // vLLM's rule: 0.92 of the whole memory, less the weights and its profiling
  // pass's activations (its token budget, 8,192 on an H100, and sampled rows).
  EXPECT_NEAR(at.memory.kv_room_bytes,
              0.92 * at.memory.capacity_bytes - at.memory.weights_bytes -
                  profile_pass_activation_bytes(m, d, s, 8192, 1024,
                                                vllm.scheduler.kv_profile_sampler_bytes("")),
              1.0);
  s.batch = c.max_batch + 1;
  const Prediction past = predict(m, d, s, o);
  EXPECT_FALSE(past.memory.fits);
  EXPECT_LE(past.memory.total_bytes, past.memory.capacity_bytes);  // the whole memory holds it
  // Without an engine the same batch fits: the cache may take all that is left.
  const Prediction plain = predict(m, d, s, ModelOptions{});
  EXPECT_TRUE(plain.memory.fits);
  EXPECT_EQ(plain.memory.kv_rule_engine, nullptr);
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

TEST(Attention, DefaultKernelFollowsTheArchitecture) {
  EXPECT_EQ(default_attention_kernel(registry().get("h100"), false), AttentionKernel::kFa3);
  EXPECT_EQ(default_attention_kernel(registry().get("b200"), false), AttentionKernel::kFa4);
  EXPECT_EQ(default_attention_kernel(registry().get("a100"), false), AttentionKernel::kFa2);
  EXPECT_EQ(default_attention_kernel(registry().get("gb10"), false), AttentionKernel::kFa2);
  EXPECT_EQ(default_attention_kernel(registry().get("mi300x"), false), AttentionKernel::kFa2);
  EXPECT_EQ(default_attention_kernel(registry().get("h100"), true),
            AttentionKernel::kFlashDecoding);
  EXPECT_EQ(parse_attention_kernel("flash-decoding"), AttentionKernel::kFlashDecoding);
  EXPECT_THROW((void)parse_attention_kernel("fa5"), NotFound);
}

const Op& find_op(const OpGraph& g, OpKind kind, bool moe_only = false) {
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    if (op.kind == kind && (!moe_only || op.moe_layer)) return op;
  }
  throw std::runtime_error("op not found");
}

int count_ops(const OpGraph& g, OpKind kind) {
  int n = 0;
  for (int i = 0; i < g.size; ++i) n += g.ops[static_cast<std::size_t>(i)].kind == kind;
  return n;
}

// Layer classes with experts (the graph holds one block of ops per class).
int count_moe_layers(const OpGraph& g) {
  int n = 0;
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    n += op.kind == OpKind::kRouter;
  }
  return n;
}

// FlashAttention-2 prefill on H100, Llama-3.1-8B, 4096 tokens, bf16:
//   SRAM M = 233,472 B / 2 B = 116,736 elements; rows per tile M / (4 d) = 228 -> 128 (cap)
//   Tr = 4096 / 128 = 32 query tiles; causally K/V are read (Tr + 1) / 2 = 16.5 times
//   qk_matmul bytes per layer = Q 4096 x 32 x 128 x 2 B + K 8 x 4096 x 128 x 16.5 x 2 B
//                             = 33,554,432 + 138,412,032 = 171,966,464
TEST(Attention, FlashAttentionIoModel) {
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 4096;
  s.attention = AttentionKernel::kFa2;
  const OpGraph fa2 = build_ops(m, registry().get("h100"), s, ideal());
  EXPECT_DOUBLE_EQ(find_op(fa2, OpKind::kQkMatmul).act_bytes, 171'966'464.0);
  EXPECT_DOUBLE_EQ(find_op(fa2, OpKind::kSoftmax).act_bytes, 0);  // scores stay on chip
  // FA1 keeps K/V outer: K/V once, Q read 16.5 times and O read and written.
  s.attention = AttentionKernel::kFa1;
  const OpGraph fa1 = build_ops(m, registry().get("a100"), s, ideal());
  const double q_bytes = 4096.0 * 32 * 128 * 2;
  EXPECT_DOUBLE_EQ(find_op(fa1, OpKind::kQkMatmul).act_bytes,
                   q_bytes * 16.5 + 8.0 * 4096 * 128 * 2);
  // Unfused attention writes and reads the 32 x 4096^2 score matrix.
  s.attention = AttentionKernel::kNaive;
  const OpGraph naive = build_ops(m, registry().get("h100"), s, ideal());
  EXPECT_DOUBLE_EQ(find_op(naive, OpKind::kSoftmax).act_bytes, 2 * 32.0 * 4096 * 4096 * 2);
}

// The activations between kernels stay in 16 bits when the GEMMs' inputs are
// quantized narrower (W8A8, W4A4): the engines keep their hidden states in
// bf16, and the kernel tables' rooflines count 16-bit outputs. Llama-3.1-8B,
// a 512-token prompt on a B200:
//   attn_residual reads the residual and o_proj's output and writes the sum:
//     3 x 512 x 4096 elements x 2 B = 12,582,912 B under every format;
//   q_proj reads its input in the activations' format and writes bf16:
//     bf16 512 x 4096 x 2 B + 512 x 4096 x 2 B = 8,388,608 B;
//     fp8 512 x 4096 x 1 B + its 4-byte tensor scale + 4,194,304 = 6,291,460 B;
//     nvfp4 (16 elements in 72 bits) 131,072 blocks x 9 B + 4 + 4,194,304 = 5,373,956 B.
// Attention on the device's path multiplies in bf16 under NVFP4 inputs (it
// took the NVFP4 peak before), and the memory verdict holds the layer's
// activations in 16 bits too.
TEST(Predict, ActivationsBetweenKernelsStayIn16Bits) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& b200 = registry().get("b200");
  auto prompt = [&](Format act) {
    Scenario s;
    s.phase = Phase::kPrefill;
    s.seq_len = 512;
    s.precision.weights = act == Format::kBf16 ? Format::kBf16 : act;
    s.precision.act = act;
    s.precision.kv = Format::kBf16;
    return s;
  };
  const ModelOptions realistic;
  const OpGraph bf16 = build_ops(m, b200, prompt(Format::kBf16), realistic);
  const OpGraph fp8 = build_ops(m, b200, prompt(Format::kFp8), realistic);
  const OpGraph nvfp4 = build_ops(m, b200, prompt(Format::kNvfp4), realistic);
  for (const OpGraph* g : {&bf16, &fp8, &nvfp4}) {
    EXPECT_DOUBLE_EQ(find_op(*g, OpKind::kAttnResidual).act_bytes, 12'582'912.0);
  }
  EXPECT_DOUBLE_EQ(find_op(bf16, OpKind::kQProj).act_bytes, 8'388'608.0);
  EXPECT_DOUBLE_EQ(find_op(fp8, OpKind::kQProj).act_bytes, 6'291'460.0);
  EXPECT_DOUBLE_EQ(find_op(nvfp4, OpKind::kQProj).act_bytes, 5'373'956.0);
  EXPECT_EQ(find_op(nvfp4, OpKind::kQkMatmul).compute, Format::kBf16);
  EXPECT_EQ(find_op(bf16, OpKind::kQkMatmul).compute, Format::kBf16);
  const double held = predict(m, b200, prompt(Format::kBf16), realistic).memory.activation_bytes;
  EXPECT_DOUBLE_EQ(predict(m, b200, prompt(Format::kFp8), realistic).memory.activation_bytes, held);
  EXPECT_DOUBLE_EQ(predict(m, b200, prompt(Format::kNvfp4), realistic).memory.activation_bytes,
                   held);
}

// FlashAttention-3's fp8 path reads Q, K and V in fp8: it runs over an fp8
// KV cache (vLLM then quantizes the queries to match), not over a 16-bit
// cache whatever the GEMMs' inputs. On an H100 with FA3: fp8 GEMMs over a
// bf16 cache attend in bf16; bf16 GEMMs over an fp8 cache attend in fp8.
TEST(Attention, Fp8AttentionFollowsTheKvCache) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& h100 = registry().get("h100");
  auto attention_format = [&](Format act, Format kv) {
    Scenario s;
    s.phase = Phase::kPrefill;
    s.seq_len = 2048;
    s.attention = AttentionKernel::kFa3;
    s.precision.weights = act;
    s.precision.act = act;
    s.precision.kv = kv;
    const OpGraph g = build_ops(m, h100, s, ModelOptions{});
    return find_op(g, OpKind::kQkMatmul);
  };
  EXPECT_EQ(attention_format(Format::kFp8, Format::kFp8).compute, Format::kFp8);
  EXPECT_EQ(attention_format(Format::kFp8, Format::kBf16).compute, Format::kBf16);
  EXPECT_EQ(attention_format(Format::kBf16, Format::kFp8).compute, Format::kFp8);
  EXPECT_EQ(attention_format(Format::kBf16, Format::kBf16).compute, Format::kBf16);
  // Q is read as the kernel takes it: 2,048 tokens x 32 heads x 128 dims,
  // 1 byte in fp8 (plus the prompt's own K and V, 8 KV heads, in the cache's
  // format, FA2-style re-reads aside), 2 in bf16.
  const Op fp8_q = attention_format(Format::kBf16, Format::kFp8);
  const Op bf16_q = attention_format(Format::kFp8, Format::kBf16);
  EXPECT_LT(fp8_q.act_bytes, bf16_q.act_bytes);
  // A plan's own qk_matmul format still wins.
  Scenario planned;
  planned.phase = Phase::kPrefill;
  planned.seq_len = 2048;
  planned.attention = AttentionKernel::kFa3;
  planned.precision.act = Format::kFp8;
  planned.precision.kv = Format::kBf16;
  planned.precision.has_op_overrides = true;
  planned.precision.ops[static_cast<std::size_t>(OpKind::kQkMatmul)].act = Format::kFp8;
  EXPECT_EQ(find_op(build_ops(m, h100, planned, ModelOptions{}), OpKind::kQkMatmul).compute,
            Format::kFp8);
}

// Proposition 4: a block-sparsity fraction s scales the attention work and IO.
TEST(Attention, BlockSparsityScalesAttention) {
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 8192;
  s.attention = AttentionKernel::kFa2;
  const OpGraph dense = build_ops(m, registry().get("h100"), s, ideal());
  s.block_sparsity = 0.25;
  const OpGraph sparse = build_ops(m, registry().get("h100"), s, ideal());
  EXPECT_DOUBLE_EQ(find_op(sparse, OpKind::kQkMatmul).flops,
                   find_op(dense, OpKind::kQkMatmul).flops * 0.25);
  EXPECT_LT(find_op(sparse, OpKind::kSvMatmul).act_bytes,
            find_op(dense, OpKind::kSvMatmul).act_bytes);
}

// gpt-oss alternates 128-token sliding windows: at 32k context those layers
// read 128 tokens of KV, the full layers read all 32,769.
TEST(Attention, SlidingWindowLayersReadOnlyTheWindow) {
  const ModelSpec m = load_model("gpt-oss-20b");
  const OpGraph g = build_ops(m, registry().get("h100"), decode(1, 32768), ideal());
  double window = 0, full = 0;
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    if (op.kind != OpKind::kQkMatmul) continue;
    (op.sliding_layer ? window : full) = op.kv_bytes;
  }
  EXPECT_DOUBLE_EQ(window, 8.0 * 128 * 64 * 2);
  EXPECT_DOUBLE_EQ(full, 8.0 * 32769 * 64 * 2);
}

// A prompt after cached tokens (an earlier turn, llama-bench's depth): FA2 on
// H100, Llama-3.1-8B, 2,048 new tokens after 4,096 cached, bf16.
//   pairs per head = 2,048 x 4,096 (every cached key) + 2,048 x 2,049 / 2 (causal)
//                  = 8,388,608 + 2,098,176 = 10,486,784; x 32 heads = 335,577,088 scores
//   qk FLOPs per layer = 2 x 335,577,088 x 128 = 85,907,734,528
//   16 query tiles of 128 rows; each reads the 4,096 cached keys, and causally
//   (16 + 1) / 2 = 8.5 passes over the prompt's 2,048:
//   cached K read = 8 KV heads x 16 x 4,096 x 128 x 2 B = 134,217,728 B, from the cache
//   own K read    = 8 x 2,048 x 8.5 x 128 x 2 B = 35,651,584 B, plus Q 2,048 x 32 x 128 x 2 B
TEST(Attention, APromptAfterCachedTokensAttendsOverThem) {
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 2048;
  s.attention = AttentionKernel::kFa2;
  const OpGraph alone = build_ops(m, registry().get("h100"), s, ideal());
  s.cached = 4096;
  const OpGraph after = build_ops(m, registry().get("h100"), s, ideal());
  const Op& qk = find_op(after, OpKind::kQkMatmul);
  EXPECT_DOUBLE_EQ(qk.flops, 85'907'734'528.0);
  EXPECT_DOUBLE_EQ(qk.kv_bytes, 134'217'728.0);
  EXPECT_DOUBLE_EQ(qk.act_bytes, 35'651'584.0 + 2048.0 * 32 * 128 * 2);
  // The linear layers see only the prompt's own tokens.
  EXPECT_DOUBLE_EQ(find_op(after, OpKind::kQProj).flops, find_op(alone, OpKind::kQProj).flops);
  EXPECT_DOUBLE_EQ(find_op(after, OpKind::kKvCacheWrite).kv_bytes,
                   find_op(alone, OpKind::kKvCacheWrite).kv_bytes);
  // The cache holds both: 6,144 tokens x 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B.
  const Registry r = Registry::built_in();
  EXPECT_DOUBLE_EQ(predict(m, r.get("h100"), s, ideal()).memory.kv_cache_bytes,
                   6144.0 * 32 * 8 * 128 * 2 * 2);
  // Slower than the prompt alone, faster than the whole 6,144-token prompt.
  const double t_after = predict(m, r.get("h100"), s, ideal()).time_s;
  s.cached = 0;
  const double t_alone = predict(m, r.get("h100"), s, ideal()).time_s;
  s.seq_len = 6144;
  const double t_whole = predict(m, r.get("h100"), s, ideal()).time_s;
  EXPECT_GT(t_after, t_alone);
  EXPECT_LT(t_after, t_whole);
}

// gpt-oss's 128-token windows after 4,096 cached tokens: every query of the
// prompt sees a full window (2,048 x 128 pairs a head), whatever the depth.
TEST(Attention, APromptAfterCachedTokensKeepsTheWindow) {
  const ModelSpec m = load_model("gpt-oss-20b");
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 2048;
  s.cached = 4096;
  const OpGraph g = build_ops(m, registry().get("h100"), s, ideal());
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    if (op.kind != OpKind::kQkMatmul || !op.sliding_layer) continue;
    // 64 query heads of 64 dims: 2 x 64 x 2,048 x 128 x 64 FLOPs.
    EXPECT_DOUBLE_EQ(op.flops, 2.0 * 64 * 2048 * 128 * 64);
  }
}

// DeepSeek-V3's MLA prompt attends in the expanded form: kv_b_proj expands
// the cached latents as well as the prompt's (rows 1,024 + 3,072).
TEST(Attention, AnMlaPromptExpandsTheCachedLatents) {
  const ModelSpec m = load_model("deepseek-v3");
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 1024;
  s.tp = 8;
  s.cached = 3072;
  const OpGraph g = build_ops(m, registry().get("h200"), s, ideal());
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kKvBProj).gemm_m, 4096.0);
  // The cached latents come from the cache: 3,072 x (512 + 64) x 2 B.
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kKvBProj).kv_bytes, 3072.0 * 576 * 2);
}

// A short prompt after a long cache, priced by vLLM's H100 attention table:
// the call's roofline reads K and V over all 100,064 tokens but Q and O over
// the prompt's 64 only. Llama-3.1-8B, per layer and op (half the call):
//   4 B x 8 KV heads x (100,064 x 128) x (4 query heads x 64 / 100,064 + 1) x 0.5
//   = 16 x 12,808,192 x 1.00255837... = 205,455,360 B (Q and O alone: 524,288 B)
TEST(Attention, APromptAfterALongCacheReadsQAndOOverItsOwnTokens) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Registry r = Registry::built_in();
  const Device& d = r.get("h100");
  ModelOptions o;
  o.engine = &EngineRegistry::built_in().get("vllm");
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 64;
  s.cached = 100000;
  const Prediction p = predict(m, d, s, o);
  bool priced = false;
  for (int i = 0; i < p.graph.size; ++i) {
    const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
    const OpTiming& t = p.timings[static_cast<std::size_t>(i)];
    if (op.kind != OpKind::kQkMatmul) continue;
    ASSERT_EQ(t.source, EfficiencySource::kMeasuredAttentionTable);
    EXPECT_DOUBLE_EQ(op.query_share, 64.0 / 100064);
    const double bytes = 4.0 * 8 * (100064.0 * 128) * (4.0 * 64 / 100064 + 1) * 0.5;
    EXPECT_NEAR(bytes, 205'455'360.0, 1.0);
    EXPECT_NEAR(t.memory_time_s, op.count * bytes / (d.memory_bandwidth_Bps.value * t.efficiency),
                1e-12);
    priced = true;
  }
  EXPECT_TRUE(priced);
  // vLLM sizes its cache after a profiling pass of its own, from an empty
  // cache: the room it leaves does not depend on this prompt's cached tokens.
  Scenario fresh = s;
  fresh.cached = 0;
  EXPECT_DOUBLE_EQ(p.memory.kv_room_bytes, predict(m, d, fresh, o).memory.kv_room_bytes);
}

TEST(Attention, CachedTokensPrecedeAPromptOnly) {
  const ModelSpec m = load_model("llama-3.1-8b");
  Scenario s = decode(1, 4096);
  s.cached = 100;
  EXPECT_THROW((void)build_ops(m, registry().get("h100"), s, ideal()), InvalidArgument);
  s.phase = Phase::kPrefill;
  s.seq_len = 16;
  s.cached = kMaxSeqLen;  // with the prompt, past the longest context
  EXPECT_THROW((void)build_ops(m, registry().get("h100"), s, ideal()), InvalidArgument);
}

// A follow-up turn: its TTFT is the prompt after the cached turn, and its
// decode steps start from both.
TEST(Generate, AFollowUpTurnStartsAfterTheCachedTokens) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Registry r = Registry::built_in();
  Scenario s;
  s.cached = 8000;
  const GenerateResult g = generate(m, r.get("h100"), s, 512, 64, {});
  Scenario prefill;
  prefill.phase = Phase::kPrefill;
  prefill.seq_len = 512;
  prefill.cached = 8000;
  EXPECT_DOUBLE_EQ(g.ttft_s, predict(m, r.get("h100"), prefill).time_s);
  // Without a prefix cache the earlier turn is computed again: one fresh
  // prompt of 8,512 tokens, slower than the 512 after the cache.
  Scenario whole;
  whole.phase = Phase::kPrefill;
  whole.seq_len = 8512;
  EXPECT_DOUBLE_EQ(g.ttft_recomputed_s, predict(m, r.get("h100"), whole).time_s);
  EXPECT_GT(g.ttft_recomputed_s, g.ttft_s);
  EXPECT_EQ(generate(m, r.get("h100"), Scenario{}, 512, 64, {}).ttft_recomputed_s, 0);
  EXPECT_DOUBLE_EQ(g.first_decode.time_s, predict(m, r.get("h100"), decode(1, 8512)).time_s);
  EXPECT_DOUBLE_EQ(g.peak_memory.kv_cache_bytes,
                   predict(m, r.get("h100"), decode(1, 8575)).memory.kv_cache_bytes);
  s.cached = kMaxSeqLen - 100;
  EXPECT_THROW((void)generate(m, r.get("h100"), s, 512, 64, {}), InvalidArgument);
}

// Issue #10, item 12: a prompt of the whole context leaves no room to generate
// (the message read "gen must be 1 to 0 tokens").
TEST(Generate, APromptOfTheWholeContextSaysSo) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Registry r = Registry::built_in();
  Scenario s;
  try {
    (void)generate(m, r.get("h100"), s, kMaxSeqLen, 1, {});
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("leaves no room"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("1 to 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// Attention data parallelism on DeepSeek-V3 (MLA) over 8 GPUs: each rank
// runs attention for 8 of the 64 sequences with all 128 heads, so it holds
// an eighth of the latent cache (TP replicates the latent on every rank) and
// the whole attention weights (TP splits them eight ways), while the experts
// still take all 64 tokens.
TEST(AttentionDataParallel, GroupsSplitSequencesNotHeads) {
  const ModelSpec m = load_model("deepseek-v3");
  const Device& d = registry().get("h200");
  Scenario tp8;
  tp8.batch = 64;
  tp8.seq_len = 2048;
  tp8.tp = 8;
  tp8.precision.weights = Format::kFp8;
  Scenario dp8 = tp8;
  dp8.attention_dp = 8;
  const MemoryEstimate a = estimate_memory(m, d, tp8), b = estimate_memory(m, d, dp8);
  constexpr double kExact = 1e-9;  // relative
  EXPECT_NEAR(b.kv_cache_bytes, a.kv_cache_bytes / 8, kExact * a.kv_cache_bytes);
  // fp8: a byte a parameter; 7 more eighths of the attention weights a rank.
  const double attention = count_parameters(m).attention;
  EXPECT_NEAR(b.weights_bytes - a.weights_bytes, attention * 7 / 8, kExact * a.weights_bytes);

  const OpGraph ga = build_ops(m, d, tp8), gb = build_ops(m, d, dp8);
  const Op& qa = find_op(ga, OpKind::kQBProj);
  const Op& qb = find_op(gb, OpKind::kQBProj);
  // (bytes_for rounds a tensor's bytes up: within a few bytes)
  EXPECT_NEAR(qb.weight_bytes, 8 * qa.weight_bytes, 1e-6 * qb.weight_bytes);
  EXPECT_DOUBLE_EQ(qb.gemm_m, qa.gemm_m / 8);
  // Every token through the experts (the first dense layers' MLPs come first).
  double expert_flops_a = 0, expert_flops_b = 0;
  for (int i = 0; i < ga.size; ++i) {
    const Op& x = ga.ops[static_cast<std::size_t>(i)];
    if (x.moe_layer && x.kind == OpKind::kDownProj) expert_flops_a += x.flops;
  }
  for (int i = 0; i < gb.size; ++i) {
    const Op& x = gb.ops[static_cast<std::size_t>(i)];
    if (x.moe_layer && x.kind == OpKind::kDownProj) expert_flops_b += x.flops;
  }
  EXPECT_GT(expert_flops_a, 0);
  EXPECT_DOUBLE_EQ(expert_flops_b, expert_flops_a);

  Scenario bad = tp8;
  bad.attention_dp = 3;  // does not divide tp 8
  EXPECT_THROW((void)build_ops(m, d, bad), InvalidArgument);
}

// The groups meet at the MoE's all-to-all, so a step takes its busiest
// group's time, and a group holds whole requests: its attention block sees
// ceil(B / 8) sequences and whole prompts, not an even eighth of the tokens.
TEST(AttentionDataParallel, TheBusiestGroupHoldsWholeRequests) {
  const ModelSpec m = load_model("deepseek-v3");
  const Device& d = registry().get("h200");
  Scenario s;
  s.tp = 8;
  s.attention_dp = 8;
  s.ep = 8;
  s.seq_len = 2048;
  s.precision.weights = Format::kFp8;
  const auto tokens_in_group = [&](const Scenario& x) {
    const OpGraph g = build_ops(m, d, x);
    return find_op(g, OpKind::kQBProj).gemm_m;
  };
  // 12 decoding sequences over 8 groups: the busiest holds ceil(12 / 8) = 2.
  s.batch = 12;
  EXPECT_DOUBLE_EQ(tokens_in_group(s), 2);
  // One 1,024-token prompt: one group computes all of it.
  Scenario prefill = s;
  prefill.phase = Phase::kPrefill;
  prefill.batch = 1;
  prefill.seq_len = 1024;
  EXPECT_DOUBLE_EQ(tokens_in_group(prefill), 1024);
  prefill.batch = 9;  // 9 prompts: two on the busiest group
  EXPECT_DOUBLE_EQ(tokens_in_group(prefill), 2 * 1024);
  // A decode step of 64 carrying 1,536 tokens of 1,024-token prompts: two
  // pieces (1,024 and 512) on two groups; the busiest has its 64 / 8 decode
  // tokens and the whole 1,024. The experts still take all 64 + 1,536.
  Scenario mixed = s;
  mixed.batch = 64;
  mixed.prefill_tokens = 1536;
  mixed.prefill_prompt = 1024;
  EXPECT_DOUBLE_EQ(tokens_in_group(mixed), 64.0 / 8 + 1024);
  Scenario tp_only = mixed;
  tp_only.attention_dp = 1;
  const OpGraph with_dp = build_ops(m, d, mixed), without = build_ops(m, d, tp_only);
  EXPECT_DOUBLE_EQ(find_op(with_dp, OpKind::kDownProj, /*moe=*/true).gemm_m,
                   find_op(without, OpKind::kDownProj, /*moe=*/true).gemm_m);
  // 8,192 prompt tokens are eight whole prompts, one a group: an even eighth.
  mixed.prefill_tokens = 8192;
  EXPECT_DOUBLE_EQ(tokens_in_group(mixed), 64.0 / 8 + 1024);
  // 8,716: nine pieces, the first group takes two, the second of them the
  // short one (8,716 - 8 x 1,024 = 524): 1,024 + 524.
  mixed.prefill_tokens = 8716;
  EXPECT_DOUBLE_EQ(tokens_in_group(mixed), 64.0 / 8 + 1024 + 524);
  // Chunked at 256 tokens a rank: 1,536 tokens are six chunks, one a group.
  mixed.prefill_tokens = 1536;
  mixed.prefill_chunk = 256;
  EXPECT_DOUBLE_EQ(tokens_in_group(mixed), 64.0 / 8 + 256);
}

// The busiest of n expert-parallel groups: the expected maximum of n standard
// normals (Harter 1961 at powers of two, linear in log2 n between them).
TEST(ExpertParallel, ExpectedMaximumOfNormals) {
  EXPECT_DOUBLE_EQ(expected_max_normal(1), 0);
  EXPECT_DOUBLE_EQ(expected_max_normal(2), 0.5642);
  EXPECT_DOUBLE_EQ(expected_max_normal(8), 1.4236);
  // n = 3: log2 3 = 1.585 of the way from n = 2 to n = 4.
  const double f = std::log2(3.0) - 1;
  EXPECT_NEAR(expected_max_normal(3), 0.5642 + f * (1.0294 - 0.5642), 1e-12);
  // Past the table: sqrt(2 ln n), shifted to meet it at 256.
  EXPECT_NEAR(expected_max_normal(256), 2.8182, 1e-12);
  EXPECT_GT(expected_max_normal(1024), expected_max_normal(512));
}

// DeepSeek-V3 (256 experts, top 8) at 16 tokens over 8 expert groups of 32:
// 128 pairs, 16 a group on average, binomial spread sqrt(128/8 x 7/8) = 3.742,
// the busiest 1.4236 spreads above: 21.33 pairs. The layer touches
// D = 256 (1 - (1 - 8/256)^16) = 101.96 experts, 0.3983 of each group's 32:
// 12.75 on average, spread sqrt(32 x 0.3983 x 0.6017) = 2.769, the busiest 16.69.
TEST(ExpertParallel, TheBusiestGroupSetsTheStep) {
  const ExpertLoad one = busiest_expert_group(256, 8, 16, 1);
  EXPECT_DOUBLE_EQ(one.pairs, 128);
  EXPECT_DOUBLE_EQ(one.experts, distinct_experts(256, 8, 16));
  const ExpertLoad eight = busiest_expert_group(256, 8, 16, 8);
  const double spread_pairs = std::sqrt(128.0 / 8 * 7 / 8);
  EXPECT_NEAR(eight.pairs, 16 + 1.4236 * spread_pairs, 1e-9);
  const double p = distinct_experts(256, 8, 16) / 256;
  EXPECT_NEAR(eight.experts, 32 * p + 1.4236 * std::sqrt(32 * p * (1 - p)), 1e-9);
  EXPECT_NEAR(eight.experts, 16.69, 0.01);

  // In a prediction: with TP attention each rank streams its group's touched
  // experts whole over tp / ep ranks, and the MoE still ends in the
  // all-reduce; so the routed bytes grow by the busiest group's share.
  const ModelSpec m = load_model("deepseek-v3");
  const Device& d = registry().get("h200");
  Scenario tp8;
  tp8.batch = 16;
  tp8.seq_len = 2048;
  tp8.tp = 8;
  tp8.precision.weights = Format::kFp8;
  Scenario ep8 = tp8;
  ep8.ep = 8;
  const OpGraph a = build_ops(m, d, tp8), b = build_ops(m, d, ep8);
  const Op& down_a = find_op(a, OpKind::kDownProj, /*moe=*/true);
  const Op& down_b = find_op(b, OpKind::kDownProj, /*moe=*/true);
  // (bytes_for rounds each tensor's bytes up: within a few bytes)
  EXPECT_NEAR(down_b.weight_bytes / down_a.weight_bytes,
              eight.experts * 8 / distinct_experts(256, 8, 16), 1e-5);
  EXPECT_NEAR(down_b.flops / down_a.flops, eight.pairs * 8 / 128, 1e-9);
  EXPECT_EQ(count_ops(b, OpKind::kAllToAll), 0);
  EXPECT_EQ(count_ops(b, OpKind::kAllReduce), count_ops(a, OpKind::kAllReduce));

  // With attention data parallelism the tokens travel: a dispatch and a
  // combine per MoE layer, each rank sending its 16 / 8 tokens x 8 experts
  // x 7168 elements; no all-reduce is left in them (attention tp 1; the
  // first, dense layers still reduce their MLP).
  Scenario dp8 = ep8;
  dp8.attention_dp = 8;
  const OpGraph c = build_ops(m, d, dp8);
  EXPECT_EQ(count_ops(c, OpKind::kAllToAll), 2 * count_moe_layers(c));
  for (int i = 0; i < c.size; ++i) {
    const Op& op = c.ops[static_cast<std::size_t>(i)];
    EXPECT_FALSE(op.kind == OpKind::kAllReduce && op.moe_layer);
  }
  const Op& a2a = find_op(c, OpKind::kAllToAll);
  EXPECT_DOUBLE_EQ(a2a.message_elements, 16.0 / 8 * 8 * 7168);
  EXPECT_DOUBLE_EQ(a2a.ranks, 8);

  Scenario bad = tp8;
  bad.ep = 3;  // does not divide tp 8
  EXPECT_THROW((void)build_ops(m, d, bad), InvalidArgument);
  bad.tp = 3;
  bad.ep = 3;  // does not divide the 256 experts (nor tp the heads)
  EXPECT_THROW((void)build_ops(m, d, bad), InvalidArgument);
  Scenario dense;
  dense.tp = 2;
  dense.ep = 2;
  EXPECT_THROW((void)build_ops(load_model("llama-3.1-8b"), d, dense), InvalidArgument);
}

// MiniMax-M2's q and k norms span all heads: with the heads split over 4
// tensor-parallel ranks, each layer adds one all-reduce of two fp32 values a
// token (4 16-bit elements: 8 x 4 = 32 for 8 tokens); none on one GPU, none
// when attention data parallelism leaves every rank all the heads.
TEST(Ops, NormsAcrossHeadsJoinTheirVarianceOverTensorParallelRanks) {
  const ModelSpec m = load_model("minimax-m2");
  ASSERT_TRUE(m.qk_norm_across_heads);
  const Device& d = registry().get("h200");
  // All-reduces smaller than one token's hidden state: the variance's.
  const auto variance_reduces = [&](const Scenario& s) {
    const OpGraph g = build_ops(m, d, s, ideal());
    int n = 0;
    for (int i = 0; i < g.size; ++i) {
      const Op& op = g.ops[static_cast<std::size_t>(i)];
      n += op.kind == OpKind::kAllReduce && op.message_elements < static_cast<double>(m.hidden);
    }
    return n;
  };
  Scenario s = decode(8, 1024);
  s.tp = 4;
  const OpGraph g = build_ops(m, d, s, ideal());
  int reduces = 0;
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    if (op.kind != OpKind::kAllReduce || op.message_elements != 32) continue;
    ++reduces;
    EXPECT_EQ(op.count, static_cast<double>(m.layers));  // every layer (one class)
    EXPECT_EQ(op.ranks, 4);
  }
  EXPECT_EQ(reduces, 1);
  s.tp = 1;
  EXPECT_EQ(variance_reduces(s), 0);
  s.tp = 4;
  s.attention_dp = 4;
  EXPECT_EQ(variance_reduces(s), 0);
  // Qwen3's per-head norms need no such step.
  EXPECT_FALSE(load_model("qwen3-8b").qk_norm_across_heads);
}

// Speculative decoding. Tokens a step: 1 + a + a^2 + a^3 for 3 drafts at
// acceptance a = 0.85: 1 + 0.85 + 0.7225 + 0.614125 = 3.186625; every draft
// accepted: 4; none: 1.
TEST(Speculative, TokensPerStepIsTheExpectedAcceptedRunPlusOne) {
  Scenario s = decode(1, 512);
  EXPECT_DOUBLE_EQ(tokens_per_step(s), 1);
  s.draft_tokens = 3;
  s.acceptance = 0.85;
  EXPECT_NEAR(tokens_per_step(s), 3.186625, 1e-12);
  s.acceptance = 1;
  EXPECT_DOUBLE_EQ(tokens_per_step(s), 4);
  s.acceptance = 0;
  EXPECT_DOUBLE_EQ(tokens_per_step(s), 1);
}

// The verification pass carries draft_tokens + 1 tokens a sequence through
// every linear layer and attends them over one read of each sequence's cache;
// the draft head runs draft_tokens times at one token a sequence.
TEST(Speculative, VerificationAndDraftPassesByOp) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = registry().get("h100");
  Scenario plain = decode(8, 512);
  Scenario spec = plain;
  spec.draft_tokens = 3;
  spec.acceptance = 0.85;
  const OpGraph a = build_ops(m, d, plain, ideal());
  const OpGraph b = build_ops(m, d, spec, ideal());
  EXPECT_EQ(b.tokens, 8 * 4);
  const auto main_op = [](const OpGraph& g, OpKind kind) -> const Op& {
    for (int i = 0; i < g.size; ++i) {
      const Op& op = g.ops[static_cast<std::size_t>(i)];
      if (op.kind == kind && !op.draft_head) return op;
    }
    throw std::runtime_error("op not found");
  };
  EXPECT_EQ(main_op(b, OpKind::kQProj).gemm_m, 32);
  EXPECT_EQ(main_op(b, OpKind::kLmHead).gemm_m, 32);  // every verified position's logits
  EXPECT_NEAR(main_op(b, OpKind::kQkMatmul).flops, 4 * main_op(a, OpKind::kQkMatmul).flops,
              kRelTol * main_op(b, OpKind::kQkMatmul).flops);
  EXPECT_EQ(main_op(b, OpKind::kQkMatmul).kv_bytes, main_op(a, OpKind::kQkMatmul).kv_bytes);
  // The draft head: one layer's ops and the LM head, three passes of 8 tokens.
  int draft_ops = 0;
  for (int i = 0; i < b.size; ++i) {
    const Op& op = b.ops[static_cast<std::size_t>(i)];
    if (!op.draft_head) continue;
    ++draft_ops;
    EXPECT_EQ(op.count, 3) << op_name(op.kind);
    if (op.cls == OpClass::kMatmul) {
      EXPECT_EQ(op.gemm_m, 8) << op_name(op.kind);
    }
  }
  EXPECT_EQ(draft_ops, b.size - a.size);
  EXPECT_GT(draft_ops, 10);
  // Predicted tokens/s count the expected tokens a step.
  const Prediction p = predict(m, d, spec, ideal());
  EXPECT_NEAR(p.tokens_per_step, 3.186625, 1e-12);
  EXPECT_NEAR(p.tokens_per_s, 8 * 3.186625 / p.time_s, kRelTol * p.tokens_per_s);
  // A memory-bound step of 32 tokens costs little more than one of 8: the
  // step yields over three times the tokens at well under twice the time.
  const Prediction q = predict(m, d, plain, ideal());
  EXPECT_LT(p.time_s, 1.5 * q.time_s);
  EXPECT_GT(p.tokens_per_s, 2 * q.tokens_per_s);
  // The head's weights and cache take memory: one more layer.
  EXPECT_GT(p.memory.weights_bytes, q.memory.weights_bytes);
  EXPECT_LT(p.memory.weights_bytes, q.memory.weights_bytes * (1 + 1.5 / 32));
  EXPECT_NEAR(p.memory.kv_cache_bytes, q.memory.kv_cache_bytes * 33 / 32,
              kRelTol * p.memory.kv_cache_bytes);
  // A prefill runs the head once over the prompt.
  Scenario prompt = spec;
  prompt.phase = Phase::kPrefill;
  const OpGraph pre = build_ops(m, d, prompt, ideal());
  for (int i = 0; i < pre.size; ++i) {
    const Op& op = pre.ops[static_cast<std::size_t>(i)];
    if (op.draft_head) {
      EXPECT_EQ(op.count, 1) << op_name(op.kind);
    }
  }
}

// generate: each step yields tokens_per_step tokens, so the decode time over
// the same contexts shrinks by that factor (every draft accepted: 4).
TEST(Speculative, GenerateDividesTheStepsByTheTokensEachYields) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = registry().get("h100");
  Scenario s = decode(1, 1);
  s.draft_tokens = 3;
  s.acceptance = 1;
  const GenerateResult g = generate(m, d, s, 512, 5, ideal());
  double steps = 0;
  for (int ctx = 512; ctx <= 515; ++ctx) {
    Scenario step = s;
    step.seq_len = ctx;
    steps += predict(m, d, step, ideal()).time_s;
  }
  EXPECT_NEAR(g.tpot_s, steps / 4 / 4, 1e-12);
  EXPECT_NEAR(g.decode_tokens_per_s, 1 / g.tpot_s, 1e-9 / g.tpot_s);
}

TEST(Speculative, BadDraftsAreRefused) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Device& d = registry().get("h100");
  Scenario s = decode(1, 512);
  s.draft_tokens = kMaxDraftTokens + 1;
  EXPECT_THROW((void)predict(m, d, s), InvalidArgument);
  s.draft_tokens = 2;
  for (double bad : {-0.1, 1.5, std::nan("")}) {
    s.acceptance = bad;
    EXPECT_THROW((void)predict(m, d, s), InvalidArgument) << bad;
  }
  // Through the request layer: the default acceptance (Llama has no measured
  // head), and none without drafts.
  ScenarioRequest r;
  r.draft_tokens = 2;
  EXPECT_DOUBLE_EQ(build_scenario(r, m, &d).acceptance, kDefaultDraftAcceptance);
  r.draft_tokens = 0;
  r.acceptance = 0.7;
  EXPECT_THROW((void)build_scenario(r, m, &d), InvalidArgument);
}

// The acceptance whose chain 1 + a + ... + a^k yields a given tokens a step:
// a^0 + a^1 = 1.5 at one draft is a = 0.5; 1 + a + a^2 = 1.75 at two is a =
// 0.5 (1 + 0.5 + 0.25); the ends are 0 (1 token) and 1 (k + 1), and figures
// outside [1, k + 1] are held there.
TEST(Speculative, AcceptanceForTokensPerStepInvertsTheChain) {
  constexpr double kTolerance = 1e-12;
  EXPECT_NEAR(acceptance_for_tokens_per_step(1, 1.5), 0.5, kTolerance);
  EXPECT_NEAR(acceptance_for_tokens_per_step(2, 1.75), 0.5, kTolerance);
  EXPECT_NEAR(acceptance_for_tokens_per_step(3, 1.0), 0.0, kTolerance);
  EXPECT_NEAR(acceptance_for_tokens_per_step(3, 4.0), 1.0, kTolerance);
  EXPECT_NEAR(acceptance_for_tokens_per_step(3, 9.0), 1.0, kTolerance);
  EXPECT_DOUBLE_EQ(acceptance_for_tokens_per_step(0, 2.0), 0.0);
  EXPECT_DOUBLE_EQ(acceptance_for_tokens_per_step(3, std::nan("")), 0.0);
  Scenario s;
  s.draft_tokens = 3;
  s.acceptance = acceptance_for_tokens_per_step(3, 2.82);
  EXPECT_NEAR(tokens_per_step(s), 2.82, kTolerance);
}

// DeepSeek-V3's preset carries the tokens a step TensorRT-LLM measured for
// DeepSeek-R1's MTP head chained 1 to 5 times (1.92, 2.58, 2.82, 2.99, 3.01):
// without an acceptance given, a request yields exactly those, held at 3.01
// past five drafts; a given acceptance wins; a model without a measurement
// keeps the default.
TEST(Speculative, AModelsMeasuredHeadSetsTheDefaultAcceptance) {
  constexpr double kTolerance = 1e-12;
  const ModelSpec m = load_model("deepseek-r1");  // an alias of deepseek-v3
  ASSERT_EQ(m.draft_tokens_per_step.size(), 5u);
  EXPECT_NE(m.draft_acceptance_source.find("TensorRT-LLM"), std::string::npos);
  const Device& d = registry().get("b200");
  ScenarioRequest r;
  r.weights = r.act = "fp8";
  const double expected[] = {1.92, 2.58, 2.82, 2.99, 3.01, 3.01, 3.01};
  for (std::int64_t k = 1; k <= 7; ++k) {
    r.draft_tokens = k;
    const Scenario s = build_scenario(r, m, &d);
    EXPECT_NEAR(tokens_per_step(s), expected[k - 1], kTolerance) << k;
    const auto measured = measured_tokens_per_step(m, k);
    ASSERT_TRUE(measured) << k;
    EXPECT_NEAR(*measured, expected[k - 1], kTolerance) << k;
  }
  // Past the largest draft count it is refused, not searched for.
  r.draft_tokens = kMaxDraftTokens + 1;
  EXPECT_THROW((void)build_scenario(r, m, &d), InvalidArgument);
  EXPECT_FALSE(measured_tokens_per_step(m, 0));
  r.draft_tokens = 3;
  r.acceptance = 0.85;
  EXPECT_DOUBLE_EQ(build_scenario(r, m, &d).acceptance, 0.85);
  const ModelSpec kimi = load_model("kimi-k2");  // the same architecture, no MTP measured
  EXPECT_TRUE(kimi.draft_tokens_per_step.empty());
  r.acceptance.reset();
  EXPECT_DOUBLE_EQ(build_scenario(r, kimi, &d).acceptance, kDefaultDraftAcceptance);
  // The prediction says where the figure came from: measured at 3 drafts, held
  // from 5 at 7, and neither for a given acceptance.
  const auto says = [&](std::int64_t drafts, std::optional<double> acceptance,
                        const std::string& what) {
    r.draft_tokens = drafts;
    r.acceptance = acceptance;
    const Scenario s = build_scenario(r, m, &d);
    for (const auto& n : explain(m, d, s, predict(m, d, s)))
      if (n.find(what) != n.npos) return true;
    return false;
  };
  EXPECT_TRUE(says(3, std::nullopt, "as measured for this model's own head"));
  EXPECT_TRUE(says(7, std::nullopt, "held at the figure measured for this model's own head at 5"));
  EXPECT_FALSE(says(3, 0.85, "own head"));
}

}  // namespace
}  // namespace roofline

namespace roofline {
namespace {

// Qwen3.5-397B-A17B decode at TP 4, batch 8, 1,000 cached tokens. A rank holds
// 16 of the 64 value heads (and 4 of the 16 key heads) of 128 x 128:
//   the delta rule, per token and value head 7 x 128 x 128 FLOPs:
//     8 x 16 x 7 x 16,384 = 14,680,064 a layer;
//   its state, read and written once a step in fp32: 2 x 8 x 16 x 16,384 x 4 B = 16,777,216;
//   the convolution's window, 3 inputs of 2 x 512 + 2,048 = 3,072 channels in bf16,
//     read and written: 2 x 8 x 3,072 x 3 x 2 B = 294,912;
//   in-projections 2 x 512 + 2 x 2,048 + 2 x 16 = 5,152 wide.
// The 15 full-attention layers alone write KV and gate their output; their
// q_proj yields q and the gate, 8 heads x 256 x 2 = 4,096 wide.
TEST(Ops, GatedDeltaNetDecodeByHand) {
  const ModelSpec m = load_model("qwen3.5-397b-a17b");
  Scenario s = decode(8, 1000);
  s.tp = 4;
  const OpGraph g = build_ops(m, registry().get("b200"), s, ideal());
  const Op& rule = find_op(g, OpKind::kDeltaRule);
  EXPECT_DOUBLE_EQ(rule.count, 45);
  EXPECT_DOUBLE_EQ(rule.flops, 14'680'064);
  EXPECT_DOUBLE_EQ(rule.kv_bytes, 16'777'216);
  EXPECT_EQ(rule.compute, Format::kFp32);
  EXPECT_TRUE(rule.linear_layer);
  EXPECT_EQ(count_ops(g, OpKind::kDeltaRule), 1);  // one class: every layer is MoE
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kShortConv).kv_bytes, 294'912);
  // in_proj_qkvz a rank: 2 x 4 key heads x 128 + 2 x 16 value heads x 128;
  // in_proj_ba: 2 x 16 value heads, its own GEMM and launch.
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kLinearInProj).gemm_n, 5'120);
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kLinearBaProj).gemm_n, 32);
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kLinearBaProj).launches, 1);
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kKvCacheWrite).count, 15);
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kOutputGate).count, 15);
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kQProj).gemm_n, 4'096);
  EXPECT_EQ(count_ops(g, OpKind::kQkMatmul), 1);

  // Prompt tokens riding along are computed chunkwise, on the tensor cores:
  // a second delta-rule op.
  s.prefill_tokens = 512;
  s.prefill_prompt = 1024;
  const OpGraph mixed = build_ops(m, registry().get("b200"), s, ideal());
  EXPECT_EQ(count_ops(mixed, OpKind::kDeltaRule), 2);
  // The decode tokens' fused recurrent kernel launches once; the prompt
  // tokens' chunked call nine times (L2 norms of q and k, chunk cumsum,
  // K K^T, the solve's 16 x 16 kernel and merge, W and U, states, outputs).
  EXPECT_DOUBLE_EQ(rule.launches, 1);
  int chunked = 0;
  for (int i = 0; i < mixed.size; ++i) {
    const Op& op = mixed.ops[static_cast<std::size_t>(i)];
    if (op.kind != OpKind::kDeltaRule || !op.prompt_attention) continue;
    ++chunked;
    EXPECT_DOUBLE_EQ(op.launches, 9);
  }
  EXPECT_EQ(chunked, 1);
}

// A prefill of one 512-token prompt at TP 4, chunkwise (C = 64): per token and
// value head 6 C dk + 4 C dv + C^2 / 3 + 6 dk dv = 49,152 + 32,768 + 1,365.33 +
// 98,304 = 181,589.33 FLOPs; x 16 heads x 512 tokens = 1,487,579,818.67.
TEST(Ops, GatedDeltaNetPrefillByHand) {
  const ModelSpec m = load_model("qwen3.5-397b-a17b");
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 512;
  s.tp = 4;
  const OpGraph g = build_ops(m, registry().get("b200"), s, ideal());
  const Op& rule = find_op(g, OpKind::kDeltaRule);
  EXPECT_NEAR(rule.flops, 512.0 * 16 * (49'152 + 32'768 + 4'096.0 / 3 + 98'304), 1e-3);
  EXPECT_EQ(rule.compute, Format::kBf16);
  EXPECT_DOUBLE_EQ(rule.kv_bytes, 0);
  // fp8 activations (W8A8): the chunk kernels still multiply in 16 bits.
  s.precision.weights = s.precision.experts = Format::kFp8;
  s.precision.act = Format::kFp8;
  EXPECT_EQ(find_op(build_ops(m, registry().get("b200"), s, ideal()), OpKind::kDeltaRule).compute,
            Format::kBf16);
}

// KV cache and state of one sequence at TP 1: the 15 full-attention layers
// cache 2 x 2 heads x 256 = 1,024 elements a token (bf16, 2,048 B), over 1,001
// tokens: 15 x 1,001 x 2,048 = 30,750,720 B; the 45 linear layers hold
// 64 x 128 x 128 fp32 (4,194,304 B) and 36,864 bf16 convolution inputs
// (73,728 B): 45 x 4,268,032 = 192,061,440 B, whatever the context.
TEST(Memory, LinearAttentionStateDoesNotGrowWithContext) {
  const ModelSpec m = load_model("qwen3.5-397b-a17b");
  const Device& d = registry().get("b200");
  const MemoryEstimate short_ctx = estimate_memory(m, d, decode(1, 1000));
  EXPECT_DOUBLE_EQ(short_ctx.kv_cache_bytes, 30'750'720.0 + 192'061'440.0);
  const MemoryEstimate long_ctx = estimate_memory(m, d, decode(1, 2000));
  EXPECT_DOUBLE_EQ(long_ctx.kv_cache_bytes - short_ctx.kv_cache_bytes, 15.0 * 1000 * 2048);
  // roofline kv says the state apart from the per-token rows.
  EXPECT_DOUBLE_EQ(kv_report(m, d, decode(1, 1000)).state_bytes_per_sequence, 192'061'440.0);
  EXPECT_DOUBLE_EQ(
      kv_report(load_model("llama-3.1-8b"), d, decode(1, 1000)).state_bytes_per_sequence, 0);
}

TEST(Ops, TensorParallelMustDivideTheLinearKeyHeads) {
  const ModelSpec m = load_model("qwen3.5-397b-a17b");
  Scenario s = decode(1, 100);
  s.tp = 32;  // divides the 32 attention heads, not the 16 linear key heads
  try {
    (void)build_ops(m, registry().get("b200"), s, ideal());
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("16 linear-attention key heads"), std::string::npos)
        << e.what();
  }
}

// DeepSeek-V3.2 decode at TP 8, batch 4, 10,000 cached tokens (10,001 attended):
//   MLA reads only the indexer's top 2,048: q.k FLOPs 2 x 4 x 16 heads x 2,048 x 576
//     = 150,994,944 a layer (DeepSeek-V3 reads all 10,001);
//   the indexer, whole on every rank: 2 x 64 heads x 128 x 4 x 10,001 pairs = 655,425,536
//     FLOPs; its cache read (4 x 10,001 tokens) and written (4) at 128 fp8 + 4 scale bytes:
//     5,281,056 B; its queries 64 x 128 = 8,192 wide from the 1,536-wide q latent.
TEST(Ops, SparseAttentionDecodeByHand) {
  const ModelSpec m = load_model("deepseek-v3.2");
  Scenario s = decode(4, 10'000);
  s.tp = 8;
  const OpGraph g = build_ops(m, registry().get("h200"), s, ideal());
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kQkMatmul).flops, 150'994'944);
  const Op& score = find_op(g, OpKind::kIndexerScore);
  EXPECT_DOUBLE_EQ(score.flops, 655'425'536);
  EXPECT_DOUBLE_EQ(score.kv_bytes, 5'281'056);
  EXPECT_EQ(score.compute, Format::kFp8);
  const Op& q = find_op(g, OpKind::kIndexerProj);
  EXPECT_DOUBLE_EQ(q.gemm_n, 8'192);
  EXPECT_DOUBLE_EQ(q.gemm_k, 1'536);
  EXPECT_EQ(count_ops(g, OpKind::kIndexerTopk), count_ops(g, OpKind::kIndexerScore));
  const OpGraph dense = build_ops(load_model("deepseek-v3"), registry().get("h200"), s, ideal());
  EXPECT_DOUBLE_EQ(find_op(dense, OpKind::kQkMatmul).flops, 150'994'944.0 * 10'001 / 2'048);
  EXPECT_EQ(count_ops(dense, OpKind::kIndexerScore), 0);
}

// A 4,096-token prompt: the indexer scores the causal pairs, 4,096 x 4,097 / 2
// = 8,390,656, x 2 x 64 x 128 = 137,472,507,904 FLOPs; each query's attention
// then covers at most 2,048 tokens, 4,096 x 2,048 - 2,048 x 2,047 / 2 =
// 6,292,480 pairs a head instead of 8,390,656.
TEST(Ops, SparseAttentionPrefillByHand) {
  const ModelSpec m = load_model("deepseek-v3.2");
  Scenario s;
  s.phase = Phase::kPrefill;
  s.seq_len = 4096;
  s.tp = 8;
  const OpGraph g = build_ops(m, registry().get("h200"), s, ideal());
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kIndexerScore).flops, 137'472'507'904);
  const OpGraph dense = build_ops(load_model("deepseek-v3"), registry().get("h200"), s, ideal());
  EXPECT_DOUBLE_EQ(find_op(g, OpKind::kQkMatmul).flops / find_op(dense, OpKind::kQkMatmul).flops,
                   6'292'480.0 / 8'390'656);
}

// The indexer's cache holds every token (61 layers x 1,001 tokens x 132 B =
// 8,060,052 B more than DeepSeek-V3 at batch 1), and its weights are whole on
// every rank: at TP 8 a rank holds all 851,524,864 fp8 bytes of them.
TEST(Memory, SparseAttentionIndexerCacheAndWeights) {
  const ModelSpec v32 = load_model("deepseek-v3.2");
  const ModelSpec v3 = load_model("deepseek-v3");
  const Device& d = registry().get("h200");
  EXPECT_DOUBLE_EQ(estimate_memory(v32, d, decode(1, 1000)).kv_cache_bytes -
                       estimate_memory(v3, d, decode(1, 1000)).kv_cache_bytes,
                   8'060'052);
  Scenario s = decode(1, 1000);
  s.tp = 8;
  constexpr double kTensorScaleBytes = 4;  // bytes_for adds one fp8 tensor scale a call
  EXPECT_NEAR(weight_memory(v32, s) - weight_memory(v3, s), 851'524'864, kTensorScaleBytes);
  // With attention data parallelism the attention copies leave the indexer
  // out: it is held whole once a rank already.
  s.attention_dp = 8;
  EXPECT_NEAR(weight_memory(v32, s) - weight_memory(v3, s), 851'524'864, 2 * kTensorScaleBytes);
}

// An fp8 latent cache of sparse attention is FlashMLA's "FP8 with scale"
// layout: 512 fp8 NoPE values, 4 fp32 scales and 64 bf16 RoPE values, 656
// bytes a token and layer where a plain fp8 latent is 576; DeepSeek-V3
// (dense MLA) keeps the plain one.
TEST(Memory, SparseAttentionsFp8LatentCarriesItsScalesAndBf16Rope) {
  const ModelSpec v32 = load_model("deepseek-v3.2");
  const ModelSpec v3 = load_model("deepseek-v3");
  const Device& d = registry().get("h200");
  Scenario s = decode(1, 1000);
  s.precision.kv = Format::kFp8;
  constexpr double kTensorScaleBytes = 4;  // bytes_for's one fp8 tensor scale
  // The context holds 1,001 tokens a layer (decode(1, 1000)'s cache and the new one).
  const double tokens = 1001 * 61;
  const double indexer = tokens * (128 + 4);  // its fp8 key and fp32 scale
  EXPECT_NEAR(estimate_memory(v32, d, s).kv_cache_bytes, tokens * 656 + indexer, 1e-9 * tokens);
  EXPECT_NEAR(estimate_memory(v3, d, s).kv_cache_bytes, tokens * 576 + kTensorScaleBytes,
              1e-9 * tokens);
  // A bf16 cache: two bytes each of the 576 values.
  s.precision.kv = Format::kBf16;
  EXPECT_NEAR(estimate_memory(v32, d, s).kv_cache_bytes, tokens * 1152 + indexer, 1e-9 * tokens);
}

// NVIDIA's NVFP4 DeepSeek-R1 keeps its attention and LM head in bf16
// (models/index.json quantized_releases). At TP 1 a layer's q_b_proj holds
// 1,536 x 128 heads x 192 = 37,748,736 weights: 75,497,472 B in bf16.
TEST(Releases, AnNvfp4DeepSeekRunsAsNvidiaShipsIt) {
  const ModelSpec m = load_model("deepseek-v3");
  const Device& d = registry().get("b200");
  Scenario s = decode(1, 1000);
  s.precision.weights = Format::kNvfp4;
  s.precision.act = Format::kNvfp4;
  const OpGraph g = build_ops(m, d, s, ideal());
  const Op& qb = find_op(g, OpKind::kQBProj);
  EXPECT_EQ(qb.weights, Format::kBf16);
  EXPECT_EQ(qb.compute, Format::kBf16);  // bf16 math, not nvfp4 on bf16 weights
  EXPECT_DOUBLE_EQ(qb.weight_bytes, 75'497'472);
  EXPECT_EQ(find_op(g, OpKind::kOProj).weights, Format::kBf16);
  EXPECT_EQ(find_op(g, OpKind::kLmHead).weights, Format::kBf16);
  EXPECT_EQ(find_op(g, OpKind::kGateProj, true).weights, Format::kNvfp4);  // routed experts
  EXPECT_EQ(find_op(g, OpKind::kSharedGateProj).weights, Format::kNvfp4);
  EXPECT_EQ(find_op(g, OpKind::kGateProj).weights, Format::kNvfp4);  // the dense layers' MLP

  // A strategy quantizes every layer it names.
  Scenario uniform = s;
  uniform.precision.follow_release = false;
  EXPECT_EQ(find_op(build_ops(m, d, uniform, ideal()), OpKind::kQBProj).weights, Format::kNvfp4);
  // A plan's own per-operator format wins over the release's.
  Scenario mixed = s;
  mixed.precision.ops[static_cast<std::size_t>(OpKind::kQBProj)].weights = Format::kFp8;
  mixed.precision.has_op_overrides = true;
  const OpGraph gm = build_ops(m, d, mixed, ideal());
  EXPECT_EQ(find_op(gm, OpKind::kQBProj).weights, Format::kFp8);
  EXPECT_EQ(find_op(gm, OpKind::kOProj).weights, Format::kBf16);

  // Memory: the kept weights, a layer's q_a 7,168 x 1,536 + q_b 37,748,736 +
  // kv_a 7,168 x 576 + kv_b 512 x 128 x 256 + o 128 x 128 x 7,168 =
  // 187,105,280, x 61 layers, and the LM head's 129,280 x 7,168 = 926,679,040:
  // 12,340,101,120 weights at 16 bits instead of 4.5 (1.4375 B more each).
  constexpr double kTensorScales = 64;  // bytes_for adds a per-tensor scale a call
  EXPECT_NEAR(weight_memory(m, s) - weight_memory(m, uniform), 12'340'101'120 * 1.4375,
              kTensorScales);

  // The prediction says so, naming the release; a strategy's does not.
  const auto says = [&](const Scenario& sc) {
    for (const auto& n : explain(m, d, sc, predict(m, d, sc)))
      if (n.find("as its release nvidia/DeepSeek-R1") != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(says(s));
  EXPECT_FALSE(says(uniform));
}

// A ModelOpt NVFP4 config.json given as the model runs its own ignore list
// with no --weights: its checkpoint format is nvfp4, its release its own.
TEST(Releases, AModelOptConfigRunsItsOwnLayout) {
  const ModelPreset* preset = ModelCatalog::built_in().find("deepseek-v3");
  ASSERT_NE(preset, nullptr);
  nlohmann::json doc = nlohmann::json::parse(preset->config_json);
  doc["quantization_config"] = {{"quant_method", "modelopt"},
                                {"quant_algo", "NVFP4"},
                                {"ignore", {"lm_head", "model.layers.0.self_attn*"}}};
  const ModelSpec m = parse_hf_config(doc.dump(), "r1-fp4/config.json");
  const Device& d = registry().get("b200");
  Scenario s = decode(1, 1000);
  s.precision.act = Format::kNvfp4;
  const OpGraph g = build_ops(m, d, s, ideal());
  EXPECT_EQ(find_op(g, OpKind::kQBProj).weights, Format::kBf16);
  EXPECT_EQ(find_op(g, OpKind::kLmHead).weights, Format::kBf16);
  EXPECT_EQ(find_op(g, OpKind::kGateProj, true).weights, Format::kNvfp4);
  s.precision.follow_release = false;
  EXPECT_EQ(find_op(build_ops(m, d, s, ideal()), OpKind::kQBProj).weights, Format::kNvfp4);
}

// The release keeps its MTP layer whole in bf16 (TensorRT-LLM's DeepSeek-R1
// FP4 recipe, GLM-5's and Qwen3.5's exclusion lists): the draft head's
// routed experts stream bf16 bytes, and its weights are held at 2 B a weight.
TEST(Releases, TheDraftHeadOfANvfp4ReleaseIsBf16) {
  const ModelSpec m = load_model("deepseek-v3");
  const Device& d = registry().get("b200");
  Scenario s = decode(1, 1000);
  s.precision.weights = Format::kNvfp4;
  s.precision.act = Format::kNvfp4;
  s.draft_tokens = 1;
  const OpGraph g = build_ops(m, d, s, ideal());
  int draft_experts = 0;
  for (int i = 0; i < g.size; ++i) {
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    if (op.moe_layer && op.kind == OpKind::kGateProj) {
      EXPECT_EQ(op.weights, op.draft_head ? Format::kBf16 : Format::kNvfp4);
      draft_experts += op.draft_head;
    }
  }
  EXPECT_EQ(draft_experts, 1);
  // One MoE layer's weights (attention and norms a layer, the experts, shared
  // expert and router of an MoE layer) at 2 B each on top of the model's.
  const ParamCounts pc = count_parameters(m);
  const double layer =
      pc.attention / 61 + pc.norms / 61 + (pc.routed_experts + pc.shared_experts + pc.router) / 58;
  EXPECT_NEAR(estimate_memory(m, d, s).weights_bytes - weight_memory(m, s), 2 * layer, 1);
}

}  // namespace
}  // namespace roofline
