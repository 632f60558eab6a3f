#include "roofline/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/model_document.h"
#include "roofline/error.h"
#include "roofline/workload.h"

namespace roofline {
namespace {

// Parameter counts within this fraction of the publisher's figure (published
// figures are rounded to 2-3 significant digits).
constexpr double kParamRelTol = 0.02;

TEST(Models, EveryPresetParsesWithoutUnmodeledKeys) {
  const auto& presets = ModelCatalog::built_in().presets();
  ASSERT_EQ(presets.size(), 25u);
  for (const auto& p : presets) {
    const ModelSpec m = preset_model(p);
    for (const auto& n : m.notes) {
      EXPECT_EQ(n.find("config keys not modeled"), std::string::npos) << p.id << ": " << n;
    }
    EXPECT_EQ(m.id, p.id);
  }
}

// Two presets carry a measured speculative acceptance (DeepSeek-V3's MTP head
// as TensorRT-LLM measured DeepSeek-R1's; Qwen3.5-397B's as InferenceX's
// golden file has it), each a non-falling list from one draft token.
TEST(Models, MeasuredDraftAcceptanceComesWithItsSource) {
  int with = 0;
  for (const auto& p : ModelCatalog::built_in().presets()) {
    if (p.draft_tokens_per_step.empty()) continue;
    ++with;
    EXPECT_FALSE(p.draft_acceptance_source.empty()) << p.id;
    const ModelSpec m = preset_model(p);
    EXPECT_EQ(m.draft_tokens_per_step, p.draft_tokens_per_step) << p.id;
  }
  EXPECT_EQ(with, 2);
  const ModelPreset* qwen = ModelCatalog::built_in().find("qwen3.5-397b");
  ASSERT_NE(qwen, nullptr);
  ASSERT_GE(qwen->draft_tokens_per_step.size(), 3u);
  EXPECT_DOUBLE_EQ(qwen->draft_tokens_per_step[2], 3.39);
}

// `parse(text)` throws a ParseError whose message names `what`.
template <typename Parse>
void expect_parse_error(const Parse& parse, const std::string& text, const std::string& what) {
  try {
    (void)parse(text);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(Models, DraftAcceptanceParsingIsStrict) {
  const auto parse = [](const std::string& text) {
    return detail::parse_draft_acceptance(nlohmann::json::parse(text), "index.json", "[0]");
  };
  const std::string tail = R"(, "confidence": "measured", "source": "a blog"})";
  const auto good = parse(R"({"method": "mtp", "tokens_per_step": [1.9, 2.5])" + tail);
  EXPECT_EQ(good.tokens_per_step, (std::vector<double>{1.9, 2.5}));
  EXPECT_EQ(good.source, "a blog");
  const auto bad = [&](const std::string& text, const std::string& what) {
    expect_parse_error(parse, text, what);
  };
  bad(R"({"method": "eagle", "tokens_per_step": [1.9])" + tail, "method");
  bad(R"({"method": "mtp", "tokens_per_step": [])" + tail, "tokens_per_step");
  bad(R"({"method": "mtp", "tokens_per_step": [2.5])" + tail, "entry 1");       // past 1 + 1
  bad(R"({"method": "mtp", "tokens_per_step": [0.9])" + tail, "entry 1");       // below 1
  bad(R"({"method": "mtp", "tokens_per_step": [1.9, 1.8])" + tail, "entry 2");  // falls
  bad(R"({"method": "mtp", "tokens_per_step": [1.9, "x"])" + tail, "entry 2 must be a number");
  bad(R"({"method": "mtp", "tokens_per_step": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1])" + tail,
      "tokens_per_step");  // 17 draft counts
  bad(R"({"method": "mtp", "tokens_per_step": [1.9], "confidence": "guess", "source": "s"})",
      "confidence");
  bad(R"({"method": "mtp", "tokens_per_step": [1.9], "confidence": "derived", "source": "s"})",
      "confidence");  // predictions cite these as measured
  bad(R"({"method": "mtp", "tokens_per_step": [1.9], "confidence": "measured", "source": ""})",
      "source");
  bad(R"({"method": "mtp", "tokens_per_step": [1.9], "confidence": "measured"})", "source");
  bad(R"({"method": "mtp", "tokens_per_step": [1.9], "extra": 1)" + tail, "extra");
}

// NVIDIA's NVFP4 releases keep attention and the LM head in bf16; the
// presets carry each release's list with its source.
TEST(Models, PresetsCarryTheirQuantizedReleases) {
  const ModelSpec ds = load_model("deepseek-r1");
  const QuantizedRelease* r = ds.release_for(Format::kNvfp4);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->kept_format, Format::kBf16);
  const auto kept = [&](const QuantizedRelease& q, OpKind k) {
    return (q.kept_ops >> static_cast<unsigned>(k) & 1) != 0;
  };
  for (OpKind k : {OpKind::kQAProj, OpKind::kQBProj, OpKind::kKvAProj, OpKind::kKvBProj,
                   OpKind::kKAbsorb, OpKind::kVAbsorb, OpKind::kOProj, OpKind::kLmHead})
    EXPECT_TRUE(kept(*r, k)) << op_name(k);
  EXPECT_FALSE(kept(*r, OpKind::kSharedGateProj));  // the shared expert is nvfp4
  EXPECT_TRUE(r->draft_head_kept);
  EXPECT_FALSE(r->source.empty());
  EXPECT_EQ(ds.release_for(Format::kFp8), nullptr);  // the fp8 checkpoint is the model's own
  // Qwen3-235B's release quantizes attention too: only the LM head stays.
  const ModelSpec qwen = load_model("qwen3-235b-a22b");
  ASSERT_NE(qwen.release_for(Format::kNvfp4), nullptr);
  EXPECT_EQ(qwen.release_for(Format::kNvfp4)->kept_ops,
            std::uint64_t{1} << static_cast<unsigned>(OpKind::kLmHead));
  EXPECT_TRUE(load_model("llama-3.1-8b").releases.empty());
}

TEST(Models, QuantizedReleaseParsingIsStrict) {
  const auto parse = [](const std::string& text) {
    return detail::parse_quantized_releases(nlohmann::json::parse(text), "index.json", "[0]");
  };
  const auto release = [](const std::string& format, const std::string& kept) {
    return R"({"format": ")" + format + R"(", "checkpoint": "org/m-NVFP4", "kept": )" + kept +
           R"(, "confidence": "vendor", "source": "its hf_quant_config.json"})";
  };
  const std::string attention = R"({"format": "bf16", "operators": ["q_proj", "o_proj"],
                                    "draft_head": false})";
  const auto good = parse("[" + release("nvfp4", attention) + "]");
  ASSERT_EQ(good.size(), 1u);
  EXPECT_EQ(good[0].kept_ops, (std::uint64_t{1} << static_cast<unsigned>(OpKind::kQProj)) |
                                  (std::uint64_t{1} << static_cast<unsigned>(OpKind::kOProj)));
  EXPECT_EQ(good[0].checkpoint, "org/m-NVFP4");
  const auto bad = [&](const std::string& text, const std::string& what) {
    expect_parse_error(parse, text, what);
  };
  bad("[]", "releases");
  bad("{}", "releases");
  bad("[" + release("nvfp5", attention) + "]", "unknown format");
  bad("[" + release("bf16", attention) + "]", "quantized");
  bad("[" + release("nvfp4", attention) + ", " + release("nvfp4", attention) + "]", "second");
  bad("[" + release("fp8", R"({"format": "nvfp4", "operators": ["q_proj"], "draft_head": false})") +
          "]",
      "wider");
  bad("[" + release("nvfp4", R"({"format": "bf16", "operators": [], "draft_head": false})") + "]",
      "operators");
  bad("[" + release("nvfp4", R"({"format": "bf16", "operators": ["qq"], "draft_head": false})") +
          "]",
      "'qq'");
  // Routed experts share gate/up/down with the dense MLP: not a release's to keep.
  bad("[" +
          release("nvfp4",
                  R"({"format": "bf16", "operators": ["gate_proj"], "draft_head": false})") +
          "]",
      "'gate_proj'");
  bad("[" +
          release("nvfp4",
                  R"({"format": "bf16", "operators": ["o_proj", "o_proj"], "draft_head": false})") +
          "]",
      "twice");
  bad("[" + release("nvfp4", R"({"format": "bf16", "operators": ["o_proj"]})") + "]", "draft_head");
  bad("[" + release("nvfp4", R"({"format": "bf16", "operators": ["o_proj"], "draft_head": 1})") +
          "]",
      "draft_head");
  bad("[" + release("nvfp4", R"({"format": "bf16", "operators": ["o_proj"], "draft_head": false,
                                 "x": 1})") +
          "]",
      "x");
  bad(R"([{"format": "nvfp4", "checkpoint": "", "kept": )" + attention +
          R"(, "confidence": "vendor", "source": "s"}])",
      "checkpoint");
  bad(R"([{"format": "nvfp4", "checkpoint": "c", "kept": )" + attention +
          R"(, "confidence": "measured", "source": "s"}])",
      "confidence");
  bad(R"([{"format": "nvfp4", "checkpoint": "c", "kept": )" + attention +
          R"(, "confidence": "vendor", "source": ""}])",
      "source");
  bad(R"([{"format": "nvfp4", "checkpoint": "c", "kept": )" + attention +
          R"(, "confidence": "vendor", "source": "s", "extra": 1}])",
      "extra");
}

// A ModelOpt NVFP4 checkpoint's config.json (NVIDIA's releases carry
// quant_method modelopt, quant_algo NVFP4 and an ignore list): its linear
// layers in nvfp4, the listed ones kept in the config's dtype, by operator kind.
TEST(Models, ModelOptNvfp4ConfigsKeepTheirIgnoreList) {
  const ModelPreset* preset = ModelCatalog::built_in().find("deepseek-v3");
  ASSERT_NE(preset, nullptr);
  nlohmann::json doc = nlohmann::json::parse(preset->config_json);
  doc.erase("torch_dtype");
  doc["dtype"] = "bfloat16";
  doc["quantization_config"] = {
      {"quant_method", "modelopt"},
      {"quant_algo", "NVFP4"},
      {"producer", {{"name", "modelopt"}}},
      {"ignore",
       {"lm_head", "model.layers.0.self_attn.q_a_proj", "model.layers.0.self_attn.kv_b_proj",
        "model.layers.1.mlp.gate", "model.layers.61*"}}};
  const ModelSpec m = parse_hf_config(doc.dump(), "v31.json");
  EXPECT_EQ(m.native_weights, Format::kNvfp4);
  EXPECT_EQ(m.native_experts, Format::kNvfp4);
  const QuantizedRelease* r = m.release_for(Format::kNvfp4);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->kept_format, Format::kBf16);
  const auto bit = [](OpKind k) { return std::uint64_t{1} << static_cast<unsigned>(k); };
  EXPECT_EQ(r->kept_ops, bit(OpKind::kLmHead) | bit(OpKind::kQAProj) | bit(OpKind::kKvBProj) |
                             bit(OpKind::kKAbsorb) | bit(OpKind::kVAbsorb));
  EXPECT_TRUE(r->draft_head_kept);  // layer 61, past the 61 ordinary ones
  // A whole self_attn block keeps every attention projection; the router is
  // not a kept kind (routers stay bf16 anyway) but is counted in the note.
  doc["quantization_config"]["ignore"] = {"model.layers.3.self_attn*"};
  const ModelSpec whole = parse_hf_config(doc.dump(), "r1.json");
  ASSERT_NE(whole.release_for(Format::kNvfp4), nullptr);
  EXPECT_NE(whole.release_for(Format::kNvfp4)->kept_ops & bit(OpKind::kOProj), 0u);
  EXPECT_NE(whole.release_for(Format::kNvfp4)->kept_ops & bit(OpKind::kQBProj), 0u);
  EXPECT_FALSE(whole.release_for(Format::kNvfp4)->draft_head_kept);
  bool said = false;
  // (The checkpoint's quantization note: predictions show it where its formats run.)
  for (const auto& n : m.quantization_notes)
    said = said || n.find("1 other entries") != std::string::npos;
  EXPECT_TRUE(said);
  // Other algorithms and malformed lists are refused, naming the key.
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"quant_algo", "MIXED_PRECISION"}, {"ignore", "lm_head"}}) {
    nlohmann::json bad = doc;
    bad["quantization_config"][key] = value;
    try {
      (void)parse_hf_config(bad.dump(), "bad.json");
      ADD_FAILURE() << key;
    } catch (const InvalidArgument& e) {  // a config's values, as every config error
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

TEST(Models, ParameterCountsMatchPublishedSizes) {
  for (const auto& p : ModelCatalog::built_in().presets()) {
    if (p.published_params <= 0) continue;
    const double ours = count_parameters(preset_model(p)).total;
    EXPECT_NEAR(ours / p.published_params, 1.0, kParamRelTol) << p.id << ": " << ours;
  }
}

// Llama-3.1-8B by hand: embedding and lm_head 128,256 x 4,096 = 525,336,576 each;
// per layer q,o 4096^2 = 16,777,216 each, k,v 4096 x 1024 = 4,194,304 each,
// MLP 3 x 4096 x 14,336 = 176,160,768, norms 2 x 4096: 218,112,000 per layer;
// 32 layers = 6,979,584,000; + final norm 4,096 -> 8,030,261,248.
TEST(Models, Llama31_8bParameterCountByHand) {
  const ModelSpec m = load_model("llama-3.1-8b");
  const ParamCounts p = count_parameters(m);
  EXPECT_DOUBLE_EQ(p.embedding, 525'336'576);
  EXPECT_DOUBLE_EQ(p.lm_head, 525'336'576);
  EXPECT_DOUBLE_EQ(p.attention, 32.0 * (2 * 16'777'216 + 2 * 4'194'304));
  EXPECT_DOUBLE_EQ(p.dense_mlp, 32.0 * 176'160'768);
  EXPECT_DOUBLE_EQ(p.total, 8'030'261'248);
  EXPECT_EQ(m.native_weights, Format::kBf16);
}

TEST(Models, AliasesResolve) {
  EXPECT_EQ(load_model("llama-3-8b").id, "llama-3.1-8b");
  EXPECT_EQ(load_model("LLAMA-3.3-70B").id, "llama-3.1-70b");
  EXPECT_THROW((void)load_model("gpt-5"), NotFound);
}

// moe_layer_count() counts without a loop when no layer is listed dense;
// it must agree with is_moe_layer() layer by layer for every first-dense
// count and step (Qwen's decoder_sparse_step), including a first past the end.
TEST(Models, MoeLayerCountMatchesEveryLayer) {
  ModelSpec m = load_model("deepseek-v3");
  for (std::int64_t layers : {1, 2, 7, 61}) {
    for (std::int64_t first : {0, 1, 3, 6, 70}) {
      for (std::int64_t step : {1, 2, 3, 4}) {
        m.layers = layers;
        m.moe->first_dense_layers = first;
        m.moe->layer_step = step;
        std::int64_t by_layer = 0;
        for (std::int64_t l = 0; l < layers; ++l) by_layer += m.is_moe_layer(l);
        EXPECT_EQ(m.moe_layer_count(), by_layer)
            << layers << " layers, first " << first << ", step " << step;
      }
    }
  }
}

TEST(Models, MoeAndMlaPresets) {
  const ModelSpec ds = load_model("deepseek-v3");
  EXPECT_EQ(ds.attention, AttentionKind::kMla);
  // MLA caches kv_lora_rank + rope dim = 512 + 64 per layer per token.
  EXPECT_EQ(ds.kv_elements_per_token_per_layer(), 576);
  EXPECT_EQ(ds.moe_layer_count(), 58);  // first_k_dense_replace = 3 of 61
  EXPECT_EQ(ds.native_weights, Format::kFp8);
  const ModelSpec oss = load_model("gpt-oss-120b");
  EXPECT_EQ(oss.native_experts, Format::kMxfp4);
  EXPECT_EQ(oss.native_weights, Format::kBf16);
  EXPECT_EQ(oss.sliding_window, 128);
  EXPECT_EQ(oss.sliding_layer_count(), 18);  // alternate layers of 36
  const ModelSpec q = load_model("qwen3-30b-a3b");
  EXPECT_EQ(q.moe_layer_count(), 48);
  EXPECT_TRUE(q.qk_norm);
  // Llama-3-8B KV per token: 2 x 32 layers x 8 heads x 128 x 2 B = 131,072 B.
  const ModelSpec l = load_model("llama-3.1-8b");
  EXPECT_EQ(l.kv_elements_per_token_per_layer() * l.layers * 2, 131'072);
}

nlohmann::json llama_config();

// Active parameters within this fraction of the publisher's figure: active
// counts are rounded to two digits (22B, 32B) and publishers differ on whether
// the embedding and lm_head count as active.
constexpr double kActiveRelTol = 0.05;

// Qwen3-235B-A22B: per layer attention q,o 4096 x 8192 = 33,554,432 each, k,v
// 4096 x 512 = 2,097,152 each, qk norms 2 x 128; 128 experts of 3 x 4096 x 1536
// = 18,874,368; router 4096 x 128. 94 layers: attention 6.70B, experts 226.1B,
// embedding + lm_head 2 x 151,936 x 4096 = 1.24B: 234.1B against 235B.
// Active: 8 of 128 experts, 14.1B of experts + 9.5B the rest = 23.6B; the card's
// 22B is that less the embedding (22.4B).
TEST(Models, Qwen3_235bA22bMatchesTheModelCard) {
  const ModelSpec m = load_model("Qwen3-235B-A22B-FP8");
  EXPECT_EQ(m.id, "qwen3-235b-a22b");
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->num_experts, 128);
  EXPECT_EQ(m.moe->top_k, 8);
  EXPECT_EQ(m.moe->expert_intermediate, 1536);
  EXPECT_EQ(m.moe->num_shared_experts, 0);
  EXPECT_EQ(m.moe_layer_count(), 94);
  EXPECT_TRUE(m.qk_norm);
  EXPECT_EQ(m.kv_heads, 4);
  const ParamCounts p = count_parameters(m);
  EXPECT_DOUBLE_EQ(p.routed_experts, 94.0 * 128 * 3 * 4096 * 1536);
  EXPECT_NEAR(p.total / 235e9, 1.0, kParamRelTol) << p.total;
  EXPECT_NEAR((p.active_per_token - p.embedding) / 22e9, 1.0, kActiveRelTol) << p.active_per_token;
}

// Qwen3-32B: per layer q,o 5120 x 8192 = 41,943,040 each, k,v 5120 x 1024 =
// 5,242,880 each, MLP 3 x 5120 x 25,600 = 393,216,000; 64 layers = 31.21B, the
// card's 31.2B non-embedding; + 2 x 151,936 x 5120 = 1.56B -> 32.76B (card 32.8B).
TEST(Models, Qwen3_32bMatchesTheModelCard) {
  const ModelSpec m = load_model("qwen3-32b");
  EXPECT_TRUE(m.qk_norm);
  EXPECT_FALSE(m.moe.has_value());
  const ParamCounts p = count_parameters(m);
  EXPECT_NEAR((p.total - p.embedding - p.lm_head) / 31.2e9, 1.0, kParamRelTol);
  EXPECT_NEAR(p.total / 32.8e9, 1.0, kParamRelTol) << p.total;
}

// Kimi K2: 60 MoE layers (first_k_dense_replace 1 of 61) of 384 routed experts
// of 3 x 7168 x 2048 = 44,040,192: 1,014.7B; one shared expert per MoE layer
// 2.64B; MLA attention per layer q_a 7168 x 1536, q_b 1536 x 64 x 192, kv_a
// 7168 x 576, kv_b 512 x 64 x 256, o 8192 x 7168 (+ the two latent norms) =
// 101.1M, x 61 = 6.17B; embedding + lm_head 2 x 163,840 x 7168 = 2.35B; the
// dense MLP 3 x 7168 x 18,432 = 0.40B; routers 0.17B: 1,026.4B. The checkpoint
// holds 1,026,470,731,056 elements (fp8 scale tensors included, ~0.06B); the
// technical report's "1.04 trillion" is 1.3% above. Active: 8 of 384 experts
// (21.1B) + the rest (11.7B) = 32.9B, less the embedding 31.7B (card: 32B).
constexpr double kKimiCheckpointElements = 1'026'470'731'056;
constexpr double kCheckpointRelTol = 0.001;  // scale tensors and rotary buffers
TEST(Models, KimiK2MatchesTheTechnicalReportAndCheckpoint) {
  const ModelSpec m = load_model("kimi-k2");
  EXPECT_EQ(m.model_type, "kimi_k2");
  EXPECT_EQ(m.attention, AttentionKind::kMla);
  EXPECT_EQ(m.heads, 64);
  EXPECT_EQ(m.kv_elements_per_token_per_layer(), 576);  // 512 + 64, as DeepSeek-V3
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->num_experts, 384);
  EXPECT_EQ(m.moe->top_k, 8);
  EXPECT_EQ(m.moe->num_shared_experts, 1);
  EXPECT_TRUE(m.moe->router_bias);
  EXPECT_EQ(m.moe_layer_count(), 60);
  EXPECT_EQ(m.native_weights, Format::kFp8);
  const ParamCounts p = count_parameters(m);
  EXPECT_DOUBLE_EQ(p.routed_experts, 60.0 * 384 * 3 * 7168 * 2048);
  EXPECT_NEAR(p.total / 1.04e12, 1.0, kParamRelTol) << p.total;
  EXPECT_NEAR(p.total / kKimiCheckpointElements, 1.0, kCheckpointRelTol) << p.total;
  EXPECT_NEAR((p.active_per_token - p.embedding) / 32e9, 1.0, kActiveRelTol) << p.active_per_token;
  // Kimi-K2.5's text model is the same in every field modeled: an alias.
  EXPECT_EQ(load_model("kimi-k2.5").id, "kimi-k2");
}

// MiniMax-M2: 62 layers, every one softmax GQA attention and MoE. Per layer:
// q,o 3072 x 6144 = 18,874,368 each, k,v 3072 x 1024 = 3,145,728 each, QK norm
// counted per head 2 x 128: 44,040,448; 256 experts of 3 x 3072 x 1536 =
// 14,155,776 = 3,623,878,656; router 3072 x 256 + 256 correction biases =
// 786,688; norms 2 x 3072. x 62: attention 2,730,507,776, experts
// 224,680,476,672, routers 48,774,656, norms 380,928 (+ final 3,072);
// embedding and lm_head (untied) 200,064 x 3072 = 614,596,608 each. Total
// 228,689,336,320. The checkpoint holds 228,703,644,928 elements: this plus the
// fp8 scale tensors (62 x (256 x 3 x 12 x 24 + 2 x 48 x 24 + 2 x 8 x 24) =
// 13,880,064) plus the full-width QK norms (62 x (6144 + 1024 - 256) = 428,544).
// Active: 8 of 256 experts = 62 x 8 x 14,155,776 = 7,021,264,896, + the rest
// 4,008,859,648 = 11,030,124,544; less the embedding 10.42B (card: 10B).
// KV cache: 62 layers x 8 heads x 128 x (K and V) x 2 B (bf16) = 253,952 B/token.
constexpr double kMiniMaxM2CheckpointElements = 228'703'644'928;
TEST(Models, MiniMaxM2MatchesTheModelCardAndCheckpoint) {
  const ModelSpec m = load_model("minimax-m2.5");
  EXPECT_EQ(m.id, "minimax-m2");
  EXPECT_EQ(load_model("MiniMax-M2.1").id, "minimax-m2");
  EXPECT_EQ(m.model_type, "minimax_m2");
  EXPECT_EQ(m.attention, AttentionKind::kGqa);
  EXPECT_EQ(m.heads, 48);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_TRUE(m.qk_norm);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_EQ(m.sliding_window, 0);
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->num_experts, 256);
  EXPECT_EQ(m.moe->top_k, 8);
  EXPECT_EQ(m.moe->expert_intermediate, 1536);
  EXPECT_EQ(m.moe->num_shared_experts, 0);
  EXPECT_TRUE(m.moe->router_bias);
  EXPECT_EQ(m.moe_layer_count(), 62);
  EXPECT_EQ(m.native_weights, Format::kFp8);
  EXPECT_EQ(m.native_experts, Format::kFp8);
  EXPECT_EQ(m.max_position, 196'608);
  EXPECT_EQ(m.kv_elements_per_token_per_layer() * m.layers * 2, 253'952);
  const ParamCounts p = count_parameters(m);
  EXPECT_DOUBLE_EQ(p.attention, 62.0 * 44'040'448);
  EXPECT_DOUBLE_EQ(p.routed_experts, 224'680'476'672);
  EXPECT_DOUBLE_EQ(p.router, 62.0 * 786'688);
  EXPECT_DOUBLE_EQ(p.embedding, 614'596'608);
  EXPECT_DOUBLE_EQ(p.lm_head, 614'596'608);
  EXPECT_DOUBLE_EQ(p.total, 228'689'336'320);
  EXPECT_DOUBLE_EQ(p.total + 13'880'064 + 428'544, kMiniMaxM2CheckpointElements);
  EXPECT_DOUBLE_EQ(p.active_per_token, 11'030'124'544);
  EXPECT_NEAR(p.total / 229e9, 1.0, kParamRelTol) << p.total;
  EXPECT_NEAR((p.active_per_token - p.embedding) / 10e9, 1.0, kActiveRelTol) << p.active_per_token;
  // What has no field is said in the notes: the full-width QK norm, partial RoPE, MTP.
  std::string notes;
  for (const auto& n : m.notes) notes += n + "\n";
  EXPECT_NE(notes.find("qk_norm_type per_layer"), std::string::npos) << notes;
  EXPECT_NE(notes.find("rotary_dim 64 of head_dim 128"), std::string::npos) << notes;
  EXPECT_NE(notes.find("3 multi-token-prediction modules"), std::string::npos) << notes;
}

// Qwen3.5-397B-A17B by hand (its config.json: hidden 4096, 60 layers, every
// fourth full attention, vocab 248,320, untied):
//   embedding and lm_head 248,320 x 4,096 = 1,017,118,720 each
//   full attention (15 layers): q with its output gate 4096 x (32 x 256 x 2) = 67,108,864,
//     k and v 4096 x 2 x 256 = 2,097,152 each, o 8192 x 4096 = 33,554,432, QK norms 512:
//     104,858,112 a layer
//   Gated DeltaNet (45 layers): key width 16 x 128 = 2,048, value width 64 x 128 = 8,192;
//     in-projections 4096 x (2 x 2048 + 2 x 8192 + 2 x 64) = 84,410,368, convolution
//     (2 x 2048 + 8192) x 4 = 49,152, A_log and dt_bias 128, norm 128, out 8192 x 4096 =
//     33,554,432: 118,014,208 a layer
//   attention 15 x 104,858,112 + 45 x 118,014,208 = 6,883,511,040
//   experts 512 x 3 x 4096 x 1024 = 6,442,450,944 a layer, x 60 = 386,547,056,640;
//   shared expert 12,582,912 x 60 = 754,974,720; router 4096 x 512 x 60 = 125,829,120
//   norms 2 x 4096 x 60 + 4096 = 495,616          total 396,346,104,576
// The card's 397 B also counts the vision encoder (27 layers of 1152), not costed here.
TEST(Models, Qwen35MatchesTheConfigByHand) {
  const ModelSpec m = load_model("qwen3.5-397b-a17b");
  EXPECT_EQ(load_model("Qwen3.5-397B-A17B-FP8").id, "qwen3.5-397b-a17b");
  EXPECT_EQ(m.model_type, "qwen3_5_moe_text");
  ASSERT_TRUE(m.linear_attention.has_value());
  const auto& x = *m.linear_attention;
  EXPECT_EQ(x.key_heads, 16);
  EXPECT_EQ(x.value_heads, 64);
  EXPECT_EQ(x.key_head_dim, 128);
  EXPECT_EQ(x.value_head_dim, 128);
  EXPECT_EQ(x.conv_kernel, 4);
  EXPECT_EQ(x.state_format, Format::kFp32);
  EXPECT_EQ(m.linear_layer_count(), 45);
  EXPECT_EQ(m.full_attention_layer_count(), 15);
  EXPECT_TRUE(m.is_linear_layer(0));
  EXPECT_FALSE(m.is_linear_layer(3));
  EXPECT_FALSE(m.is_linear_layer(59));
  EXPECT_TRUE(m.attention_output_gate);
  EXPECT_TRUE(m.qk_norm);
  EXPECT_FALSE(m.tie_embeddings);
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->num_experts, 512);
  EXPECT_EQ(m.moe->top_k, 10);
  EXPECT_EQ(m.moe->num_shared_experts, 1);
  EXPECT_EQ(m.moe->shared_intermediate, 1024);
  EXPECT_EQ(m.moe_layer_count(), 60);
  // A sequence's state a linear layer: 64 x 128 x 128 elements (fp32), and the
  // convolution's last 3 inputs of 2 x 2048 + 8192 channels.
  EXPECT_DOUBLE_EQ(m.linear_state_elements(), 1'048'576);
  EXPECT_DOUBLE_EQ(m.linear_conv_state_elements(), 36'864);
  const ParamCounts p = count_parameters(m);
  EXPECT_DOUBLE_EQ(p.attention, 6'883'511'040);
  EXPECT_DOUBLE_EQ(p.routed_experts, 386'547'056'640);
  EXPECT_DOUBLE_EQ(p.shared_experts, 754'974'720);
  EXPECT_DOUBLE_EQ(p.total, 396'346'104'576);
  EXPECT_NEAR(p.total / 397e9, 1.0, kParamRelTol) << p.total;
  EXPECT_NEAR(p.active_per_token / 17e9, 1.0, kActiveRelTol) << p.active_per_token;
  std::string notes;
  for (const auto& n : m.notes) notes += n + "\n";
  EXPECT_NE(notes.find("vision encoder"), std::string::npos) << notes;
  EXPECT_NE(notes.find("partial_rotary_factor 0.25"), std::string::npos) << notes;
}

// GLM-5 by hand (its config.json: hidden 6144, 78 layers, the first 3 dense,
// vocab 154,880, untied):
//   embedding and lm_head 154,880 x 6,144 = 951,582,720 each
//   MLA a layer: q_a 6144 x 2048 = 12,582,912 and its norm 2,048; q_b 2048 x 64 x (192 + 64)
//     = 33,554,432; kv_a 6144 x 576 = 3,538,944 and its norm 512; kv_b 512 x 64 x (192 + 256)
//     = 14,680,064; o 64 x 256 x 6144 = 100,663,296: 165,022,208
//   the indexer a layer: queries 2048 x 32 x 128 = 8,388,608, key 6144 x 128 = 786,432, head
//     weights 6144 x 32 = 196,608, LayerNorm 256: 9,371,904
//   attention 78 x 174,394,112 = 13,602,740,736
//   experts 256 x 3 x 6144 x 2048 = 9,663,676,416 a layer (75 MoE layers); shared 37,748,736;
//     router 6144 x 256 + 256 = 1,573,120; dense MLP 3 x 6144 x 12,288 = 226,492,416 (3 layers)
//   norms 2 x 6144 x 78 + 6144 = 964,608                  total 743,911,218,432
TEST(Models, Glm5MatchesTheConfigByHand) {
  const ModelSpec m = load_model("glm-5");
  EXPECT_EQ(m.model_type, "glm_moe_dsa");
  EXPECT_EQ(m.attention, AttentionKind::kMla);
  EXPECT_EQ(m.mla.q_lora_rank, 2048);
  EXPECT_EQ(m.mla.qk_nope_head_dim, 192);
  EXPECT_EQ(m.mla.v_head_dim, 256);
  ASSERT_TRUE(m.sparse_attention.has_value());
  EXPECT_EQ(m.sparse_attention->index_heads, 32);
  EXPECT_EQ(m.sparse_attention->index_head_dim, 128);
  EXPECT_EQ(m.sparse_attention->top_k, 2048);
  EXPECT_DOUBLE_EQ(m.indexer_parameters(), 78.0 * 9'371'904);
  EXPECT_EQ(m.moe_layer_count(), 75);
  const ParamCounts p = count_parameters(m);
  EXPECT_DOUBLE_EQ(p.attention, 13'602'740'736);
  EXPECT_DOUBLE_EQ(p.total, 743'911'218'432);
  EXPECT_NEAR(p.total / 744e9, 1.0, kParamRelTol) << p.total;
}

// DeepSeek-V3.2 is DeepSeek-V3 plus the indexer: 61 layers of 1536 x 64 x 128
// = 12,582,912 queries, 7168 x 128 = 917,504 key, 7168 x 64 = 458,752 head
// weights and a 256-weight LayerNorm: 13,959,424 a layer, 851,524,864 in all.
TEST(Models, DeepSeekV32IsV3WithAnIndexer) {
  const ModelSpec v32 = load_model("deepseek-v3.2");
  const ModelSpec v3 = load_model("deepseek-v3");
  ASSERT_TRUE(v32.sparse_attention.has_value());
  EXPECT_EQ(v32.sparse_attention->index_heads, 64);
  EXPECT_FALSE(v3.sparse_attention.has_value());
  EXPECT_DOUBLE_EQ(count_parameters(v32).total - count_parameters(v3).total, 851'524'864);
  EXPECT_EQ(v32.native_weights, Format::kFp8);
}

// A Qwen3-Next-style text config: the layer pattern from full_attention_interval,
// the output gate on by default, the state format said when not given.
nlohmann::json hybrid_config() {
  return {{"model_type", "qwen3_next"},
          {"hidden_size", 2048},
          {"num_hidden_layers", 8},
          {"num_attention_heads", 16},
          {"num_key_value_heads", 2},
          {"head_dim", 256},
          {"vocab_size", 151936},
          {"num_experts", 64},
          {"num_experts_per_tok", 4},
          {"moe_intermediate_size", 512},
          {"shared_expert_intermediate_size", 512},
          {"full_attention_interval", 4},
          {"linear_num_key_heads", 16},
          {"linear_num_value_heads", 32},
          {"linear_key_head_dim", 128},
          {"linear_value_head_dim", 128},
          {"linear_conv_kernel_dim", 4}};
}

TEST(Models, HybridLayersFromTheInterval) {
  const ModelSpec m = parse_hf_config(hybrid_config().dump(), "next.json");
  ASSERT_EQ(m.linear_layers.size(), 8u);
  const std::vector<std::uint8_t> expected = {1, 1, 1, 0, 1, 1, 1, 0};
  EXPECT_EQ(m.linear_layers, expected);
  EXPECT_TRUE(m.attention_output_gate);
  std::string notes;
  for (const auto& n : m.notes) notes += n + "\n";
  EXPECT_NE(notes.find("taken as float32"), std::string::npos) << notes;
}

TEST(Models, BadHybridConfigsAreClearErrors) {
  auto expect_error = [](nlohmann::json cfg, const std::string& what) {
    try {
      (void)parse_hf_config(cfg.dump(), "c.json");
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  auto cfg = hybrid_config();
  cfg["linear_num_value_heads"] = 24;  // not a multiple of 16 key heads
  expect_error(cfg, "linear_num_value_heads");
  cfg = hybrid_config();
  cfg["layer_types"] = {"linear_attention", "full_attention"};  // 2 entries for 8 layers
  expect_error(cfg, "layer_types");
  cfg = hybrid_config();
  cfg["layer_types"] = std::vector<std::string>(8, "mamba");
  expect_error(cfg, "layer_types");
  cfg = hybrid_config();
  cfg.erase("full_attention_interval");
  expect_error(cfg, "full_attention_interval");
  cfg = hybrid_config();
  cfg["mamba_ssm_dtype"] = "float8";
  expect_error(cfg, "mamba_ssm_dtype");
  // A wrapper must hold its text model, and of the matching type.
  expect_error({{"model_type", "qwen3_5_moe"}}, "text_config");
  expect_error({{"model_type", "qwen3_5_moe"}, {"text_config", hybrid_config()}},
               "qwen3_5_moe_text");
}

TEST(Models, WrapperSettingsReachItsTextModel) {
  auto text = hybrid_config();
  text["model_type"] = "qwen3_5_moe_text";
  const nlohmann::json wrapper = {
      {"model_type", "qwen3_5_moe"}, {"tie_word_embeddings", true}, {"text_config", text}};
  const ModelSpec m = parse_hf_config(wrapper.dump(), "w.json");
  EXPECT_TRUE(m.tie_embeddings);
  EXPECT_EQ(m.linear_layer_count(), 6);
}

// A minimax_m2 config is read strictly: lightning-attention layers are refused
// with the reason, and a shared expert is not silently dropped.
TEST(Models, MiniMaxM2RefusesWhatItCannotCost) {
  auto cfg = nlohmann::json::parse(ModelCatalog::built_in().find("minimax-m2")->config_json);
  auto hybrid = cfg;
  hybrid["attn_type_list"][0] = 0;
  try {
    (void)parse_hf_config(hybrid.dump(), "c.json");
    ADD_FAILURE() << "a lightning-attention layer was accepted";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("lightning"), std::string::npos) << e.what();
  }
  auto short_list = cfg;
  short_list["attn_type_list"].erase(0);
  EXPECT_THROW((void)parse_hf_config(short_list.dump(), "c.json"), InvalidArgument);
  auto shared = cfg;
  shared["shared_intermediate_size"] = 1536;
  EXPECT_THROW((void)parse_hf_config(shared.dump(), "c.json"), InvalidArgument);
  auto norm = cfg;
  norm["qk_norm_type"] = "per_token";
  EXPECT_THROW((void)parse_hf_config(norm.dump(), "c.json"), InvalidArgument);
}

TEST(Models, UnmodeledArchitecturesSayWhy) {
  auto refused_because = [](const std::string& model_type, const std::string& why) {
    auto cfg = llama_config();
    cfg["model_type"] = model_type;
    try {
      (void)parse_hf_config(cfg.dump(), "c.json");
      ADD_FAILURE() << model_type << " was accepted";
    } catch (const Unsupported& e) {
      EXPECT_NE(std::string(e.what()).find("is not supported: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused_because("kimi_linear", "Kimi Delta Attention");
  refused_because("kimi_k25", "text_config");
}

TEST(Models, ShortFormFromTheOriginalDescription) {
  const ModelSpec m = parse_short_form(
      R"({"H": 4096, "L": 32, "nh": 32, "nkv": 8, "dh": 128, "dff": 14336})", "short");
  EXPECT_EQ(m.hidden, 4096);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.vocab, 0);
  EXPECT_FALSE(m.notes.empty());
  const ModelSpec v = parse_short_form(
      R"({"H": 4096, "L": 32, "nh": 32, "nkv": 8, "dh": 128, "dff": 14336, "vocab": 128256})",
      "short");
  EXPECT_DOUBLE_EQ(count_parameters(v).total, 8'030'261'248);
  EXPECT_THROW(
      (void)parse_short_form(
          R"({"H": 4096, "L": 32, "nh": 32, "nkv": 8, "dh": 128, "dff": 14336, "x": 1})", "s"),
      ParseError);
  EXPECT_THROW(
      (void)parse_short_form(R"({"H": 4096, "L": 32, "nh": 32, "nkv": 8, "dh": 128})", "s"),
      ParseError);
  EXPECT_THROW((void)parse_short_form(
                   R"({"H": 4096, "L": 32, "nh": 32, "nkv": 5, "dh": 128, "dff": 1})", "s"),
               InvalidArgument);  // 5 kv heads do not divide 32
}

nlohmann::json llama_config() {
  return nlohmann::json::parse(
      R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "vocab_size": 128256, "torch_dtype": "bfloat16"})");
}

TEST(Models, BadConfigsAreClearErrors) {
  auto cfg = llama_config();
  cfg.erase("hidden_size");
  EXPECT_THROW((void)parse_hf_config(cfg.dump(), "c.json"), ParseError);
  cfg = llama_config();
  cfg["hidden_size"] = -4096;
  EXPECT_THROW((void)parse_hf_config(cfg.dump(), "c.json"), InvalidArgument);
  cfg = llama_config();
  cfg["num_attention_heads"] = 30;  // does not divide 4096
  EXPECT_THROW((void)parse_hf_config(cfg.dump(), "c.json"), InvalidArgument);
  cfg = llama_config();
  cfg["num_hidden_layers"] = 1e30;
  EXPECT_THROW((void)parse_hf_config(cfg.dump(), "c.json"), InvalidArgument);
  cfg = llama_config();
  cfg["intermediate_size"] = 1.5;
  EXPECT_THROW((void)parse_hf_config(cfg.dump(), "c.json"), InvalidArgument);
  cfg = llama_config();
  cfg["model_type"] = "falcon";
  try {
    (void)parse_hf_config(cfg.dump(), "c.json");
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("falcon"), std::string::npos);
  }
  EXPECT_THROW((void)parse_hf_config("{\"model_type\": \"llama\"", "c.json"), ParseError);
  EXPECT_THROW((void)parse_hf_config(std::string(100'000, '['), "c.json"), ParseError);
  EXPECT_THROW((void)parse_hf_config("[]", "c.json"), ParseError);
}

TEST(Models, UnmodeledKeysAreNoted) {
  auto cfg = llama_config();
  cfg["frobnication_level"] = 3;
  const ModelSpec m = parse_hf_config(cfg.dump(), "c.json");
  ASSERT_FALSE(m.notes.empty());
  EXPECT_NE(m.notes.back().find("frobnication_level"), std::string::npos);
}

// Issue #10, item 1: nesting is refused from the text, before a value is built;
// 64 levels are the limit. The config below is 2 levels (the object and the
// array of "x") plus the arrays inside.
TEST(Models, NestingDeeperThan64LevelsIsRefusedWithTheDepth) {
  auto nested = [](int arrays) {
    auto cfg = llama_config().dump();
    cfg.pop_back();
    return cfg + ", \"x\": " + std::string(arrays, '[') + std::string(arrays, ']') + "}";
  };
  EXPECT_NO_THROW((void)parse_hf_config(nested(63), "c.json"));  // 64 levels
  try {
    (void)parse_hf_config(nested(64), "c.json");  // 65 levels
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("deeper than 64 levels"), std::string::npos) << e.what();
  }
  // Brackets inside strings are text, not nesting.
  EXPECT_NO_THROW((void)parse_hf_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 10,
          "x": ")" +
          std::string(1000, '[') + R"(\""})",
      "c.json"));
  EXPECT_THROW((void)parse_hf_config(nested(60'000), "c.json"), ParseError);
}

// Issue #10, item 2: a list of layers is no longer than the layer count
// (500,000 entries for 4,096 layers cost 42 s of linear searches before).
TEST(Models, MlpOnlyLayersAreBoundedByTheLayerCount) {
  auto cfg = nlohmann::json::parse(R"({"model_type": "qwen3_moe", "hidden_size": 64,
      "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 4,
      "vocab_size": 100, "num_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "intermediate_size": 64})");
  cfg["mlp_only_layers"] = {6, 1, 6, 3};  // unsorted, one repeated
  const ModelSpec m = parse_hf_config(cfg.dump(), "c.json");
  ASSERT_TRUE(m.moe);
  EXPECT_EQ(m.moe->dense_layers, (std::vector<std::int64_t>{1, 3, 6}));
  EXPECT_EQ(m.moe_layer_count(), 5);  // 8 layers, 3 dense
  EXPECT_FALSE(m.is_moe_layer(3));
  EXPECT_TRUE(m.is_moe_layer(4));
  cfg["mlp_only_layers"] = nlohmann::json::array();
  for (int i = 0; i < 9; ++i) cfg["mlp_only_layers"].push_back(0);
  try {
    (void)parse_hf_config(cfg.dump(), "c.json");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("9 entries for 8 layers"), std::string::npos) << e.what();
  }
}

// Issue #10, item 7: wrong types in quantization_config are input errors (they
// were nlohmann type errors: HTTP 500, CLI "error: internal").
TEST(Models, QuantizationConfigOfTheWrongTypeIsAnInputError) {
  auto cfg = llama_config();
  cfg["quantization_config"] = {{"quant_method", 5}};
  EXPECT_THROW((void)parse_hf_config(cfg.dump(), "c.json"), InvalidArgument);
  cfg["quantization_config"] = {{"quant_method", "gptq"}, {"bits", "4"}};
  EXPECT_THROW((void)parse_hf_config(cfg.dump(), "c.json"), InvalidArgument);
  cfg["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}};
  EXPECT_EQ(parse_hf_config(cfg.dump(), "c.json").native_weights, Format::kInt4);
}

// Issue #10, item 7: a name cut for a message stays valid UTF-8.
TEST(Models, MessagesCutNamesOnCharacterBoundaries) {
  const std::string name = std::string(63, 'a') + "\xE2\x82\xAC";  // 63 ASCII + the euro sign
  EXPECT_EQ(clip_utf8(name, 64), std::string(63, 'a'));
  EXPECT_EQ(clip_utf8(name, 66), name);
  EXPECT_EQ(clip_utf8("abc", 2), "ab");
  try {
    (void)load_model(name);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NO_THROW((void)nlohmann::json(std::string(e.what())).dump()) << e.what();
  }
}

}  // namespace
}  // namespace roofline
