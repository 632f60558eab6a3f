// `roofline serving`: TTFT and TPOT of C clients against one engine instance.
#include "roofline/serving.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "commands.h"
#include "common.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

struct ServingArgs {
  ScenarioArgs sc;
  std::string isl = "1024", osl = "256", concurrency = "1";
};

void cmd_serving(const Common& c, const ServingArgs& a) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.sc.hardware);
  const ModelSpec m = load_model(a.sc.model);
  ServingScenario s;
  s.isl = parse_count("--isl", a.isl, 1, kMaxSeqLen);
  s.osl = parse_count("--osl", a.osl, 1, kMaxSeqLen);
  s.concurrency = parse_count("--concurrency", a.concurrency, 1, kMaxBatch);
  if (a.sc.ideal) throw InvalidArgument("serving: engines' costs have no ideal mode");
  s.step = make_scenario(a.sc, m, &d);
  const ModelOptions o = make_options(a.sc, &d);
  const ServingResult r = predict_serving(m, d, s, o);
  if (c.output() == Output::kJson) {
    print_json(serving_document(m, d, s, r, o, reg));
    return;
  }
  std::cout << fmt::format(
      "{} on {} ({}), {} engine: {} clients, {} prompt / {} output tokens, TP {}\n\n", m.name,
      d.name, d.id, o.engine ? o.engine->id : std::string("roofline"), s.concurrency, s.isl, s.osl,
      s.step.tp);
  Table t({"quantity", "value"});
  t.add_row({"TTFT", human_time(r.ttft_s)});
  t.add_row({"TPOT", human_time(r.tpot_s)});
  t.add_row({"end to end", human_time(r.e2e_s)});
  t.add_row(
      {"output tokens/s", fmt::format("{:.4g} ({:.4g} per GPU, {} GPUs)", r.output_tokens_per_s,
                                      r.output_tokens_per_s_per_gpu, r.gpus)});
  t.add_row({"tokens/s per user", fmt::format("{:.4g}", r.output_tokens_per_s_per_user)});
  t.add_row({"running / fit", fmt::format("{} decoding at once; KV cache fits {}", r.running,
                                          r.max_concurrency_that_fits)});
  t.add_row({"queue wait", human_time(r.queue_wait_s)});
  t.add_row({"step: plain / with a prompt",
             human_time(r.plain_step_s) + " / " + human_time(r.prompt_step_s)});
  t.add_row({"limited by", r.limited_by});
  std::cout << t.text();
  print_notes(r.notes);
}

}  // namespace

void register_serving(CLI::App& app, Common& common) {
  auto* cmd = app.add_subcommand(
      "serving", "TTFT and TPOT of C clients in a closed loop against one engine instance");
  auto a = std::make_shared<ServingArgs>();
  add_scenario_options(cmd, &a->sc, false);
  cmd->add_option("--isl", a->isl, "Prompt tokens per request")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--osl", a->osl, "Output tokens per request")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--concurrency", a->concurrency, "Clients, each with one request in flight")
      ->capture_default_str()
      ->type_name("INT");
  add_common(cmd, &common, false);
  cmd->callback([&common, a, cmd] {
    if (cmd->get_option("--batch")->count() > 0)
      throw InvalidArgument("serving: the batch follows from --concurrency (no --batch)");
    cmd_serving(common, *a);
  });
}

}  // namespace roofline::cli
