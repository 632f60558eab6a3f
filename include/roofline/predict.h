// Whole-model prediction: per-operator times on a device, totals, memory,
// generation (TTFT, TPOT), KV-cache analysis, capacity and kernel comparison.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "roofline/attention.h"
#include "roofline/hardware.h"
#include "roofline/model.h"
#include "roofline/roofline.h"
#include "roofline/workload.h"

namespace roofline {

// The time of one operator (all `count` instances of it in a forward pass).
// Trivial, like Op: predict() sets every field of the timings it uses.
struct OpTiming {
  Seconds time_s;          // share of its kernel's time, plus its launches
  Seconds memory_time_s;   // its own bytes / effective bandwidth
  Seconds compute_time_s;  // its own work / effective peak
  Seconds overhead_s;      // launch overhead (realistic mode)
  Bound bound;
  FlopsPerByte ai;
  EfficiencySource source;  // matmuls: where their efficiency came from
  double efficiency;        // matmuls from a table: the fraction of the roofline used (else 0)
};

// Memory on one device (one tensor- and pipeline-parallel rank).
struct MemoryEstimate {
  Bytes weights_bytes = 0;
  Bytes kv_cache_bytes = 0;
  Bytes activation_bytes = 0;  // peak transient activations of one layer plus logits
  Bytes total_bytes = 0;
  Bytes capacity_bytes = 0;
  // Weights, cache and activations within the capacity; under a serving
  // engine's KV memory rule (EngineScheduler::kv_memory, kv_rule_engine set by
  // predict() in realistic mode), the cache within the room the rule gives it.
  bool fits = false;
  const EngineProfile* kv_rule_engine = nullptr;  // null: no engine's rule
  Bytes kv_room_bytes = 0;                        // the rule's room for the KV cache (one GPU)
};

struct Prediction {
  Mode mode = Mode::kRealistic;
  OpGraph graph;
  std::array<OpTiming, kMaxOps> timings;
  Seconds time_s = 0;
  Seconds memory_time_s = 0;   // sum over ops
  Seconds compute_time_s = 0;  // sum over ops
  Seconds overhead_s = 0;      // launches and the engine's fixed cost per step
  Seconds engine_step_s = 0;   // the engine's fixed host cost in this pass (in overhead_s)
  // Decode with an fp8 latent cache the engine's kernel cannot read
  // (engine->latent_cache_cast): the whole pool's cast to bf16 this forward,
  // in time_s and memory_time_s (0 otherwise).
  Seconds latent_cache_cast_s = 0;
  bool cuda_graphs = false;  // the engine replays CUDA graphs for this pass
  // The pass has more tokens a rank than the engine's captured graphs cover,
  // where its prompt steps replay graph pieces: it runs with none at all
  // (EngineProfile::past_captured_graphs).
  bool past_captured_graphs = false;
  // A pass with no graph at all, where the engine gives the host's cost a
  // kernel (EngineProfile::launch_eager_s): the host's time to issue its
  // kernels, and what of it the GPU waits for beyond its own work (in time_s
  // and overhead_s; 0 when the GPU's work is longer).
  Seconds host_dispatch_s = 0;
  Seconds host_wait_s = 0;
  Seconds communication_s = 0;
  const EngineProfile* engine = nullptr;  // null: the reference engine
  // Ideal mode: the engine the options named, whose costs it leaves out (null: none named).
  const EngineProfile* engine_not_applied = nullptr;
  // The engine's file layout that stores some of the pass's tensors in another
  // format than the request's (EngineProfile::file_mixes), or null; and the
  // weight bytes it adds on this rank (negative: fewer).
  const FileMix* file_mix = nullptr;
  Bytes file_mix_bytes = 0;
  std::int32_t engine_build = 0;              // ModelOptions::engine_build
  GraphPolicy graphs = GraphPolicy::kEngine;  // ModelOptions::graphs
  const GemmTable* gemm_table = nullptr;
  EfficiencySource gemm_table_source = EfficiencySource::kDevice;
  // The MoE table that priced the MoE layers' expert work (null: none did).
  const MoeTable* moe_table = nullptr;
  EfficiencySource moe_table_source = EfficiencySource::kMeasuredMoeTable;
  // Of the MoE layer classes it priced, those at their own measured shape and
  // layout (roofline/moe_table.h), not the grid.
  std::int32_t moe_layers_by_shape = 0;
  // ... those at another model's measured curve (MoeTable::other_model_shape),
  // and the engine release's kernel family where it ran them (null: none).
  std::int32_t moe_layers_other_model = 0;
  const MoeKernelRelease* moe_release = nullptr;
  // Bytes a rank's MoE kernel holds beyond the experts' own (in the memory
  // estimate's weights; engine_moe_padding_bytes).
  double moe_padding_bytes = 0;
  // The engine release's padded MoE layout (ModelOptions::padded_moe), the
  // layer kinds it set the time of (its padded GEMMs outlasting the table's
  // layer) and the rows of the first such layer's workspace.
  const PaddedMoeLayout* padded_moe = nullptr;
  std::int32_t moe_layers_padded = 0;
  double moe_padded_rows = 0;
  // The engine release's attention kernel that computed the sliding-window
  // layers over the whole context (ModelOptions::window_masking; null: none
  // did; graph.window_masked_layers says how many, and on which kernel).
  const WindowMasking* window_masking = nullptr;
  // The attention table that priced the attention (null: none did).
  const AttentionTable* attention_table = nullptr;
  EfficiencySource attention_table_source = EfficiencySource::kMeasuredAttentionTable;
  Flops flops = 0;
  Bytes weight_bytes = 0;  // streamed in this pass (MoE: the experts touched)
  Bytes act_bytes = 0;
  Bytes kv_bytes = 0;
  Bytes bytes = 0;
  double tokens_per_s = 0;  // prefill: prompt tokens/s; decode: generated tokens/s
  // Decode: tokens a step yields per sequence (1; more with draft tokens,
  // tokens_per_step(scenario)), which tokens_per_s counts.
  double tokens_per_step = 1;
  Bound bound = Bound::kMemory;  // which side most of the time is spent on
  MemoryEstimate memory;
};

// One forward pass (a prefill of seq_len tokens per sequence, or one decode
// step over seq_len cached tokens). Throws InvalidArgument / Unsupported.
[[nodiscard]] Prediction predict(const ModelSpec& model, const Device& device, const Scenario& s,
                                 const ModelOptions& options = {});

// Memory only (no timing); used by capacity searches.
[[nodiscard]] MemoryEstimate estimate_memory(const ModelSpec& model, const Device& device,
                                             const Scenario& s);

// The peak activations of an engine's memory-profiling pass (vLLM's
// profile_run): a forward of `tokens` prompt tokens, then a sampler over the
// logits of `sampler_rows` sequences. With `sampler_bytes_per_logit` (the
// engine's measured sampler, EngineScheduler::kv_profile_sampler_bytes) the
// sampler holds that much a logit of the whole vocabulary on the rank that
// sizes the cache, and the forward's hidden states, after the forward's other
// activations are freed: the peak is the larger of the two. Without it (0), one fp32 row a
// sequence beside the forward. An engine whose KV sizing subtracts the pass
// (EngineScheduler::kv_profile_pass) leaves its cache that much smaller.
[[nodiscard]] Bytes profile_pass_activation_bytes(const ModelSpec& model, const Device& device,
                                                  const Scenario& s, std::int64_t tokens,
                                                  std::int64_t sampler_rows,
                                                  double sampler_bytes_per_logit = 0);

struct EngineScheduler;  // roofline/engine.h
struct EngineProfile;    // roofline/engine.h

// The weight bytes on one rank that `engine`'s file layout for the plan's
// formats adds (or takes away) against the formats themselves
// (EngineProfile::file_mixes: llama.cpp's Q6_K tensors in Q4_K_M files, the
// serving engines' 16-bit LM head): what predict() streams and its memory
// estimate holds, for the estimates made without a prediction. 0 with no
// engine, no mix for these formats, or a checkpoint file (exact bytes).
[[nodiscard]] Bytes engine_file_mix_bytes(const EngineProfile* engine, const ModelSpec& model,
                                          const Device& device, const Scenario& s);

// The padded expert layout `engine`'s MoE kernel holds the plan's experts in
// (EngineProfile::moe_weight_padding: vLLM's Marlin MXFP4 layout rounds each
// expert's slice up to 128 rows and the hidden size to 256), under the family
// `moe_kernel` (the deployment's), else `release`'s where it names the
// experts' format, else the engine's default on `device`; null: none.
[[nodiscard]] const MoeWeightPadding* engine_moe_padding(const EngineProfile* engine,
                                                         const ModelSpec& model,
                                                         const Device& device, const Scenario& s,
                                                         std::string_view moe_kernel,
                                                         const MoeKernelRelease* release);

// The bytes on one rank that layout holds beyond the experts' own; 0 without one.
[[nodiscard]] Bytes engine_moe_padding_bytes(const EngineProfile* engine, const ModelSpec& model,
                                             const Device& device, const Scenario& s,
                                             std::string_view moe_kernel,
                                             const MoeKernelRelease* release);

// The activations `rule`'s KV sizing subtracts beside the weights, for a pool
// of `budget` tokens and `running` requests: its profiling pass where it runs
// one (EngineScheduler::kv_profile_pass) and that takes more, else `at_hand`
// (the activations of the pass the estimate is for). `version`: the engine's
// release, which sets the pass's sampler path ("": the current one).
[[nodiscard]] Bytes kv_sizing_activation_bytes(const EngineScheduler& rule, const ModelSpec& model,
                                               const Device& device, const Scenario& s,
                                               Bytes at_hand, std::int64_t budget,
                                               std::int64_t running, std::string_view version = "");

// Weight bytes per device for the resolved formats (all experts, not only the touched ones).
[[nodiscard]] Bytes weight_memory(const ModelSpec& model, const Scenario& s);

struct GenerateResult {
  Seconds ttft_s = 0;  // prefill of the prompt (first token)
  // With cached tokens (an earlier turn): the first token were they computed
  // again with the prompt, a fresh prompt of both (no prefix cache); 0 without.
  Seconds ttft_recomputed_s = 0;
  Seconds tpot_s = 0;              // mean time per output token after the first
  Seconds e2e_s = 0;               // ttft + all decode steps
  double output_tokens_per_s = 0;  // batch * gen / e2e
  double decode_tokens_per_s = 0;  // batch / tpot
  Prediction prefill;
  Prediction first_decode;     // at context = prompt
  Prediction last_decode;      // at context = prompt + gen - 1
  MemoryEstimate peak_memory;  // at the final context
};

// Prefill of `prompt` tokens then `gen` decode steps with the context growing
// from prompt to prompt + gen - 1 (gen - 1 steps after the first token). A
// scenario's `cached` tokens come before the prompt (an earlier turn): the
// prompt attends over them and the contexts start there.
[[nodiscard]] GenerateResult generate(const ModelSpec& model, const Device& device,
                                      Scenario scenario, std::int64_t prompt, std::int64_t gen,
                                      const ModelOptions& options = {});

struct KvFormatRow {
  Format format;
  Bytes bytes_per_token = 0;     // all layers, whole model (not per rank)
  Bytes total_bytes = 0;         // at the context and batch
  double saving = 0;             // vs the 16-bit baseline, 0..1
  double crossover_context = 0;  // context where a decode step reads more KV than weights
  // Set by the kv_report overload with a device (0 otherwise): one decode step
  // at the report's context with this KV format, and the first row's step over it.
  Seconds decode_step_s = 0;
  double speedup = 0;
};

struct KvReport {
  std::int64_t context = 0;
  std::int64_t batch = 1;
  // Weight bytes one decode step of the batch reads (native or chosen
  // weights): every layer's, the LM head, one embedding row per token; for
  // MoE only the experts the batch touches. What the crossover compares with.
  Bytes weight_bytes = 0;
  Bytes resident_weight_bytes = 0;  // all the weights in memory (weight_memory)
  // Linear-attention layers' fixed state of one sequence (the delta rule's in
  // its own format, the convolution's in the activations'), beside the KV
  // cache whatever its format or the context; 0 without linear attention.
  Bytes state_bytes_per_sequence = 0;
  std::vector<KvFormatRow> rows;
};

// KV cache bytes per token and at a context, per KV format, and the context
// at which reading the KV cache costs more than reading the weights a decode
// step reads (whole model: tensor and pipeline parallelism set to 1). Throws
// like build_ops.
[[nodiscard]] KvReport kv_report(const ModelSpec& model, const Device& device, const Scenario& s);
// The same with the decode step predicted on `device` for each KV format
// (weights and activations as in `s`; its phase is taken as decode), as
// `roofline kv` shows. Throws as predict() does.
[[nodiscard]] KvReport kv_report(const ModelSpec& model, const Device& device, Scenario s,
                                 const ModelOptions& options);

// One attention kernel in a side-by-side comparison (`roofline attention`).
struct AttentionComparisonRow {
  const AttentionKernelInfo* kernel = nullptr;  // the catalog's entry
  bool supported = false;                       // false: the device cannot run it (no times)
  Seconds attention_time_s = 0;                 // QK^T, softmax and SV, all layers
  Bytes attention_bytes = 0;                    // their bytes moved, all layers
  Seconds time_s = 0;                           // the whole pass with this kernel
  double speedup_vs_first = 0;                  // first supported kernel's time over this one's
};

// The pass of `s` predicted once per attention kernel of the catalog, in
// catalog order (s.attention is ignored). Throws as predict() does.
[[nodiscard]] std::vector<AttentionComparisonRow> compare_attention(const ModelSpec& model,
                                                                    const Device& device,
                                                                    Scenario s,
                                                                    const ModelOptions& options);

struct Capacity {
  std::int64_t max_batch = 0;    // at the scenario's context (0: not even one fits)
  std::int64_t max_context = 0;  // at the scenario's batch, at most the model's context window
  std::int64_t max_context_by_memory = 0;  // what memory alone allows
  std::int64_t context_window = 0;         // the model's max_position_embeddings (0: not stated)
  Bytes capacity_bytes = 0;
  // The serving engine whose rule sized the KV cache (EngineScheduler::kv_memory):
  // its share of the whole memory, or of what the weights and activations leave.
  // Null: no engine's rule, the cache may take all the memory left.
  const EngineProfile* kv_memory_engine = nullptr;
  double kv_memory_share = 0;
  bool kv_memory_of_free = false;
};

// With `engine` (null: none) a serving engine whose profile has its own scheduler, the KV
// cache gets only what its memory rule gives it in the current release, as
// `roofline serving` sizes it; else all the memory the weights leave. The
// weights are held as the engine's files and its MoE kernel's layout hold them
// (`moe_kernel` and `release` as for engine_moe_padding_bytes).
[[nodiscard]] Capacity capacity(const ModelSpec& model, const Device& device, const Scenario& s,
                                const EngineProfile* engine = nullptr,
                                std::string_view moe_kernel = {},
                                const MoeKernelRelease* release = nullptr);
// The capacity of the deployment `p` predicted: its engine, and the weights as
// its prediction held them (Prediction::file_mix_bytes and moe_padding_bytes).
[[nodiscard]] Capacity capacity(const ModelSpec& model, const Device& device, const Scenario& s,
                                const Prediction& p);

}  // namespace roofline
