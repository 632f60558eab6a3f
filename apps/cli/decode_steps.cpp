#include "decode_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "roofline/error.h"
#include "roofline/report.h"
#include "roofline/validate.h"

namespace roofline::cli {

std::string error_groups_table(const std::vector<ErrorStats>& groups) {
  Table t({"group", "rows", "median |error|", "p90", "max", "signed median"});
  for (const auto& g : groups) {
    t.add_row({g.group, std::to_string(g.rows), fmt::format("{:.1f}%", g.median_abs_pct),
               fmt::format("{:.1f}%", g.p90_abs_pct), fmt::format("{:.1f}%", g.max_abs_pct),
               fmt::format("{:+.1f}%", g.median_signed_pct)});
  }
  return t.text();
}

std::string targets_table(const std::string& title, const std::vector<TargetCheck>& targets) {
  if (targets.empty()) return "";
  Table t({"target", "measured", "limit", "holds", "misses"});
  for (const TargetCheck& c : targets) {
    t.add_row({c.target, c.count ? fmt::format("{:.0f}", c.value) : fmt::format("{:.1f}%", c.value),
               c.count ? fmt::format("{:.0f}", c.limit) : fmt::format("{:.0f}%", c.limit),
               c.holds ? "yes" : "no", c.misses});
  }
  return "\n" + title + "\n" + t.text();
}

namespace {

// The runs recorded twice, which the figures count each time.
void print_repeated(const DecodeStepReport& r) {
  if (r.repeated == 0) return;
  std::cout << fmt::format(
      "{} rows are read the same as an earlier row in every field but the id (one run recorded "
      "twice); each counts in the figures above\n",
      r.repeated);
}

// The rows read with what their benchmark ran beyond the set's columns.
void print_harnesses(const DecodeStepReport& r) {
  for (const auto& [id, n] : r.harness_rows) {
    std::cout << fmt::format(
        "{} rows read with their benchmark's settings from harness note {} "
        "(data/validation/serving-harnesses.json)\n",
        n, id);
  }
}

// Configurations measured more than once whose TPOTs disagree: what no model
// can fit on those rows. The widest few are listed.
void print_conflicts(const DecodeStepReport& r) {
  if (r.conflicts.empty()) return;
  std::size_t rows = 0, across = 0;
  std::vector<double> floors;
  for (const auto& c : r.conflicts) {
    rows += c.ids.size();
    across += c.across_releases;
    floors.push_back(c.floor_error_pct);
  }
  std::cout << fmt::format(
      "{} configurations were measured more than once with TPOTs {:.0f}% or more apart ({} rows; "
      "{} of them across engine releases): no one prediction comes within {:.1f}% (median of "
      "the groups) of every row of its group\n",
      r.conflicts.size(), 100 * (kConflictRatio - 1), rows, across, percentile(floors, 0.5));
  constexpr std::size_t kListed = 5;
  for (std::size_t i = 0; i < std::min(kListed, r.conflicts.size()); ++i) {
    const auto& c = r.conflicts[i];
    std::string measured;
    for (std::size_t k = 0; k < c.ids.size(); ++k) {
      measured += fmt::format("{}{:.2f} ms ({})", k ? ", " : "", c.tpot_ms[k],
                              c.versions[k].empty() ? "release not given" : c.versions[k]);
    }
    std::cout << fmt::format("  {:.2f}x  {}: {}\n", c.ratio, c.ids.front(), measured);
  }
}

// TTFT against prompt length: per engine and model, how far the fixed part of
// the fitted TTFT = fixed + per_token x isl misses, and how the per-token parts compare.
void print_ttft_by_length(const DecodeStepReport& r) {
  const std::vector<TtftLengthSummary> groups = summarize_ttft_length_fits(ttft_length_fits(r));
  if (groups.empty()) return;
  Table t({"group", "sweeps", "fixed part: measured - predicted", "rising",
           "per token: predicted / measured"});
  for (const auto& g : groups) {
    t.add_row({g.group, std::to_string(g.sweeps), fmt::format("{:+.1f} ms", g.median_fixed_gap_ms),
               std::to_string(g.rising),
               g.rising > 0 ? fmt::format("{:.2f}", g.median_per_token_ratio) : "-"});
  }
  std::cout << "\nTTFT against prompt length (aggregated sweeps measured at two or more prompt "
               "lengths under one setting, each fitted to TTFT = fixed + per_token x isl; "
               "medians; rising: the sweeps whose measured TTFT grows with length)\n"
            << t.text();
}

}  // namespace

void decode_steps_command(const Registry& registry, const std::string& file,
                          const std::string& engine, DecodeStepsOutput output, bool leave_one_out,
                          bool prefill_share) {
  const std::vector<ServingRun> runs =
      file.empty() ? built_in_serving_runs() : load_serving_runs(file);
  const DecodeStepReport r =
      validate_decode_steps(runs, registry, {}, engine, nullptr, prefill_share);
  std::vector<ErrorStats> held_out;
  if (leave_one_out) {
    if (engine != "case")
      throw InvalidArgument("--leave-one-out: predicts with each run's own engine (no --engine)");
    held_out = leave_one_device_out(runs, registry, prefill_share);
  }
  if (output == DecodeStepsOutput::kJson) {
    std::cout << decode_steps_document(r, prefill_share, held_out, registry).dump(2) << "\n";
    return;
  }
  if (output == DecodeStepsOutput::kCsv) {
    Table t({"id", "backend", "model", "hardware", "engine", "formats", "isl", "osl", "concurrency",
             "tp", "measured_tpot_ms", "predicted_step_ms", "error_pct", "refused"});
    for (const auto& row : r.rows) {
      const bool ok = row.refused.empty();
      t.add_row({row.run.id, row.run.backend, ok ? row.model : row.run.model_path,
                 ok ? row.device : row.run.system, row.engine, row.formats,
                 std::to_string(row.run.isl), std::to_string(row.run.osl),
                 std::to_string(row.run.concurrency), std::to_string(row.run.tp),
                 fmt::format("{:.4g}", row.run.tpot_ms),
                 ok ? fmt::format("{:.4g}", row.predicted_ms) : "",
                 ok ? fmt::format("{:.2f}", row.error_pct) : "", row.refused});
    }
    std::cout << t.csv();
    return;
  }
  std::cout << "Decode steps at batch = concurrency over isl + osl/2 cached tokens"
            << (prefill_share ? " (at most the requests whose KV cache fits), each with its share "
                                "of the arriving prompts (batch / osl whole prompts a step)"
                              : "")
            << ", against the measured TPOT\n(aggregated rows; error = (predicted - measured) / "
               "measured: "
               "negative is predicted faster)\n\n"
            << error_groups_table(r.groups);
  std::cout << targets_table("Issue 11's target", decode_step_targets(r));
  std::cout << fmt::format("\n{} rows predicted, {} refused, {} disaggregated rows skipped\n",
                           r.predicted, r.refused, r.skipped_disaggregated);
  for (const auto& [reason, n] : r.refusals) std::cout << fmt::format("  {:4}  {}\n", n, reason);
  print_repeated(r);
  print_harnesses(r);
  print_conflicts(r);
  if (leave_one_out) {
    std::cout << "\nLeave one device out: each measured device's rows with its own GEMM "
                 "tables, then without them\n(borrowing its architecture's nearest other "
                 "device's)\n\n"
              << error_groups_table(held_out);
  }
}

void serving_validation_command(const Registry& registry, const std::string& file,
                                const std::string& engine, ServingRecipe recipe,
                                DecodeStepsOutput output, std::int64_t rounds,
                                std::int64_t prompt_pool) {
  const std::vector<ServingRun> runs =
      file.empty() ? built_in_serving_runs() : load_serving_runs(file);
  const DecodeStepReport r = validate_serving(runs, registry, engine, recipe, rounds, prompt_pool);
  if (output == DecodeStepsOutput::kJson) {
    std::cout << serving_validation_document(r, recipe, rounds, registry).dump(2) << "\n";
    return;
  }
  if (output == DecodeStepsOutput::kCsv) {
    Table t({"id", "backend", "model", "hardware", "mode", "isl", "osl", "concurrency", "tp",
             "measured_ttft_ms", "predicted_ttft_ms", "measured_tpot_ms", "predicted_tpot_ms",
             "refused"});
    for (const auto& row : r.rows) {
      const bool ok = row.refused.empty();
      t.add_row({row.run.id, row.run.backend, ok ? row.model : row.run.model_path,
                 ok ? row.device : row.run.system, row.run.mode, std::to_string(row.run.isl),
                 std::to_string(row.run.osl), std::to_string(row.run.concurrency),
                 std::to_string(row.run.tp), fmt::format("{:.4g}", row.run.ttft_ms),
                 ok ? fmt::format("{:.4g}", row.predicted_ttft_ms) : "",
                 fmt::format("{:.4g}", row.run.tpot_ms),
                 ok ? fmt::format("{:.4g}", row.predicted_ms) : "", row.refused});
    }
    std::cout << t.csv();
    return;
  }
  std::cout << "The serving model (roofline serving: a simulation of the benchmark against the "
               "engine's scheduler"
            << (recipe == ServingRecipe::kAiConfigurator
                    ? ", each engine with the limits AIConfigurator's generator sets for benchmark "
                      "deployments"
                : recipe == ServingRecipe::kBenchmarkTuning
                    ? ", TensorRT-LLM with the limits trtllm-bench tunes (other engines refused)"
                    : ", each engine with its own defaults")
            << fmt::format(", {} requests a client", rounds)
            << (prompt_pool > 0 ? fmt::format(", prompts drawn from a pool of {} (aggregated rows)",
                                              prompt_pool)
                                : std::string())
            << ") against measured serving runs\n(error = (predicted - measured) / measured: "
               "negative is predicted faster)\n\nTPOT\n"
            << error_groups_table(r.groups) << "\nTTFT\n"
            << error_groups_table(r.ttft_groups);
  print_ttft_by_length(r);
  std::cout << targets_table("Issue 12's targets (aggregated rows)", serving_targets(r));
  std::cout << fmt::format("\n{} rows predicted, {} refused\n", r.predicted, r.refused);
  for (const auto& [reason, n] : r.refusals) std::cout << fmt::format("  {:4}  {}\n", n, reason);
  print_repeated(r);
  print_harnesses(r);
  print_conflicts(r);
}

}  // namespace roofline::cli
