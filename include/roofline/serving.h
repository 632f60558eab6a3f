// Serving under load: time to first token and time per output token of C
// clients in a closed loop (each sends its next request when the last one
// finishes, as benchmarks such as aiperf and vLLM's benchmark_serving do)
// against engine instances with continuous batching.
//
// The method is a discrete-event simulation of the benchmark, not a formula
// (docs/SERVING.md says why): every client sends at once, then again as each
// request finishes, `rounds` requests each. Each instance runs one step at a
// time and fills it as its engine's scheduler does (EngineScheduler: a token
// budget shared by decode tokens and prompt chunks, a cap on running
// requests, prefill-first or mixed steps); a request takes a KV slot while it
// runs (the cache has the memory the engine gives it: EngineScheduler::
// kv_memory, a share of the whole memory or of what the weights leave). Each step costs
// what predict() says a decode step of that many requests at their mean
// context costs, carrying that many prompt tokens. Aggregated: one pool of
// instances serves both phases. Disaggregated: prefill workers hand each
// prompt's KV cache to decode workers.
//
// Example:
//   ServingScenario s;
//   s.isl = 1024; s.osl = 256; s.concurrency = 64; s.step.tp = 2;
//   ModelOptions o; o.engine = &EngineRegistry::built_in().get("vllm");
//   ServingResult r = predict_serving(model, registry.get("h200"), s, o);
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "roofline/predict.h"

namespace roofline {

// Requests each client sends by default: AIConfigurator's deployment guide
// benchmarks with `concurrency * 10` requests to dilute the first batch
// (github.com/ai-dynamo/aiconfigurator, docs/dynamo_deployment_guide.md).
inline constexpr std::int64_t kDefaultRounds = 10;
// The most requests one client may send in a simulation.
inline constexpr std::int64_t kMaxRounds = 1000;
// The most distinct prompts a prompt pool may hold.
inline constexpr std::int64_t kMaxPromptPool = std::int64_t{1} << 20;
// The most steps batch waiting may hold prompts back in a row, and the
// longest receive interval.
inline constexpr std::int64_t kMaxBatchWaitIters = 100000;
inline constexpr std::int64_t kMaxRecvInterval = 100000;

// Prefill-to-decode KV transfer between nodes: kNodeLinkBps (hardware.h).
// Within one NVLink domain the device's interconnect carries it.

enum class ServingMode : std::uint8_t { kAggregated, kDisaggregated };

// Whose settings the engine runs with: its own defaults, or the limits
// NVIDIA AIConfigurator's generator sets for benchmark deployments
// (rule_plugin/benchmark/<engine>.rule): from the worker's batch size and the
// prompt length, the requests a worker runs, its token budget, the batch sizes
// it captures CUDA graphs for, and SGLang's mixed chunks.
// The engine's defaults; the limits NVIDIA AIConfigurator's generator sets
// for benchmark deployments; or the limits TensorRT-LLM's own throughput
// benchmark (`trtllm-bench throughput`) tunes for a run that gives none
// (EngineScheduler::BenchmarkTuning).
enum class ServingRecipe : std::uint8_t { kEngineDefaults, kAiConfigurator, kBenchmarkTuning };
// "engine", "aiconfigurator" or "trtllm-bench"; InvalidArgument otherwise.
[[nodiscard]] ServingRecipe parse_serving_recipe(const std::string& text);
[[nodiscard]] std::string_view serving_recipe_name(ServingRecipe r) noexcept;
// "agg" or "disagg"; InvalidArgument otherwise.
[[nodiscard]] ServingMode parse_serving_mode(const std::string& text);

// A scheduler behaviour a deployment may set for itself: kEngine follows the
// engine's rule for its release; kOn and kOff are the deployment's choice.
enum class DeploymentSwitch : std::uint8_t { kEngine, kOn, kOff };
// "engine", "on" or "off"; InvalidArgument naming `what` otherwise.
[[nodiscard]] DeploymentSwitch parse_switch(std::string_view what, const std::string& text);
[[nodiscard]] std::string_view switch_name(DeploymentSwitch s) noexcept;

struct ServingScenario {
  std::int64_t isl = 1024;  // prompt tokens per request
  std::int64_t osl = 256;   // output tokens per request
  // Random lengths: each request's prompt and output drawn uniformly from
  // [isl_min, isl] and [osl_min, osl], as a benchmark's random dataset makes
  // them (InferenceMAX's and SGLang's bench_serving: [ratio x L, L]; vLLM's
  // `vllm bench serve`: [L (1 - r), L (1 + r)]), from a generator of fixed
  // seed. 0: every request exactly isl and osl.
  std::int64_t isl_min = 0, osl_min = 0;
  std::int64_t concurrency = 1;  // clients, each with one request in flight
  // Formats, attention kernel and tensor parallelism of a step; its batch,
  // phase and context follow from the fields above. step.tp is the
  // aggregated instance's tensor-parallel size.
  Scenario step;
  ServingMode mode = ServingMode::kAggregated;
  // Disaggregated: workers of each kind, each one engine instance of *_tp GPUs.
  std::int64_t prefill_workers = 1, prefill_tp = 1, decode_workers = 1, decode_tp = 1;
  // Disaggregated: the prefill workers' attention data parallelism and
  // expert parallelism, each dividing prefill_tp (the decode workers' are
  // step.attention_dp and step.ep, dividing decode_tp). 1 when aggregated.
  std::int64_t prefill_attention_dp = 1;
  std::int64_t prefill_ep = 1;
  // Aggregated: independent instances (data-parallel replicas) the clients
  // are spread over, each of step.tp x step.pp GPUs.
  std::int64_t replicas = 1;
  std::int64_t rounds = kDefaultRounds;  // requests each client sends
  // Tokens at the start of every prompt shared by all requests and kept by
  // the engine's prefix cache (a system prompt): each instance holds their KV
  // once, and no prompt computes them again. 0 to isl - 1.
  std::int64_t shared_prefix = 0;
  // Prompts drawn with replacement from this many distinct ones, as a
  // benchmark's dataset gives them (aiperf's synthetic dataset holds 100 by
  // default); with the engine's prefix cache a prompt seen before skips its
  // prefill while the cache still holds it. 0: every prompt unique.
  // Aggregated serving only.
  std::int64_t prompt_pool = 0;
  // The engine's scheduler unless set (0): tokens per step, requests running
  // (both pools); they override the recipe's.
  std::int64_t token_budget = 0, max_running = 0;
  // The largest step the deployment captures CUDA graphs for (tokens; vLLM's
  // --max-cudagraph-capture-size), both pools; 0: the recipe's or the engine's
  // (EngineProfile::captured_size). Past it a step runs with no graph.
  std::int64_t graph_capture_size = 0;
  // Batch waiting, where the engine's scheduler has it (EngineScheduler::
  // batch_wait: TensorRT-LLM's batch_wait_timeout_iters and
  // batch_wait_max_tokens_ratio): a step that would carry prompts beside
  // decode tokens holds them back, up to batch_wait_iters steps in a row,
  // until its tokens reach batch_wait_ratio of the token budget. 0 steps: off
  // (the engine never waits then, whatever the ratio). Aggregated serving
  // without attention data parallelism (the engine skips it there).
  std::int64_t batch_wait_iters = 0;
  double batch_wait_ratio = 0;
  // Attention-DP balance, where the engine's scheduler has it
  // (EngineScheduler::adp_balance: TensorRT-LLM's attention_dp_config with
  // enable_balance): prompts wait until every attention data-parallel rank has
  // one (then up to adp_batching_wait_iters steps more), or until a count the
  // engine keeps every other step reaches adp_timeout_iters. The defaults are
  // TensorRT-LLM's. Aggregated serving with attention_dp > 1.
  bool adp_balance = false;
  std::int64_t adp_timeout_iters = 50, adp_batching_wait_iters = 10;
  // The scheduler's receive interval, where the engine has one
  // (EngineScheduler::recv_interval: SGLang's --scheduler-recv-interval): new
  // requests are taken in only every N decode steps (a step with prompt tokens,
  // or an idle loop, takes them at once). 0 or 1: every step. Aggregated
  // serving without attention data parallelism.
  std::int64_t scheduler_recv_interval = 0;
  // The KV cache's memory share under the engine's rule (EngineScheduler::
  // kv_memory): of the whole memory (vLLM's --gpu-memory-utilization, SGLang's
  // --mem-fraction-static) or of what the weights and activations leave
  // (TensorRT-LLM's free_gpu_memory_fraction). 0: the engine's or the recipe's.
  double kv_memory_share = 0;
  ServingRecipe recipe = ServingRecipe::kEngineDefaults;
  // The recipe's worker batch sizes (0: the aggregated instance's clients;
  // disaggregated, 1 for a prefill worker and the clients over the decode
  // workers for a decode worker).
  std::int64_t prefill_batch = 0, decode_batch = 0;
  // The engine's release when known ("0.12.0"): behaviour a profile dates by
  // version follows it; "" or unparsed, the profile's current behaviour.
  std::string engine_version;
  // Overlap scheduling as the deployment set it: the next step's batch formed
  // while one runs (vLLM's --async-scheduling, opt-in before 0.14.0; SGLang's
  // overlap schedule; TensorRT-LLM's overlap scheduler). An engine that
  // cannot overlap with pipeline parallelism still does not.
  DeploymentSwitch overlap = DeploymentSwitch::kEngine;
  // Chunked prefill as the deployment set it: prompts split across steps to
  // fill the token budget (TensorRT-LLM's --enable_chunked_prefill, off by
  // default; vLLM's --no-enable-chunked-prefill; SGLang's
  // --chunked-prefill-size -1). Off, a step takes whole prompts.
  DeploymentSwitch chunked_prefill = DeploymentSwitch::kEngine;
};

// The shortest length drawn for a range whose lower end is `min` (0: fixed at `length`).
[[nodiscard]] inline std::int64_t shortest_length(std::int64_t min, std::int64_t length) noexcept {
  return min != 0 ? min : length;
}

// A benchmark client's --random-range-ratio R as InferenceMAX's
// benchmark_serving and SGLang's bench_serving apply it: each length uniform
// on [max(1, floor(R L)), L] (R = 1: fixed). Sets isl_min and osl_min from
// isl and osl; InvalidArgument unless 0 <= R <= 1.
void set_range_ratio(ServingScenario& s, double ratio);
// The shortest length that ratio draws for a length L: max(1, floor(R L)).
[[nodiscard]] std::int64_t range_ratio_min(std::int64_t length, double ratio);

// InvalidArgument unless a shared prefix is 0 to shortest_prompt - 1 and a
// prompt pool 0 to kMaxPromptPool (ServingScenario::shared_prefix, prompt_pool).
void check_prefix_reuse(std::int64_t shared_prefix, std::int64_t prompt_pool,
                        std::int64_t shortest_prompt);

// Mean and percentiles over the simulated requests.
struct Spread {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};

struct ServingResult {
  double ttft_s = 0, tpot_s = 0, e2e_s = 0;  // means over the requests
  Spread ttft, tpot, e2e;
  // Inter-token latency as `vllm bench serve` reports it: over every gap
  // between two streamed chunks of every request, one a step (a prompt that
  // stalls the decode steps shows in its tail, p99), not per request. With
  // draft tokens a step's tokens come in one chunk, one gap; SGLang's
  // bench_serving splits such a gap among its tokens (alike without drafts).
  Spread itl;
  double output_tokens_per_s = 0;  // all GPUs
  double output_tokens_per_s_per_gpu = 0;
  double output_tokens_per_s_per_user = 0;  // 1 / TPOT
  std::int64_t gpus = 1;
  std::int64_t max_concurrency_that_fits = 0;  // requests whose KV cache fits (all instances)
  std::int64_t running = 0;                    // mean requests decoding in a decode step
  double queue_wait_s = 0;                     // mean wait for a KV slot (or the running cap)
  double prompt_queue_wait_s = 0;              // mean wait from admission to its first chunk
  double plain_step_s = 0;                     // decode step of `running` requests alone
  double prompt_step_s = 0;                    // the same step carrying one whole prompt
  double prompts_per_step = 0;                 // prompts started per step
  double prompt_share = 0;                     // of the steps' time, what prompt tokens add
  double kv_transfer_s = 0;                    // disaggregated: one prompt's KV cache
  std::int64_t requests = 0, steps = 0;        // simulated
  std::int64_t preemptions = 0;                // requests evicted when the cache ran out
  // Batch waiting as the scenario set it (0 steps: off), and the steps that
  // held their prompts back.
  std::int64_t batch_wait_iters = 0, waited_steps = 0;
  double batch_wait_ratio = 0;
  // Attention-DP balance as the scenario set it, and the steps that held
  // their prompts back for it.
  bool adp_balance = false;
  std::int64_t adp_timeout_iters = 0, adp_batching_wait_iters = 0, balance_held_steps = 0;
  // The receive interval as set (0: every step) and the mean wait from a
  // request's arrival to the step that takes it in (the step under way, and
  // with an interval the steps until the next intake).
  std::int64_t scheduler_recv_interval = 0;
  double recv_wait_s = 0;
  // The KV cache of one instance of the decode pool (aggregated: the one
  // pool): tokens it holds and bytes a GPU, under the engine's rule: a share
  // of the whole memory or of what the weights and activations leave.
  std::int64_t kv_cache_tokens = 0;
  double kv_cache_bytes_per_gpu = 0;
  // What the engine's rule subtracted for activations a GPU (its
  // memory-profiling pass where it runs one), and that pass's sampler rows
  // and bytes a logit where its sampler set the peak (0 otherwise).
  double kv_activation_bytes_per_gpu = 0;
  std::int64_t kv_profile_sampler_rows = 0;
  double kv_profile_sampler_bytes_per_logit = 0;
  double kv_memory_share = 0;
  bool kv_memory_of_free = false;
  bool kv_memory_set = false;  // the share the scenario set, not the engine's
  // A prompt pool: of the requests, those whose prompt the prefix cache held.
  double prefix_hit_rate = 0;
  std::int64_t token_budget = 0, max_running = 0;  // the scheduler's, per instance
  std::int64_t kv_block_tokens = 1;                // the cache's paging (1: token-granular)
  // Batches formed a step ahead (the engine's overlap scheduling): on the
  // aggregated instances or prefill workers, and on the decode workers.
  bool formed_a_step_ahead = false, decode_formed_a_step_ahead = false;
  // Disaggregated: the decode workers' (the prefill workers' are above).
  std::int64_t decode_token_budget = 0, decode_max_running = 0;
  ServingRecipe recipe = ServingRecipe::kEngineDefaults;
  ServingMode mode = ServingMode::kAggregated;
  Bound bound = Bound::kMemory;  // of the plain step
  std::string limited_by;        // "kv_capacity", "prefill", "memory_bandwidth", "compute"
  std::vector<std::string> notes;
};

// The limits trtllm-bench's heuristic sets (EngineScheduler::BenchmarkTuning)
// for a run of `step` (formats, tp, pp) over a dataset of mean lengths isl
// and osl, with `kv_share` of the memory the checkpoint leaves for the KV
// cache, and what it estimated on the way (GiB as it counts them, all GPUs).
struct BenchmarkLimits {
  bool tuned = false;  // false: the weights' format is not one it tunes (the engine's defaults)
  double memory_gib = 0, checkpoint_gib = 0, cache_gib = 0;
  double kv_gib_per_token = 0;
  double requests = 0;  // of isl + osl tokens, in the estimated cache
  std::int64_t max_batch_size = 0, max_num_tokens = 0;
  // The run's token budget: without chunked prefill trtllm-bench raises
  // max_num_tokens to hold the longest prompt beside a full batch.
  [[nodiscard]] std::int64_t token_budget(bool chunked,
                                          std::int64_t longest_prompt) const noexcept {
    return chunked ? max_num_tokens : std::max(max_num_tokens, longest_prompt + max_batch_size);
  }
};
// Unsupported where the engine has no such benchmark, or where its estimate
// leaves no room (the checkpoint over the memory, or not one request).
[[nodiscard]] BenchmarkLimits benchmark_limits(const EngineProfile& engine, const ModelSpec& model,
                                               const Device& device, const Scenario& step,
                                               double isl, double osl, double kv_share);

// Throws InvalidArgument for sizes out of range (isl, osl >= 1, isl_min and
// osl_min 0 or 1 to isl and osl, concurrency 1 to 2^20, at most
// kMaxSimulatedRequests requests), Unsupported when one request of the
// longest lengths does not fit.
inline constexpr std::int64_t kMaxSimulatedRequests = std::int64_t{1} << 19;
[[nodiscard]] ServingResult predict_serving(const ModelSpec& model, const Device& device,
                                            const ServingScenario& s,
                                            const ModelOptions& options = {});

}  // namespace roofline
