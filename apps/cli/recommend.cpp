// `roofline strategies` (the named precision plans) and `roofline recommend`
// (ranks them and the attention kernels for a model and device).
#include "roofline/recommend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "roofline/attention.h"
#include "roofline/error.h"
#include "roofline/formats.h"
#include "roofline/quantize.h"
#include "roofline/report.h"
#include "roofline/strategy.h"

namespace roofline::cli {
namespace {

void cmd_strategies(const Common& c) {
  const auto& all = built_in_strategies();
  if (c.output() == Output::kJson) {
    print_json(strategies_document());
    return;
  }
  Table t({"strategy", "weights", "act", "KV", "per-op overrides", "description"});
  for (const auto& s : all) {
    std::string ops;
    for (int i = 0; i < kOpKindCount; ++i) {
      const auto& o = s.ops[static_cast<std::size_t>(i)];
      if (!o.weights && !o.act) continue;
      ops += (ops.empty() ? "" : "; ") + std::string(op_name(static_cast<OpKind>(i))) + " " +
             (o.weights ? "w=" + std::string(format_id(*o.weights)) : "") +
             (o.weights && o.act ? "," : "") + (o.act ? "a=" + std::string(format_id(*o.act)) : "");
    }
    t.add_row({s.name, std::string(format_id(s.weights)), std::string(format_id(s.act)),
               std::string(format_id(s.kv)), ops.empty() ? "-" : ops, s.description});
  }
  std::cout << (c.output() == Output::kCsv ? t.csv() : t.text());
}

struct RecommendArgs {
  ScenarioArgs sc;
  std::string max_quality_loss = "3";
  std::string memory_limit, latency_target;
  std::vector<std::string> strategy_files;
  std::string checkpoint;
  std::string budget = "25";
};

void cmd_recommend(const Common& c, const RecommendArgs& a) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.sc.hardware);
  const ModelSpec m = load_model(a.sc.model);
  RecommendOptions o;
  o.phase = parse_phase(a.sc.phase);
  o.seq_len = parse_count("--seq-len", a.sc.seq_len, 1, kMaxSeqLen);
  o.batch = parse_count("--batch", a.sc.batch, 1, kMaxBatch);
  o.tp = parse_count("--tp", a.sc.tp, 1, kMaxParallel);
  o.pp = parse_count("--pp", a.sc.pp, 1, kMaxParallel);
  if (!a.sc.weights.empty() || !a.sc.experts.empty() || !a.sc.kv.empty() || !a.sc.act.empty() ||
      !a.sc.strategy.empty() || !a.sc.attention.empty()) {
    throw InvalidArgument(
        "recommend chooses the formats and the attention kernel itself; --weights, --experts, "
        "--act, "
        "--kv, --strategy and --attention do not apply (add candidates with --strategy-file)");
  }
  o.max_quality_loss_pct = parse_positive("--max-quality-loss", a.max_quality_loss);
  if (!a.memory_limit.empty()) {
    o.memory_limit_bytes = parse_positive("--memory-limit", a.memory_limit);
    if (*o.memory_limit_bytes <= 0) throw InvalidArgument("--memory-limit must be positive");
  }
  if (!a.latency_target.empty()) {
    o.latency_target_s = parse_positive("--latency-target", a.latency_target);
    if (*o.latency_target_s <= 0) throw InvalidArgument("--latency-target must be positive");
  }
  o.model_options = make_options(a.sc, &d);
  if (!a.strategy_files.empty()) {
    o.strategies = built_in_strategies();
    for (const auto& f : a.strategy_files) o.strategies.push_back(load_strategy(f));
  }
  if (!a.checkpoint.empty()) {
    QuantizeOptions q;
    q.budget_sqnr_db = parse_positive("--budget-sqnr-db", a.budget);
    o.checkpoint_budget_sqnr_db = q.budget_sqnr_db;
    o.checkpoint_reports = quantize_checkpoint(a.checkpoint, q);
  }
  const Recommendation r = recommend(m, d, o);
  if (c.output() == Output::kJson) {
    print_json(recommend_document(m, d, o, r, reg));
    return;
  }
  Table t(
      {"strategy", "attention", "time", "speedup", "memory", "saving", "quality loss", "verdict"});
  for (const auto& cand : r.alternatives) {
    const bool ran = std::isfinite(cand.time_s);  // not: the engine cannot run its formats
    t.add_row(
        {cand.strategy, ran ? std::string(attention_kernel_id(cand.attention)) : "-",
         ran ? human_time(cand.time_s) : "-",
         ran ? fmt::format("{:.2f}x", cand.predicted_speedup) : "-",
         ran ? human_bytes(cand.memory_bytes) : "-",
         ran ? fmt::format("{:.0f}%", cand.memory_saving * 100) : "-",
         fmt::format("{:.1f}%{}", cand.quality.loss_pct, cand.quality.quantified ? "" : " (?)"),
         cand.feasible ? (&cand == &r.alternatives.front() ? "recommended" : "ok") : [&] {
           std::string all;  // every reason it was rejected
           for (const auto& why : cand.rejected_because) all += (all.empty() ? "" : "; ") + why;
           return all;
         }()});
  }
  if (c.output() == Output::kCsv) {
    std::cout << t.csv();
    return;
  }
  std::cout << fmt::format("{} {} on {} ({}): {} {}, batch {}, quality budget {:.1f}%\n\n", m.name,
                           phase_name(o.phase), d.name, d.id,
                           o.phase == Phase::kDecode ? "context" : "prompt", o.seq_len, o.batch,
                           o.max_quality_loss_pct);
  std::cout << t.text();
  if (std::any_of(r.alternatives.begin(), r.alternatives.end(),
                  [](const Candidate& x) { return !x.quality.quantified; })) {
    std::cout
        << "(?): no published result for this exact format pair; a nearest result stands in\n";
  }
  std::cout << "\n";
  print_notes(r.rationale);
}

}  // namespace

void register_strategies(CLI::App& app, Common& common) {
  auto* strategies_cmd = app.add_subcommand("strategies", "The named mixed-precision strategies");
  add_common(strategies_cmd, &common, true);
  strategies_cmd->callback([&common] { cmd_strategies(common); });
}

void register_recommend(CLI::App& app, Common& common) {
  auto rc = std::make_shared<RecommendArgs>();
  auto* recommend_cmd = app.add_subcommand(
      "recommend", "Rank precision strategies and kernels for a model and device");
  add_scenario_options(recommend_cmd, &rc->sc, true);
  add_engine_version_option(recommend_cmd, &rc->sc);
  recommend_cmd
      ->add_option("--max-quality-loss", rc->max_quality_loss,
                   "Largest estimated quality loss, percent")
      ->capture_default_str()
      ->type_name("PCT");
  recommend_cmd
      ->add_option("--memory-limit", rc->memory_limit,
                   "Bytes of memory available (default: the device's)")
      ->type_name("BYTES");
  recommend_cmd
      ->add_option("--latency-target", rc->latency_target,
                   "Longest acceptable time per pass, seconds")
      ->type_name("S");
  recommend_cmd
      ->add_option("--strategy-file", rc->strategy_files,
                   "Extra candidate plan (.json); repeatable")
      ->type_name("FILE");
  recommend_cmd
      ->add_option("--checkpoint", rc->checkpoint,
                   "A .safetensors file whose measured errors inform quality")
      ->type_name("FILE");
  recommend_cmd
      ->add_option("--budget-sqnr-db", rc->budget, "SQNR budget for the checkpoint's tensors")
      ->capture_default_str()
      ->type_name("DB");
  add_common(recommend_cmd, &common, true);
  recommend_cmd->callback([&common, rc] { cmd_recommend(common, *rc); });
}

}  // namespace roofline::cli
