#include "roofline/track_record.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "../common/embedded_data.h"
#include "../common/strict_json.h"
#include "roofline/engine.h"
#include "roofline/error.h"

namespace roofline {
namespace {

using detail::StrictObject;

// Every metric a validation case may give (parse_validation checks them
// here), by what it times.
constexpr std::pair<std::string_view, MetricKind> kMetricKinds[] = {
    {"prefill_tokens_per_s", MetricKind::kPrompt},
    {"ttft_s", MetricKind::kPrompt},
    {"serving_ttft_s", MetricKind::kPrompt},
    {"serving_ttft_p50_s", MetricKind::kPrompt},
    {"decode_tokens_per_s", MetricKind::kGeneration},
    {"decode_total_tokens_per_s", MetricKind::kGeneration},
    {"e2e_s", MetricKind::kGeneration},
    {"output_tokens_per_s", MetricKind::kGeneration},
    {"output_tokens_per_s_per_gpu", MetricKind::kGeneration},
    {"serving_tpot_s", MetricKind::kGeneration},
    {"serving_tpot_p50_s", MetricKind::kGeneration},
    {"serving_itl_llmperf_p50_s", MetricKind::kGeneration},
    {"serving_itl_p50_s", MetricKind::kGeneration},
    {"serving_output_tokens_per_s", MetricKind::kGeneration},
};

// The most cases a snapshot may hold: far above the validation's, and a
// bound on what a malformed file can make the parser allocate.
constexpr std::size_t kMaxSnapshotCases = 100000;

std::string display_engine(std::string_view id) {
  const EngineProfile* e = EngineRegistry::built_in().find(std::string(id));
  return e && !e->name.empty() ? e->name : std::string(id);
}

}  // namespace

std::string_view metric_kind_name(MetricKind k) noexcept {
  return k == MetricKind::kPrompt ? "prompt" : "generation";
}

MetricKind metric_kind(std::string_view metric) {
  for (const auto& [name, kind] : kMetricKinds) {
    if (name == metric) return kind;
  }
  throw InvalidArgument(fmt::format("unknown validation metric '{}'", metric));
}

bool metric_is_time(std::string_view metric) noexcept {
  return metric.ends_with("_s") && !metric.ends_with("_per_s");
}

double optimism_pct(std::string_view metric, double error_pct) noexcept {
  if (!metric_is_time(metric)) return error_pct;
  // The parser and the validation keep a duration's error above -100%.
  return error_pct <= -100 ? std::numeric_limits<double>::infinity()
                           : -error_pct / (1 + error_pct / 100);
}

TrackRecordSnapshot track_record_snapshot(const ValidationReport& r, const Registry& registry) {
  TrackRecordSnapshot s;
  s.published_cases = static_cast<int>(r.rows.size());
  for (const auto& row : r.rows) {
    if (!row.error.empty()) continue;
    const Device& d = registry.get(row.c.hardware);
    s.cases.push_back({row.c.id, row.engine, row.c.hardware, d.vendor, d.architecture, row.c.metric,
                       row.error_pct});
  }
  return s;
}

nlohmann::json to_json(const TrackRecordSnapshot& s) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : s.cases) {
    // Two decimals: the record's statistics are read to the percent.
    cases.push_back({{"id", c.id},
                     {"engine", c.engine},
                     {"hardware", c.hardware},
                     {"vendor", c.vendor},
                     {"architecture", c.architecture},
                     {"metric", c.metric},
                     {"error_pct", std::round(c.error_pct * 100) / 100}});
  }
  return {{"about",
           "The published cases as `roofline validate` last predicted them, each with its own "
           "engine: the track record predictions quote. Written by `roofline validate "
           "--track-record`; a test fails when it and a fresh validation disagree."},
          {"published_cases", s.published_cases},
          {"cases", cases}};
}

std::string track_record_file_text(const TrackRecordSnapshot& s) {
  const nlohmann::json j = to_json(s);
  std::string out = fmt::format("{{\n  \"about\": {},\n  \"published_cases\": {},\n  \"cases\": [",
                                j["about"].dump(), s.published_cases);
  const auto& cases = j["cases"];
  for (std::size_t i = 0; i < cases.size(); ++i) {
    out += (i == 0 ? "\n    " : ",\n    ") + cases[i].dump();
  }
  out += "\n  ]\n}\n";
  return out;
}

TrackRecordSnapshot parse_track_record(std::string_view json_text, const std::string& origin) {
  const nlohmann::json doc_json = detail::parse_json_text(json_text, origin, 16u << 20);
  StrictObject doc(doc_json, origin, "");
  (void)doc.string("about");
  TrackRecordSnapshot s;
  const double published = doc.non_negative("published_cases");
  if (published != std::floor(published) || published > kMaxSnapshotCases)
    doc.fail("published_cases", "must be a whole number of at most 100000");
  s.published_cases = static_cast<int>(published);
  const nlohmann::json& cases = doc.required("cases");
  if (!cases.is_array()) doc.fail("cases", "must be an array");
  if (cases.size() > static_cast<std::size_t>(s.published_cases))
    doc.fail("cases", "holds more cases than published_cases");
  std::set<std::string, std::less<>> ids;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    StrictObject o(cases[i], origin, fmt::format("cases[{}]", i));
    TrackRecordCase c;
    c.id = o.string("id");
    if (!ids.insert(c.id).second) o.fail("id", fmt::format("'{}' appears twice", c.id));
    c.engine = o.string("engine");
    c.hardware = o.string("hardware");
    c.vendor = o.string("vendor");
    c.architecture = o.string("architecture");
    c.metric = o.string("metric");
    try {
      (void)metric_kind(c.metric);
    } catch (const InvalidArgument& e) {
      o.fail("metric", e.what());
    }
    const nlohmann::json& e = o.required("error_pct");
    if (!e.is_number() || !std::isfinite(e.get<double>()) || e.get<double>() <= -100)
      o.fail("error_pct", "must be a finite number above -100");
    c.error_pct = e.get<double>();
    o.finish();
    s.cases.push_back(std::move(c));
  }
  doc.finish();
  return s;
}

const TrackRecordSnapshot& built_in_track_record() {
  static const TrackRecordSnapshot s = [] {
    for (const auto& f : detail::embedded_files()) {
      if (f.name == "validation/track-record.json")
        return parse_track_record(f.text, "built-in validation/track-record.json");
    }
    return TrackRecordSnapshot{};
  }();
  return s;
}

std::optional<TrackRecord> track_record_for(const TrackRecordSnapshot& snapshot,
                                            std::string_view engine, const Device& device,
                                            MetricKind kind) {
  if (engine == "roofline") return std::nullopt;
  const auto in_scope = [&](const TrackRecordCase& c, std::string_view scope) {
    if (c.engine != engine || metric_kind(c.metric) != kind) return false;
    if (scope == "device") return c.hardware == device.id;
    if (scope == "architecture") return c.architecture == device.architecture;
    return c.vendor == device.vendor;
  };
  for (const std::string_view scope : {"device", "architecture", "vendor"}) {
    std::vector<const TrackRecordCase*> cases;
    for (const auto& c : snapshot.cases) {
      if (in_scope(c, scope)) cases.push_back(&c);
    }
    if (static_cast<int>(cases.size()) < kMinTrackRecordCases) continue;
    TrackRecord t;
    for (const auto& c : snapshot.cases) {
      if (in_scope(c, "device")) ++t.device_cases;
      if (in_scope(c, "architecture")) ++t.architecture_cases;
    }
    t.engine = std::string(engine);
    t.kind = kind;
    t.scope = std::string(scope);
    t.hardware = device.id;
    t.hardware_name = device.name.empty() ? device.id : device.name;
    t.vendor = device.vendor;
    t.architecture = device.architecture;
    t.cases = static_cast<int>(cases.size());
    std::vector<double> abs, optimism;
    std::set<std::string> devices, metrics;  // sorted, distinct
    double worst = -1;
    for (const TrackRecordCase* c : cases) {
      abs.push_back(std::fabs(c->error_pct));
      const double o = optimism_pct(c->metric, c->error_pct);
      optimism.push_back(o);
      if (o > 0) ++t.optimistic;
      if (o < 0) ++t.pessimistic;
      devices.insert(c->hardware);
      metrics.insert(c->metric);
      if (std::fabs(c->error_pct) > worst) {
        worst = std::fabs(c->error_pct);
        t.worst_case = c->id;
      }
    }
    t.devices.assign(devices.begin(), devices.end());
    t.median_abs_error_pct = percentile(abs, 0.5);
    t.p90_abs_error_pct = percentile(abs, 0.9);
    t.max_abs_error_pct = worst;
    t.median_optimism_pct = percentile(optimism, 0.5);
    t.metrics.assign(metrics.begin(), metrics.end());
    return t;
  }
  return std::nullopt;
}

std::string track_record_note(const TrackRecord& t) {
  const auto upper = [](std::string v) {
    for (char& ch : v) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return v;
  };
  const std::string where =
      t.scope == "device" ? fmt::format("on the {}", t.hardware_name)
      : t.scope == "architecture"
          ? fmt::format("on {} devices ({}; {} on the {} itself)", t.architecture,
                        fmt::join(t.devices, ", "), t.device_cases, t.hardware_name)
          : fmt::format("on {} devices ({}; {} on the {}, {} on {} devices)", upper(t.vendor),
                        fmt::join(t.devices, ", "), t.device_cases, t.hardware_name,
                        t.architecture_cases, t.architecture);
  // A lean under 5% either way (as printed) is within the validation's own spread.
  const double lean_pct = std::round(t.median_optimism_pct) + 0.0;  // + 0.0: no "-0"
  const std::string lean =
      std::fabs(lean_pct) < 5
          ? fmt::format("no clear lean ({} faster, {} slower than measured, median {:+.0f}%)",
                        t.optimistic, t.pessimistic, lean_pct)
          : fmt::format("{} of {} predicted {} than measured, by a median {:+.0f}% in speed",
                        lean_pct > 0 ? t.optimistic : t.pessimistic, t.cases,
                        lean_pct > 0 ? "faster" : "slower", lean_pct);
  return fmt::format(
      "track record (roofline validate): {} {}, {} published {} measurements ({}): median "
      "|error| {:.0f}%, p90 {:.0f}%, worst {:.0f}% ({}); {}",
      display_engine(t.engine), where, t.cases, metric_kind_name(t.kind),
      fmt::join(t.metrics, ", "), t.median_abs_error_pct, t.p90_abs_error_pct, t.max_abs_error_pct,
      t.worst_case, lean);
}

std::string no_track_record_note(std::string_view engine, const Device& device, MetricKind kind) {
  return fmt::format(
      "track record (roofline validate): none; fewer than {} published {} measurements of {} on "
      "the {}, on {} devices or on other {} devices",
      kMinTrackRecordCases, metric_kind_name(kind), display_engine(engine),
      device.name.empty() ? device.id : device.name, device.architecture, device.vendor);
}

nlohmann::json to_json(const TrackRecord& t) {
  return {{"engine", t.engine},
          {"kind", metric_kind_name(t.kind)},
          {"scope", t.scope},
          {"hardware", t.hardware},
          {"vendor", t.vendor},
          {"architecture", t.architecture},
          {"cases", t.cases},
          {"devices", t.devices},
          {"metrics", t.metrics},
          {"median_abs_error_pct", t.median_abs_error_pct},
          {"p90_abs_error_pct", t.p90_abs_error_pct},
          {"max_abs_error_pct", t.max_abs_error_pct},
          {"worst_case", t.worst_case},
          {"median_optimism_pct", t.median_optimism_pct},
          {"optimistic_cases", t.optimistic},
          {"pessimistic_cases", t.pessimistic},
          {"device_cases", t.device_cases},
          {"architecture_cases", t.architecture_cases}};
}

}  // namespace roofline
