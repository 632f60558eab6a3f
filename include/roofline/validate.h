// Predictions against published measurements (data/validation).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/predict.h"
#include "roofline/serving.h"

namespace roofline {

// One published measurement and its configuration.
struct ValidationCase {
  std::string id;
  std::string hardware;
  std::string model;
  std::string framework;
  std::string weights;  // format id; the model's native format means "as shipped"
  std::string act;
  std::string kv;
  // Sequences of a static batch; for the serving metrics, the benchmark's
  // clients (each with one request in flight: vLLM's and SGLang's
  // --max-concurrency, aiperf's --concurrency).
  std::int64_t batch = 1;
  std::int64_t prompt = 0;  // 0: not stated (serving metrics: the input length, required)
  std::int64_t gen = 0;     // 0: not stated or not generated (serving: the output length)
  // Prefill metrics: tokens in the cache before the prompt ("cached": llama-bench's depth).
  std::int64_t cached = 0;
  std::int64_t tp = 1;  // tensor-parallel GPUs ("tp", optional)
  std::int64_t pp = 1;  // pipeline stages ("pp", optional): tp x pp GPUs
  std::int64_t ep = 1;  // expert-parallel groups within tp ("ep", optional)
  // Serving, optional: attention data-parallel groups within tp ("attention_dp":
  // SGLang's --dp-size with --enable-dp-attention), each running attention for
  // its own share of the requests.
  std::int64_t attention_dp = 1;
  std::int64_t requests = 0;  // serving: the benchmark's request count (0: not stated)
  // Serving, optional: random lengths, each request's uniform on
  // [prompt_min, prompt] and [gen_min, gen] (0: fixed), and the deployment's
  // scheduler settings where the source gives them (0: the engine's defaults):
  // tokens a step carries (SGLang's --chunked-prefill-size, vLLM's
  // --max-num-batched-tokens) and requests running at once.
  std::int64_t prompt_min = 0, gen_min = 0;
  std::int64_t token_budget = 0, max_running = 0;
  // Serving, optional: the engine's release ("engine_version", such as
  // "0.11.0"; "": the profile's current behaviour) and overlap scheduling as
  // the deployment set it ("overlap_scheduling": "on" or "off", such as vLLM's
  // opt-in --async-scheduling before 0.14.0; absent: the engine's rule).
  std::string engine_version;
  DeploymentSwitch overlap = DeploymentSwitch::kEngine;
  DeploymentSwitch chunked_prefill = DeploymentSwitch::kEngine;  // "chunked_prefill": "on"/"off"
  // Serving, optional: the engine settings ("recipe": "engine" or
  // "trtllm-bench", the limits TensorRT-LLM's own benchmark tunes) and the
  // KV cache's memory share the run set ("kv_memory_share"; 0: the recipe's).
  ServingRecipe recipe = ServingRecipe::kEngineDefaults;
  double kv_memory_share = 0;
  std::string metric;  // decode_tokens_per_s, decode_total_tokens_per_s,
                       // prefill_tokens_per_s, ttft_s, e2e_s, output_tokens_per_s,
                       // output_tokens_per_s_per_gpu (over the tp GPUs);
                       // serving_ttft_s, serving_tpot_s (a closed-loop benchmark
                       // of `batch` clients: roofline serving with the engine's
                       // defaults, means over the requests), serving_ttft_p50_s,
                       // serving_tpot_p50_s (their medians), serving_itl_llmperf_p50_s
                       // (LLMPerf's inter-token latency, its median: a request's
                       // time from sending to its last token, the TTFT
                       // included, over its gen tokens; outputs of one length),
                       // serving_itl_p50_s (vllm bench serve's median ITL: of
                       // every gap between two streamed tokens of every request),
                       // serving_output_tokens_per_s (every output token over the
                       // time from the first request to the last token: a burst's
                       // throughput, as trtllm-bench throughput reports it)
  double value = 0;
  // The date of the engine's build where the source gives it ("engine_build",
  // optional: "YYYY-MM-DD" or "YYYY-MM"), as yyyymmdd; 0: the current build.
  std::int32_t engine_build = 0;
  std::string source;      // citation text
  std::string source_key;  // its key in the file's "sources" ("trtllm-perf-v090")
  std::string note;
};

// |error| statistics of one group of rows.
struct ErrorStats {
  std::string group;  // "all", "engine=vllm", "device=h200", "model=llama-3.1-70b"
  int rows = 0;
  double median_abs_pct = 0, p90_abs_pct = 0, max_abs_pct = 0, median_signed_pct = 0;
};

// Percentile q in [0, 1] of `values` with linear interpolation (0 when empty).
[[nodiscard]] double percentile(std::vector<double> values, double q);
// Statistics of (signed) errors in percent.
[[nodiscard]] ErrorStats error_stats(std::string group, const std::vector<double>& errors);

struct ValidationRow {
  ValidationCase c;
  std::string engine;  // the engine it was predicted with ("roofline": the reference)
  double predicted = 0;
  double error_pct = 0;  // (predicted - measured) / measured x 100
  std::string error;     // non-empty when the case could not be predicted
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  double median_abs_error_pct = 0;
  double mean_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  double median_signed_error_pct = 0;
  // Each case's speed against its measurement (optimism_pct,
  // roofline/track_record.h: positive means predicted faster, a duration's
  // error turned into its speed): the median, and the cases predicted
  // faster. The signed median above mixes the two directions.
  double median_optimism_pct = 0;
  int optimistic = 0;
  int evaluated = 0;
  std::vector<ErrorStats> groups;  // "all", then per engine, per metric and per source
};

// Loads and validates a measurement file (schema in data/validation/published.json).
// Throws ParseError naming the file and key.
[[nodiscard]] std::vector<ValidationCase> parse_validation(std::string_view json_text,
                                                           const std::string& origin);
// The embedded measurements.
[[nodiscard]] std::vector<ValidationCase> built_in_validation();
// A validation file: a regular file of at most 16 MB (checked before reading),
// then parse_validation. Throws ParseError naming the file otherwise (a
// directory, a device, an empty name).
[[nodiscard]] std::vector<ValidationCase> load_validation(const std::string& path);

// The engine id a case's "framework" names ("tensorrt-llm" -> "trtllm"), or
// "roofline" where no profile matches.
[[nodiscard]] std::string engine_of_framework(std::string_view framework);

// Predicts every case on `registry`'s devices and compares. `engine`: an
// engine id for every case, "case" for each case's own framework, or empty
// for `options` as given (the reference engine unless options.engine is set).
[[nodiscard]] ValidationReport validate_cases(const std::vector<ValidationCase>& cases,
                                              const Registry& registry,
                                              const ModelOptions& options = {},
                                              const std::string& engine = "");

// One acceptance target of the issues that set them (issue 11: published
// cases and decode steps; issue 12: serving), as measured: `value` against
// `limit` (a percentage, or a count of cases), and what misses it.
struct TargetCheck {
  std::string target;  // "median |error|", "cases past 35%", ...
  double value = 0;
  double limit = 0;
  bool holds = false;
  std::string misses;  // the groups or cases that miss it, worst first ("" when it holds)
  bool count = false;  // value and limit count cases (else percentages)
};

// Families whose signed median the bias target reads: engine x metric with at
// least this many cases (a median of fewer is one or two cases' error).
inline constexpr int kMinFamilyCases = 5;

// Issue 11's targets for published cases predicted with their own engines:
// median |error| at most 10%, none past 35%, every engine's median at most
// 15%, no family (engine x metric, kMinFamilyCases or more) biased beyond +-5%
// in signed median. Empty for a report of no predicted case.
[[nodiscard]] std::vector<TargetCheck> published_targets(const ValidationReport& r);

// Leave one source out for the published cases, each with its own engine: the
// cases of every device with measured kernel tables (the calibration data
// that describes them) predicted with those tables, then without them (the
// device borrows its architecture's nearest other tables, or none).
// "with-own=<device>" and "held-out=<device>" pairs.
[[nodiscard]] std::vector<ErrorStats> leave_one_device_out_cases(
    const std::vector<ValidationCase>& cases, const Registry& registry);

}  // namespace roofline

namespace roofline {

class EngineRegistry;

// One measured serving run: a row of a CSV in the format of
// data/validation/serving-dev.csv (NVIDIA AIConfigurator's silicon samples;
// its columns are described in docs/VALIDATION.md).
struct ServingRun {
  std::string id, backend, backend_version, model_path, system, precision, mode;
  std::string gemm_quant, moe_quant;
  std::int64_t isl = 0, osl = 0;
  // batch_size: requests in flight. Disaggregated rows leave it empty; their
  // id carries it ("..._c64_..."), read when the column is empty.
  std::int64_t concurrency = 0;
  // Disaggregated: the batch size each prefill and decode worker was deployed
  // with (0 when not given).
  std::int64_t prefill_batch = 0, decode_batch = 0;
  // Aggregated: the one pool; disaggregated: the decode pool.
  std::int64_t tp = 1, pp = 1, attention_dp = 1, moe_tp = 1, moe_ep = 1, prefill_moe_ep = 1;
  // How the row's parallel layout was read where it is not as written (the
  // set's TP x EP rows); empty otherwise.
  std::string layout_note;
  // Disaggregated: the prefill pool and the workers of each (workers_given
  // false when the row leaves them empty: such rows are refused).
  std::int64_t prefill_tp = 1, prefill_pp = 1, prefill_attention_dp = 1;
  std::int64_t prefill_workers = 1, decode_workers = 1;
  bool workers_given = true;
  double ttft_ms = 0, tpot_ms = 0;
  // What the benchmark that measured the row ran beyond its columns, from a
  // harness note (ServingHarness): the note's id ("" for none), the draft
  // tokens its speculative decoding proposed a step, the deployment's
  // requests running and tokens a step, and its client's random range ratio
  // (0 for each: not given).
  std::string harness;
  std::int64_t draft_tokens = 0, max_running = 0, token_budget = 0;
  double range_ratio = 0;
  // The deployment's batch waiting (ServingScenario::batch_wait_iters; 0: none)
  // and its scheduler's receive interval (scheduler_recv_interval; 0: none).
  std::int64_t batch_wait_iters = 0;
  double batch_wait_ratio = 0;
  std::int64_t recv_interval = 0;
  // The deployment's attention-DP balance (ServingScenario::adp_balance).
  bool adp_balance = false;
  std::int64_t adp_timeout_iters = 0, adp_batching_wait_iters = 0;
  std::optional<Format> expert_act;  // the routed experts' math (PrecisionPlan::expert_act)
  std::optional<Format> kv;          // the deployment's KV cache format
  GraphPolicy graphs = GraphPolicy::kEngine;  // the deployment's CUDA graphs
  std::string_view moe_kernel;  // the deployment's MoE kernel family (ModelOptions::moe_kernel)
  // The largest step the deployment captured CUDA graphs for
  // (ServingScenario::graph_capture_size; 0: the recipe's or the engine's).
  std::int64_t graph_capture_size = 0;
  // The deployment's KV memory share under the engine's rule
  // (ServingScenario::kv_memory_share; 0: the recipe's or the engine's).
  double kv_memory_share = 0;
};

// Which of a note's rows a setting applies to, as the benchmark's script
// tests them: their lengths, TP (exactly, or below), clients (0: any), and
// attention data parallelism (attention_dp: only rows with it).
struct HarnessCondition {
  std::int64_t isl = 0, osl = 0, tp = 0, tp_below = 0, clients_at_least = 0;
  bool attention_dp = false;
  [[nodiscard]] bool met(const ServingRun& r) const noexcept;
};

// A note on the benchmark behind some rows of the development set
// (data/validation/serving-harnesses.json): which rows it covers (engine,
// release, system and model as the rows write them) and what they ran that
// the columns leave out, from the benchmark's public scripts. A fact about
// how the rows were measured, never a figure taken from their measurements.
struct ServingHarness {
  std::string id, benchmark;
  // The rows it covers, as the rows write them (a model under any of its
  // names: the same runs may carry two); tp and ep (the layout as the rows are
  // read) only when given (0: any).
  std::string backend, backend_version, system, precision;
  std::vector<std::string> model_paths;
  // The clients the benchmark's search swept (0: any): rows outside are
  // other runs of the same columns.
  std::int64_t clients_at_most = 0;
  std::int64_t tp = 0, ep = 0;
  // The row ids' beginnings (empty: any): a campaign the set's source files
  // name apart from another run of the same columns.
  std::vector<std::string> id_prefixes;
  // Speculative decoding: draft tokens a step, and with attention data
  // parallelism (0 for both: none).
  std::int64_t draft_tokens = 0, draft_tokens_with_attention_dp = 0;
  // The deployment's limits, as the benchmark's script computes them (0: not
  // given): each rank runs max_batch = the clients, or with attention DP the
  // clients / divisor (the clients below the divisor), and takes
  // max(at_least, round_up((drafts + 1) x max_batch + isl + headroom,
  // round_to)) tokens a step. Without a divisor the script sets no max_batch:
  // the engine's running cap stays and the budget's batch term is the clients.
  std::int64_t max_batch_attention_dp_divisor = 0, token_budget_headroom = 0,
               token_budget_round_to = 0, token_budget_at_least = 0;
  // Or fixed limits: requests an instance runs and tokens a step (0: not
  // given); max_running_is_clients: one request a client (the script's
  // --max-running-requests $CONC).
  std::int64_t max_running = 0, token_budget = 0;
  bool max_running_is_clients = false;
  // Or the step's token budget by the script's rules (vLLM's
  // --max-num-batched-tokens "$((ISL * 2))"): the first whose condition a row
  // meets (none: the recipe's).
  struct BudgetRule {
    std::int64_t tokens = 0;
    HarnessCondition when;
  };
  std::vector<BudgetRule> token_budgets;
  // Batch waiting (TensorRT-LLM's batch_wait_timeout_iters and
  // batch_wait_max_tokens_ratio; 0 steps: none), for the rows where the script
  // sets it.
  std::int64_t batch_wait_iters = 0;
  double batch_wait_ratio = 0;
  HarnessCondition batch_wait_when;
  // Attention-DP balance (TensorRT-LLM's attention_dp_config with
  // enable_balance), for the rows with attention data parallelism: the
  // scripts write it only when they turn attention DP on.
  bool adp_balance = false;
  std::int64_t adp_timeout_iters = 0, adp_batching_wait_iters = 0;
  // The scheduler's receive interval (SGLang's --scheduler-recv-interval), by
  // the script's rules: the first whose condition a row meets (none: the
  // engine's every step).
  struct RecvRule {
    std::int64_t steps = 0;
    HarnessCondition when;
  };
  std::vector<RecvRule> recv_intervals;
  std::optional<Format> kv;  // the deployment's KV cache format (unset: not given)
  // The KV cache's memory share the script sets, under the engine's rule
  // (--gpu-memory-utilization, --mem-fraction-static, free_gpu_memory_fraction),
  // by its rules: the first whose condition a row meets (none: the recipe's).
  struct ShareRule {
    double share = 0;
    HarnessCondition when;
  };
  std::vector<ShareRule> kv_memory;
  // The script enables expert parallelism whatever the row's layout (vLLM's
  // --enable-expert-parallel): the experts split over all the instance's GPUs.
  bool expert_parallel = false;
  // Or the layout by the script's rules, where the rows do not record it (a
  // script that sets its EP size and attention DP from the lengths and
  // clients): the first whose condition a row, as read (before the note's
  // other settings), meets; expert parallelism over the instance's GPUs,
  // attention DP over its TP ranks. The note's other rules see the row with
  // that layout.
  struct LayoutRule {
    bool expert_parallel = false, attention_dp = false;
    HarnessCondition when;
  };
  std::vector<LayoutRule> layouts;
  // Which steps the deployment's CUDA graphs cover, where it sets them apart
  // from the engine's defaults (vLLM's cudagraph_mode FULL_DECODE_ONLY).
  GraphPolicy graphs = GraphPolicy::kEngine;
  // The MoE kernel family the script's settings leave the engine
  // (ModelOptions::moe_kernel; empty: the engine's measured blend).
  std::string_view moe_kernel;
  // The largest step the script captures CUDA graphs for (tokens; vLLM's
  // --max-cudagraph-capture-size; 0: not set).
  std::int64_t graph_capture_size = 0;
  double range_ratio = 0;  // the client's --random-range-ratio (0: fixed lengths)
  // The engine's fused MoE quantizes the experts' activations to this format
  // (an environment setting of the script's; PrecisionPlan::expert_act).
  std::optional<Format> expert_act;
  std::string source;  // the citations of the match and of the settings
};
// Strict: every key known, every setting sourced (a key of "sources"), draft
// tokens 1 to kMaxDraftTokens, limits 1 to 2^20, a range ratio in (0, 1], no
// two notes covering the same rows. Throws ParseError "<origin>: <path>: message".
[[nodiscard]] std::vector<ServingHarness> parse_serving_harnesses(std::string_view json_text,
                                                                  const std::string& origin);
// The embedded notes (data/validation/serving-harnesses.json).
[[nodiscard]] const std::vector<ServingHarness>& built_in_serving_harnesses();
// Sets each run's harness note and the settings it gives (draft tokens, KV
// cache, limits, range ratio, experts' activations) from the note that
// covers it; runs no note covers keep none.
void apply_serving_harnesses(const std::vector<ServingHarness>& notes,
                             std::vector<ServingRun>* runs);

// Strict: the header must hold exactly the known columns; numbers are checked
// (sizes 1 to 2^20, times positive and finite). At most 100,000 rows. Throws
// ParseError "<origin>: line N: column: message".
[[nodiscard]] std::vector<ServingRun> parse_serving_runs(std::string_view csv_text,
                                                         const std::string& origin);
// Rows read the same as an earlier row in every field but the id (the fields
// as parsed: the clients and layout an id's labels give included).
[[nodiscard]] int repeated_serving_runs(const std::vector<ServingRun>& runs);
// Configurations measured more than once whose measured TPOTs disagree: rows
// alike in every field but the id, the engine release and the measurements,
// whose slowest TPOT is at least kConflictRatio times the fastest. No single
// prediction comes within floor_error_pct of every row of such a group: with
// fastest a and slowest b, the best one, 2ab / (a + b), misses both by
// (b - a) / (a + b). They bound what any model can reach on those rows.
inline constexpr double kConflictRatio = 1.25;
struct MeasurementConflict {
  // The group's rows, fastest TPOT first: their ids, releases and TPOTs.
  std::vector<std::string> ids, versions;
  std::vector<double> tpot_ms;
  double ratio = 0;              // slowest / fastest TPOT
  double floor_error_pct = 0;    // (b - a) / (a + b) x 100
  bool across_releases = false;  // the rows name more than one backend_version
};
[[nodiscard]] std::vector<MeasurementConflict> measurement_conflicts(
    const std::vector<ServingRun>& runs, double min_ratio = kConflictRatio);
// The embedded development set (data/validation/serving-dev.csv), with the
// built-in harness notes applied.
[[nodiscard]] std::vector<ServingRun> built_in_serving_runs();
// A file of at most 16 MB (checked before reading), then parse_serving_runs.
[[nodiscard]] std::vector<ServingRun> load_serving_runs(const std::string& path);

// A decode step at batch = concurrency over isl + osl / 2 cached tokens,
// against the run's measured TPOT (aggregated rows only).
struct DecodeStepRow {
  ServingRun run;
  std::string model, device, engine;  // the preset, device and engine ids used
  std::string formats;                // "fp8", "nvfp4", ... as predicted
  double predicted_ms = 0;
  double error_pct = 0;  // (predicted - measured) / measured x 100
  // Serving checks (validate_serving, prefill_share): the predicted TTFT.
  double predicted_ttft_ms = 0;
  double ttft_error_pct = 0;
  std::string refused;  // non-empty: why the row was not predicted
};

struct DecodeStepReport {
  std::vector<DecodeStepRow> rows;  // aggregated rows, predicted or refused
  int predicted = 0, refused = 0, skipped_disaggregated = 0;
  // Rows read the same as an earlier row in every field but the id (one run
  // recorded under two ids): each still counts in the figures.
  int repeated = 0;
  // Configurations measured more than once whose TPOTs disagree
  // (measurement_conflicts over the rows the check reads).
  std::vector<MeasurementConflict> conflicts;
  // Rows the check read with a harness note's settings (ServingRun::harness):
  // note id -> rows, refused rows included.
  std::vector<std::pair<std::string, int>> harness_rows;
  // validate_serving: the prompt pool every simulated benchmark drew from (0: none).
  std::int64_t prompt_pool = 0;
  std::vector<ErrorStats> groups;       // "all" first, then per engine, device and model
  std::vector<ErrorStats> ttft_groups;  // validate_serving: the same for TTFT
  std::vector<std::pair<std::string, int>> refusals;  // reason -> rows
};

// `engine`: "case" (each run's own backend; the default), an engine id for
// every row, or "roofline" for the reference.
// `tables`: the GEMM tables to use (nullptr: the built-in ones).
// `prefill_share`: each step also carries its share of the prompts of the
// requests that replace finished ones (steady-state continuous batching: per
// step, concurrency x isl / osl prompt tokens; Scenario::prefill_tokens).
// The steps replay CUDA graphs up to the row's batch, as these deployments
// captured them (AIConfigurator's benchmark rules), unless options set sizes.
[[nodiscard]] DecodeStepReport validate_decode_steps(const std::vector<ServingRun>& runs,
                                                     const Registry& registry,
                                                     const ModelOptions& options = {},
                                                     const std::string& engine = "case",
                                                     const EngineRegistry* tables = nullptr,
                                                     bool prefill_share = false);

// The serving model (predict_serving, roofline/serving.h) against every run:
// TPOT in `groups`, TTFT in `ttft_groups`. The runs are AIConfigurator's
// benchmark deployments, so by default each engine runs with the limits its
// generator set for them (ServingRecipe::kAiConfigurator); kEngineDefaults
// runs each with its own defaults. `rounds`: requests each simulated client
// sends (ServingScenario::rounds), to match the length of the benchmark that
// measured the runs. `prompt_pool`: the distinct prompts each benchmark drew
// its requests' from (ServingScenario::prompt_pool; aggregated rows).
[[nodiscard]] DecodeStepReport validate_serving(
    const std::vector<ServingRun>& runs, const Registry& registry,
    const std::string& engine = "case", ServingRecipe recipe = ServingRecipe::kAiConfigurator,
    std::int64_t rounds = kDefaultRounds, std::int64_t prompt_pool = 0);

// Issue 11's decode-step target (median |error| at most 12%) over the report's
// rows (`groups`' "all").
[[nodiscard]] std::vector<TargetCheck> decode_step_targets(const DecodeStepReport& r);
// Issue 12's serving targets over the aggregated rows ("mode=agg"): TPOT
// median |error| at most 10% and p90 at most 25%, TTFT median at most 20%.
[[nodiscard]] std::vector<TargetCheck> serving_targets(const DecodeStepReport& r);

// TTFT against the prompt's length. The serving check's predicted aggregated
// rows, grouped by all but the prompt length (engine and release, model,
// device, formats and harness settings as predicted, layout, clients, output
// length); a group measured at two or more
// prompt lengths is fitted by least squares to TTFT = fixed + per_token x isl,
// the measurements and the predictions apart (rows measured twice count once,
// as their mean). A model that prices each prompt token right but misses a
// cost paid once a request shows as per-token parts alike and fixed parts apart.
struct TtftLengthFit {
  std::string engine, engine_version, model, device, formats, harness;
  std::int64_t tp = 1, ep = 1, attention_dp = 1, concurrency = 0, osl = 0;
  std::vector<std::int64_t> isl;  // the distinct prompt lengths, ascending
  double measured_fixed_ms = 0, predicted_fixed_ms = 0;
  double measured_per_token_us = 0, predicted_per_token_us = 0;
};
[[nodiscard]] std::vector<TtftLengthFit> ttft_length_fits(const DecodeStepReport& report);

// The fits by group ("all", "clients<=8", "engine=...", "model=..."): the
// median of the fixed parts' gap (measured - predicted) and of the per-token
// parts' ratio (predicted / measured, over the fits whose measured part grows
// with length). At kFewClients clients or fewer a prompt seldom waits behind
// another, so those fits show the prefill itself, not the queue.
inline constexpr std::int64_t kFewClients = 8;
struct TtftLengthSummary {
  std::string group;
  int sweeps = 0;
  double median_fixed_gap_ms = 0;
  int rising = 0;  // fits whose measured per-token part is above zero
  double median_per_token_ratio = 0;
};
[[nodiscard]] std::vector<TtftLengthSummary> summarize_ttft_length_fits(
    const std::vector<TtftLengthFit>& fits);

// Leave one device out: for each device whose rows have measured GEMM tables,
// its rows predicted without that device's tables (borrowing its architecture's
// nearest other device's, or the device's fractions), beside the same rows
// with them. Groups "held-out=<device>" and "with-own=<device>".
[[nodiscard]] std::vector<ErrorStats> leave_one_device_out(const std::vector<ServingRun>& runs,
                                                           const Registry& registry,
                                                           bool prefill_share = false);

}  // namespace roofline
