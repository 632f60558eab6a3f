#include "roofline/model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../common/embedded_data.h"
#include "../common/strict_json.h"
#include "model_document.h"
#include "roofline/checkpoint.h"
#include "roofline/error.h"
#include "roofline/workload.h"

namespace roofline {
namespace {

using detail::StrictObject;
using nlohmann::json;

// Sizes beyond these are not real transformers; rejecting them keeps every
// later product (bytes, FLOPs) finite and allocations bounded.
constexpr std::int64_t kMaxHidden = 1 << 20;
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxVocab = 1 << 24;
constexpr std::int64_t kMaxHeads = 1 << 16;
constexpr std::int64_t kMaxIntermediate = 1 << 22;
constexpr std::int64_t kMaxExperts = 1 << 16;
constexpr std::size_t kMaxConfigBytes = 4 << 20;

// config.json keys that do not change the cost of inference (tokenizer ids,
// training settings, numerics of norms and RoPE, framework bookkeeping).
const std::set<std::string, std::less<>> kIgnoredKeys = {"_name_or_path",
                                                         "architectures",
                                                         "attention_dropout",
                                                         "auto_map",
                                                         "bos_token_id",
                                                         "eos_token_id",
                                                         "pad_token_id",
                                                         "hidden_act",
                                                         "initializer_range",
                                                         "rms_norm_eps",
                                                         "rope_theta",
                                                         "rope_scaling",
                                                         "transformers_version",
                                                         "use_cache",
                                                         "pretraining_tp",
                                                         "output_router_logits",
                                                         "router_aux_loss_coef",
                                                         "router_jitter_noise",
                                                         "aux_loss_alpha",
                                                         "seq_aux",
                                                         "ep_size",
                                                         "routed_scaling_factor",
                                                         "scoring_func",
                                                         "topk_method",
                                                         "n_group",
                                                         "topk_group",
                                                         "norm_topk_prob",
                                                         "rope_interleave",
                                                         "model_type",
                                                         "torch_dtype",
                                                         "dtype",
                                                         "max_window_layers",
                                                         "use_sliding_window",
                                                         "sliding_window",
                                                         "layer_types",
                                                         "num_nextn_predict_layers",
                                                         "bias",
                                                         "swiglu_limit",
                                                         "initial_context_length",
                                                         "quantization_config",
                                                         "mlp_bias",
                                                         "attention_bias",
                                                         "head_dim",
                                                         "tie_word_embeddings",
                                                         "max_position_embeddings",
                                                         "vocab_size",
                                                         "hidden_size",
                                                         "intermediate_size",
                                                         "num_hidden_layers",
                                                         "num_attention_heads",
                                                         "num_key_value_heads",
                                                         "use_qk_norm",
                                                         "experts_per_token",
                                                         "num_experts_per_tok",
                                                         "num_local_experts",
                                                         "num_experts",
                                                         "moe_intermediate_size",
                                                         "decoder_sparse_step",
                                                         "mlp_only_layers",
                                                         "n_routed_experts",
                                                         "n_shared_experts",
                                                         "first_k_dense_replace",
                                                         "moe_layer_freq",
                                                         "q_lora_rank",
                                                         "kv_lora_rank",
                                                         "qk_nope_head_dim",
                                                         "qk_rope_head_dim",
                                                         "v_head_dim",
                                                         "tie_encoder_decoder",
                                                         "is_decoder",
                                                         "return_dict",
                                                         "output_hidden_states",
                                                         "output_attentions",
                                                         "eos_token",
                                                         "bos_token",
                                                         "chunk_size_feed_forward",
                                                         "num_attention_heads_per_partition",
                                                         "rope_type",
                                                         "qkv_bias",
                                                         "embd_pdrop",
                                                         "resid_pdrop",
                                                         "use_return_dict",
                                                         "use_mrope",
                                                         "attn_type_list",
                                                         "qk_norm_type",
                                                         "rotary_dim",
                                                         "partial_rotary_factor",
                                                         "shared_intermediate_size",
                                                         "use_routing_bias",
                                                         "use_mtp",
                                                         "num_mtp_modules",
                                                         "mtp_transformer_layers",
                                                         "full_attention_interval",
                                                         "linear_conv_kernel_dim",
                                                         "linear_key_head_dim",
                                                         "linear_value_head_dim",
                                                         "linear_num_key_heads",
                                                         "linear_num_value_heads",
                                                         "attn_output_gate",
                                                         "shared_expert_intermediate_size",
                                                         "mamba_ssm_dtype",
                                                         "rope_parameters",
                                                         "mtp_num_hidden_layers",
                                                         "mtp_use_dedicated_embeddings",
                                                         "index_n_heads",
                                                         "index_head_dim",
                                                         "index_topk",
                                                         "indexer_rope_interleave",
                                                         "qk_head_dim"};

class ConfigReader {
 public:
  ConfigReader(const json& doc, std::string origin) : doc_(doc), origin_(std::move(origin)) {}

  [[noreturn]] void fail(std::string_view key, std::string_view message) const {
    throw InvalidArgument(origin_ + ": " + std::string(key) + ": " + std::string(message));
  }

  bool has(std::string_view key) const {
    auto it = doc_.find(key);
    return it != doc_.end() && !it->is_null();
  }

  std::int64_t integer(std::string_view key, std::int64_t lo, std::int64_t hi) const {
    auto it = doc_.find(key);
    if (it == doc_.end() || it->is_null()) {
      throw ParseError(origin_ + ": " + std::string(key) + ": required key is missing");
    }
    return check_integer(key, *it, lo, hi);
  }

  std::int64_t integer_or(std::string_view key, std::int64_t fallback, std::int64_t lo,
                          std::int64_t hi) const {
    return has(key) ? integer(key, lo, hi) : fallback;
  }

  bool boolean_or(std::string_view key, bool fallback) const {
    auto it = doc_.find(key);
    if (it == doc_.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(key, "expected true or false");
    return it->get<bool>();
  }

  std::string string_or(std::string_view key, std::string fallback) const {
    auto it = doc_.find(key);
    if (it == doc_.end() || it->is_null()) return fallback;
    if (!it->is_string()) fail(key, "expected a string");
    return it->get<std::string>();
  }

  const json* get(std::string_view key) const {
    auto it = doc_.find(key);
    return (it == doc_.end() || it->is_null()) ? nullptr : &*it;
  }

  std::int64_t check_integer(std::string_view key, const json& v, std::int64_t lo,
                             std::int64_t hi) const {
    if (!v.is_number()) fail(key, "expected a whole number");
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) fail(key, "expected a whole number");
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      fail(key, "value " + v.dump() + " is out of range (" + std::to_string(lo) + " to " +
                    std::to_string(hi) + ")");
    }
    return static_cast<std::int64_t>(d);
  }

  const std::string& origin() const { return origin_; }
  const json& doc() const { return doc_; }

 private:
  const json& doc_;
  std::string origin_;
};

Format dtype_format(const ConfigReader& r) {
  std::string dtype = r.string_or("torch_dtype", r.string_or("dtype", "bfloat16"));
  if (dtype == "bfloat16") return Format::kBf16;
  if (dtype == "float16" || dtype == "half") return Format::kFp16;
  if (dtype == "float32" || dtype == "float") return Format::kFp32;
  r.fail("torch_dtype", "'" + dtype + "' is not understood (bfloat16, float16, float32)");
}

// The linear operators a ModelOpt checkpoint's ignore list keeps unquantized,
// by operator kind: a whole attention block ("...self_attn*"), its named
// projections, the Gated DeltaNet projections ("linear_attn", out_proj
// included), the shared experts and the LM head; the MTP layer ("mtp..." or
// the layer after the last, "layers.<L>*") sets `*draft_head`. Entries that
// name other modules (routers, vision towers, a whole ordinary layer) are
// counted in `*other`.
std::uint64_t modelopt_kept_ops(const ModelSpec& m, const json& list, bool* draft_head,
                                std::int64_t* other) {
  const auto bit = [](OpKind k) { return std::uint64_t{1} << static_cast<unsigned>(k); };
  const std::uint64_t attention =
      bit(OpKind::kQProj) | bit(OpKind::kKProj) | bit(OpKind::kVProj) | bit(OpKind::kOProj) |
      bit(OpKind::kQAProj) | bit(OpKind::kQBProj) | bit(OpKind::kKvAProj) | bit(OpKind::kKvBProj) |
      bit(OpKind::kKAbsorb) | bit(OpKind::kVAbsorb) | bit(OpKind::kIndexerProj);
  static constexpr std::pair<std::string_view, std::uint64_t> kProjections[] = {
      {"q_a_proj", std::uint64_t{1} << static_cast<unsigned>(OpKind::kQAProj)},
      {"q_b_proj", std::uint64_t{1} << static_cast<unsigned>(OpKind::kQBProj)},
      {"kv_a_proj", std::uint64_t{1} << static_cast<unsigned>(OpKind::kKvAProj)},
      {"kv_b_proj", (std::uint64_t{1} << static_cast<unsigned>(OpKind::kKvBProj)) |
                        (std::uint64_t{1} << static_cast<unsigned>(OpKind::kKAbsorb)) |
                        (std::uint64_t{1} << static_cast<unsigned>(OpKind::kVAbsorb))},
      {"indexer", std::uint64_t{1} << static_cast<unsigned>(OpKind::kIndexerProj)},
      {"o_proj", std::uint64_t{1} << static_cast<unsigned>(OpKind::kOProj)},
      {"q_proj", std::uint64_t{1} << static_cast<unsigned>(OpKind::kQProj)},
      {"k_proj", std::uint64_t{1} << static_cast<unsigned>(OpKind::kKProj)},
      {"v_proj", std::uint64_t{1} << static_cast<unsigned>(OpKind::kVProj)},
  };
  const std::string mtp_layer = "layers." + std::to_string(m.layers) + "*";
  std::uint64_t kept = 0;
  for (const auto& entry : list) {
    if (!entry.is_string()) {
      ++*other;
      continue;
    }
    const std::string& e = entry.get_ref<const std::string&>();
    const auto has = [&](std::string_view needle) { return e.find(needle) != std::string::npos; };
    if (has("lm_head")) {
      kept |= bit(OpKind::kLmHead);
    } else if (has("mtp") || e.ends_with(mtp_layer)) {
      *draft_head = true;
    } else if (has("linear_attn")) {
      kept |= bit(OpKind::kLinearInProj) | bit(OpKind::kLinearBaProj) | bit(OpKind::kOProj);
    } else if (has("shared_expert")) {
      if (!has("gate") || has("gate_proj"))
        kept |= bit(OpKind::kSharedGateProj) | bit(OpKind::kSharedUpProj) |
                bit(OpKind::kSharedDownProj);
    } else if (has("self_attn")) {
      std::uint64_t named = 0;
      for (const auto& [name, kinds] : kProjections) {
        if (has(name)) {
          named = kinds;
          break;
        }
      }
      kept |= named != 0 ? named : attention;
    } else {
      ++*other;
    }
  }
  // Only the kinds this model's attention has.
  const std::uint64_t mla = bit(OpKind::kQAProj) | bit(OpKind::kQBProj) | bit(OpKind::kKvAProj) |
                            bit(OpKind::kKvBProj) | bit(OpKind::kKAbsorb) | bit(OpKind::kVAbsorb);
  if (m.attention == AttentionKind::kMla) {
    kept &= ~(bit(OpKind::kKProj) | bit(OpKind::kVProj));
    if (m.mla.q_lora_rank > 0) kept &= ~bit(OpKind::kQProj);
  } else {
    kept &= ~mla;
  }
  if (!m.sparse_attention) kept &= ~bit(OpKind::kIndexerProj);
  if (!m.linear_attention) kept &= ~(bit(OpKind::kLinearInProj) | bit(OpKind::kLinearBaProj));
  if (!m.moe || m.moe->num_shared_experts == 0)
    kept &=
        ~(bit(OpKind::kSharedGateProj) | bit(OpKind::kSharedUpProj) | bit(OpKind::kSharedDownProj));
  return kept;
}

// Reads quantization_config: fp8 (DeepSeek block fp8), mxfp4 (gpt-oss
// experts), 4-bit GPTQ/AWQ (int4 group 128) and ModelOpt NVFP4 (its ignore
// list kept in the checkpoint's dtype).
void read_quantization(const ConfigReader& r, ModelSpec* m) {
  const json* q = r.get("quantization_config");
  if (q == nullptr) return;
  if (!q->is_object()) r.fail("quantization_config", "expected an object");
  const auto method_it = q->find("quant_method");
  if (method_it == q->end() || !method_it->is_string())
    r.fail("quantization_config.quant_method",
           "expected a string (fp8, mxfp4, gptq, awq, modelopt)");
  const std::string method = method_it->get<std::string>();
  if (method == "fp8") {
    m->native_weights = Format::kFp8;
    m->native_experts = Format::kFp8;
    m->quantization_notes.push_back(
        "fp8 checkpoint: block-scaled weights counted as fp8 (8 bits/element)");
  } else if (method == "mxfp4") {
    m->native_experts = Format::kMxfp4;
    m->quantization_notes.push_back("mxfp4 checkpoint: routed experts in mxfp4, other weights in " +
                                    std::string(format_id(m->native_weights)));
  } else if (method == "modelopt") {
    const auto algo = q->find("quant_algo");
    if (algo == q->end() || !algo->is_string() || algo->get<std::string>() != "NVFP4")
      r.fail("quantization_config.quant_algo",
             "only NVFP4 ModelOpt checkpoints are understood (quant_algo: NVFP4)");
    const Format unquantized = m->native_weights;
    m->native_weights = Format::kNvfp4;
    m->native_experts = Format::kNvfp4;
    QuantizedRelease release;
    release.format = Format::kNvfp4;
    release.kept_format = unquantized;
    release.checkpoint = r.origin();
    release.source = r.origin() + ", quantization_config.ignore";
    std::int64_t other = 0;
    for (const char* key : {"ignore", "exclude_modules"}) {
      const auto list = q->find(key);
      if (list == q->end()) continue;
      if (!list->is_array())
        r.fail(std::string("quantization_config.") + key, "expected a list of module names");
      release.kept_ops |= modelopt_kept_ops(*m, *list, &release.draft_head_kept, &other);
    }
    std::string kept;
    for (const auto& name : kept_operator_names(release)) kept += (kept.empty() ? "" : ", ") + name;
    m->quantization_notes.push_back(
        "ModelOpt NVFP4 checkpoint: linear layers in nvfp4 (W4A4: --act nvfp4, or an engine that "
        "runs NVFP4 so on the device)" +
        (kept.empty() ? std::string()
                      : "; its ignore list keeps " + kept + " in " +
                            std::string(format_id(unquantized)) + " in every layer") +
        (release.draft_head_kept ? ", and the MTP layer whole" : "") +
        (other > 0 ? "; " + std::to_string(other) +
                         " other entries (routers, whole layers, other towers) not modeled"
                   : ""));
    if (release.kept_ops != 0 || release.draft_head_kept) m->releases.push_back(release);
  } else if (method == "gptq" || method == "awq") {
    const auto bits = q->find("bits");
    if (bits == q->end() || !bits->is_number_integer() || bits->get<std::int64_t>() != 4)
      r.fail("quantization_config.bits", "only 4-bit gptq/awq is understood (bits: 4)");
    m->native_weights = Format::kInt4;
    m->native_experts = Format::kInt4;
  } else {
    r.fail("quantization_config.quant_method",
           "'" + clip_utf8(method, 40) + "' is not understood (fp8, mxfp4, gptq, awq, modelopt)");
  }
}

void read_gqa(const ConfigReader& r, ModelSpec* m) {
  m->hidden = r.integer("hidden_size", 1, kMaxHidden);
  m->layers = r.integer("num_hidden_layers", 1, kMaxLayers);
  m->heads = r.integer("num_attention_heads", 1, kMaxHeads);
  m->kv_heads = r.integer_or("num_key_value_heads", m->heads, 1, kMaxHeads);
  if (r.has("head_dim")) {
    m->head_dim = r.integer("head_dim", 1, kMaxHidden);
  } else {
    if (m->hidden % m->heads != 0) {
      r.fail("num_attention_heads", std::to_string(m->heads) + " heads do not divide hidden_size " +
                                        std::to_string(m->hidden));
    }
    m->head_dim = m->hidden / m->heads;
  }
  m->vocab = r.integer("vocab_size", 1, kMaxVocab);
  m->tie_embeddings = r.boolean_or("tie_word_embeddings", false);
  m->max_position = r.integer_or("max_position_embeddings", 0, 0, std::int64_t{1} << 40);
}

void read_sliding_window(const ConfigReader& r, ModelSpec* m, bool gated_by_use_flag) {
  if (!r.has("sliding_window")) return;
  if (gated_by_use_flag && !r.boolean_or("use_sliding_window", false)) return;
  m->sliding_window = r.integer("sliding_window", 1, std::int64_t{1} << 40);
  if (const json* types = r.get("layer_types")) {
    if (!types->is_array() || static_cast<std::int64_t>(types->size()) != m->layers) {
      r.fail("layer_types", "expected one entry per layer");
    }
    for (const auto& t : *types) {
      if (!t.is_string()) r.fail("layer_types", "expected strings");
      const std::string s = t.get<std::string>();
      if (s != "sliding_attention" && s != "full_attention") {
        r.fail("layer_types", "'" + s + "' is not understood");
      }
      m->sliding_layers.push_back(s == "sliding_attention");
    }
  }
}

// MiniMax-M2 (and M2.1, M2.5, M2.7): GQA attention in every layer with an
// RMSNorm over the whole q and k widths and RoPE on part of each head, then a
// mixture of experts routed by sigmoid scores plus a correction bias, with no
// shared expert and no dense layer.
void read_minimax_m2(const ConfigReader& r, ModelSpec* m) {
  // 1 is softmax attention; 0 is MiniMax-Text-01's lightning (linear) attention.
  if (const json* types = r.get("attn_type_list")) {
    if (!types->is_array() || static_cast<std::int64_t>(types->size()) != m->layers) {
      r.fail("attn_type_list", "expected one entry per layer");
    }
    for (const auto& t : *types) {
      if (r.check_integer("attn_type_list", t, 0, 1) != 1) {
        throw Unsupported(r.origin() +
                          ": attn_type_list: lightning (linear) attention layers (0) are not "
                          "modeled; only softmax attention layers (1) are");
      }
    }
  }
  MoeSpec e;
  e.num_experts = r.integer("num_local_experts", 1, kMaxExperts);
  e.top_k = r.integer("num_experts_per_tok", 1, e.num_experts);
  e.expert_intermediate = r.integer("intermediate_size", 1, kMaxIntermediate);
  e.router_bias = r.boolean_or("use_routing_bias", false);  // e_score_correction_bias
  if (r.integer_or("shared_intermediate_size", 0, 0, kMaxIntermediate) != 0) {
    r.fail("shared_intermediate_size", "a shared expert is not understood for minimax_m2 (0)");
  }
  m->moe = e;
  m->qkv_bias = m->o_bias = r.boolean_or("attention_bias", false);

  m->qk_norm = r.boolean_or("use_qk_norm", false);
  const std::string norm_type = r.string_or("qk_norm_type", "per_layer");
  if (norm_type != "per_layer" && norm_type != "per_head") {
    r.fail("qk_norm_type",
           "'" + clip_utf8(norm_type, 40) + "' is not understood (per_layer, per_head)");
  }
  if (m->qk_norm && norm_type == "per_layer") {
    m->qk_norm_across_heads = true;
    const std::int64_t width = (m->heads + m->kv_heads) * m->head_dim;
    m->notes.push_back(
        "QK norm over the whole q and k widths (qk_norm_type per_layer) is costed "
        "as a per-head norm: its " +
        std::to_string(width) + " weights per layer are counted as " +
        std::to_string(2 * m->head_dim) +
        "; across tensor-parallel ranks its variance takes one all-reduce a layer");
  }
  const std::int64_t rotary = r.integer_or("rotary_dim", m->head_dim, 1, m->head_dim);
  if (rotary < m->head_dim) {
    m->notes.push_back("partial RoPE (rotary_dim " + std::to_string(rotary) + " of head_dim " +
                       std::to_string(m->head_dim) +
                       ") is costed over the whole head, an elementwise op");
  }
  const std::int64_t mtp_modules = r.integer_or("num_mtp_modules", 0, 0, 64);
  if (r.boolean_or("use_mtp", false) && mtp_modules > 0) {
    m->notes.push_back("the " + std::to_string(mtp_modules) +
                       " multi-token-prediction modules run only as a speculative draft head "
                       "(--draft-tokens: one decoder layer a draft token); otherwise left out");
  }
}

// Qwen's MoE keys (qwen3_moe, qwen3_next, qwen3_5_moe): experts, the sparse
// step and the dense layers; a shared expert when shared_expert_intermediate_size > 0.
MoeSpec read_qwen_moe(const ConfigReader& r, const ModelSpec& m) {
  MoeSpec e;
  e.num_experts = r.integer("num_experts", 1, kMaxExperts);
  e.top_k = r.integer("num_experts_per_tok", 1, e.num_experts);
  e.expert_intermediate = r.integer("moe_intermediate_size", 1, kMaxIntermediate);
  e.layer_step = r.integer_or("decoder_sparse_step", 1, 1, m.layers);
  if (const json* dense = r.get("mlp_only_layers")) {
    if (!dense->is_array()) r.fail("mlp_only_layers", "expected an array of layer indices");
    // A list of layers cannot name more layers than there are.
    if (static_cast<std::int64_t>(dense->size()) > m.layers) {
      r.fail("mlp_only_layers", std::to_string(dense->size()) + " entries for " +
                                    std::to_string(m.layers) + " layers");
    }
    for (const auto& l : *dense)
      e.dense_layers.push_back(r.check_integer("mlp_only_layers", l, 0, m.layers - 1));
    // Sorted and distinct: is_moe_layer looks layers up by binary search.
    std::sort(e.dense_layers.begin(), e.dense_layers.end());
    e.dense_layers.erase(std::unique(e.dense_layers.begin(), e.dense_layers.end()),
                         e.dense_layers.end());
  }
  e.shared_intermediate = r.integer_or("shared_expert_intermediate_size", 0, 0, kMaxIntermediate);
  e.num_shared_experts = e.shared_intermediate > 0 ? 1 : 0;
  return e;
}

// Qwen3-Next and Qwen3.5 text models: Gated DeltaNet in three of every four
// layers (layer_types, or every full_attention_interval-th layer keeping
// softmax attention), gated softmax attention with per-head QK norms in the
// rest, and (MoE) experts beside one shared expert.
void read_qwen_hybrid(const ConfigReader& r, ModelSpec* m, bool moe) {
  read_gqa(r, m);
  LinearAttentionSpec x;
  x.key_heads = r.integer("linear_num_key_heads", 1, kMaxHeads);
  x.value_heads = r.integer("linear_num_value_heads", 1, kMaxHeads);
  x.key_head_dim = r.integer("linear_key_head_dim", 1, kMaxHidden);
  x.value_head_dim = r.integer("linear_value_head_dim", 1, kMaxHidden);
  x.conv_kernel = r.integer("linear_conv_kernel_dim", 1, 64);
  if (x.value_heads % x.key_heads != 0) {
    r.fail("linear_num_value_heads", std::to_string(x.value_heads) +
                                         " value heads are not a multiple of the " +
                                         std::to_string(x.key_heads) + " key heads");
  }
  const std::string state = r.string_or("mamba_ssm_dtype", "");
  if (state.empty() || state == "float32") {
    x.state_format = Format::kFp32;
    if (state.empty()) {
      m->notes.push_back("the recurrent state is taken as float32 (no mamba_ssm_dtype given)");
    }
  } else if (state == "bfloat16") {
    x.state_format = Format::kBf16;
  } else if (state == "float16") {
    x.state_format = Format::kFp16;
  } else {
    r.fail("mamba_ssm_dtype",
           "'" + clip_utf8(state, 40) + "' is not understood (float32, bfloat16, float16)");
  }
  m->linear_attention = x;
  if (const json* types = r.get("layer_types")) {
    if (!types->is_array() || static_cast<std::int64_t>(types->size()) != m->layers) {
      r.fail("layer_types", "expected one entry per layer (" + std::to_string(m->layers) + ")");
    }
    for (const auto& t : *types) {
      if (!t.is_string() || (t.get<std::string>() != "linear_attention" &&
                             t.get<std::string>() != "full_attention")) {
        r.fail("layer_types", "entries must be \"linear_attention\" or \"full_attention\"");
      }
      m->linear_layers.push_back(t.get<std::string>() == "linear_attention");
    }
  } else {
    const std::int64_t every = r.integer("full_attention_interval", 1, m->layers);
    for (std::int64_t l = 0; l < m->layers; ++l) m->linear_layers.push_back((l + 1) % every != 0);
  }
  m->attention_output_gate = r.boolean_or("attn_output_gate", true);
  m->qk_norm = true;
  m->qkv_bias = m->o_bias = r.boolean_or("attention_bias", false);
  if (moe) {
    m->moe = read_qwen_moe(r, *m);
    m->intermediate = r.integer_or("intermediate_size", 0, 0, kMaxIntermediate);
    if (m->moe->num_shared_experts > 0) {
      m->notes.push_back(
          "the shared expert's sigmoid gate (hidden_size weights a layer) is left out");
    }
  } else {
    m->intermediate = r.integer("intermediate_size", 1, kMaxIntermediate);
  }
  double rotary = 1;
  if (const json* rope = r.get("rope_parameters"); rope != nullptr && rope->is_object() &&
                                                   rope->contains("partial_rotary_factor") &&
                                                   (*rope)["partial_rotary_factor"].is_number()) {
    rotary = (*rope)["partial_rotary_factor"].get<double>();
  }
  if (const json* f = r.get("partial_rotary_factor"); f != nullptr && f->is_number())
    rotary = f->get<double>();
  if (rotary < 1) {
    std::ostringstream factor;
    factor << rotary;
    m->notes.push_back("partial RoPE (partial_rotary_factor " + factor.str() +
                       ") is costed over the whole head, an elementwise op");
  }
  if (r.integer_or("mtp_num_hidden_layers", 0, 0, 64) > 0) {
    m->notes.push_back(
        "the multi-token-prediction layer runs only as a speculative draft head "
        "(--draft-tokens); otherwise left out");
  }
}

void note_ignored_keys(const ConfigReader& r, ModelSpec* m) {
  std::string unknown;
  for (auto it = r.doc().begin(); it != r.doc().end(); ++it) {
    if (kIgnoredKeys.find(it.key()) == kIgnoredKeys.end()) {
      unknown += (unknown.empty() ? "" : ", ") + it.key();
    }
  }
  if (!unknown.empty()) m->notes.push_back("config keys not modeled: " + unknown);
}

// Model types whose architecture this tool knows it cannot cost, and why. A
// config of one of these is refused with the reason instead of being costed as
// the nearest supported family.
const char* unsupported_architecture(std::string_view model_type) {
  static const std::map<std::string_view, const char*> kWhy = {
      {"kimi_linear",
       "hybrid layers of Kimi Delta Attention (linear) and MLA, which is not modeled"},
      {"kimi_k25",
       "a multimodal wrapper: give its text_config (model_type kimi_k2) as the config, or use "
       "the preset kimi-k2.5 (the same text model as kimi-k2)"},
  };
  const auto it = kWhy.find(model_type);
  return it == kWhy.end() ? nullptr : it->second;
}

// Qwen3.5's multimodal wrappers (qwen3_5, qwen3_5_moe): the text model is in
// text_config; the wrapper's own embedding tie, dtype and quantization apply
// to it when text_config does not restate them.
json qwen_wrapper_text_config(const ConfigReader& r) {
  const json* text = r.get("text_config");
  if (text == nullptr || !text->is_object()) {
    r.fail("text_config", "a Qwen3.5 wrapper config needs its text model's text_config object");
  }
  json merged = *text;
  for (const char* key : {"tie_word_embeddings", "quantization_config", "torch_dtype", "dtype"}) {
    if (!merged.contains(key) && r.has(key)) merged[key] = r.doc()[key];
  }
  return merged;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

// ---------------------------------------------------------------- ModelSpec

std::int64_t ModelSpec::moe_layer_count() const noexcept {
  if (!moe) return 0;
  if (moe->dense_layers.empty()) {
    // Every layer_step-th layer from first_dense_layers on, counted without a
    // loop (predictions ask on every call): layers l >= first with
    // (l + 1) % step == 0.
    const std::int64_t step = std::max<std::int64_t>(1, moe->layer_step);
    const std::int64_t first = std::min(std::max<std::int64_t>(moe->first_dense_layers, 0),
                                        std::max<std::int64_t>(layers, 0));
    return layers / step - first / step;
  }
  std::int64_t n = 0;
  for (std::int64_t l = 0; l < layers; ++l) n += is_moe_layer(l);
  return n;
}

namespace {

// The flags equal to 1 among the first `n`. A 32-bit sum the compiler
// vectorizes, where std::count's 64-bit one goes a byte at a time (a
// prediction counts a model's layer flags several times).
std::int64_t count_flags(const std::vector<std::uint8_t>& flags, std::size_t n) noexcept {
  std::uint32_t count = 0;
  for (std::size_t i = 0; i < n; ++i) count += flags[i] == 1 ? 1u : 0u;
  return count;
}

}  // namespace

std::int64_t ModelSpec::sliding_layer_count() const noexcept {
  if (sliding_window <= 0) return 0;
  if (sliding_layers.empty()) return layers;
  // The flagged layers among the first `layers` (is_sliding_layer's).
  return count_flags(
      sliding_layers,
      std::min(sliding_layers.size(), static_cast<std::size_t>(std::max<std::int64_t>(layers, 0))));
}

std::int64_t ModelSpec::linear_layer_count() const noexcept {
  if (!linear_attention) return 0;
  return count_flags(linear_layers, linear_layers.size());
}

double ModelSpec::indexer_parameters() const noexcept {
  if (!sparse_attention) return 0;
  const auto& x = *sparse_attention;
  const double h = static_cast<double>(hidden);
  const double d = static_cast<double>(x.index_head_dim);
  const double index_heads = static_cast<double>(x.index_heads);
  // Queries from the q latent (or the hidden state), one key and the heads'
  // weights from the hidden state, the key's LayerNorm (weight and bias).
  const double q_in = mla.q_lora_rank > 0 ? static_cast<double>(mla.q_lora_rank) : h;
  return static_cast<double>(layers) * (q_in * index_heads * d + h * d + h * index_heads + 2 * d);
}

double ModelSpec::linear_state_elements() const noexcept {
  if (!linear_attention) return 0;
  const auto& x = *linear_attention;
  return static_cast<double>(x.value_heads) * static_cast<double>(x.key_head_dim) *
         static_cast<double>(x.value_head_dim);
}

double ModelSpec::linear_conv_state_elements() const noexcept {
  if (!linear_attention) return 0;
  const auto& x = *linear_attention;
  return static_cast<double>(x.conv_channels()) * static_cast<double>(x.conv_kernel - 1);
}

double ModelSpec::linear_state_bytes() const noexcept {
  if (!linear_attention) return 0;
  return static_cast<double>(linear_layer_count()) *
         (bytes_for(linear_attention->state_format, linear_state_elements()) +
          bytes_for(kLinearConvStateFormat, linear_conv_state_elements()));
}

std::int64_t ModelSpec::kv_elements_per_token_per_layer() const noexcept {
  if (attention == AttentionKind::kMla) return mla.kv_lora_rank + mla.qk_rope_head_dim;
  return 2 * kv_heads * head_dim;
}

ParamCounts count_parameters(const ModelSpec& m) {
  ParamCounts p;
  const double h = static_cast<double>(m.hidden);
  const double v = static_cast<double>(m.vocab);
  p.embedding = v * h;
  p.lm_head = m.tie_embeddings ? 0 : v * h;

  double attn = 0;
  if (m.attention == AttentionKind::kMla) {
    const auto& a = m.mla;
    const double nh = static_cast<double>(m.heads);
    const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
    if (a.q_lora_rank > 0) {
      attn += h * a.q_lora_rank + a.q_lora_rank /* q_a_layernorm */ + a.q_lora_rank * nh * qk;
    } else {
      attn += h * nh * qk;
    }
    attn += h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank /* kv_a_layernorm */;
    attn += a.kv_lora_rank * nh * (a.qk_nope_head_dim + a.v_head_dim);
    attn += nh * a.v_head_dim * h;
    attn += m.indexer_parameters() / static_cast<double>(m.layers);
  } else {
    const double q = static_cast<double>(m.heads * m.head_dim);
    const double kv = static_cast<double>(m.kv_heads * m.head_dim);
    attn = h * q * (m.attention_output_gate ? 2 : 1) + 2 * h * kv + q * h;
    if (m.qkv_bias) attn += q + 2 * kv;
    if (m.o_bias) attn += h;
    if (m.qk_norm) attn += 2 * static_cast<double>(m.head_dim);
    if (m.attention_sinks) attn += static_cast<double>(m.heads);
  }
  const double linear_layers = static_cast<double>(m.linear_layer_count());
  p.attention = attn * (static_cast<double>(m.layers) - linear_layers);
  if (m.linear_attention) {
    // Gated DeltaNet: q, k, v and the output gate z, and the per-head decay
    // and write strength (a, b) from the hidden state; the short convolution
    // over q, k and v; per-head A_log and dt_bias; the gated norm's weight;
    // the output projection.
    const auto& x = *m.linear_attention;
    const double key = static_cast<double>(x.key_width());
    const double value = static_cast<double>(x.value_width());
    const double vh = static_cast<double>(x.value_heads);
    const double one = h * (2 * key + 2 * value + 2 * vh) +
                       static_cast<double>(x.conv_channels() * x.conv_kernel) + 2 * vh +
                       static_cast<double>(x.value_head_dim) + value * h;
    p.attention += one * linear_layers;
  }

  const double mats = m.gated_mlp ? 3 : 2;
  const double moe_layers = static_cast<double>(m.moe_layer_count());
  const double dense_layers = static_cast<double>(m.layers) - moe_layers;
  const double dense_mlp = mats * h * static_cast<double>(m.intermediate) +
                           (m.mlp_bias ? 2 * static_cast<double>(m.intermediate) + h : 0);
  p.dense_mlp = dense_mlp * dense_layers;
  double active_experts = 0;
  if (m.moe) {
    const auto& e = *m.moe;
    const double ie = static_cast<double>(e.expert_intermediate);
    const double one_expert = mats * h * ie + (e.expert_bias ? 2 * ie + h : 0);
    p.routed_experts = one_expert * static_cast<double>(e.num_experts) * moe_layers;
    p.shared_experts = mats * h * static_cast<double>(e.shared_intermediate) *
                       static_cast<double>(e.num_shared_experts) * moe_layers;
    p.router = (h * static_cast<double>(e.num_experts) +
                (e.router_bias ? static_cast<double>(e.num_experts) : 0)) *
               moe_layers;
    active_experts = one_expert * static_cast<double>(e.top_k) * moe_layers;
  }
  p.norms = 2 * h * static_cast<double>(m.layers) + h;
  p.total = p.embedding + p.attention + p.dense_mlp + p.routed_experts + p.shared_experts +
            p.router + p.norms + p.lm_head;
  p.active_per_token = p.total - p.routed_experts + active_experts;
  return p;
}

void validate(const ModelSpec& m) {
  auto check = [&](std::string_view name, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi) {
      throw InvalidArgument(m.origin + ": " + std::string(name) + " = " + std::to_string(v) +
                            " is out of range (" + std::to_string(lo) + " to " +
                            std::to_string(hi) + ")");
    }
  };
  check("hidden", m.hidden, 1, kMaxHidden);
  check("layers", m.layers, 1, kMaxLayers);
  check("vocab", m.vocab, 0, kMaxVocab);
  check("heads", m.heads, 1, kMaxHeads);
  check("kv_heads", m.kv_heads, 1, kMaxHeads);
  check("head_dim", m.head_dim, 1, kMaxHidden);
  check("intermediate", m.intermediate, 0, kMaxIntermediate);
  if (m.heads % m.kv_heads != 0) {
    throw InvalidArgument(m.origin + ": kv_heads " + std::to_string(m.kv_heads) +
                          " does not divide heads " + std::to_string(m.heads));
  }
  if (m.attention == AttentionKind::kMla) {
    check("kv_lora_rank", m.mla.kv_lora_rank, 1, kMaxHidden);
    check("q_lora_rank", m.mla.q_lora_rank, 0, kMaxHidden);
    check("qk_nope_head_dim", m.mla.qk_nope_head_dim, 1, kMaxHidden);
    check("qk_rope_head_dim", m.mla.qk_rope_head_dim, 0, kMaxHidden);
    check("v_head_dim", m.mla.v_head_dim, 1, kMaxHidden);
  }
  if (m.moe) {
    check("num_experts", m.moe->num_experts, 1, kMaxExperts);
    check("top_k", m.moe->top_k, 1, m.moe->num_experts);
    check("expert_intermediate", m.moe->expert_intermediate, 1, kMaxIntermediate);
    check("num_shared_experts", m.moe->num_shared_experts, 0, kMaxExperts);
    check("first_dense_layers", m.moe->first_dense_layers, 0, m.layers);
    check("layer_step", m.moe->layer_step, 1, m.layers);
    const auto& dense = m.moe->dense_layers;
    if (static_cast<std::int64_t>(dense.size()) > m.layers ||
        !std::is_sorted(dense.begin(), dense.end()) ||
        std::adjacent_find(dense.begin(), dense.end()) != dense.end() ||
        (!dense.empty() && (dense.front() < 0 || dense.back() >= m.layers))) {
      throw InvalidArgument(m.origin +
                            ": dense layers must be distinct layer indices in increasing order");
    }
  }
  if (m.moe_layer_count() < m.layers && m.intermediate < 1) {
    throw InvalidArgument(m.origin + ": dense layers need intermediate_size > 0");
  }
  if (!m.sliding_layers.empty() && static_cast<std::int64_t>(m.sliding_layers.size()) != m.layers) {
    throw InvalidArgument(m.origin + ": sliding layer list does not match the layer count");
  }
  if (m.linear_attention) {
    const auto& x = *m.linear_attention;
    check("linear_num_key_heads", x.key_heads, 1, kMaxHeads);
    check("linear_num_value_heads", x.value_heads, 1, kMaxHeads);
    check("linear_key_head_dim", x.key_head_dim, 1, kMaxHidden);
    check("linear_value_head_dim", x.value_head_dim, 1, kMaxHidden);
    check("linear_conv_kernel_dim", x.conv_kernel, 1, 64);
    if (x.value_heads % x.key_heads != 0) {
      throw InvalidArgument(m.origin + ": linear value heads must be a multiple of the key heads");
    }
    if (static_cast<std::int64_t>(m.linear_layers.size()) != m.layers) {
      throw InvalidArgument(m.origin + ": linear layer list does not match the layer count");
    }
    if (m.sliding_window > 0) {
      throw Unsupported(m.origin +
                        ": sliding-window layers beside linear attention are not modeled");
    }
  }
}

ModelSpec parse_hf_config(std::string_view json_text, const std::string& origin) {
  return detail::parse_hf_config_document(
      detail::parse_json_text(json_text, origin, kMaxConfigBytes), origin);
}

ModelSpec detail::parse_hf_config_document(json doc, const std::string& origin) {
  if (!doc.is_object()) throw ParseError(origin + ": expected a JSON object");
  std::string wrapper;
  {
    ConfigReader outer(doc, origin);
    const std::string type = outer.string_or("model_type", "");
    if (type == "qwen3_5" || type == "qwen3_5_moe") {
      json text = qwen_wrapper_text_config(outer);
      doc = std::move(text);
      wrapper = type;
    }
  }
  const std::string text_origin = wrapper.empty() ? origin : origin + " text_config";
  ConfigReader r(doc, text_origin);
  ModelSpec m;
  m.origin = origin;
  m.model_type = r.string_or("model_type", "");
  if (!wrapper.empty()) {
    const std::string expected = wrapper + "_text";
    if (m.model_type != expected) {
      r.fail("model_type", "'" + clip_utf8(m.model_type, 40) + "' inside a " + wrapper +
                               " wrapper (expected " + expected + ")");
    }
    m.notes.push_back("a multimodal " + wrapper +
                      " wrapper: its text model is costed; the vision encoder runs only for "
                      "image and video inputs and is left out");
  }
  const std::string& t = m.model_type;
  static const char* kSupported =
      "llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, qwen3_next, qwen3_5(_text), "
      "qwen3_5_moe(_text), deepseek_v2, deepseek_v3, deepseek_v32, kimi_k2, glm_moe_dsa, gpt_oss, "
      "minimax_m2";
  if (t.empty()) {
    throw Unsupported(origin +
                      ": no model_type; this does not look like a Hugging Face "
                      "config.json (supported model types: " +
                      kSupported + ")");
  }
  if (const char* why = unsupported_architecture(t)) {
    throw Unsupported(origin + ": model_type '" + t + "' is not supported: " + why);
  }
  m.native_weights = dtype_format(r);
  m.native_experts = m.native_weights;

  if (t == "llama" || t == "mistral" || t == "mixtral" || t == "qwen2" || t == "qwen3" ||
      t == "qwen3_moe") {
    read_gqa(r, &m);
    if (t == "mixtral") {
      MoeSpec e;
      e.num_experts = r.integer("num_local_experts", 1, kMaxExperts);
      e.top_k = r.integer("num_experts_per_tok", 1, e.num_experts);
      e.expert_intermediate = r.integer("intermediate_size", 1, kMaxIntermediate);
      m.moe = e;
    } else if (t == "qwen3_moe") {
      m.moe = read_qwen_moe(r, m);
      m.intermediate = r.integer_or("intermediate_size", 0, 0, kMaxIntermediate);
    } else {
      m.intermediate = r.integer("intermediate_size", 1, kMaxIntermediate);
    }
    if (t == "llama" || t == "mistral" || t == "mixtral") {
      const bool bias = r.boolean_or("attention_bias", false);
      m.qkv_bias = m.o_bias = bias;
      m.mlp_bias = r.boolean_or("mlp_bias", false);
      read_sliding_window(r, &m, false);
    } else if (t == "qwen2") {
      m.qkv_bias = true;  // Qwen2 attention always has q/k/v biases, no o bias
      read_sliding_window(r, &m, true);
    } else {
      m.qkv_bias = m.o_bias = r.boolean_or("attention_bias", false);
      m.qk_norm = true;  // Qwen3 normalizes q and k per head
      read_sliding_window(r, &m, true);
    }
  } else if (t == "deepseek_v3" || t == "deepseek_v2" || t == "kimi_k2" || t == "deepseek_v32" ||
             t == "glm_moe_dsa") {
    read_gqa(r, &m);
    m.attention = AttentionKind::kMla;
    m.mla.q_lora_rank = r.integer_or("q_lora_rank", 0, 0, kMaxHidden);
    m.mla.kv_lora_rank = r.integer("kv_lora_rank", 1, kMaxHidden);
    m.mla.qk_nope_head_dim = r.integer("qk_nope_head_dim", 1, kMaxHidden);
    m.mla.qk_rope_head_dim = r.integer("qk_rope_head_dim", 0, kMaxHidden);
    m.mla.v_head_dim = r.integer("v_head_dim", 1, kMaxHidden);
    m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    m.kv_heads = m.heads;  // every head has its own decompressed K and V
    m.intermediate = r.integer("intermediate_size", 1, kMaxIntermediate);
    if (r.has("n_routed_experts")) {
      MoeSpec e;
      e.num_experts = r.integer("n_routed_experts", 1, kMaxExperts);
      e.top_k = r.integer("num_experts_per_tok", 1, e.num_experts);
      e.expert_intermediate = r.integer("moe_intermediate_size", 1, kMaxIntermediate);
      e.num_shared_experts = r.integer_or("n_shared_experts", 0, 0, kMaxExperts);
      e.shared_intermediate = e.expert_intermediate;
      e.first_dense_layers = r.integer_or("first_k_dense_replace", 0, 0, m.layers);
      e.layer_step = r.integer_or("moe_layer_freq", 1, 1, m.layers);
      e.router_bias = (t != "deepseek_v2");  // V3 and Kimi K2: e_score_correction_bias
      m.moe = e;
    }
    if (t == "deepseek_v32" || t == "glm_moe_dsa") {
      SparseAttentionSpec x;
      x.index_heads = r.integer("index_n_heads", 1, kMaxHeads);
      x.index_head_dim = r.integer("index_head_dim", 1, kMaxHidden);
      x.top_k = r.integer("index_topk", 1, std::int64_t{1} << 40);
      m.sparse_attention = x;
    }
    if (r.integer_or("num_nextn_predict_layers", 0, 0, 64) > 0) {
      m.notes.push_back(
          "the multi-token-prediction layer runs only as a speculative draft head "
          "(--draft-tokens); otherwise left out");
    }
  } else if (t == "gpt_oss") {
    read_gqa(r, &m);
    MoeSpec e;
    e.num_experts = r.integer("num_local_experts", 1, kMaxExperts);
    e.top_k = r.has("num_experts_per_tok") ? r.integer("num_experts_per_tok", 1, e.num_experts)
                                           : r.integer("experts_per_token", 1, e.num_experts);
    e.expert_intermediate = r.integer("intermediate_size", 1, kMaxIntermediate);
    e.expert_bias = true;
    e.router_bias = true;
    m.moe = e;
    m.qkv_bias = m.o_bias = r.boolean_or("attention_bias", true);
    m.attention_sinks = true;
    read_sliding_window(r, &m, false);
  } else if (t == "minimax_m2") {
    read_gqa(r, &m);
    read_minimax_m2(r, &m);
  } else if (t == "qwen3_next" || t == "qwen3_5_moe_text" || t == "qwen3_5_text") {
    read_qwen_hybrid(r, &m, t != "qwen3_5_text");
  } else {
    throw Unsupported(origin + ": model_type '" + clip_utf8(t, 40) +
                      "' is not understood (supported: " + kSupported + ")");
  }
  read_quantization(r, &m);
  note_ignored_keys(r, &m);
  validate(m);
  return m;
}

ModelSpec parse_short_form(std::string_view json_text, const std::string& origin) {
  return detail::parse_short_form_document(
      detail::parse_json_text(json_text, origin, kMaxConfigBytes), origin);
}

ModelSpec detail::parse_short_form_document(const json& doc, const std::string& origin) {
  StrictObject obj(doc, origin, "");
  ConfigReader r(doc, origin);
  ModelSpec m;
  m.origin = origin;
  m.model_type = "short-form";
  auto take = [&](std::string_view key, std::int64_t hi) {
    (void)obj.required(key);
    return r.integer(key, 1, hi);
  };
  m.hidden = take("H", kMaxHidden);
  m.layers = take("L", kMaxLayers);
  m.heads = take("nh", kMaxHeads);
  m.kv_heads = take("nkv", kMaxHeads);
  m.head_dim = take("dh", kMaxHidden);
  m.intermediate = take("dff", kMaxIntermediate);
  if (obj.optional("vocab") != nullptr) m.vocab = r.integer("vocab", 1, kMaxVocab);
  obj.finish();
  if (m.vocab == 0) m.notes.push_back("no vocab given: embedding and lm_head are left out");
  validate(m);
  return m;
}

// ---------------------------------------------------------------- presets

// "draft_acceptance": {"method": "mtp", "tokens_per_step": [t1, t2, ...],
// "confidence": "measured", "source": text, "note": text}:
// t_k, the tokens a step yields per sequence with k draft tokens, at least 1
// and at most k + 1, never falling as k grows.
detail::DraftAcceptance detail::parse_draft_acceptance(const json& object,
                                                       const std::string& origin,
                                                       const std::string& where) {
  StrictObject a(object, origin, where);
  DraftAcceptance d;
  if (a.string("method") != "mtp") a.fail("method", "must be mtp (the model's own head, chained)");
  const json& list = a.required("tokens_per_step");
  if (!list.is_array() || list.empty() || list.size() > static_cast<std::size_t>(kMaxDraftTokens))
    a.fail("tokens_per_step", "must list 1 to " + std::to_string(kMaxDraftTokens) +
                                  " numbers, one per draft count from 1");
  for (std::size_t k = 0; k < list.size(); ++k) {
    if (!list[k].is_number())
      a.fail("tokens_per_step", "entry " + std::to_string(k + 1) + " must be a number");
    const double t = list[k].get<double>();
    const double previous = d.tokens_per_step.empty() ? 1 : d.tokens_per_step.back();
    if (!(t >= previous && t <= static_cast<double>(k) + 2)) {
      a.fail("tokens_per_step", "entry " + std::to_string(k + 1) +
                                    " must be from the one before it (1 first) to " +
                                    std::to_string(k + 2) + " (every draft accepted)");
    }
    d.tokens_per_step.push_back(t);
  }
  // Predictions cite these as measured, so nothing else is carried.
  if (a.string("confidence") != "measured")
    a.fail("confidence", "must be measured (a run's figures, with their source)");
  d.source = a.string("source");
  if (d.source.empty()) a.fail("source", "must name where the figures come from");
  (void)a.optional_string("note", "");
  a.finish();
  return d;
}

// "quantized_releases": [{"format", "checkpoint", "kept": {"format",
// "operators": [...], "draft_head": bool}, "confidence", "source", "note"?}]:
// the publisher's quantized checkpoints, one a format, with the linear
// operators each keeps unquantized. Routed experts and the dense MLP's
// gate/up/down share their operator kinds, so a release cannot keep those.
std::vector<QuantizedRelease> detail::parse_quantized_releases(const json& list,
                                                               const std::string& origin,
                                                               const std::string& where) {
  if (!list.is_array() || list.empty() || list.size() > 8)
    throw ParseError(origin + ": " + where + ": expected a list of 1 to 8 releases");
  static constexpr OpKind kKeepable[] = {
      OpKind::kQProj,      OpKind::kKProj,          OpKind::kVProj,        OpKind::kOProj,
      OpKind::kLmHead,     OpKind::kSharedGateProj, OpKind::kSharedUpProj, OpKind::kSharedDownProj,
      OpKind::kQAProj,     OpKind::kQBProj,         OpKind::kKvAProj,      OpKind::kKvBProj,
      OpKind::kKAbsorb,    OpKind::kVAbsorb,        OpKind::kLinearInProj, OpKind::kLinearBaProj,
      OpKind::kIndexerProj};
  std::vector<QuantizedRelease> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject r(list[i], origin, where + "[" + std::to_string(i) + "]");
    QuantizedRelease q;
    const auto format_of = [](StrictObject& o, std::string_view key) {
      const std::string text = o.string(key);
      Format f{};
      if (!try_parse_format(text, &f)) o.fail(key, "unknown format '" + clip_utf8(text, 20) + "'");
      return f;
    };
    q.format = format_of(r, "format");
    if (!(bits_per_element(q.format) < 16)) r.fail("format", "must be a quantized format");
    for (const auto& seen : out) {
      if (seen.format == q.format) r.fail("format", "a second release in the same format");
    }
    q.checkpoint = r.string("checkpoint");
    if (q.checkpoint.empty()) r.fail("checkpoint", "must name the release (a Hugging Face id)");
    StrictObject kept = r.object("kept");
    q.kept_format = format_of(kept, "format");
    if (!(bits_per_element(q.kept_format) > bits_per_element(q.format)))
      kept.fail("format", "must be wider than the release's format");
    const json& ops = kept.required("operators");
    if (!ops.is_array() || ops.empty() || ops.size() > std::size(kKeepable))
      kept.fail("operators", "expected a list of the linear operators kept");
    for (const auto& o : ops) {
      const std::string name = o.is_string() ? o.get<std::string>() : std::string();
      const auto* it = std::find_if(std::begin(kKeepable), std::end(kKeepable),
                                    [&](OpKind k) { return op_name(k) == name; });
      if (it == std::end(kKeepable)) {
        std::string names;
        for (OpKind k : kKeepable) names += (names.empty() ? "" : ", ") + std::string(op_name(k));
        kept.fail("operators",
                  "'" + clip_utf8(name, 30) + "' is not one a release keeps (" + names + ")");
      }
      const std::uint64_t bit = std::uint64_t{1} << static_cast<unsigned>(*it);
      if ((q.kept_ops & bit) != 0) kept.fail("operators", "'" + name + "' listed twice");
      q.kept_ops |= bit;
    }
    const json& draft = kept.required("draft_head");
    if (!draft.is_boolean()) kept.fail("draft_head", "expected true or false");
    q.draft_head_kept = draft.get<bool>();
    kept.finish();
    const std::string confidence = r.string("confidence");
    if (confidence != "vendor" && confidence != "derived")
      r.fail("confidence", "must be vendor (the checkpoint's own config) or derived");
    q.source = r.string("source");
    if (q.source.empty()) r.fail("source", "must name where the layout comes from");
    (void)r.optional_string("note", "");
    r.finish();
    out.push_back(std::move(q));
  }
  return out;
}

const ModelCatalog& ModelCatalog::built_in() {
  static const ModelCatalog catalog = [] {
    ModelCatalog c;
    std::string_view index_text;
    for (const auto& f : detail::embedded_files()) {
      if (f.name == "models/index.json") index_text = f.text;
    }
    const json index =
        detail::parse_json_text(index_text, "built-in models/index.json", kMaxConfigBytes);
    if (!index.is_array()) throw ParseError("built-in models/index.json: expected an array");
    for (std::size_t i = 0; i < index.size(); ++i) {
      StrictObject e(index[i], "built-in models/index.json", "[" + std::to_string(i) + "]");
      ModelPreset p;
      p.id = e.string("id");
      p.name = e.string("name");
      p.hf_repo = e.string("hf_repo");
      const std::string file = e.string("file");
      for (const auto& a : e.required("aliases"))
        p.aliases.push_back(detail::ascii_lower(a.get<std::string>()));
      p.config_source = e.string("config_source");
      const json& params = e.required("published_params");
      p.published_params = params.is_null() ? 0 : params.get<double>();
      p.published_params_source = e.string("published_params_source");
      if (const json* a = e.optional("draft_acceptance")) {
        detail::DraftAcceptance d = detail::parse_draft_acceptance(
            *a, "built-in models/index.json", "[" + std::to_string(i) + "].draft_acceptance");
        p.draft_tokens_per_step = std::move(d.tokens_per_step);
        p.draft_acceptance_source = std::move(d.source);
      }
      if (const json* r = e.optional("quantized_releases")) {
        p.releases = detail::parse_quantized_releases(
            *r, "built-in models/index.json", "[" + std::to_string(i) + "].quantized_releases");
      }
      e.finish();
      for (const auto& f : detail::embedded_files()) {
        if (f.name == "models/" + file) p.config_json = std::string(f.text);
      }
      if (p.config_json.empty()) throw ParseError("built-in models/index.json: no file " + file);
      c.presets_.push_back(std::move(p));
    }
    return c;
  }();
  return catalog;
}

const ModelPreset* ModelCatalog::find(std::string_view id_or_alias) const noexcept {
  if (id_or_alias.size() > 128) return nullptr;
  const std::string key = detail::ascii_lower(id_or_alias);
  for (const auto& p : presets_) {
    if (p.id == key) return &p;
    if (std::find(p.aliases.begin(), p.aliases.end(), key) != p.aliases.end()) return &p;
  }
  return nullptr;
}

ModelSpec preset_model(const ModelPreset& preset) {
  ModelSpec m = parse_hf_config(preset.config_json, "preset " + preset.id);
  m.id = preset.id;
  m.name = preset.name;
  m.origin = "preset " + preset.id + " (" + preset.hf_repo + ")";
  m.draft_tokens_per_step = preset.draft_tokens_per_step;
  m.draft_acceptance_source = preset.draft_acceptance_source;
  m.releases = preset.releases;
  return m;
}

ModelSpec load_model(std::string_view arg) {
  if (const ModelPreset* p = ModelCatalog::built_in().find(arg)) return preset_model(*p);
  const std::filesystem::path path{std::string(arg)};
  std::error_code ec;
  const bool looks_like_path = arg.find('/') != std::string_view::npos || ends_with(arg, ".json") ||
                               ends_with(arg, ".safetensors") || ends_with(arg, ".gguf") ||
                               std::filesystem::exists(path, ec);
  if (!looks_like_path) {
    std::string ids;
    for (const auto& p : ModelCatalog::built_in().presets())
      ids += (ids.empty() ? "" : ", ") + p.id;
    throw NotFound("unknown model '" + clip_utf8(arg, 64) + "' (presets: " + ids +
                   "; or give a config.json, model directory, .safetensors or .gguf path)");
  }
  if (std::filesystem::is_directory(path, ec)) return load_model_directory(path.string());
  if (ends_with(arg, ".gguf")) return load_gguf(path.string());
  if (ends_with(arg, ".safetensors") || ends_with(arg, ".safetensors.index.json")) {
    throw InvalidArgument(path.string() +
                          ": a safetensors checkpoint needs its config.json: "
                          "give the model directory instead");
  }
  const std::string text = detail::read_text_file(path.string(), kMaxConfigBytes);
  ModelSpec m;
  json doc = detail::parse_json_text(text, path.string(), kMaxConfigBytes);
  if (doc.is_object() && doc.contains("H") && !doc.contains("model_type")) {
    m = detail::parse_short_form_document(doc, path.string());
  } else {
    m = detail::parse_hf_config_document(std::move(doc), path.string());
  }
  m.id = path.stem().string() == "config" ? path.parent_path().filename().string()
                                          : path.stem().string();
  m.name = m.id;
  return m;
}

}  // namespace roofline
