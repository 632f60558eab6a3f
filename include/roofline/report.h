// Rendering shared by every front end: the JSON documents the CLI, server and
// Python bindings emit, plus a small table/CSV renderer for people and
// spreadsheets. Scaled units (µs, GB/s) appear only in human text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "roofline/formats.h"
#include "roofline/hardware.h"
#include "roofline/model.h"
#include "roofline/predict.h"
#include "roofline/recommend.h"
#include "roofline/roofline.h"
#include "roofline/serving.h"
#include "roofline/strategy.h"

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
