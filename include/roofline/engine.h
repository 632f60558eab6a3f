// Serving engines and the measured efficiency of their kernels. An engine
// profile (data/engines/*.json) says what the software stack adds to the
// roofline: the cost of a kernel launch with and without CUDA graphs, a fixed
// host cost per forward pass, which measured GEMM tables describe its kernels
// and the formats it cannot run. A GEMM table (data/kernels/gemm/*.json,
// distilled by scripts/distill-kernel-tables from kernels measured inside
// vLLM, SGLang and TensorRT-LLM) gives, per format, the efficiency against the
// datasheet roofline over log2(m) x log2(n k). A MoE table (roofline/moe_table.h,
// data/kernels/moe/*.json, from the same source) prices a MoE layer's fused
// expert kernel as a whole. An attention table (roofline/attention_table.h,
// data/kernels/attention/*.json, from the same source) prices the engine's
// attention calls.
//
// Example:
//   const EngineRegistry& engines = EngineRegistry::built_in();
//   ModelOptions o;
//   o.engine = &engines.get("vllm");
//   Prediction p = predict(model, registry.get("h200"), scenario, o);
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/attention_table.h"
#include "roofline/comm_table.h"
#include "roofline/formats.h"
#include "roofline/hardware.h"
#include "roofline/moe_table.h"
#include "roofline/roofline.h"
#include "roofline/workload.h"

namespace roofline {

// Efficiency per format over log2(m) x log2(n k), for one device and engine.
struct GemmTable {
  struct Entry {
    std::string kernel;  // the kernel the engine ran ("torch.nn.functional.linear", ...)
    double floor_s = 0;  // the fastest call measured: a latency floor
    // Not this engine's measurement: "<engine> <version>" whose entry of the
    // same device stands in for it (EngineProfile::borrowed_gemm_formats).
    std::string borrowed_from;
    std::int64_t rows = 0;
    std::int64_t capped_rows = 0;   // measured above the roofline (operands in L2), capped at 1
    std::vector<float> efficiency;  // row-major [log2 m][log2 nk]
  };
  std::string id;  // "<device>-<engine>"
  std::string device, engine, engine_version, confidence, citation;
  int log2_m0 = 0, log2_nk0 = 0, m_points = 0, nk_points = 0;
  std::map<std::string, Entry, std::less<>>
      formats;  // bf16, fp8, fp8_block, nvfp4, int4, int8, int8_wo
  // The engine's cost of computing a dynamic fp8 activation scale, per call,
  // on a grid of log2(m k) from log2_mk0 (empty when not measured). The fp8
  // rows were collected with dynamic scales and include it; a checkpoint with
  // static input scales (per-tensor fp8 as NVIDIA's ModelOpt ships it) skips it.
  int log2_mk0 = 0;
  std::vector<double> fp8_dynamic_scale_s;
  std::string fp8_dynamic_scale_citation;
  // The static quantize kernel per call on the same grid (empty when not
  // measured): what an fp8 row still holds once the scale's computation is
  // taken off, and what an engine whose kernel before the GEMM writes the
  // input in fp8 (EngineProfile::fp8_prequantized) does not run.
  std::vector<double> fp8_static_quantize_s;
  std::string fp8_static_quantize_citation;

  [[nodiscard]] const Entry* find(std::string_view format_key) const noexcept;
  // Bilinear in (log2 m, log2 n k), held at the grid's edges. Never above 1.
  [[nodiscard]] double efficiency(const Entry& e, double m, double nk) const noexcept;
  // The same at log2(max(m, 1)) and log2(max(nk, 1)) already taken.
  [[nodiscard]] double efficiency_log2(const Entry& e, double log2_m,
                                       double log2_nk) const noexcept;
  // The dynamic-scale cost of one call with m x k activations: linear between
  // the grid's points in log2(m k), held at its edges; 0 when not measured.
  [[nodiscard]] double fp8_dynamic_scale(double mk) const noexcept;
  // The static quantize kernel's time for m x k activations, the same way.
  [[nodiscard]] double fp8_static_quantize(double mk) const noexcept;
};

// Strict: unknown or missing keys, a grid of the wrong size, efficiencies
// outside (0, 1] are errors naming `origin` and the key.
[[nodiscard]] GemmTable parse_gemm_table(std::string_view json_text, const std::string& origin);

// One measured GEMM: its table key ("bf16", "fp8", ...), shape, time and
// efficiency against the device's datasheet roofline.
struct GemmMeasurement {
  std::string format_key, kernel;
  double m = 0, nk = 0, time_s = 0, efficiency = 0;
};
// Measurements as a table in the format of data/kernels/gemm/ (the way
// scripts/distill-kernel-tables makes them): per format the median efficiency
// of each cell of round(log2 m) x round(log2 n k), capped at 1; empty cells
// take the nearest measured cell of their row, then of their column; the
// fastest call is the latency floor. Throws Unsupported when nothing usable is given.
[[nodiscard]] GemmTable gemm_table_from_measurements(const std::vector<GemmMeasurement>& rows,
                                                     const std::string& device,
                                                     const std::string& engine,
                                                     const std::string& citation);
// A table as the JSON parse_gemm_table reads.
[[nodiscard]] nlohmann::json to_json(const GemmTable& table);

// A sourced figure of an engine (value NaN when the profile leaves it to the device).
struct EngineFigure {
  double value = std::nan("");
  Confidence confidence = Confidence::kUnknown;
  std::string source, note;
  [[nodiscard]] bool known() const noexcept { return !std::isnan(value); }
};

// How the engine's own files store a format a request names. llama.cpp's
// Q4_K_M keeps the LM head, and the V and down projections of half the
// layers, in Q6_K; its MXFP4 MoE files keep every weight but the experts in
// Q8_0. Predictions stream these bytes unless a checkpoint file gives exact ones.
struct FileMix {
  enum class Layers : std::uint8_t { kAll, kUseMoreBits };
  struct Role {
    std::vector<OpKind> ops;  // empty with non_expert: every linear but the routed experts
    bool non_expert = false;
    Format format = Format::kQ8_0;
    Layers layers = Layers::kAll;
  };
  Format format = Format::kQ4_K_M;  // the format requested
  bool experts = false;             // names the routed experts' format (MoE files)
  std::vector<Role> roles;
  std::string source, note;

  // The share of `layers` layers a role covers: 1 for kAll; for
  // kUseMoreBits llama-quant.cpp's use_more_bits(i, n): i < n/8, i >= 7n/8
  // or (i - n/8) % 3 == 2 (16 of 32 layers).
  [[nodiscard]] static double layer_share(Layers rule, std::int64_t layers) noexcept;
};

// How an engine's scheduler fills a step ("scheduler" in data/engines/*.json):
// the serving simulation (roofline/serving.h) runs it.
struct EngineScheduler {
  bool known = false;  // false: the engine's profile has none (the reference's is used)
  // A step with prompt work carries no decode tokens (SGLang runs prefill
  // batches apart); else prompts and decode tokens share steps (vLLM, TRT-LLM).
  bool prefill_first = false;
  bool chunked_prefill = true;  // prompts split across steps to fill the budget
  // Admission takes a request's whole length of KV cache (TensorRT-LLM's
  // GUARANTEED_NO_EVICT); else the prompt's, growing, with preemption (vLLM, SGLang).
  bool reserve_whole = false;
  // With pipeline stages, one micro-batch per stage in flight (vLLM's batch
  // queue, TensorRT-LLM's and SGLang's PP loops); else one batch at a time.
  bool pipeline_micro_batches = false;
  // With micro-batches, whether max_running caps each one (TensorRT-LLM's
  // PyTorch executor admits pp x max_batch_size requests) or the instance.
  bool running_cap_per_micro_batch = false;
  std::string running_cap_source;
  // Each step's batch is formed as the step before it starts, the CPU's
  // scheduling overlapped with the GPU's step (TensorRT-LLM's and SGLang's
  // overlap schedulers, vLLM's async scheduling): a newcomer waits a step
  // more. Else each batch is formed as its step starts.
  bool formed_a_step_ahead = false;
  // Prompts found in the KV cache skip their prefill (vLLM's automatic
  // prefix caching, SGLang's radix cache, TensorRT-LLM's block reuse).
  bool prefix_cache = false;
  // The scheduler can hold prompts back for a fuller step, off unless a
  // deployment sets it (TensorRT-LLM's batch_wait_timeout_iters and
  // batch_wait_max_tokens_ratio; ServingScenario::batch_wait_iters).
  bool batch_wait = false;
  // The scheduler can take in new requests only every N decode steps, off
  // (every step) unless a deployment sets it (SGLang's
  // --scheduler-recv-interval; ServingScenario::scheduler_recv_interval).
  bool recv_interval = false;
  // The scheduler can balance prompts over attention data-parallel ranks,
  // holding them until every rank has one, off unless a deployment sets it
  // (TensorRT-LLM's attention_dp_config.enable_balance;
  // ServingScenario::adp_balance).
  bool adp_balance = false;
  bool ahead_with_pipeline_parallel = true;  // false: pipeline stages turn it off (vLLM)
  std::string ahead_since;                   // the release that made it the default ("" always)
  EngineFigure token_budget;                 // tokens per step: decode tokens and prompt chunks
  EngineFigure max_running;                  // requests one instance runs at once
  // The KV cache's paging: a request holds whole blocks of this many tokens
  // (vLLM's block_size, SGLang's page_size, TensorRT-LLM's tokens_per_block);
  // unknown: token-granular.
  EngineFigure kv_block_tokens;
  // The KV cache's memory, a share (kv_memory.value) of the device's whole
  // memory, which weights, activations and cache share (vLLM's
  // gpu_memory_utilization, SGLang's mem_fraction_static), or of what the
  // weights and activations leave free (kv_memory_of_free: TensorRT-LLM's
  // free_gpu_memory_fraction). The same share means a larger cache under the
  // second rule: 0.9 of an 80 GB GPU beside 60 GB of weights is 12 GB of
  // cache, 0.9 of the 20 GB left is 18 GB.
  EngineFigure kv_memory;
  bool kv_memory_of_free = false;
  // Releases before `kv_memory_before` used `kv_memory_earlier` (vLLM's
  // default rose from 0.9 to 0.92); "" none.
  std::string kv_memory_before;
  EngineFigure kv_memory_earlier;
  // Where the engine sizes its cache after a memory-profiling pass, whose
  // peak it subtracts with the weights: a forward of its token budget, then
  // the sampler over one row of logits a dummy request, one a running request
  // up to its limit (vLLM's profile_run) or one in all (TensorRT-LLM's
  // KvCacheCreator, a single request of the budget). The source's key; ""
  // where the activations of the pass at hand stand in.
  std::string kv_profile_pass_source;
  bool kv_profile_pass_one_row = false;
  [[nodiscard]] bool kv_profile_pass() const noexcept { return !kv_profile_pass_source.empty(); }
  // The pass's sampler (vLLM's _dummy_sampler_run, top-k and top-p on every
  // row) where the profile measures it: the bytes it holds a logit of the
  // whole vocabulary on the rank that sizes the cache, by the path the
  // release samples on by default, PyTorch's sort (kv_profile_sort_bytes) or
  // FlashInfer's kernels (kv_profile_flashinfer_bytes, in
  // kv_profile_flashinfer_releases). Its peak and the forward's are apart (the
  // forward's activations are freed before it runs). Unknown: one fp32 row a
  // sequence beside the forward.
  EngineFigure kv_profile_sort_bytes;
  EngineFigure kv_profile_flashinfer_bytes;
  struct ReleaseRange {
    std::string from, before;  // "" open at that end
  };
  std::vector<ReleaseRange> kv_profile_flashinfer_releases;
  std::string kv_profile_flashinfer_source;
  [[nodiscard]] bool kv_profile_sampler_known() const noexcept {
    return kv_profile_sort_bytes.known();
  }
  // Whether release `version` ("" or unparsed: the current one, the newest
  // range's) samples on FlashInfer by default.
  [[nodiscard]] bool kv_profile_flashinfer(std::string_view version) const noexcept;
  // The sampler's bytes a logit in release `version`; 0 where not measured.
  [[nodiscard]] double kv_profile_sampler_bytes(std::string_view version) const noexcept;
  // The sampler rows of the pass for a pool of `budget` tokens and `running` requests.
  [[nodiscard]] std::int64_t kv_profile_pass_rows(std::int64_t budget,
                                                  std::int64_t running) const noexcept {
    return kv_profile_pass_one_row ? 1 : std::max<std::int64_t>(1, std::min(running, budget));
  }
  // Defaults that follow the device's memory (vLLM and SGLang size their
  // budgets by it): the first rule the device meets replaces the figures.
  struct Rule {
    double memory_at_least_bytes = 0;
    std::string except_architecture;  // "" or an architecture the rule skips
    std::int64_t token_budget = 0;
    std::int64_t max_running = 0;  // 0: the figure's
    std::string source;
  };
  std::vector<Rule> rules;
  // The limits NVIDIA AIConfigurator's generator sets for this engine's
  // benchmark deployments (ServingRecipe::kAiConfigurator), from a worker
  // rank's batch size bs and the prompt length: bs requests running, graphs
  // for batches up to bs, and token budgets of bs + isl + prompt_headroom
  // (aggregated), isl + prompt_headroom (a prefill worker) and bs (a decode
  // worker, or the engine's own when decode_budget_is_batch is false), each
  // rounded up to block_tokens. prompt_within_chunk: the prompt part stays
  // within the engine's own budget (SGLang's chunk size), decode tokens beside
  // it; mixed_steps: prompt and decode tokens share steps whatever the policy.
  struct AiConfigurator {
    bool known = false;
    EngineFigure prompt_headroom, block_tokens;
    bool prompt_within_chunk = false;
    bool decode_budget_is_batch = true;
    bool mixed_steps = false;
    // Prefill workers form batches a step ahead like the engine (TensorRT-LLM's
    // rule turns its overlap scheduler off on them).
    bool prefill_workers_ahead = true;
    // Whether its deployments keep the engine's prefix cache (TensorRT-LLM's
    // template turns block reuse off); unset: as the engine does.
    std::optional<bool> prefix_cache;
    // The share its deployments give the KV cache, under the engine's rule
    // (TensorRT-LLM's templates write free_gpu_memory_fraction 0.80); unknown:
    // the engine's own.
    EngineFigure kv_memory;
    std::string source;  // of the choices
  } aiconfigurator;
  // How the engine's own throughput benchmark sizes its scheduler when the
  // run gives no limits (ServingRecipe::kBenchmarkTuning; TensorRT-LLM's
  // `trtllm-bench throughput`, its tuning heuristic): from the device's
  // memory in GiB times the GPUs, less the checkpoint's elements times the
  // bytes its quantization gives them, a share (kv_memory) estimates the KV
  // cache, and the requests of the dataset's mean length it holds, capped at
  // batch_cap and divided by the pipeline stages, set max_batch_size; that
  // times (1 + isl / osl), capped at tokens_cap, sets max_num_tokens. Each is
  // rounded up to the step of its first tier whose `below` it is under, and
  // held at least at its minimum. Formats absent from bytes_per_weight are
  // not tuned: the engine's default limits apply. Chunked prefill is as
  // chunked_prefill sets it; without it the budget holds the longest prompt
  // and a full batch of decode tokens.
  struct BenchmarkTuning {
    struct Tier {
      double below = 0;  // 0: every value (the last tier)
      double step = 1;
    };
    bool known = false;
    EngineFigure kv_memory, batch_cap, tokens_cap, min_batch, min_tokens;
    std::vector<Tier> batch_tiers, token_tiers;
    // The bytes of one checkpoint element by the format of its weights; a
    // format stored packed counts the elements its file holds (NVFP4: two
    // values a byte, one 8-bit scale a 16-value block).
    struct FormatBytes {
      Format format = Format::kBf16;
      double bytes_per_element = 2;
      double stored_elements_per_weight = 1;
    };
    std::vector<FormatBytes> bytes_per_weight;
    bool chunked_prefill = false;
    std::string source, bytes_source, chunked_source;
  } benchmark_tuning;
  std::string policy_source, chunked_source, admission_source, pipeline_source, formed_source,
      prefix_cache_source, batch_wait_source, recv_interval_source, adp_balance_source, note;

  // Whether batches are formed a step ahead at `pp` pipeline stages in
  // release `version` ("" or unparsed: the current one).
  [[nodiscard]] bool a_step_ahead(std::int64_t pp, std::string_view version) const noexcept;
  // The budget and the running cap on `device` (the first rule it meets).
  [[nodiscard]] std::int64_t budget_on(const Device& device) const noexcept;
  [[nodiscard]] std::int64_t running_on(const Device& device) const noexcept;
  [[nodiscard]] const Rule* rule_for(const Device& device) const noexcept;
  // The KV cache's share in release `version` ("" or unparsed: the current
  // one), or in AIConfigurator's deployments of it where they set one.
  [[nodiscard]] double kv_memory_share(std::string_view version,
                                       bool aiconfigurator_deployment = false) const noexcept;
  // The bytes of KV cache one GPU of `capacity` holds beside `weights` and
  // `activations` at `share` under this engine's rule (kv_memory_of_free).
  [[nodiscard]] double kv_room_bytes(double share, double capacity, double weights,
                                     double activations) const noexcept;
};

// Releases whose grouped MoE GEMM computes a padded workspace whatever the
// tokens (vLLM 0.11.1-0.12 on Hopper: DeepGEMM's contiguous layout, every
// local expert's segment rounded up to `block_rows`, the unused rows
// computed as expert 0's): for experts in `format` on `architecture`, a
// MoE layer takes at least the two grouped GEMMs over
//   rows = round_up(tokens x top_k + local experts x (block_rows - 1), block_rows)
// at the dense efficiency of the same kernel library (`gemm_tables`' entry
// `gemm_format` for the device), plus the activation's pass over those rows.
struct PaddedMoeLayout {
  bool on = false;
  std::string kernel;
  Format format = Format::kFp8;
  std::string architecture;
  std::string from_version, before_version;  // the releases: [from, before)
  std::int64_t excluded_tp = 0;              // a tensor-parallel size the rule leaves out
  std::string excluded_tp_from;              // ... from this release
  std::int64_t block_rows = 128;
  std::string gemm_tables, gemm_format;  // the measured engine and its table key
  std::string gemm_source;               // why that table: a key of `sources`
  std::string source;                    // a key of `sources`
};

// Releases whose MoE layers of one expert format ran another kernel family
// by default than the one the engine's measured table blends for it (vLLM's
// MXFP4 experts on Hopper ran Marlin until its builds carried OpenAI's
// triton_kernels; on Ampere every release runs them on Marlin). A
// deployment's own choice (--moe-kernel) overrides it.
struct MoeKernelRelease {
  std::string format;          // a MoE table key (moe_table_key): "mxfp4"
  std::string architecture;    // the devices': "hopper"
  std::string family;          // one of kMoeKernelFamilies (roofline/moe_table.h)
  std::string before_version;  // the releases before this one ("": every release)
  // A MoE table key whose entry of `family` prices `format` where the table
  // has no entry of the family for `format` itself: the same kernel run on
  // another weight type (Marlin's MoE GEMM takes int4 and MXFP4 weights
  // alike). "": none.
  std::string measured_as;
  std::string source;  // a key of `sources`
};

// Where the engine has no MoE table of its own for an architecture, another
// engine's table measured on the device (or the nearest device of the
// architecture) whose MoE kernels are the engine's own (SGLang's fused Triton
// MoE is adapted from vLLM's, and both run the same Marlin MoE GEMM) stands
// in for it, as a derived table.
struct MoeTableStandIn {
  std::string architecture;  // the devices': "ampere"
  std::string engine;        // an engine id whose tables stand in: "sglang"
  std::string source;        // a key of `sources`
};

// Releases whose attention kernel computes a sliding-window layer over the
// whole context, masking the keys outside the window instead of skipping
// their tiles: vLLM's Triton unified attention, which runs attention-sink
// models (gpt-oss) where its FlashAttention cannot (sinks need FlashAttention
// 3, Hopper only). Its two kernels learned to skip at different releases:
// the one of steps with prompt or draft tokens and of large decode batches
// (2D) in 0.11.0, the split-KV one of small decode batches (3D) in 0.14.0. A
// decode step of one token a sequence takes the split-KV kernel while
//   (floor(seqs / query_tile) + seqs) x KV heads <= split_kv_max_programs,
// query_tile = floor(max(query_rows, q heads a KV head rounded up to a power
// of two) / q heads a KV head) tokens.
struct WindowMasking {
  std::string architecture;          // the devices': "ampere"
  std::string kernel;                // what runs: "vLLM's Triton unified attention"
  std::string prompt_kernel_before;  // releases before this one mask in the 2D kernel ("": none)
  std::string split_kv_before;       // ... in the split-KV kernel ("": none)
  EngineFigure split_kv_max_programs;
  EngineFigure query_rows;
  std::string source;  // a key of `sources`
};

// An expert format a MoE kernel family holds padded in memory: each expert's
// slice rounded up to `intermediate_multiple` rows and the hidden size to
// `hidden_multiple` (vLLM's MXFP4 layouts: Marlin 128 and 256). The family
// holds them so where the deployment or the release chose it, and by default
// on `default_on`'s architectures (the engine's only kernel for the format).
struct MoeWeightPadding {
  std::string format;  // a format id: "mxfp4"
  std::string family;  // one of kMoeKernelFamilies
  std::int64_t intermediate_multiple = 1, hidden_multiple = 1;
  std::vector<std::string> default_on;  // architectures
  std::string source;                   // a key of `sources`
};

struct EngineProfile {
  std::string id, name;
  std::string kind;      // "serving", "local" or "reference"
  std::string versions;  // which versions the figures describe
  std::map<std::string, std::string> sources;
  bool decode_cuda_graphs = false;
  std::string decode_cuda_graphs_source;
  // The largest decode batch (sequences) the captured graphs cover; larger
  // ones, and every step carrying prompt tokens, launch eagerly (or
  // piecewise: the prefill figure). Unknown: every decode batch.
  EngineFigure graph_max_batch;
  // A smaller cap below a tensor-parallel size on smaller GPUs (SGLang: 256
  // under TP 4 on GPUs under 160 GiB); below_tp 0: none.
  struct SmallGraphCap {
    std::int64_t below_tp = 0;
    double below_memory_bytes = 0;
    EngineFigure max_batch;
  } graph_max_batch_small;
  // Whether a step replays the decode graphs: graphs on, no prompt tokens
  // riding along, and the batch within the captured sizes on this device at
  // this tensor-parallel size (`captured` > 0: the deployment's own largest
  // size instead of the engine's defaults).
  [[nodiscard]] bool replays_graphs(const Device& d, std::int64_t tp, std::int64_t batch,
                                    bool prompt_tokens, std::int64_t captured = 0) const noexcept;
  // The largest step the captured graphs cover on this device at this
  // tensor-parallel size (`captured` > 0: the deployment's own); 0: any.
  [[nodiscard]] std::int64_t captured_size(const Device& d, std::int64_t tp,
                                           std::int64_t captured = 0) const noexcept;
  // Whether a step of `tokens` tokens on one rank finds no graph at all: the
  // engine's prompt steps replay graph pieces (launch_eager_s known) only up to
  // the captured size, and vLLM's dispatcher runs larger steps without any.
  [[nodiscard]] bool past_captured_graphs(const Device& d, std::int64_t tp, std::int64_t tokens,
                                          std::int64_t captured = 0) const noexcept {
    const std::int64_t cap = captured_size(d, tp, captured);
    return launch_eager_s.known() && cap > 0 && tokens > cap;
  }
  EngineFigure launch_decode_s;   // per kernel in a decode step (graphs replayed, when used)
  EngineFigure launch_prefill_s;  // per kernel in a prefill (eager, or graph pieces)
  // The host's time to issue one kernel of a step run with no graph at all,
  // where the engine's prompt steps otherwise replay graph pieces (vLLM's
  // piecewise graphs); unknown: its prompt steps already run eagerly, at the
  // prefill figure. The host runs ahead of the GPU (launches are asynchronous),
  // so such a step takes the longer of its GPU work, each kernel followed by
  // the graphs' gap (launch_decode_s), and its kernels times this figure.
  EngineFigure launch_eager_s;
  // Builds dated before `launch_prefill_before` (yyyymmdd; 0: no such rule)
  // ran another runtime, whose eager kernels cost `launch_prefill_before_s`
  // (TensorRT-LLM's TensorRT engines before its PyTorch backend).
  std::int32_t launch_prefill_before = 0;
  EngineFigure launch_prefill_before_s;
  // The eager launch cost of a build dated `build` (0: the current one).
  [[nodiscard]] const EngineFigure& launch_prefill(std::int32_t build) const noexcept {
    return build > 0 && build < launch_prefill_before ? launch_prefill_before_s : launch_prefill_s;
  }
  // The launch cost per kernel of a step: the graphs' when it replays them,
  // else the host's eager dispatch when the deployment turned graphs down or
  // the step is `past_captured` (past_captured_graphs), else the engine's own
  // prompt-step cost for a build dated `build`.
  [[nodiscard]] const EngineFigure& launch_figure(bool replays_graphs, GraphPolicy graphs,
                                                  std::int32_t build,
                                                  bool past_captured = false) const noexcept {
    if (replays_graphs) return launch_decode_s;
    if ((graphs != GraphPolicy::kEngine || past_captured) && launch_eager_s.known())
      return launch_eager_s;
    return launch_prefill(build);
  }
  EngineFigure step_overhead_s;  // fixed host cost per forward pass (scheduling, sampling)
  // MoE layers with shared experts: when `on`, the engine runs the shared
  // experts on a second CUDA stream beside the routed ones in passes of at
  // most `max_tokens` tokens (unknown: any), only in replayed decode graphs
  // when `graphs_only`, so the two overlap. Off: one after the other.
  struct SharedExpertsStream {
    bool on = false;
    EngineFigure max_tokens;
    bool graphs_only = false;
    std::string source;  // a key of `sources`
  } shared_experts_stream;
  PaddedMoeLayout padded_moe;                         // none unless `on`
  std::vector<MoeKernelRelease> moe_kernel_releases;  // at most one per architecture
  std::vector<MoeTableStandIn> moe_table_stand_ins;   // at most one per architecture
  std::vector<MoeWeightPadding> moe_weight_padding;   // at most one per format and family
  std::vector<WindowMasking> window_masking;          // at most one per architecture
  // The rule release `version` of an attention-sink model follows on `d`
  // (null: its kernels skip the tiles outside the window, as the current
  // release's do), and which of its kernels mask.
  [[nodiscard]] const WindowMasking* window_masking_for(std::string_view version, const Device& d,
                                                        bool* prompt_kernel,
                                                        bool* split_kv) const noexcept;
  // The padding of `format`'s experts on `d` under the family `chosen` (the
  // deployment's or the release's; empty: the engine's default there), or null.
  [[nodiscard]] const MoeWeightPadding* moe_padding(std::string_view format,
                                                    std::string_view chosen,
                                                    const Device& d) const noexcept;
  // The rule release `version` follows on `d`, or null: `version` empty or
  // unparsed is the current release, which only a rule of every release
  // (no before_version) covers.
  [[nodiscard]] const MoeKernelRelease* moe_kernel_release(std::string_view version,
                                                           const Device& d) const noexcept;
  // The padded layout a release runs at tensor-parallel size `tp` on `d`,
  // or null: `version` empty or unparsed is the current release.
  [[nodiscard]] const PaddedMoeLayout* padded_moe_for(std::string_view version, const Device& d,
                                                      std::int64_t tp) const noexcept;
  // GEMMs: the engine whose measured tables describe these kernels ("" none:
  // the device's fractions), and a factor on those efficiencies for an engine
  // that runs other kernels than the measured one (1 when it is the measured one).
  std::string gemm_tables;
  EngineFigure gemm_table_scale;
  // Formats whose entries in the engine's tables are not its serving kernels
  // (the collector ran them another way than serving does): each is priced by
  // the entry of another measured engine's table of the same device.
  struct BorrowedFormat {
    std::string format_key;  // a GEMM table key: "nvfp4", ...
    std::string from;        // the measured engine lending its entry
    std::string source;      // the key in `sources` that says why
  };
  std::vector<BorrowedFormat> borrowed_gemm_formats;
  // The engine's own matrix-vector kernels (GEMMs of at most gemv_max_m rows
  // without a measured table) keep a bounded number of bytes in flight per
  // SM, so they stream at most this many bytes/s per SM: on HBM parts, with
  // 2-3x the bandwidth per SM of GDDR ones, below the device's fraction.
  EngineFigure gemv_bandwidth_per_sm_Bps;
  EngineFigure gemv_max_m;
  // The engine's own 16-bit matrix-vector kernels (at most gemv_max_m rows,
  // without a measured table) stream their weights at this fraction of the
  // device's achievable bandwidth (its bandwidth_fraction, a STREAM-like
  // copy), by architecture: generated GEMVs that fall short of a copy. An
  // architecture without a figure: the device's fraction. weight_only_stream
  // is relative to this rate.
  std::map<std::string, EngineFigure, std::less<>> gemv_stream;
  // Weight-only GEMMs (int8, int4 weights with 16-bit activations) without a
  // measured table stream their weights at this fraction of the rate the
  // engine's 16-bit GEMMs reach: the dequantizing kernels (Inductor's int8
  // GEMV, tinygemm) fall short of a plain bf16 GEMV.
  std::map<Format, EngineFigure> weight_only_stream;
  // The engine's GEMMs of block-quantized weights above gemv_max_m rows
  // (llama.cpp's MMQ): a tile of weights is dequantized into shared memory,
  // then multiplied in `peak`'s format, and the two barely overlap, so
  //   time = stream * bytes / bandwidth + flops / (peak rate * compute)
  // with the figures of the device's architecture (none: the device's fractions).
  struct DequantGemm {
    std::string kernel;
    std::vector<Format> formats;
    Format peak = Format::kInt8;
    struct Figures {
      EngineFigure stream;   // the weight stream's time over its datasheet time
      EngineFigure compute;  // share of the peak the multiplications reach
    };
    std::map<std::string, Figures, std::less<>> architectures;
    // Builds dated before `cublas_before` (yyyymmdd; 0: no such rule) ran
    // these GEMMs above `cublas_above_rows` rows another way: the weights
    // dequantized to F16 by a kernel of their own, then cuBLAS (llama.cpp
    // before pull request #8075, which made MMQ the default on int8 tensor
    // cores), priced as that pass at the achievable bandwidth plus
    // cublas_gemm's F16 GEMM.
    std::int32_t cublas_before = 0;
    double cublas_above_rows = 0;
    std::string cublas_before_source;
    // Whether a build dated `build` (0: the current one) takes that path for
    // a GEMM of `rows` rows of weights in `weights`.
    [[nodiscard]] bool dequantizes_for_cublas(std::int32_t build, double rows,
                                              Format weights) const noexcept {
      return build > 0 && build < cublas_before && rows > cublas_above_rows &&
             std::find(formats.begin(), formats.end(), weights) != formats.end();
    }
  };
  DequantGemm dequant_gemm;
  // The engine's 16-bit GEMMs above gemv_max_m rows that go to cuBLAS
  // (llama.cpp's F16 weights: cublasGemmEx with CUBLAS_COMPUTE_16F, the
  // tensor cores accumulating in FP16, twice the FP32-accumulate rate on
  // GeForce parts):
  //   time = max(bytes / achievable bandwidth, flops / (rate * compute))
  // `rate` the device's FP16-accumulate peak when fp16_accumulate, `compute`
  // the figure of the device's architecture (none: the device's fractions).
  struct CublasGemm {
    std::string kernel;
    std::vector<Format> formats;
    bool fp16_accumulate = false;
    std::string source;                                        // the code that says so
    std::map<std::string, EngineFigure, std::less<>> compute;  // by architecture
  };
  CublasGemm cublas_gemm;
  // Per-tensor fp8 GEMMs whose input the kernel before them already writes in
  // fp8 with the GEMM's static scale (TensorRT-LLM: the attention kernel for
  // o_proj, SwiGLU for down_proj, and the all-reduce fused with the residual
  // and RMSNorm for QKV and gate/up): their table rows, which hold the static
  // quantize kernel, lose its time (GemmTable::fp8_static_quantize).
  struct Fp8Prequantized {
    std::vector<OpKind> ops;                    // always
    std::vector<OpKind> with_allreduce_fusion;  // where allreduce_residual_rmsnorm applies
    std::string source;
  };
  Fp8Prequantized fp8_prequantized;
  // Weights in `weights` whose math the engine runs with activations in
  // `act` on these architectures (a kernel of both formats, e.g. W8A8).
  struct ActivationRule {
    Format weights = Format::kMxfp4;
    std::vector<std::string> architectures;
    std::vector<std::uint64_t> architecture_keys;  // architecture_key() of each, set on load
    Format act = Format::kMxfp8;
    std::string kernel, source;
  };
  // Routed experts whose math runs in another format than the activations
  // ask: the engine's fused MoE for experts in `weights` on these
  // architectures quantizes the activations to `act` on the fly (TensorRT-LLM
  // runs gpt-oss's MXFP4 experts as W4A8 MXFP4 x MXFP8 on Blackwell).
  using ExpertActivation = ActivationRule;
  std::vector<ExpertActivation> expert_activations;
  // The activations the engine runs a checkpoint's linear layers with when
  // the request names none: fp8 weights as W8A8 where the GPU computes fp8
  // (vLLM, SGLang and TensorRT-LLM load fp8 checkpoints so; weight-only fp8
  // is their path for GPUs without fp8 tensor cores).
  std::vector<ActivationRule> weight_activations;
  // An fp8 cache of latent (MLA) attention that the engine's decode kernel
  // cannot read on these architectures: each attention layer converts its
  // whole share of the KV pool (every allocated slot, not just the live
  // tokens) to bf16 every forward with decode tokens, then attends in bf16
  // (SGLang's FlashAttention 3 backend on Hopper, sglang issue #35291).
  struct LatentCacheCast {
    std::vector<std::string> architectures;
    std::vector<std::uint64_t> architecture_keys;  // architecture_key() of each, set on load
    EngineFigure bandwidth_efficiency;             // the cast's share of the datasheet bandwidth
    std::string kernel, source;
  };
  std::optional<LatentCacheCast> latent_cache_cast;
  // DeepSeek sparse attention (MLA models with a lightning indexer) as the
  // engine runs it. Prompt tokens attend in the absorbed (latent, MQA) form
  // like decode tokens, unless their sequence spans at most mha_prompts_up_to
  // tokens (then the expanded MHA form). A path, by architecture and cache
  // format, names the kernels: each computes a token's query heads in whole
  // tiles (a rank's heads padded up to one) over every one of the top-k
  // slots (FlashMLA masks invalid ones, it does not skip them), at its own
  // efficiency. A path without a decode kernel leaves decode tokens to the
  // engine's dense-MLA attention; a rank of fewer heads than
  // prompt_on_decode_kernel_below runs its prompt tokens on the decode kernel.
  struct SparseMla {
    struct Kernel {
      EngineFigure head_tile;
      EngineFigure efficiency;  // of the bf16 dense peak
    };
    struct Path {
      std::string architecture;
      std::uint64_t architecture_key = 0;  // architecture_key(), set on load
      std::optional<Format> kv;            // the cache format (bf16 covers fp16); none: any
      Kernel prompt;
      std::optional<Kernel> decode;
      EngineFigure prompt_on_decode_kernel_below;  // a rank's query heads; unknown: never
      std::string note;
    };
    std::vector<Path> paths;
    EngineFigure mha_prompts_up_to;  // tokens of the prompt's sequence; unknown: none
    std::string kernel, source;
  };
  std::optional<SparseMla> sparse_mla;
  // The format the engine keeps activations in between its kernels (the
  // hidden state, norms' and GEMMs' outputs, attention's Q and O) when it is
  // not the model's: ggml writes every op's result in F32 (llama.cpp,
  // Ollama). Unset: 16-bit (the activations' format, or bf16 under
  // narrower GEMM inputs).
  std::optional<Format> activation_storage;
  std::string activation_storage_source;
  // The copies the engine makes around its GEMMs, each a kernel of its own
  // (ggml: llama.cpp, Ollama). A GEMM of weights in `quantized_formats`
  // (matrix-vector or MMQ) reads a copy of its input quantized to
  // `quantized_input_bits` an element (q8_1); a cuBLAS GEMM (weights in
  // `cublas_formats` past gemv_max_m rows, or a build's
  // dequantize-then-cuBLAS path) reads an F16 copy of its input and writes
  // F16, converted back to the stored format after it. predict() adds them
  // to the graph as quantize_input, convert_input and convert_output.
  struct GemmCopies {
    std::vector<Format> quantized_formats;
    EngineFigure quantized_input_bits;
    std::vector<Format> cublas_formats;
    std::string source;
  };
  std::optional<GemmCopies> gemm_copies;
  std::map<std::string, std::string> gemm_kernels;  // format -> kernel family (documentation)
  std::string attention_kernels;
  std::vector<std::string> fusions;
  bool rope_in_attention = false;  // fusions holds "rope_in_attention"
  // fusions holds "allreduce_residual_rmsnorm": under tensor parallelism
  // (without attention data parallelism) the residual add and the RMSNorm
  // after each all-reduce run inside the all-reduce kernel.
  bool allreduce_residual_rmsnorm = false;
  std::vector<Format> unsupported;  // formats the engine cannot load
  std::vector<FileMix> file_mixes;
  EngineScheduler scheduler;
  std::string notes;
  std::string origin;

  [[nodiscard]] bool runs(Format f) const noexcept;
  // The rule for experts in `weights` with 16-bit activations `act` on
  // `device`, or nullptr (other activations were asked for: they stay).
  [[nodiscard]] const ExpertActivation* expert_activation(Format weights, Format act,
                                                          const Device& device) const noexcept;
  // The rule for a checkpoint's linear layers in `weights` on `device` when
  // the request sets no activation format, or nullptr (16-bit activations).
  [[nodiscard]] const ActivationRule* weight_activation(Format weights,
                                                        const Device& device) const noexcept;
  // Sets `plan`'s activations (and act_from_engine) to the rule's for its
  // weights, the checkpoint's `native` ones when unset, on `device`; false,
  // the plan unchanged, where none applies. The cache keeps its format (the
  // engines' "auto" cache is the model's dtype).
  bool apply_weight_activation(PrecisionPlan* plan, Format native,
                               const Device& device) const noexcept;
  // The cast rule when `model`'s decode reads its fp8 latent cache on
  // `device`, or nullptr: plain MLA models only (sparse-attention models run
  // the engine's sparse kernels), an fp8 (e4m3) cache only.
  [[nodiscard]] const LatentCacheCast* casts_latent_cache(const ModelSpec& model, Format kv,
                                                          const Device& device) const noexcept;
  // The sparse-attention path `model` takes on `device` with a cache in `kv`,
  // or nullptr: MLA models with sparse attention, on a path the rule names.
  [[nodiscard]] const SparseMla::Path* sparse_mla_path(const ModelSpec& model, Format kv,
                                                       const Device& device) const noexcept;
  // The mix of the engine's files for a graph of these formats, or nullptr.
  [[nodiscard]] const FileMix* file_mix(Format weights, Format experts, bool moe) const noexcept;
  [[nodiscard]] std::string citation(const std::string& source_key) const;
};

[[nodiscard]] EngineProfile parse_engine(std::string_view json_text, const std::string& origin);

// The built-in engines and GEMM tables (embedded at build time).
class EngineRegistry {
 public:
  [[nodiscard]] static const EngineRegistry& built_in();

  [[nodiscard]] const EngineProfile& get(std::string_view id) const;  // NotFound listing the ids
  [[nodiscard]] const EngineProfile* find(std::string_view id) const noexcept;
  [[nodiscard]] const std::vector<EngineProfile>& engines() const noexcept { return engines_; }
  [[nodiscard]] const std::vector<GemmTable>& gemm_tables() const noexcept { return tables_; }

  // The GEMM table for `device` and `engine`: measured on the device itself,
  // else the table of the nearest measured device of the same architecture
  // (kDerivedTable); nullptr where the engine has no tables or no related
  // device was measured.
  [[nodiscard]] const GemmTable* gemm_table(const Device& device, const EngineProfile& engine,
                                            EfficiencySource* source) const noexcept;

  // Adds a table; replaces one of the same id.
  void add_table(GemmTable table);
  // A copy without the tables measured on `device` (leave-one-out validation:
  // the device then borrows its architecture's nearest other table).
  [[nodiscard]] EngineRegistry without_tables_of(std::string_view device) const;

  // The MoE tables, and the one for `device` and `engine` picked as
  // gemm_table() picks (the engine's `gemm.tables` names the measured engine):
  // the device's own (kMeasuredMoeTable), else the nearest measured device of
  // the same architecture, else the table of the engine the profile's
  // moe_table_stand_ins names for the architecture, picked the same way
  // (both kDerivedMoeTable); nullptr when none.
  [[nodiscard]] const std::vector<MoeTable>& moe_tables() const noexcept { return moe_tables_; }
  [[nodiscard]] const MoeTable* moe_table(const Device& device, const EngineProfile& engine,
                                          EfficiencySource* source) const noexcept;
  // The same, with the MoE kernel `family` a deployment chose
  // (with_moe_kernel): the family's own entries where the picked table
  // measures it, else those of another engine's table of the same device
  // (then kDerivedMoeTable), else the picked table's. Built once and kept.
  [[nodiscard]] const MoeTable* moe_table(const Device& device, const EngineProfile& engine,
                                          std::string_view family, EfficiencySource* source) const;
  // The MoE kernel families some table of `device` (or of the device its
  // tables stand in for) measures, in kMoeKernelFamilies order.
  [[nodiscard]] std::vector<std::string_view> moe_kernel_families(const Device& device) const;
  // Adds a MoE table; replaces one of the same id.
  void add_moe_table(MoeTable table);

  // The all-reduce tables, and the one for `device` and `engine` picked as
  // gemm_table() picks (own device, else the nearest of its architecture).
  [[nodiscard]] const std::vector<CommTable>& comm_tables() const noexcept { return comm_tables_; }
  [[nodiscard]] const CommTable* comm_table(const Device& device, const EngineProfile& engine,
                                            bool* own) const noexcept;

  // The attention tables, and the one for `device` and `engine` picked
  // as gemm_table() picks (kMeasuredAttentionTable for the device's own,
  // kDerivedAttentionTable for the nearest of its architecture).
  [[nodiscard]] const std::vector<AttentionTable>& attention_tables() const noexcept {
    return attention_tables_;
  }
  [[nodiscard]] const AttentionTable* attention_table(const Device& device,
                                                      const EngineProfile& engine,
                                                      EfficiencySource* source) const noexcept;

 private:
  std::vector<EngineProfile> engines_;
  std::vector<GemmTable> tables_;
  std::vector<MoeTable> moe_tables_;
  // The tables moe_table(..., family, ...) built, by "<picked table id>/<family>";
  // shared by copies until one changes its MoE tables.
  struct MoeKernelCache {
    std::mutex mutex;
    std::map<std::string, std::pair<std::unique_ptr<const MoeTable>, bool>, std::less<>> tables;
  };
  std::shared_ptr<MoeKernelCache> moe_kernel_cache_ = std::make_shared<MoeKernelCache>();
  std::vector<CommTable> comm_tables_;
  std::vector<AttentionTable> attention_tables_;
};

// An engine as JSON (`roofline engines`, GET /api/engines): its figures with
// their sources, and the devices its GEMM tables were measured on.
[[nodiscard]] nlohmann::json to_json(const EngineProfile& engine);

// `options` with `engine` and its GEMM and MoE tables for `device` resolved
// (null or the reference engine: no engine). predict() resolves it itself when only
// `engine` is set; it also throws Unsupported for formats the engine cannot run.
// `options` (already resolved for `engine` on `device`) with what the
// engine's release `version` runs differently at tensor-parallel size `tp`:
// the padded MoE layout (EngineProfile::padded_moe_for) and its GEMM table
// from `tables`. An empty version, or a release without such a rule, changes nothing.
// Checks a release as a request names it ("0.14.0", "1.2.0rc3"): at most 40
// letters, digits and . - + _. InvalidArgument naming `what` otherwise. A
// release the profile cannot order (no leading numbers) is the current one.
void check_engine_version(std::string_view version, std::string_view what);

[[nodiscard]] ModelOptions with_engine_release(ModelOptions options, const Device& device,
                                               std::string_view version, std::int64_t tp,
                                               const EngineRegistry& tables);

[[nodiscard]] ModelOptions with_engine(ModelOptions options, const Device& device,
                                       const EngineProfile* engine);
// The same with the tables of `tables` (where no table applies, an empty one,
// so that predict() does not resolve a built-in table).
[[nodiscard]] ModelOptions with_engine(ModelOptions options, const Device& device,
                                       const EngineProfile* engine, const EngineRegistry& tables);

// Checks that `options.moe_kernel` (when set) can price anything: the engine
// has MoE tables, and on `device` (when given) some engine measured the
// family. InvalidArgument naming `what` otherwise.
void check_moe_kernel(const ModelOptions& options, const Device* device, std::string_view what);

// The GEMM table key of a matmul's formats ("bf16", "fp8", "int4", ...), or
// empty where no table measures such kernels.
[[nodiscard]] std::string_view gemm_table_key(Format weights, Format act,
                                              bool weight_only) noexcept;

// An engine build's date, "YYYY-MM-DD" or "YYYY-MM" (a month: its last day,
// as builds "of May 2024" are), as yyyymmdd; years 2000-2099. InvalidArgument
// naming `what` otherwise.
[[nodiscard]] std::int32_t parse_build_date(std::string_view text, std::string_view what);
// yyyymmdd as "YYYY-MM-DD".
[[nodiscard]] std::string format_build_date(std::int32_t date);

// "engine", "decode-only" or "off" (GraphPolicy); parse_graph_policy takes
// those and throws InvalidArgument naming `what` for anything else.
[[nodiscard]] std::string_view graph_policy_name(GraphPolicy g) noexcept;
[[nodiscard]] GraphPolicy parse_graph_policy(std::string_view text, std::string_view what);

}  // namespace roofline
