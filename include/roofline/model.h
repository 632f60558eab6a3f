// Transformer model descriptions: presets, Hugging Face config.json files,
// the original short form, and (with checkpoint.h) checkpoint headers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/formats.h"
#include "roofline/units.h"

namespace roofline {

enum class AttentionKind {
  kGqa,  // grouped-query attention; MHA is kv_heads == heads, MQA is kv_heads == 1
  kMla,  // DeepSeek multi-head latent attention: a compressed KV cache
};

// DeepSeek-V2/V3 multi-head latent attention dimensions.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;  // 0: q is projected directly from the hidden state
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

// DeepSeek sparse attention (DeepSeek-V3.2, GLM-5; DeepSeek-V3.2-Exp report,
// "DeepSeek Sparse Attention"): a lightning indexer of index_heads heads of
// index_head_dim scores every cached token for each query in fp8, and the MLA
// attention then reads only the top_k best. The indexer keeps its own cache of
// one fp8 key (and a scale) a token, and every tensor-parallel rank computes
// it whole (engines replicate its weights: the chosen tokens must agree).
struct SparseAttentionSpec {
  std::int64_t index_heads = 0;
  std::int64_t index_head_dim = 0;
  std::int64_t top_k = 0;
};

// The short convolution's window of past inputs, kept in the model's 16-bit
// dtype by the engines whatever the activations' format.
inline constexpr Format kLinearConvStateFormat = Format::kBf16;

// Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5; Yang, Kautz and
// Hatamizadeh, "Gated Delta Networks", ICLR 2025): in the layers it takes,
// each sequence keeps a recurrent state of value_heads matrices of
// key_head_dim x value_head_dim (and a short convolution's last conv_kernel - 1
// inputs) instead of a KV cache, so its memory does not grow with context.
// Key heads are shared by value_heads / key_heads value heads.
struct LinearAttentionSpec {
  std::int64_t key_heads = 0;
  std::int64_t value_heads = 0;
  std::int64_t key_head_dim = 0;
  std::int64_t value_head_dim = 0;
  std::int64_t conv_kernel = 0;         // the causal depthwise convolution's width
  Format state_format = Format::kFp32;  // the recurrent state (config mamba_ssm_dtype)

  [[nodiscard]] std::int64_t key_width() const noexcept { return key_heads * key_head_dim; }
  [[nodiscard]] std::int64_t value_width() const noexcept { return value_heads * value_head_dim; }
  // Channels of the short convolution: q, k and v.
  [[nodiscard]] std::int64_t conv_channels() const noexcept {
    return 2 * key_width() + value_width();
  }
};

// Mixture of experts. A layer is MoE when layer >= first_dense_layers,
// (layer + 1) % layer_step == 0 (Qwen's decoder_sparse_step) and it is not
// listed in dense_layers.
struct MoeSpec {
  std::int64_t num_experts = 0;          // routed experts
  std::int64_t top_k = 0;                // experts per token
  std::int64_t expert_intermediate = 0;  // intermediate size of one routed expert
  std::int64_t num_shared_experts = 0;   // always-active experts (DeepSeek)
  std::int64_t shared_intermediate = 0;  // intermediate size of one shared expert
  std::int64_t first_dense_layers = 0;   // DeepSeek first_k_dense_replace
  std::int64_t layer_step = 1;
  std::vector<std::int64_t> dense_layers;  // Qwen3-MoE mlp_only_layers; sorted, distinct
  bool expert_bias = false;                // gpt-oss experts carry biases
  bool router_bias = false;
};

// A quantized release of a preset as its publisher ships it: the format of
// its quantized layers and the operators it keeps unquantized. NVIDIA's NVFP4
// checkpoints, for one, keep attention (and, in some, the shared experts)
// and the LM head in bf16, and their MTP layer whole. A plan whose weights
// are in `format` follows the release (PrecisionPlan::follow_release): those
// operators run in `kept_format`, weights and math.
struct QuantizedRelease {
  Format format = Format::kNvfp4;
  std::uint64_t kept_ops = 0;  // bit k set: OpKind k stays in kept_format
  Format kept_format = Format::kBf16;
  bool draft_head_kept = false;  // the MTP layer (the draft head) whole in kept_format
  std::string checkpoint;        // the release's Hugging Face id
  std::string source;
};

// Exact weight bytes read from a checkpoint's tensor headers, by component.
struct CheckpointBytes {
  std::string path;          // the file or directory read
  std::int64_t tensors = 0;  // tensor count
  double embedding = 0;
  double attention = 0;
  double dense_mlp = 0;
  double routed_experts = 0;
  double shared_experts = 0;
  double router = 0;
  double norms = 0;
  double lm_head = 0;
  double other = 0;  // tensors whose role is not recognized
  double total = 0;
  std::string dominant_type;  // the storage type holding most bytes, e.g. "q4_K", "BF16"
};

// At most this many draft tokens a speculative step (engines propose 1 to 7
// or so), in scenarios and in a model's measured acceptance.
inline constexpr std::int64_t kMaxDraftTokens = 16;

struct ModelSpec {
  std::string id;          // preset id, or derived from the file name
  std::string name;        // human name
  std::string model_type;  // config.json model_type, or "short-form"
  std::string origin;      // "preset", a file path, ...

  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t vocab = 0;  // 0: unknown (short form without vocab): no embedding or lm_head
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;      // q/k head dimension (GQA)
  std::int64_t intermediate = 0;  // dense MLP intermediate size (0: every layer is MoE)
  bool gated_mlp = true;          // gate_proj * act(up_proj): three matrices
  bool qkv_bias = false;
  bool o_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;  // Qwen3: RMSNorm on q and k per head (MiniMax-M2: per layer)
  // MiniMax-M2: the q and k norms span all heads (qk_norm_type per_layer), so
  // tensor-parallel ranks, each holding some heads, join their variance.
  bool qk_norm_across_heads = false;
  bool attention_sinks = false;  // gpt-oss: one learned logit per head
  bool tie_embeddings = false;
  std::int64_t max_position = 0;  // 0: not stated

  AttentionKind attention = AttentionKind::kGqa;
  MlaSpec mla;
  std::optional<MoeSpec> moe;

  std::optional<SparseAttentionSpec> sparse_attention;  // MLA models only

  // Qwen3-Next / Qwen3.5: q_proj also yields a per-channel sigmoid gate that
  // multiplies the attention output before o_proj (attn_output_gate).
  bool attention_output_gate = false;

  // Linear attention in the layers flagged in linear_layers (its size is the
  // layer count when set); the others keep softmax attention. Layer flags are
  // one byte each (0 or 1), not std::vector<bool>: predictions count them, and
  // a vector<bool> counts a bit at a time.
  std::optional<LinearAttentionSpec> linear_attention;
  std::vector<std::uint8_t> linear_layers;

  // Sliding-window attention: window in tokens (0: none) and the layers it applies to.
  std::int64_t sliding_window = 0;
  std::vector<std::uint8_t> sliding_layers;  // empty: all layers when sliding_window > 0

  // The checkpoint's native precision.
  Format native_weights = Format::kBf16;
  Format native_experts = Format::kBf16;  // gpt-oss: mxfp4

  // Exact bytes when the model came from a checkpoint.
  std::optional<CheckpointBytes> checkpoint;

  // Speculative decoding with the model's own multi-token-prediction head,
  // chained: the tokens a step yields per sequence as measured, index k - 1
  // for k draft tokens (empty: none published; see DraftAcceptance).
  std::vector<double> draft_tokens_per_step;
  std::string draft_acceptance_source;  // where those figures come from

  // Quantized releases of a preset (index.json "quantized_releases"), one a format.
  std::vector<QuantizedRelease> releases;

  // What was read but not modeled (ignored config keys, assumptions).
  std::vector<std::string> notes;
  // What the checkpoint's own quantization is (its quantization_config), apart
  // from `notes`: a prediction whose formats replace the checkpoint's leaves
  // them out.
  std::vector<std::string> quantization_notes;

  // The release whose quantized layers are in `weights`, or null.
  [[nodiscard]] const QuantizedRelease* release_for(Format weights) const noexcept {
    for (const auto& r : releases) {
      if (r.format == weights) return &r;
    }
    return nullptr;
  }

  // (Inline: predictions ask them for every layer.)
  [[nodiscard]] bool is_moe_layer(std::int64_t layer) const noexcept {
    if (!moe) return false;
    if (layer < moe->first_dense_layers) return false;
    if (moe->layer_step > 1 && (layer + 1) % moe->layer_step != 0) return false;
    return !std::binary_search(moe->dense_layers.begin(), moe->dense_layers.end(), layer);
  }
  [[nodiscard]] bool is_sliding_layer(std::int64_t layer) const noexcept {
    if (sliding_window <= 0) return false;
    if (sliding_layers.empty()) return true;
    return layer >= 0 && layer < static_cast<std::int64_t>(sliding_layers.size()) &&
           sliding_layers[static_cast<std::size_t>(layer)] != 0;
  }
  [[nodiscard]] bool is_linear_layer(std::int64_t layer) const noexcept {
    return linear_attention && layer >= 0 &&
           layer < static_cast<std::int64_t>(linear_layers.size()) &&
           linear_layers[static_cast<std::size_t>(layer)] != 0;
  }
  [[nodiscard]] std::int64_t moe_layer_count() const noexcept;
  [[nodiscard]] std::int64_t sliding_layer_count() const noexcept;
  [[nodiscard]] std::int64_t linear_layer_count() const noexcept;
  // Layers that cache K and V (neither sliding nor linear hold it whole).
  [[nodiscard]] std::int64_t full_attention_layer_count() const noexcept {
    return layers - sliding_layer_count() - linear_layer_count();
  }
  // Elements of one sequence's recurrent state in one linear-attention layer
  // (all heads: the delta rule's matrices in state_format, the convolution's
  // window in kLinearConvStateFormat), 0 without linear attention.
  [[nodiscard]] double linear_state_elements() const noexcept;
  [[nodiscard]] double linear_conv_state_elements() const noexcept;
  // Bytes of one sequence's state over all linear-attention layers (both
  // parts, each in its format), all heads; 0 without linear attention.
  [[nodiscard]] double linear_state_bytes() const noexcept;
  // The sparse-attention indexer's weights over all layers (replicated on
  // every tensor-parallel rank), 0 without one; part of ParamCounts::attention.
  [[nodiscard]] double indexer_parameters() const noexcept;
  // Elements of K and V cached per token per layer (MLA: the latent + rope key).
  [[nodiscard]] std::int64_t kv_elements_per_token_per_layer() const noexcept;
};

// Parameter counts by component (elements, not bytes).
struct ParamCounts {
  double embedding = 0;
  double attention = 0;  // q/k/v/o (or MLA projections), biases, qk norms, sinks;
                         // linear attention's projections, convolution and gates
  double dense_mlp = 0;  // MLPs of dense layers
  double routed_experts = 0;
  double shared_experts = 0;
  double router = 0;
  double norms = 0;    // per-layer norms and the final norm
  double lm_head = 0;  // 0 when tied to the embedding
  double total = 0;
  double active_per_token = 0;  // with top_k routed experts instead of all
};

[[nodiscard]] ParamCounts count_parameters(const ModelSpec& model);

// Validates dimensions and relations (heads divide hidden, kv_heads divide
// heads, sizes within kModelLimits). Throws InvalidArgument naming the field.
void validate(const ModelSpec& model);

// Parses a Hugging Face config.json for the supported families (llama,
// mistral, mixtral, qwen2, qwen3, qwen3_moe, deepseek_v2, deepseek_v3,
// kimi_k2 (the DeepSeek-V3 architecture), gpt_oss, minimax_m2). Throws ParseError
// for malformed JSON, Unsupported for other model types: for known ones not
// modeled (linear-attention hybrids: qwen3_next, qwen3_5_moe, lightning layers in
// a minimax_m2 attn_type_list; sparse attention: glm_moe_dsa; multimodal wrappers:
// kimi_k25) the message says why. InvalidArgument for bad values. Unmodeled keys,
// and what is costed approximately (minimax_m2's QK norm, RoPE), are in notes.
[[nodiscard]] ModelSpec parse_hf_config(std::string_view json_text, const std::string& origin);

// Parses the original description's short form {"H", "L", "nh", "nkv", "dh",
// "dff"} with optional "vocab". Unknown keys are errors.
[[nodiscard]] ModelSpec parse_short_form(std::string_view json_text, const std::string& origin);

// A preset from data/models: its config plus catalog metadata.
struct ModelPreset {
  std::string id;
  std::string name;
  std::string hf_repo;
  std::vector<std::string> aliases;
  std::string config_source;
  double published_params = 0;  // 0: not stated
  std::string published_params_source;
  // Measured tokens a speculative step yields with the model's own MTP head
  // chained, by draft count (index.json "draft_acceptance"; empty: none).
  std::vector<double> draft_tokens_per_step;
  std::string draft_acceptance_source;
  std::vector<QuantizedRelease> releases;  // index.json "quantized_releases"
  std::string config_json;                 // the embedded config.json text
};

class ModelCatalog {
 public:
  // The presets embedded at build time.
  [[nodiscard]] static const ModelCatalog& built_in();

  [[nodiscard]] const std::vector<ModelPreset>& presets() const noexcept { return presets_; }
  [[nodiscard]] const ModelPreset* find(std::string_view id_or_alias) const noexcept;

 private:
  std::vector<ModelPreset> presets_;
};

// Resolves a model argument: a preset id or alias, a config.json path, a model
// directory, a .safetensors file or index, or a .gguf file. Throws NotFound
// for unknown ids, ParseError for unreadable files.
[[nodiscard]] ModelSpec load_model(std::string_view model_arg);

// Builds the spec of a preset.
[[nodiscard]] ModelSpec preset_model(const ModelPreset& preset);

}  // namespace roofline
