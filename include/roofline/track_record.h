// An engine's track record: how its predictions compared with the published
// measurements of `roofline validate`, for the device (or the architecture,
// or any device) a prediction is for. Predictions carry it in their notes and
// JSON so that a reader can weigh a number by how the model fared on runs
// like it; it never changes a prediction.
//
// The record is a snapshot of the validation (data/validation/track-record.json,
// written by `roofline validate --track-record`), not computed per prediction:
// the validation predicts hundreds of cases, some of them simulated serving
// bursts, and takes seconds. A test fails when the snapshot and a fresh
// validation disagree, so the shipped record is always the current model's.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/validate.h"

namespace roofline {

// What a metric times: the prompt (prefill throughput, time to first token)
// or the generation (decode throughput, TPOT, inter-token latency, a static
// batch's end-to-end time, a burst's output throughput).
enum class MetricKind { kPrompt, kGeneration };
[[nodiscard]] std::string_view metric_kind_name(MetricKind k) noexcept;
// The kind of one of the validation file's metrics. Throws InvalidArgument for an unknown one.
[[nodiscard]] MetricKind metric_kind(std::string_view metric);
// True for the metrics that are durations (ttft_s, e2e_s, serving_tpot_s, ...),
// where a prediction below the measurement is the optimistic one; false for
// rates (tokens per second), where it is the one above.
[[nodiscard]] bool metric_is_time(std::string_view metric) noexcept;
// How much faster than measured a prediction with this error is, in percent
// of the measured speed: a rate's error as it is (predicted / measured - 1),
// a duration's turned into its speed (measured / predicted - 1: a time 48%
// short is 92% faster). Positive: predicted faster; negative: slower.
[[nodiscard]] double optimism_pct(std::string_view metric, double error_pct) noexcept;

// One published case as the validation last predicted it.
struct TrackRecordCase {
  std::string id;            // "C674"
  std::string engine;        // the engine it was predicted with ("vllm")
  std::string hardware;      // device id ("mi300x")
  std::string vendor;        // the device's ("amd")
  std::string architecture;  // the device's ("cdna3")
  std::string metric;        // "e2e_s"
  double error_pct = 0;      // (predicted - measured) / measured x 100, as validate reports it
};

struct TrackRecordSnapshot {
  int published_cases = 0;             // in the validation, predicted or not
  std::vector<TrackRecordCase> cases;  // the predicted ones
};

// The snapshot of a validation report (the cases it predicted, each with its
// device's architecture from `registry`) and its document, which
// parse_track_record reads back.
[[nodiscard]] TrackRecordSnapshot track_record_snapshot(const ValidationReport& r,
                                                        const Registry& registry);
[[nodiscard]] nlohmann::json to_json(const TrackRecordSnapshot& s);
// The document as the data file holds it: one case a line.
[[nodiscard]] std::string track_record_file_text(const TrackRecordSnapshot& s);
// Strict: unknown or missing keys, unknown metrics, non-finite errors are
// ParseError "<origin>: <path>: message".
[[nodiscard]] TrackRecordSnapshot parse_track_record(std::string_view json_text,
                                                     const std::string& origin);
// The embedded snapshot (data/validation/track-record.json), parsed once.
[[nodiscard]] const TrackRecordSnapshot& built_in_track_record();

// The record that speaks for a prediction of `engine` on `device`, of `kind`:
// the cases of that engine on that device when there are at least
// kMinTrackRecordCases, else on devices of its architecture, else on its
// vendor's devices (another vendor's software stack says little: vLLM on
// MI300X is no guide to vLLM on an H100); nullopt when even that has fewer
// (or the engine is the reference, "roofline", which no case measures).
inline constexpr int kMinTrackRecordCases = 3;
struct TrackRecord {
  std::string engine;
  MetricKind kind = MetricKind::kGeneration;
  std::string scope;  // "device", "architecture" or "vendor"
  std::string hardware, hardware_name, vendor, architecture;  // the device's, whatever the scope
  int cases = 0;
  std::vector<std::string> devices;  // the cases' devices, sorted
  double median_abs_error_pct = 0, p90_abs_error_pct = 0, max_abs_error_pct = 0;
  // The cases' optimism_pct: positive means predicted faster than measured,
  // whatever the metric.
  double median_optimism_pct = 0;
  int optimistic = 0;   // cases predicted faster than measured
  int pessimistic = 0;  // ... slower (the rest matched it exactly)
  // The engine's cases of this kind on the device itself and on its
  // architecture (what a wider scope had too few of).
  int device_cases = 0, architecture_cases = 0;
  std::string worst_case;            // id of the largest |error|
  std::vector<std::string> metrics;  // the cases' metrics, sorted
};
[[nodiscard]] std::optional<TrackRecord> track_record_for(const TrackRecordSnapshot& snapshot,
                                                          std::string_view engine,
                                                          const Device& device, MetricKind kind);

// One line for a prediction's notes ("track record (roofline validate): vLLM
// on the AMD Instinct MI300X, 32 published generation measurements: ..."),
// and the JSON object.
[[nodiscard]] std::string track_record_note(const TrackRecord& t);
// The line for an engine with no record of `kind` near `device`: said, so
// that silence is not read as a clean record.
[[nodiscard]] std::string no_track_record_note(std::string_view engine, const Device& device,
                                               MetricKind kind);
[[nodiscard]] nlohmann::json to_json(const TrackRecord& t);

}  // namespace roofline
