// A scenario (phase, batch, lengths, precision, attention kernel, parallelism)
// turned into the operators of one forward pass, each with its FLOPs and its
// bytes split by tensor role. Pure functions over small structs.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "roofline/attention.h"
#include "roofline/formats.h"
#include "roofline/hardware.h"
#include "roofline/model.h"
#include "roofline/roofline.h"

namespace roofline {

enum class Phase { kPrefill, kDecode };
[[nodiscard]] std::string_view phase_name(Phase p) noexcept;
[[nodiscard]] Phase parse_phase(std::string_view text);

enum class OpKind : std::uint8_t {
  // The 17 per-layer operator types.
  kAttnNorm,
  kQProj,
  kKProj,
  kVProj,
  kRope,
  kQkMatmul,
  kSoftmax,
  kSvMatmul,
  kOProj,
  kAttnResidual,
  kMlpNorm,
  kGateProj,
  kUpProj,
  kActMul,
  kDownProj,
  kMlpResidual,
  kKvCacheWrite,
  // Model-level operators.
  kEmbedding,
  kFinalNorm,
  kLmHead,
  // Mixture of experts.
  kRouter,
  kSharedGateProj,
  kSharedUpProj,
  kSharedDownProj,
  // Multi-head latent attention (replace q/k/v projections).
  kQAProj,
  kQBProj,
  kKvAProj,
  kKvBProj,
  kKAbsorb,
  kVAbsorb,
  // Gated DeltaNet linear attention (replaces q/k/v, RoPE and the attention
  // core; o_proj stays) and the sigmoid output gate of gated softmax attention.
  kLinearInProj,  // in_proj_qkvz: q, k, v and the gate z
  kLinearBaProj,  // in_proj_ba: each value head's decay (a) and write strength (b)
  kShortConv,
  kDeltaRule,
  kGatedNorm,
  kOutputGate,
  // DeepSeek sparse attention's lightning indexer.
  kIndexerProj,
  kIndexerScore,
  kIndexerTopk,
  // Tensor and pipeline parallel communication.
  kAllReduce,
  kPipelineSend,
  kAllToAll,  // expert-parallel dispatch and combine
  // The copies an engine makes around a GEMM (EngineProfile::gemm_copies):
  // its input quantized (q8_1) or converted to F16, its F16 output converted
  // back.
  kQuantizeInput,
  kConvertInput,
  kConvertOutput,
};
inline constexpr int kOpKindCount = static_cast<int>(OpKind::kConvertOutput) + 1;
[[nodiscard]] std::string_view op_name(OpKind k) noexcept;

// The attention block's weight-bearing operators (ParamCounts::attention).
[[nodiscard]] constexpr bool is_attention_projection(OpKind k) noexcept {
  switch (k) {
    case OpKind::kQProj:
    case OpKind::kKProj:
    case OpKind::kVProj:
    case OpKind::kOProj:
    case OpKind::kQAProj:
    case OpKind::kQBProj:
    case OpKind::kKvAProj:
    case OpKind::kKvBProj:
    case OpKind::kKAbsorb:
    case OpKind::kVAbsorb:
    case OpKind::kLinearInProj:
    case OpKind::kLinearBaProj:
    case OpKind::kIndexerProj:
      return true;
    default:
      return false;
  }
}

// Formats of one operator type, overriding the plan's defaults.
struct OpPrecision {
  std::optional<Format> weights;
  std::optional<Format> act;
};

// Formats per tensor role. Unset weights use the checkpoint's native formats.
struct PrecisionPlan {
  std::optional<Format> weights;  // every linear layer except routed experts (when set separately)
  std::optional<Format> experts;  // routed experts; defaults to weights, else native experts
  Format act = Format::kBf16;     // activations and the math of weight-only layers
  // `act` is the engine's for these weights (EngineProfile::weight_activations:
  // the request named none), not the request's; for the predictions' notes.
  bool act_from_engine = false;
  Format kv = Format::kBf16;  // KV cache
  // The routed experts' math, where the engine's fused MoE quantizes their
  // activations on the fly (vLLM's FlashInfer MoE with
  // VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1: MXFP4 x MXFP8). Unset: the engine
  // profile's rule (expert_activations), else `act`. The device must compute it.
  std::optional<Format> expert_act;
  // Per-operator overrides (mixed precision): e.g. lm_head kept in bf16.
  std::array<OpPrecision, kOpKindCount> ops{};
  bool has_op_overrides = false;  // any entry of `ops` set (a fast path when not)
  // Weights in the format of one of the model's quantized releases follow
  // that release: the operators it keeps unquantized stay so (ModelSpec::
  // release_for; `ops` entries still win). Strategies, which quantize the
  // layers their plan names, turn it off.
  bool follow_release = true;
};

// Whether release `r` keeps operator kind `k` unquantized.
[[nodiscard]] inline bool release_keeps(const QuantizedRelease& r, OpKind k) noexcept {
  return (r.kept_ops >> static_cast<unsigned>(k) & 1) != 0;
}

// The names of the operators release `r` keeps, in OpKind order.
[[nodiscard]] std::vector<std::string> kept_operator_names(const QuantizedRelease& r);

// "nvfp4 as its release nvidia/... ships it: q_a_proj, ... in bf16 (weights
// and math)", for predictions' notes.
[[nodiscard]] std::string release_note(const QuantizedRelease& r);

// The release a plan follows on this model, or null: its weights' format (the
// checkpoint's own when unset) is a release's.
[[nodiscard]] inline const QuantizedRelease* followed_release(const ModelSpec& m,
                                                              const PrecisionPlan& p) noexcept {
  if (!p.follow_release || m.releases.empty()) return nullptr;
  return m.release_for(p.weights.value_or(m.native_weights));
}

// REQUIRES (checked by validate): batch, seq_len >= 1; tp, pp >= 1.
struct Scenario {
  Phase phase = Phase::kDecode;
  std::int64_t batch = 1;
  // Prefill: prompt tokens per sequence. Decode: tokens already in the cache;
  // the step adds one token per sequence and attends over seq_len + 1.
  std::int64_t seq_len = 1;
  // Prefill only: tokens of each sequence already in the KV cache before the
  // prompt (an earlier turn of a chat, a prefix-cache hit, llama-bench's
  // depth). The prompt's queries attend over them as well as causally over
  // themselves; only the prompt's own tokens go through the linear layers.
  std::int64_t cached = 0;
  PrecisionPlan precision;
  std::optional<AttentionKernel> attention;  // unset: the device's best
  double block_sparsity = 1.0;  // fraction of attention blocks computed (FA Proposition 4)
  std::int64_t tp = 1;          // tensor parallel ranks (heads, intermediate, vocab split)
  std::int64_t pp = 1;          // pipeline stages (layers split)
  // Attention data parallelism (SGLang's --enable-dp-attention, TensorRT-LLM's
  // enable_attention_dp): the tp ranks form attention_dp groups, each running
  // attention for its own batch / attention_dp sequences with the heads split
  // over tp / attention_dp ranks (the whole attention on each rank when
  // equal); the MLP and MoE layers take every group's tokens (an all-gather
  // before, a reduce-scatter after: an all-reduce's bytes). Divides tp.
  std::int64_t attention_dp = 1;
  // Expert parallelism (MoE models): the tp ranks form ep groups of tp / ep,
  // each holding num_experts / ep experts whole (their intermediate split over
  // the group's ranks) and computing the tokens routed to them. The step waits
  // for the busiest group (routing is random, so groups' loads differ). With
  // attention data parallelism the tokens reach their experts through an
  // all-to-all (dispatch) and come back through another (combine); without,
  // every rank holds every token and the MoE ends in the all-reduce TP has.
  // Divides tp and num_experts.
  std::int64_t ep = 1;
  // Decode only: prompt tokens of other requests in the same step (continuous
  // batching: chunked prefill or in-flight batching), from prompts of
  // prefill_prompt tokens. They go through every linear layer with the decode
  // tokens, and attend causally like prefill_tokens / prefill_prompt prompts.
  std::int64_t prefill_tokens = 0;
  std::int64_t prefill_prompt = 0;
  // Tokens each of those prompts had cached before its prefill_prompt own
  // ones (a prefix every request shares): their queries attend over them too.
  std::int64_t prefill_cached = 0;
  // With attention data parallelism, the most prompt tokens one rank takes a
  // step (its share of the step's token budget: a longer prompt is chunked on
  // its rank); 0: whole prompts. At most prefill_prompt matters.
  std::int64_t prefill_chunk = 0;
  // Speculative decoding with a one-layer draft head (DeepSeek-V3's MTP
  // module, EAGLE heads): a decode step runs the head draft_tokens times, one
  // token per sequence each, then the model verifies the draft_tokens + 1
  // tokens of each sequence in one pass. Each draft token is accepted with
  // probability `acceptance` while the ones before it were, so a step yields
  // tokens_per_step(s) tokens per sequence. A prefill also runs the head over
  // the prompt (it keeps a KV cache of its own). 0: plain decoding.
  std::int64_t draft_tokens = 0;
  double acceptance = 0;
};

// The scenario with no prompt tokens riding along (Scenario::prefill_tokens
// and the fields that describe them): a decode step of its own.
inline void clear_prompt_share(Scenario& s) noexcept {
  s.prefill_tokens = s.prefill_prompt = s.prefill_cached = s.prefill_chunk = 0;
}

// The acceptance of a draft token when neither the request nor the model
// gives one: DeepSeek-V3's MTP module predicts the second token with an
// acceptance rate "between 85% and 90%" (DeepSeek-V3 Technical Report, arXiv
// 2412.19437, section 5.4.3); the low end.
inline constexpr double kDefaultDraftAcceptance = 0.85;

// The tokens a speculative step yields per sequence as measured for the
// model's own head at `draft_tokens` drafts (ModelSpec::draft_tokens_per_step;
// past its last draft count, that count's figure); nullopt when the model
// publishes none, or without drafts.
[[nodiscard]] std::optional<double> measured_tokens_per_step(const ModelSpec& model,
                                                             std::int64_t draft_tokens) noexcept;

// The per-draft acceptance a whose chain 1 + a + ... + a^k yields `tokens`
// tokens a step at k = draft_tokens (at most kMaxDraftTokens; tokens held to
// [1, k + 1], NaN as 1).
[[nodiscard]] double acceptance_for_tokens_per_step(std::int64_t draft_tokens,
                                                    double tokens) noexcept;

// The acceptance a request's draft tokens run at: `given`; else the one that
// yields the model's measured tokens a step at this draft count (a chained
// MTP head accepts later drafts less often than its first, so one figure for
// every count overstates long chains); else kDefaultDraftAcceptance. 0
// without draft tokens. Throws InvalidArgument for an acceptance without
// draft tokens or outside [0, 1], and for more than kMaxDraftTokens drafts.
[[nodiscard]] double draft_acceptance(const ModelSpec& model, std::int64_t draft_tokens,
                                      std::optional<double> given);

// Tokens a speculative step yields per sequence: the model's own token plus
// the accepted run of k drafts, each accepted with probability a:
// 1 + a + a^2 + ... + a^k (Leviathan et al., "Fast Inference from
// Transformers via Speculative Decoding", ICML 2023, eq. 1). 1 without drafts.
[[nodiscard]] double tokens_per_step(const Scenario& s) noexcept;

// Whether the scenario's drafts yield the model's measured tokens a step (the
// acceptance draft_acceptance takes when none is given), so that reports can
// say where the figure came from.
[[nodiscard]] bool runs_at_measured_acceptance(const ModelSpec& model, const Scenario& s) noexcept;

// Limits that keep every product finite and every sweep bounded.
inline constexpr std::int64_t kMaxBatch = 1 << 20;
inline constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 30;
inline constexpr std::int64_t kMaxParallel = 4096;

// Throws InvalidArgument naming the bad field (ranges, tp dividing heads,
// pp not above the layer count, sparsity in (0, 1]).
void validate(const Scenario& scenario, const ModelSpec& model);

enum class OpClass : std::uint8_t {
  kMatmul,         // activations x weights on the tensor cores
  kAttention,      // activations x activations / KV cache (tensor cores)
  kElementwise,    // norms, RoPE, activation, residual, softmax (vector units)
  kMemory,         // gathers and cache writes
  kCommunication,  // collectives over the interconnect
};
[[nodiscard]] std::string_view op_class_name(OpClass c) noexcept;

// One operator of the forward pass. Quantities are per instance; `count`
// instances run per forward pass (the layers that have it). Trivial (no
// member initializers) so that an OpGraph's op array costs nothing until
// used; build_ops sets every field of each op it adds.
struct Op {
  OpKind kind;
  OpClass cls;
  bool moe_layer;      // part of an MoE layer
  bool sliding_layer;  // part of a sliding-window attention layer
  bool linear_layer;   // part of a linear-attention (Gated DeltaNet) layer
  bool draft_head;     // part of the speculative draft head (Scenario::draft_tokens)
  double count;
  double flops;
  double weight_bytes;
  double act_bytes;   // activations read + written
  double kv_bytes;    // KV cache read + written
  double vector_ops;  // dequantization work on the vector units
  Format compute;
  bool weight_only;
  bool latent_attention;  // attention over MLA's shared latent (decode, absorbed prompts)
  bool prompt_attention;  // prompt tokens attending causally (prefill, chunks)
  // Attention in the engine's own kernels, priced by the profile's figures
  // (EngineProfile::sparse_mla), not by an attention table.
  bool engine_kernel;
  // Matmul ops: the fraction of the SMs doing useful work after wave
  // quantization and tile padding (realistic mode; 1 in ideal mode).
  double wave_efficiency;
  // Attention: blocks the kernel can run in parallel (decode occupancy) and
  // the kernel's own achievable fraction (NaN: the device's matmul fraction).
  double parallel_blocks;
  double kernel_efficiency;
  // Kernel launches per instance (0: fused into the previous op's kernel).
  double launches;
  // Matmul ops: the GEMM's shape per group (m tokens, n x k weights), the
  // groups run as one kernel (MoE experts) and the stored weight format.
  // Attention in a fused kernel, the key of an attention table
  // (roofline/attention_table.h): gemm_m the streams (sequences x KV heads),
  // gemm_n the query heads per KV head, gemm_k the elements a stream attends
  // (tokens x key head dim), gemm_groups the op's share of the kernel (its
  // part of the key + value dims); `weights` the KV cache's format. All 0 for
  // unfused attention.
  double gemm_m, gemm_n, gemm_k, gemm_groups;
  // Prompt attention in a fused kernel: the queries' tokens over the keys'
  // (gemm_k's span): 1 for a prompt alone, less for one after cached tokens.
  double query_share;
  // Routed-expert matmuls: the tokens the MoE layer routes (the whole batch,
  // every expert-parallel group's) and its expert-parallel groups; 0 else.
  // The key of a measured MoE layer shape (roofline/moe_table.h).
  double moe_tokens, moe_ep;
  Format weights;
  // Communication ops: the GPUs taking part and each one's message (elements).
  double ranks, message_elements;

  [[nodiscard]] double bytes() const noexcept { return weight_bytes + act_bytes + kv_bytes; }
};

// Sets `op` to an op of `kind` and `cls` with no work yet, computing in
// `compute`; its layer flags, draft flag and count stay as they are. Field by
// field: `op = Op{}` compiles to a `rep stos`, whose start-up cost was a
// tenth of a prediction. A field added to Op must be set here too (the size
// check misses one that lands in padding).
inline void clear_work(Op& op, OpKind kind, OpClass cls, Format compute) noexcept {
  static_assert(sizeof(Op) == 176, "a field was added to Op: initialize it here");
  op.kind = kind;
  op.cls = cls;
  op.flops = op.weight_bytes = op.act_bytes = op.kv_bytes = op.vector_ops = 0;
  op.compute = compute;
  op.weight_only = op.latent_attention = op.prompt_attention = op.engine_kernel = false;
  op.wave_efficiency = 1;
  op.parallel_blocks = op.kernel_efficiency = 0;
  op.launches = 1;
  op.gemm_m = op.gemm_n = op.gemm_k = op.gemm_groups = 0;
  op.query_share = 1;
  op.moe_tokens = op.moe_ep = 0;
  op.weights = Format{};
  op.ranks = op.message_elements = 0;
}

inline constexpr int kMaxOps = 160;

struct OpGraph {
  std::array<Op, kMaxOps> ops;
  int size = 0;
  AttentionKernel attention = AttentionKernel::kFa2;
  Format weights = Format::kBf16;  // resolved formats
  Format experts = Format::kBf16;
  double tokens = 0;            // tokens processed by this forward pass (per pipeline)
  double distinct_experts = 0;  // per MoE layer, D(B) (0 when not MoE)
  // Sliding-window layers whose attention the engine release's kernel
  // computed over the whole context (ModelOptions::window_masking), and
  // whether that kernel was its split-KV one.
  double window_masked_layers = 0;
  bool window_masked_split_kv = false;
};

// The format activations of format `act` are held in between kernels under
// `options`: the engine's own (EngineProfile::activation_storage, ggml's F32)
// in realistic mode where it gives one, else held_activation_format(act).
[[nodiscard]] Format stored_activation_format(const ModelOptions& options, Format act) noexcept;

// Builds the operators of one forward pass on one tensor-parallel rank.
// Throws like validate(), and Unsupported when the kernel or the formats
// cannot run on the device.
[[nodiscard]] OpGraph build_ops(const ModelSpec& model, const Device& device, const Scenario& s,
                                const ModelOptions& options = {});
// The same into `*out`, which predict() fills in place: the graph's fixed
// array is not copied.
void build_ops(const ModelSpec& model, const Device& device, const Scenario& s,
               const ModelOptions& options, OpGraph* out);

// The weight parameters of each linear operator kind over the whole model
// (every layer, every expert): what a per-operator format applies to. Routed
// experts apart from the rest (attention, dense MLPs, shared experts, LM
// head); the dense MLP kinds split the dense MLP parameters (biases included)
// evenly, as the routed and shared expert kinds split theirs.
struct LinearParameters {
  std::array<double, kOpKindCount> dense{};
  std::array<double, kOpKindCount> routed{};
};
[[nodiscard]] LinearParameters linear_parameters(const ModelSpec& model);

// Expected number of distinct experts that `tokens` tokens touch when each
// picks top_k of num_experts uniformly: E * (1 - (1 - k/E)^tokens).
[[nodiscard]] double distinct_experts(double num_experts, double top_k, double tokens) noexcept;

// The busiest of `ep` expert-parallel groups under uniform random routing:
// each group holds num_experts / ep experts and takes a binomial share of the
// token-expert pairs and of the touched experts; the busiest sits the
// expected maximum of ep standard normals above the mean (normal
// approximation). ep = 1: the whole layer's pairs and D.
struct ExpertLoad {
  double pairs = 0;    // token-expert pairs the group computes
  double experts = 0;  // distinct experts of the group that the pairs touch
};
[[nodiscard]] ExpertLoad busiest_expert_group(double num_experts, double top_k, double tokens,
                                              double ep) noexcept;

// Expected maximum of n independent standard normals (n >= 1; 0 at n = 1).
[[nodiscard]] double expected_max_normal(double n) noexcept;

}  // namespace roofline
