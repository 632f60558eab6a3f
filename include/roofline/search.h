// The deployment search: for a model, a device and a number of GPUs, every
// engine x weight format x layout x concurrency, each predicted with the
// serving simulation (roofline/serving.h); the Pareto front of tokens/s per
// GPU against tokens/s per user, and the best configuration that meets the
// latency targets. A layout is an aggregated instance of TP GPUs (for MoE
// models also with data-parallel attention over the same GPUs), or a
// disaggregated unit of prefill and decode workers (1 to 4 of each, TP a
// power of two; for MoE models each pool also with data-parallel attention
// and EP over its TP); the GPUs hold as many replicas of it as divide them.
//
// Example:
//   SearchSpec spec;
//   spec.gpus = 8; spec.isl = 1024; spec.osl = 256; spec.tpot_max_s = 0.03;
//   SearchResult r = search_deployments(model, registry.get("h200"), spec);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/serving.h"

namespace roofline {

struct SearchSpec {
  std::int64_t gpus = 8;
  std::int64_t isl = 1024, osl = 256;
  // Random lengths in every configuration (ServingScenario::isl_min, osl_min; 0: fixed).
  std::int64_t isl_min = 0, osl_min = 0;
  std::optional<double> ttft_max_s, tpot_max_s;
  std::vector<std::string> engines;  // empty: every serving engine (vllm, sglang, trtllm)
  // A release for some of the searched engines (engine id -> "0.11.0"): its
  // configurations run what that release runs (ServingScenario::engine_version);
  // an engine not named runs its current release. Each id must be searched.
  std::map<std::string, std::string> engine_versions;
  std::vector<Format> weights;  // empty: bf16, fp8 and nvfp4 where the device computes them
  std::vector<std::int64_t> concurrencies;  // per replica; empty: 1, 2, 4, ..., 4096
  std::vector<ServingMode> modes;           // empty: both (disaggregated from 2 GPUs)
  // Speculative decoding in every configuration (Scenario::draft_tokens; the
  // acceptance draft_acceptance's unless given); 0: plain decoding.
  std::int64_t draft_tokens = 0;
  std::optional<double> acceptance;
  // The engines' settings in every configuration (ServingScenario::recipe).
  ServingRecipe recipe = ServingRecipe::kEngineDefaults;
  // The workload's prefix reuse in every configuration: a system prompt
  // every request shares (ServingScenario::shared_prefix) and prompts drawn
  // from a pool (ServingScenario::prompt_pool; disaggregated layouts are then
  // refused, their caches not modeled). 0: none.
  std::int64_t shared_prefix = 0, prompt_pool = 0;
};

// Releases as a command line names them: "vllm=0.11.0,sglang=0.5.6", or one
// bare release ("0.11.0") when `engines` (the searched ones) names exactly
// one. InvalidArgument for an empty item, a bare release with several engines
// or an engine named twice; the releases themselves are checked by
// search_deployments.
[[nodiscard]] std::map<std::string, std::string> parse_engine_versions(
    std::string_view text, const std::vector<std::string>& engines);

// set_range_ratio for every configuration of a search (isl_min, osl_min).
void set_range_ratio(SearchSpec& spec, double ratio);

struct Deployment {
  std::string engine;
  std::string engine_version;  // "": the current release
  Format weights = Format::kBf16;
  std::int64_t tp = 1, replicas = 1, concurrency = 1;  // concurrency per replica
  ServingMode mode = ServingMode::kAggregated;
  // MoE layouts: attention data parallel (= tp) and expert parallel (= tp)
  // or not (1); disaggregated, the decode workers'.
  std::int64_t attention_dp = 1, ep = 1;
  // Disaggregated: the workers of one replica (tp is then the decode TP), and
  // the prefill workers' attention data parallel and expert parallel.
  std::int64_t prefill_workers = 0, prefill_tp = 0, decode_workers = 0, decode_tp = 0;
  std::int64_t prefill_attention_dp = 1, prefill_ep = 1;
  ServingResult serving;  // one replica
  double tokens_per_s = 0, tokens_per_s_per_gpu = 0, tokens_per_s_per_user = 0;
  bool meets_targets = false;
  std::string misses;  // why it misses the targets ("" when it meets them)
};

struct SearchResult {
  std::vector<Deployment> front;   // Pareto front, by tokens/s per user
  std::optional<Deployment> best;  // most tokens/s per GPU meeting the targets
  struct RunnerUp {
    Deployment deployment;
    std::string why;  // why it lost to the best
  };
  std::vector<RunnerUp> runners_up;
  std::int64_t evaluated = 0, refused = 0;
  // Concurrencies past twice what a layout runs at once: only the queue grows.
  std::int64_t skipped = 0;
  std::vector<std::pair<std::string, int>> refusals;  // reason -> configurations
};

// "vllm fp8 TP2 x4", "vllm fp8 1xTP2+3xTP2 x1" or "sglang fp8 1xTP8 DP-attention
// EP8 + 2xTP8 DP-attention EP8 x1": engine (and its release when one is named:
// "vllm 0.11.0 fp8 TP2 x4"), format, layout, replicas.
[[nodiscard]] std::string deployment_name(const Deployment& d);

// `progress(done, total)` is called now and then (may be empty). Throws
// InvalidArgument for bad sizes (gpus 1 to 4096, isl, osl >= 1, targets > 0)
// and for a release of an engine the search does not run or that
// check_engine_version refuses, NotFound for unknown engines.
[[nodiscard]] SearchResult search_deployments(
    const ModelSpec& model, const Device& device, const SearchSpec& spec,
    const std::function<void(std::int64_t, std::int64_t)>& progress = {});

}  // namespace roofline
