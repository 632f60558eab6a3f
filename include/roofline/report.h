// Rendering shared by every front end: the JSON documents the CLI, server and
// Python bindings emit, plus a small table/CSV renderer for people and
// spreadsheets. Scaled units (µs, GB/s) appear only in human text.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "roofline/formats.h"
#include "roofline/hardware.h"
#include "roofline/model.h"
#include "roofline/predict.h"
#include "roofline/quantize.h"
#include "roofline/recommend.h"
#include "roofline/roofline.h"
#include "roofline/search.h"
#include "roofline/serving.h"
#include "roofline/strategy.h"
#include "roofline/track_record.h"
#include "roofline/validate.h"

namespace roofline {

// Tool version, e.g. "0.1.0".
[[nodiscard]] std::string_view version() noexcept;

// {"version", "data_hash"}: stamps every JSON result.
[[nodiscard]] nlohmann::json stamp(const Registry& registry);

[[nodiscard]] nlohmann::json to_json(const FormatInfo& info);
// A figure as {"value", "confidence", "source", "note"?} with the citation text.
[[nodiscard]] nlohmann::json to_json(const Device& device, const Figure& figure);
// The whole device with every figure and its source.
[[nodiscard]] nlohmann::json to_json(const Device& device);
// One GEMM prediction: the DESIGN.md gemm fields plus the figures used.
[[nodiscard]] nlohmann::json to_json(const Device& device, const GemmProblem& problem,
                                     const RooflineResult& result);

// Where an op's efficiency came from, as the per-op outputs name it: every
// matmul's source, an attention op's where an engine's attention table priced
// its call; empty for the rest.
[[nodiscard]] std::string_view op_efficiency_source(const Op& op, const OpTiming& t) noexcept;

// A model: architecture, parameter counts and bytes per component.
[[nodiscard]] nlohmann::json to_json(const ModelSpec& model);

// The scenario as resolved against the model and device.
[[nodiscard]] nlohmann::json scenario_json(const ModelSpec& model, const Device& device,
                                           const Scenario& s, const OpGraph& graph);

// A whole-model prediction (DESIGN.md predict fields); `per_op` adds "ops".
[[nodiscard]] nlohmann::json to_json(const ModelSpec& model, const Device& device,
                                     const Scenario& s, const Prediction& p, bool per_op);
// The whole predict response every front end returns: to_json(prediction)
// plus the strategy's fallback notes, the capacity and the stamp.
[[nodiscard]] nlohmann::json predict_document(const ModelSpec& model, const Device& device,
                                              const Scenario& s, const Prediction& p, bool per_op,
                                              const std::vector<std::string>& plan_notes,
                                              const std::string& strategy,
                                              const Registry& registry);
// The whole generate response: to_json(result), the scenario with prompt and
// gen, the mode and the stamp.
// `roofline search --json`, POST /api/search and Python's search(): the front,
// the best, the runners-up and the refusals (docs/SERVING.md).
[[nodiscard]] nlohmann::json search_document(const ModelSpec& model, const Device& device,
                                             const SearchSpec& spec, const SearchResult& result,
                                             const Registry& registry);
// `roofline serving --json`, POST /api/serving and Python's serving(): the
// fields of docs/SERVING.md.
[[nodiscard]] nlohmann::json serving_document(const ModelSpec& model, const Device& device,
                                              const ServingScenario& scenario,
                                              const ServingResult& result,
                                              const ModelOptions& options,
                                              const Registry& registry);
[[nodiscard]] nlohmann::json generate_document(const ModelSpec& model, const Device& device,
                                               const Scenario& s, const GenerateResult& g,
                                               std::int64_t prompt, std::int64_t gen, Mode mode,
                                               const Registry& registry);
[[nodiscard]] nlohmann::json to_json(const MemoryEstimate& m);
[[nodiscard]] nlohmann::json to_json(const GenerateResult& g);
[[nodiscard]] nlohmann::json to_json(const KvReport& r);

// A recommendation (DESIGN.md recommend fields); each candidate as
// {strategy, attention, predicted_speedup, time_s, baseline_time_s,
//  memory_saving, quality_loss_pct, ...}.
[[nodiscard]] nlohmann::json to_json(const Recommendation& r);
[[nodiscard]] nlohmann::json to_json(const Candidate& c);
[[nodiscard]] nlohmann::json to_json(const Strategy& s);

// Which engine a prediction used: {"id", "gemm_table", "gemm_table_source"?, "step_overhead_s",
// "latent_cache_cast_s", "cuda_graphs", ...}.
[[nodiscard]] nlohmann::json engine_json(const Prediction& p);
// A generation's engine block: the prefill's, with the decode steps' cast of
// the KV pool (latent_cache_cast_s, the same every step: the pool's size).
[[nodiscard]] nlohmann::json engine_json(const GenerateResult& g);
// {"max_batch", "max_context", "max_context_by_memory", "context_window",
//  "kv_memory": {"engine", "share", "of": "total"|"free"} or null}.
[[nodiscard]] nlohmann::json to_json(const Capacity& c);

// ---------------------------------------------------------------- documents
// What each command prints with --json; the Python bindings return the same
// (tests/python compares them). Those that carry the data hash take the
// registry the devices came from.

// `hardware list`: stamp + {"devices": [{id, name, aliases, memory_bytes,
// bandwidth_Bps, peak_flops_per_s {format: FLOP/s or null when unpublished}}]}.
[[nodiscard]] nlohmann::json hardware_list_document(const Registry& registry);
// `hardware show ID`: stamp + {"device": to_json(device)}.
[[nodiscard]] nlohmann::json hardware_document(const Device& device, const Registry& registry);
// `formats`: {"version", "formats": [to_json(info) ...]}.
[[nodiscard]] nlohmann::json formats_document();
// `model list`: {"version", "models": [{id, name, hf_repo, aliases, model_type, params,
// active_params_per_token, published_params, native_weights, native_experts}]}.
[[nodiscard]] nlohmann::json model_list_document();
// `model show MODEL`: to_json(model) + "version", and the preset's published
// figures when `preset` is not null.
[[nodiscard]] nlohmann::json model_document(const ModelSpec& model, const ModelPreset* preset);
// `strategies`: {"version", "strategies": [to_json(strategy) ...]}.
[[nodiscard]] nlohmann::json strategies_document();
// `engines`: a list of to_json(engine) (`engines show ID` prints one of them).
[[nodiscard]] nlohmann::json engines_document();
// `kv`: to_json(report) + "model", "hardware" and the stamp.
[[nodiscard]] nlohmann::json kv_document(const ModelSpec& model, const Device& device,
                                         const KvReport& report, const Registry& registry);
// `attention`: {"model", "hardware", "phase", "seq_len", "batch", "kernels": [...]} + stamp;
// an unsupported kernel is {"kernel", "supported": false}.
[[nodiscard]] nlohmann::json attention_document(const ModelSpec& model, const Device& device,
                                                const Scenario& s,
                                                const std::vector<AttentionComparisonRow>& rows,
                                                const Registry& registry);
// `recommend`: to_json(recommendation) + "scenario" + stamp.
[[nodiscard]] nlohmann::json recommend_document(const ModelSpec& model, const Device& device,
                                                const RecommendOptions& options,
                                                const Recommendation& r, const Registry& registry);
// Error statistics of one group of validation rows: {"group", "rows",
// "median_abs_error_pct", "p90_abs_error_pct", "max_abs_error_pct", "median_signed_error_pct"}.
[[nodiscard]] nlohmann::json to_json(const ErrorStats& s);
// `validate`: {"mode", "cases", "evaluated", "*_error_pct", "groups", "targets"} + stamp
// ("targets": published_targets in the realistic mode, else empty).
[[nodiscard]] nlohmann::json validation_document(const ValidationReport& r, Mode mode,
                                                 const Registry& registry);
// A list of error groups, to_json of each.
[[nodiscard]] nlohmann::json error_groups_json(const std::vector<ErrorStats>& groups);
// The acceptance targets a check reports: target, value, limit, holds, misses.
[[nodiscard]] nlohmann::json targets_json(const std::vector<TargetCheck>& targets);
// `validate --decode-steps`: {"check": "decode_steps", "prefill_share", "predicted",
// "refused", "skipped_disaggregated", "groups", "targets", "refusals",
// "leave_one_device_out", "rows"} + stamp; each row the run, then its prediction
// (`predicted_step_ms`, `error_pct`) or why it was `refused`.
[[nodiscard]] nlohmann::json decode_steps_document(const DecodeStepReport& r, bool prefill_share,
                                                   const std::vector<ErrorStats>& held_out,
                                                   const Registry& registry);
// `validate --serving`: {"check": "serving", "recipe", "rounds", "predicted", "refused",
// "tpot_groups", "ttft_groups", "ttft_by_prompt_length", "targets", "refusals", "rows"} + stamp;
// each row the run, then `predicted_ttft_ms`, `predicted_tpot_ms` and their errors, or
// why it was `refused`. "ttft_by_prompt_length": {"groups", "sweeps"}, the fits of
// ttft_length_fits (SI units) and their medians by group.
[[nodiscard]] nlohmann::json serving_validation_document(const DecodeStepReport& r,
                                                         ServingRecipe recipe, std::int64_t rounds,
                                                         const Registry& registry);
// One tensor of `quantize`: statistics, error per format, the plan.
[[nodiscard]] nlohmann::json to_json(const TensorReport& t);
// `quantize`: {"version", "checkpoint", "budget_sqnr_db", "tensors",
// "mean_bits_per_element", "size_vs_16bit"} (the means over analyzed tensors).
[[nodiscard]] nlohmann::json quantize_document(const std::string& checkpoint, double budget_sqnr_db,
                                               const std::vector<TensorReport>& reports);

// The engine's track records on `d` (roofline/track_record.h), one a kind
// that has one; none without an engine (null: ideal mode passes none) or for
// the reference engine, which no case measures. A
// prediction's are for its phase's kind (prefill: the prompt, decode: the
// generation). Their notes close explain()'s; the documents carry the JSON.
[[nodiscard]] std::vector<TrackRecord> track_records(const EngineProfile* engine, const Device& d,
                                                     std::initializer_list<MetricKind> kinds);
[[nodiscard]] std::vector<TrackRecord> track_records(const Prediction& p, const Device& d,
                                                     const Scenario& s);
[[nodiscard]] nlohmann::json to_json(const std::vector<TrackRecord>& records);
// Their notes: one a kind, the record's, or for a measured engine without one
// a line that says so (none for the reference engine).
[[nodiscard]] std::vector<std::string> track_record_notes(const EngineProfile* engine,
                                                          const Device& d,
                                                          std::initializer_list<MetricKind> kinds);
// The track records of the engines a search ranked or put on its front (the
// best's first), both kinds each: the ranking's margins read against them.
[[nodiscard]] std::vector<TrackRecord> search_track_records(const SearchResult& r, const Device& d);
[[nodiscard]] std::vector<std::string> search_track_record_notes(const SearchResult& r,
                                                                 const Device& d);

// Plain-language notes on a whole-model prediction: what bounds it and why.
[[nodiscard]] std::vector<std::string> explain(const ModelSpec& model, const Device& device,
                                               const Scenario& s, const Prediction& p);

// Plain-language notes on a prediction (weight-only fallbacks, mode figures).
[[nodiscard]] std::vector<std::string> explain(const Device& device, const GemmProblem& problem,
                                               const RooflineResult& result);

// Human scaling: 1.23e-4 -> "123.0 µs", 2.73e11 -> "273 GB/s", ...
[[nodiscard]] std::string human_time(Seconds s);
[[nodiscard]] std::string human_bytes(Bytes b);
[[nodiscard]] std::string human_rate(double per_second, std::string_view unit);  // "FLOP/s", "B/s"
[[nodiscard]] std::string human_count(double x);                                 // 1.2 G

// A table of strings rendered aligned for people or as RFC 4180 CSV.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  [[nodiscard]] std::string text() const;
  // The same, with the last column wrapped at spaces so that lines fit in
  // `max_width` columns (0: no limit; the last column keeps at least 24).
  [[nodiscard]] std::string text(std::size_t max_width) const;
  [[nodiscard]] std::string csv() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace roofline
