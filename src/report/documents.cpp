// The documents the CLI prints with --json and the Python bindings return.
#include <cmath>

#include "roofline/engine.h"
#include "roofline/report.h"

namespace roofline {

nlohmann::json hardware_list_document(const Registry& registry) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : registry.devices()) {
    nlohmann::json peaks = nlohmann::json::object();
    for (const auto& info : all_formats()) {
      const auto& p = d.peaks[format_index(info.format)];
      if (p) peaks[std::string(info.id)] = p->known() ? nlohmann::json(p->value) : nlohmann::json();
    }
    list.push_back({{"id", d.id},
                    {"name", d.name},
                    {"aliases", d.aliases},
                    {"memory_bytes", d.memory_capacity_bytes.value},
                    {"bandwidth_Bps", d.memory_bandwidth_Bps.value},
                    {"peak_flops_per_s", peaks}});
  }
  nlohmann::json out = stamp(registry);
  out["devices"] = list;
  return out;
}

nlohmann::json hardware_document(const Device& device, const Registry& registry) {
  nlohmann::json out = stamp(registry);
  out["device"] = to_json(device);
  return out;
}

nlohmann::json formats_document() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : all_formats()) list.push_back(to_json(f));
  return {{"version", std::string(version())}, {"formats", list}};
}

namespace {

// A preset's quantized releases: format, checkpoint, the operators kept and in what.
nlohmann::json releases_json(const std::vector<QuantizedRelease>& releases) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : releases) {
    list.push_back({{"format", format_id(r.format)},
                    {"checkpoint", r.checkpoint},
                    {"kept_format", format_id(r.kept_format)},
                    {"kept_operators", kept_operator_names(r)},
                    {"draft_head_kept", r.draft_head_kept},
                    {"source", r.source}});
  }
  return list;
}

}  // namespace

nlohmann::json model_list_document() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : ModelCatalog::built_in().presets()) {
    const ModelSpec m = preset_model(p);
    const ParamCounts pc = count_parameters(m);
    list.push_back({{"id", p.id},
                    {"name", p.name},
                    {"hf_repo", p.hf_repo},
                    {"aliases", p.aliases},
                    {"model_type", m.model_type},
                    {"params", pc.total},
                    {"active_params_per_token", pc.active_per_token},
                    {"published_params", p.published_params},
                    {"native_weights", format_id(m.native_weights)},
                    {"native_experts", format_id(m.native_experts)}});
    if (!p.draft_tokens_per_step.empty()) {
      list.back()["draft_tokens_per_step"] = p.draft_tokens_per_step;
      list.back()["draft_acceptance_source"] = p.draft_acceptance_source;
    }
    if (!p.releases.empty()) list.back()["quantized_releases"] = releases_json(p.releases);
  }
  return {{"version", std::string(version())}, {"models", list}};
}

nlohmann::json model_document(const ModelSpec& model, const ModelPreset* preset) {
  nlohmann::json j = to_json(model);
  if (preset) {
    j["published_params"] = preset->published_params;
    j["published_params_source"] = preset->published_params_source;
    j["config_source"] = preset->config_source;
  }
  if (!model.draft_tokens_per_step.empty()) {
    j["draft_tokens_per_step"] = model.draft_tokens_per_step;
    j["draft_acceptance_source"] = model.draft_acceptance_source;
  }
  if (!model.releases.empty()) j["quantized_releases"] = releases_json(model.releases);
  j["version"] = std::string(version());
  return j;
}

nlohmann::json strategies_document() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : built_in_strategies()) list.push_back(to_json(s));
  return {{"version", std::string(version())}, {"strategies", list}};
}

nlohmann::json engines_document() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : EngineRegistry::built_in().engines()) list.push_back(to_json(e));
  return list;
}

nlohmann::json kv_document(const ModelSpec& model, const Device& device, const KvReport& report,
                           const Registry& registry) {
  nlohmann::json j = to_json(report);
  j["model"] = model.id;
  j["hardware"] = device.id;
  j.update(stamp(registry));
  return j;
}

nlohmann::json attention_document(const ModelSpec& model, const Device& device, const Scenario& s,
                                  const std::vector<AttentionComparisonRow>& rows,
                                  const Registry& registry) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& row : rows) {
    if (!row.supported) {
      kernels.push_back({{"kernel", row.kernel->id}, {"supported", false}});
      continue;
    }
    const Figure& efficiency = row.kernel->efficiency_on(device);
    kernels.push_back(
        {{"kernel", row.kernel->id},
         {"supported", true},
         {"attention_time_s", row.attention_time_s},
         {"attention_bytes", row.attention_bytes},
         {"time_s", row.time_s},
         {"speedup_vs_first", row.speedup_vs_first},
         {"efficiency", efficiency.known() ? nlohmann::json(efficiency.value) : nlohmann::json()}});
  }
  nlohmann::json j = {
      {"model", model.id},    {"hardware", device.id}, {"phase", phase_name(s.phase)},
      {"seq_len", s.seq_len}, {"batch", s.batch},      {"kernels", kernels}};
  j.update(stamp(registry));
  return j;
}

nlohmann::json recommend_document(const ModelSpec& model, const Device& device,
                                  const RecommendOptions& options, const Recommendation& r,
                                  const Registry& registry) {
  nlohmann::json j = to_json(r);
  j["scenario"] = {{"model", model.id},
                   {"hardware", device.id},
                   {"phase", phase_name(options.phase)},
                   {"seq_len", options.seq_len},
                   {"batch", options.batch},
                   {"max_quality_loss_pct", options.max_quality_loss_pct}};
  j.update(stamp(registry));
  return j;
}

namespace {

// A checked run as JSON: the run, then what was predicted (`serving`: TTFT and
// TPOT) or why it was refused.
nlohmann::json row_json(const DecodeStepRow& row, bool serving) {
  nlohmann::json j = {{"id", row.run.id},
                      {"backend", row.run.backend},
                      {"model_path", row.run.model_path},
                      {"system", row.run.system},
                      {"mode", row.run.mode},
                      {"isl", row.run.isl},
                      {"osl", row.run.osl},
                      {"concurrency", row.run.concurrency},
                      {"tp", row.run.tp},
                      {"attention_dp", row.run.attention_dp},
                      {"ep", row.run.moe_ep},
                      {"measured_tpot_ms", row.run.tpot_ms}};
  if (serving) j["measured_ttft_ms"] = row.run.ttft_ms;
  if (!row.run.layout_note.empty()) j["layout_note"] = row.run.layout_note;
  if (!row.run.harness.empty()) {
    j["harness"] = row.run.harness;
    j["draft_tokens"] = row.run.draft_tokens;
  }
  if (!row.refused.empty()) {
    j["refused"] = row.refused;
    return j;
  }
  j.update({{"model", row.model},
            {"hardware", row.device},
            {"engine", row.engine},
            {"formats", row.formats}});
  if (serving) {
    j.update({{"predicted_ttft_ms", row.predicted_ttft_ms},
              {"predicted_tpot_ms", row.predicted_ms},
              {"ttft_error_pct", row.ttft_error_pct},
              {"tpot_error_pct", row.error_pct}});
  } else {
    j.update({{"predicted_step_ms", row.predicted_ms}, {"error_pct", row.error_pct}});
  }
  return j;
}

// The rows read with a harness note's settings, by note.
nlohmann::json harness_rows_json(const DecodeStepReport& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [id, n] : r.harness_rows) out.push_back({{"harness", id}, {"rows", n}});
  return out;
}

nlohmann::json refusals_json(const DecodeStepReport& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [reason, n] : r.refusals) out.push_back({{"reason", reason}, {"rows", n}});
  return out;
}

}  // namespace

nlohmann::json targets_json(const std::vector<TargetCheck>& targets) {
  nlohmann::json out = nlohmann::json::array();
  for (const TargetCheck& t : targets) {
    out.push_back({{"target", t.target},
                   {"value", t.value},
                   {"limit", t.limit},
                   {"holds", t.holds},
                   {"misses", t.misses}});
  }
  return out;
}

nlohmann::json error_groups_json(const std::vector<ErrorStats>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : groups) out.push_back(to_json(g));
  return out;
}

// The configurations measured more than once whose TPOTs disagree.
nlohmann::json conflicts_json(const DecodeStepReport& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : r.conflicts) {
    out.push_back({{"ids", c.ids},
                   {"backend_versions", c.versions},
                   {"measured_tpot_ms", c.tpot_ms},
                   {"ratio", c.ratio},
                   {"floor_error_pct", c.floor_error_pct},
                   {"across_releases", c.across_releases}});
  }
  return out;
}

nlohmann::json decode_steps_document(const DecodeStepReport& r, bool prefill_share,
                                     const std::vector<ErrorStats>& held_out,
                                     const Registry& registry) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) rows.push_back(row_json(row, false));
  nlohmann::json out = {{"check", "decode_steps"},
                        {"prefill_share", prefill_share},
                        {"predicted", r.predicted},
                        {"refused", r.refused},
                        {"skipped_disaggregated", r.skipped_disaggregated},
                        {"repeated_rows", r.repeated},
                        {"harness_rows", harness_rows_json(r)},
                        {"conflicting_measurements", conflicts_json(r)},
                        {"groups", error_groups_json(r.groups)},
                        {"targets", targets_json(decode_step_targets(r))},
                        {"refusals", refusals_json(r)},
                        {"leave_one_device_out", error_groups_json(held_out)},
                        {"rows", rows}};
  out.update(stamp(registry));
  return out;
}

namespace {

// TTFT against prompt length: each sweep's fits and their medians by group.
nlohmann::json ttft_length_json(const DecodeStepReport& r) {
  const std::vector<TtftLengthFit> fits = ttft_length_fits(r);
  nlohmann::json sweeps = nlohmann::json::array();
  for (const TtftLengthFit& f : fits) {
    sweeps.push_back({{"engine", f.engine},
                      {"backend_version", f.engine_version},
                      {"model", f.model},
                      {"hardware", f.device},
                      {"formats", f.formats},
                      {"harness", f.harness},
                      {"tp", f.tp},
                      {"ep", f.ep},
                      {"attention_dp", f.attention_dp},
                      {"concurrency", f.concurrency},
                      {"osl", f.osl},
                      {"isl", f.isl},
                      {"measured_fixed_s", f.measured_fixed_ms * 1e-3},
                      {"predicted_fixed_s", f.predicted_fixed_ms * 1e-3},
                      {"measured_per_token_s", f.measured_per_token_us * 1e-6},
                      {"predicted_per_token_s", f.predicted_per_token_us * 1e-6}});
  }
  nlohmann::json groups = nlohmann::json::array();
  for (const TtftLengthSummary& g : summarize_ttft_length_fits(fits)) {
    groups.push_back({{"group", g.group},
                      {"sweeps", g.sweeps},
                      {"median_fixed_gap_s", g.median_fixed_gap_ms * 1e-3},
                      {"rising", g.rising},
                      {"median_per_token_ratio", g.median_per_token_ratio}});
  }
  return {{"groups", groups}, {"sweeps", sweeps}};
}

}  // namespace

nlohmann::json serving_validation_document(const DecodeStepReport& r, ServingRecipe recipe,
                                           std::int64_t rounds, const Registry& registry) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) rows.push_back(row_json(row, true));
  nlohmann::json out = {{"check", "serving"},
                        {"recipe", serving_recipe_name(recipe)},
                        {"rounds", rounds},
                        {"prompt_pool", r.prompt_pool},
                        {"predicted", r.predicted},
                        {"refused", r.refused},
                        {"repeated_rows", r.repeated},
                        {"harness_rows", harness_rows_json(r)},
                        {"conflicting_measurements", conflicts_json(r)},
                        {"tpot_groups", error_groups_json(r.groups)},
                        {"ttft_groups", error_groups_json(r.ttft_groups)},
                        {"ttft_by_prompt_length", ttft_length_json(r)},
                        {"targets", targets_json(serving_targets(r))},
                        {"refusals", refusals_json(r)},
                        {"rows", rows}};
  out.update(stamp(registry));
  return out;
}

nlohmann::json validation_document(const ValidationReport& r, Mode mode, const Registry& registry) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json j = {{"id", row.c.id},           {"hardware", row.c.hardware},
                        {"model", row.c.model},     {"framework", row.c.framework},
                        {"weights", row.c.weights}, {"batch", row.c.batch},
                        {"prompt", row.c.prompt},   {"gen", row.c.gen},
                        {"metric", row.c.metric},   {"measured", row.c.value},
                        {"source", row.c.source},   {"engine", row.engine},
                        {"tp", row.c.tp},           {"ep", row.c.ep}};
    if (!row.c.source_key.empty()) j["source_key"] = row.c.source_key;
    if (row.c.cached > 0) j["cached"] = row.c.cached;
    if (row.c.requests > 0) j["requests"] = row.c.requests;
    if (row.c.attention_dp > 1) j["attention_dp"] = row.c.attention_dp;
    if (row.c.prompt_min > 0) j["prompt_min"] = row.c.prompt_min;
    if (row.c.gen_min > 0) j["gen_min"] = row.c.gen_min;
    if (row.c.token_budget > 0) j["token_budget"] = row.c.token_budget;
    if (row.c.max_running > 0) j["max_running"] = row.c.max_running;
    if (!row.c.engine_version.empty()) j["engine_version"] = row.c.engine_version;
    if (row.c.overlap != DeploymentSwitch::kEngine)
      j["overlap_scheduling"] = switch_name(row.c.overlap);
    if (row.c.chunked_prefill != DeploymentSwitch::kEngine)
      j["chunked_prefill"] = switch_name(row.c.chunked_prefill);
    if (row.c.pp > 1) j["pp"] = row.c.pp;
    if (row.c.recipe != ServingRecipe::kEngineDefaults)
      j["recipe"] = serving_recipe_name(row.c.recipe);
    if (row.c.kv_memory_share > 0) j["kv_memory_share"] = row.c.kv_memory_share;
    if (row.error.empty()) {
      j["predicted"] = row.predicted;
      j["error_pct"] = row.error_pct;
    } else {
      j["error"] = row.error;
    }
    rows.push_back(j);
  }
  nlohmann::json out = {{"mode", mode_name(mode)},
                        {"cases", rows},
                        {"evaluated", r.evaluated},
                        {"median_abs_error_pct", r.median_abs_error_pct},
                        {"mean_abs_error_pct", r.mean_abs_error_pct},
                        {"max_abs_error_pct", r.max_abs_error_pct},
                        {"median_signed_error_pct", r.median_signed_error_pct},
                        {"median_optimism_pct", r.median_optimism_pct},
                        {"optimistic_cases", r.optimistic}};
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : r.groups) groups.push_back(to_json(g));
  out["groups"] = groups;
  // Issue 11's targets read realistic predictions (the ideal mode is a reference, not a claim).
  out["targets"] =
      targets_json(mode == Mode::kRealistic ? published_targets(r) : std::vector<TargetCheck>{});
  out.update(stamp(registry));
  return out;
}

nlohmann::json to_json(const ErrorStats& s) {
  return {{"group", s.group},
          {"rows", s.rows},
          {"median_abs_error_pct", s.median_abs_pct},
          {"p90_abs_error_pct", s.p90_abs_pct},
          {"max_abs_error_pct", s.max_abs_pct},
          {"median_signed_error_pct", s.median_signed_pct}};
}

nlohmann::json to_json(const TensorReport& t) {
  nlohmann::json j = {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
  if (!t.skipped.empty()) {
    j["skipped"] = t.skipped;
    return j;
  }
  auto err = [](const FormatError& e) {
    return nlohmann::json{{"format", format_id(e.format)},
                          {"bits_per_element", e.bits_per_element},
                          {"outliers_kept", e.outliers_kept},
                          {"sqnr_db", e.error.sqnr_db},
                          {"mse", e.error.mse},
                          {"max_abs_error", e.error.max_abs},
                          {"cosine", e.error.cosine}};
  };
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& e : t.errors) errors.push_back(err(e));
  j.update({{"rows", t.rows},
            {"cols", t.cols},
            {"max_abs", t.max_abs},
            {"rms", t.rms},
            {"kurtosis", t.kurtosis},
            {"max_channel_ratio", t.max_channel_ratio},
            {"outlier_channels", t.outlier_channels},
            {"outlier_channel_count", t.outlier_channel_count},
            {"outlier_tokens", t.outlier_token_count},
            {"sampled_rows", t.sampled_rows},
            {"errors", errors},
            {"plan", err(t.plan)},
            {"meets_budget", t.meets_budget},
            {"sqnr_static_int8_db", t.sqnr_static_db},
            {"sqnr_per_token_int8_db", t.sqnr_per_token_db},
            {"needs_per_token_scales", t.needs_per_token_scales}});
  return j;
}

nlohmann::json quantize_document(const std::string& checkpoint, double budget_sqnr_db,
                                 const std::vector<TensorReport>& reports) {
  double bits = 0, elements = 0, bits_plain = 0;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : reports) {
    list.push_back(to_json(t));
    if (!t.skipped.empty()) continue;
    const double n = static_cast<double>(t.rows * t.cols);
    bits += n * t.plan.bits_per_element;
    bits_plain += n * 16;
    elements += n;
  }
  return {{"version", std::string(version())},
          {"checkpoint", checkpoint},
          {"budget_sqnr_db", budget_sqnr_db},
          {"tensors", list},
          {"mean_bits_per_element", elements > 0 ? bits / elements : 0},
          {"size_vs_16bit", bits_plain > 0 ? bits / bits_plain : 0}};
}

}  // namespace roofline
