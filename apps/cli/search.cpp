// `roofline search`: the deployment search (roofline/search.h).
#include "roofline/search.h"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "commands.h"
#include "common.h"
#include "roofline/error.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

struct SearchArgs {
  std::string model = "llama-3.1-70b", hardware = "h200", gpus = "8", isl = "1024", osl = "256";
  std::string ttft_max, tpot_max, engines, weights, concurrency, modes;
  std::string draft_tokens = "0", acceptance;
  std::string recipe = "engine";
  std::string range_ratio, engine_versions;
  std::string shared_prefix = "0", prompt_pool = "0";
};

std::string row_name(const Deployment& d) { return deployment_name(d); }

void cmd_search(const Common& c, const SearchArgs& a) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.hardware);
  const ModelSpec m = load_model(a.model);
  SearchSpec spec;
  spec.gpus = parse_count("--gpus", a.gpus, 1, 4096);
  spec.isl = parse_count("--isl", a.isl, 1, kMaxSeqLen);
  spec.osl = parse_count("--osl", a.osl, 1, kMaxSeqLen);
  if (!a.range_ratio.empty()) set_range_ratio(spec, parse_positive("--range-ratio", a.range_ratio));
  if (!a.ttft_max.empty()) spec.ttft_max_s = parse_positive("--ttft-max", a.ttft_max);
  if (!a.tpot_max.empty()) spec.tpot_max_s = parse_positive("--tpot-max", a.tpot_max);
  if (!a.engines.empty()) spec.engines = split_list("--engines", a.engines);
  if (!a.engine_versions.empty())
    spec.engine_versions = parse_engine_versions(a.engine_versions, spec.engines);
  if (!a.weights.empty()) {
    for (const auto& w : split_list("--weights", a.weights))
      spec.weights.push_back(parse_format(w));
  }
  if (!a.modes.empty()) {
    for (const auto& x : split_list("--modes", a.modes))
      spec.modes.push_back(parse_serving_mode(x));
  }
  if (!a.concurrency.empty()) {
    for (const auto& x : split_list("--concurrency", a.concurrency))
      spec.concurrencies.push_back(parse_count("--concurrency", x, 1, kMaxBatch));
  }
  spec.draft_tokens = parse_count("--draft-tokens", a.draft_tokens, 0, kMaxDraftTokens);
  if (!a.acceptance.empty()) spec.acceptance = parse_positive("--acceptance", a.acceptance);
  spec.recipe = parse_serving_recipe(a.recipe);
  spec.shared_prefix = parse_count("--shared-prefix", a.shared_prefix, 0, kMaxSeqLen);
  spec.prompt_pool = parse_count("--prompt-pool", a.prompt_pool, 0, kMaxPromptPool);
  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  const SearchResult r =
      search_deployments(m, d, spec, [terminal](std::int64_t done, std::int64_t total) {
        if (!terminal) return;
        std::cerr << fmt::format("\rsearching {} of {} configurations", done, total) << std::flush;
        if (done == total) std::cerr << "\n";
      });
  if (c.output() == Output::kJson) {
    print_json(search_document(m, d, spec, r, reg));
    return;
  }
  std::cout << fmt::format(
      "{} on {} x {}: {} prompt / {} output tokens{}{}{}; {} configurations, {} refused, {} "
      "skipped (past twice the requests a layout runs at once)\n\n",
      m.name, spec.gpus, d.id, spec.isl, spec.osl,
      spec.draft_tokens > 0
          ? fmt::format(", {} draft tokens a step at acceptance {:.3g}", spec.draft_tokens,
                        draft_acceptance(m, spec.draft_tokens, spec.acceptance))
          : std::string(),
      spec.recipe == ServingRecipe::kAiConfigurator
          ? ", each engine with AIConfigurator's benchmark limits"
      : spec.recipe == ServingRecipe::kBenchmarkTuning
          ? ", TensorRT-LLM with trtllm-bench's tuned limits"
          : "",
      (spec.shared_prefix > 0 ? fmt::format(", a {}-token shared prefix", spec.shared_prefix)
                              : std::string()) +
          (spec.prompt_pool > 0 ? fmt::format(", prompts from a pool of {}", spec.prompt_pool)
                                : std::string()),
      r.evaluated, r.refused, r.skipped);
  Table t({"deployment", "concurrency", "tokens/s/GPU", "tokens/s/user", "TTFT", "TPOT",
           "limited by", "targets"});
  for (const auto& x : r.front) {
    t.add_row(
        {row_name(x), std::to_string(x.concurrency), fmt::format("{:.4g}", x.tokens_per_s_per_gpu),
         fmt::format("{:.4g}", x.tokens_per_s_per_user), human_time(x.serving.ttft_s),
         human_time(x.serving.tpot_s), x.serving.limited_by, x.meets_targets ? "met" : x.misses});
  }
  std::cout << "Pareto front (tokens/s per GPU against tokens/s per user):\n" << t.text() << "\n";
  if (r.best) {
    std::cout << fmt::format(
        "best meeting the targets: {} at concurrency {} per replica: {:.4g} "
        "tokens/s per GPU, {:.4g} per user (TTFT {}, TPOT {})\n",
        row_name(*r.best), r.best->concurrency, r.best->tokens_per_s_per_gpu,
        r.best->tokens_per_s_per_user, human_time(r.best->serving.ttft_s),
        human_time(r.best->serving.tpot_s));
  } else {
    std::cout << "no configuration meets the targets; the closest:\n";
  }
  for (const auto& x : r.runners_up) {
    std::cout << fmt::format("  {} at {}: {}\n", row_name(x.deployment), x.deployment.concurrency,
                             x.why);
  }
  if (!r.refusals.empty()) {
    std::cout << "refused:\n";
    for (const auto& [reason, n] : r.refusals) std::cout << fmt::format("  {:5}  {}\n", n, reason);
  }
  const std::vector<std::string> notes = search_track_record_notes(r, d);
  if (!notes.empty()) std::cout << "\n";
  print_notes(notes);
}

}  // namespace

void register_search(CLI::App& app, Common& common) {
  auto* cmd = app.add_subcommand(
      "search",
      "The best deployment: engine x format x layout (TP, or prefill and decode workers) x "
      "replicas x concurrency on N GPUs");
  auto a = std::make_shared<SearchArgs>();
  cmd->add_option("--model", a->model, "Model preset or file")->capture_default_str();
  cmd->add_option("--hardware", a->hardware, "Device id or alias")->capture_default_str();
  cmd->add_option("--gpus", a->gpus, "GPUs to deploy on")->capture_default_str();
  cmd->add_option("--isl", a->isl, "Prompt tokens per request")->capture_default_str();
  cmd->add_option("--osl", a->osl, "Output tokens per request")->capture_default_str();
  cmd->add_option("--range-ratio", a->range_ratio,
                  "Random lengths in every configuration, as InferenceMAX and SGLang's "
                  "bench_serving draw them: each uniform from floor(R x length) to the length")
      ->type_name("R");
  cmd->add_option("--ttft-max", a->ttft_max, "TTFT target in seconds")->type_name("S");
  cmd->add_option("--draft-tokens", a->draft_tokens,
                  "Speculative decoding in every configuration: draft tokens a step (MTP, EAGLE)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--acceptance", a->acceptance,
                  "Speculative decoding: the chance each draft token is accepted (default: the "
                  "one yielding the model's measured tokens a step where published, roofline "
                  "model show; else 0.85)")
      ->type_name("F");
  cmd->add_option("--shared-prefix", a->shared_prefix,
                  "Every configuration: tokens at the start of every prompt kept by the prefix "
                  "cache (a system prompt)")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--prompt-pool", a->prompt_pool,
                  "Every configuration: prompts drawn with replacement from this many distinct "
                  "ones, repeats found in the prefix cache (disaggregated layouts refused); 0: "
                  "every prompt unique")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--recipe", a->recipe,
                  "Every configuration's engine settings: engine (its defaults), aiconfigurator "
                  "(the limits AIConfigurator's generator sets for benchmark deployments) or "
                  "trtllm-bench (the limits TensorRT-LLM's trtllm-bench tunes; its aggregated "
                  "configurations only, the others refused)")
      ->capture_default_str()
      ->type_name("NAME");
  cmd->add_option("--tpot-max", a->tpot_max, "TPOT target in seconds")->type_name("S");
  cmd->add_option("--engines", a->engines, "Engines to consider (default: vllm, sglang, trtllm)")
      ->type_name("LIST");
  cmd->add_option("--engine-version", a->engine_versions,
                  "Releases of the searched engines (vllm=0.11.0,sglang=0.5.6; a bare release "
                  "when --engines names one engine; default each engine's current one): the "
                  "rules each profile dates by release follow it (roofline engines show)")
      ->type_name("LIST");
  cmd->add_option("--weights", a->weights,
                  "Weight formats (default: bf16, fp8, nvfp4 where the device computes them)")
      ->type_name("LIST");
  cmd->add_option("--modes", a->modes, "agg, disagg or both (default: both from 2 GPUs)")
      ->type_name("LIST");
  cmd->add_option("--concurrency", a->concurrency,
                  "Concurrencies per replica (default: 1, 2, 4, ..., 4096)")
      ->type_name("LIST");
  add_common(cmd, &common, false);
  cmd->callback([&common, a] { cmd_search(common, *a); });
}

}  // namespace roofline::cli
