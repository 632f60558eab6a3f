// `roofline validate`: predictions against published measurements.
#include "roofline/validate.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "decode_steps.h"
#include "roofline/error.h"
#include "roofline/report.h"
#include "roofline/track_record.h"

namespace roofline::cli {
namespace {

void cmd_validate(const Common& c, const std::optional<std::string>& file, bool ideal,
                  const std::string& engine, bool leave_one_out) {
  const Registry reg = load_registry(c);
  std::vector<ValidationCase> cases;
  if (!file) {
    cases = built_in_validation();
  } else {
    if (file->empty()) throw InvalidArgument("--validation-file: the file name is empty");
    cases = load_validation(*file);
  }
  ModelOptions o;
  o.mode = ideal ? Mode::kIdeal : Mode::kRealistic;
  const ValidationReport r = validate_cases(cases, reg, o, engine);
  std::vector<ErrorStats> held_out;
  if (leave_one_out) {
    if (ideal || engine != "case")
      throw InvalidArgument(
          "--leave-one-out: with --engine case (each case's own engine's tables)");
    held_out = leave_one_device_out_cases(cases, reg);
  }
  if (c.output() == Output::kJson) {
    nlohmann::json j = validation_document(r, o.mode, reg);
    if (leave_one_out) j["leave_one_device_out"] = error_groups_json(held_out);
    print_json(j);
    return;
  }
  // batch: a static batch's sequences, or a serving case's clients.
  Table t({"case", "hardware", "model", "framework", "engine", "weights", "tp", "batch",
           "prompt/gen", "metric", "measured", "predicted", "error"});
  for (const auto& row : r.rows) {
    t.add_row({row.c.id, row.c.hardware, row.c.model, row.c.framework, row.engine, row.c.weights,
               std::to_string(row.c.tp), std::to_string(row.c.batch),
               fmt::format("{}/{}", length_range(row.c.prompt_min, row.c.prompt),
                           length_range(row.c.gen_min, row.c.gen)),
               row.c.metric, fmt::format("{:.4g}", row.c.value),
               row.error.empty() ? fmt::format("{:.4g}", row.predicted) : "-",
               row.error.empty() ? fmt::format("{:+.1f}%", row.error_pct) : row.error});
  }
  if (c.output() == Output::kCsv) {
    std::cout << t.csv();
    return;
  }
  std::cout << t.text()
            << fmt::format(
                   "\n{} mode, {} of {} cases: median |error| {:.1f}%, mean {:.1f}%, max {:.1f}%, "
                   "median signed {:+.1f}% (positive: predicted higher); predicted faster than "
                   "measured in {} of {}, median {:+.1f}% in speed (a duration's error as its speed)\n",
                   mode_name(o.mode), r.evaluated, r.rows.size(), r.median_abs_error_pct,
                   r.mean_abs_error_pct, r.max_abs_error_pct, r.median_signed_error_pct,
                   r.optimistic, r.evaluated, r.median_optimism_pct)
            << "\n"
            << error_groups_table(r.groups);
  if (o.mode == Mode::kRealistic) {
    std::cout << targets_table(fmt::format("Issue 11's targets (families: engine x metric, {} or "
                                           "more cases)",
                                           kMinFamilyCases),
                               published_targets(r));
  }
  if (leave_one_out) {
    std::cout << "\nLeave one device out: each measured device's cases with its own kernel tables, "
                 "then without them\n"
              << error_groups_table(held_out);
  }
}

}  // namespace

void register_validate(CLI::App& app, Common& common) {
  auto* validate_cmd = app.add_subcommand("validate", "Predictions against published measurements");
  struct ValidateArgs {
    std::string file;
    bool ideal = false;
    std::string engine = "case";
    bool decode_steps = false, leave_one_out = false, prefill_share = false, track_record = false;
    std::string serving_file, serving;
    std::string recipe = "aiconfigurator";
    std::int64_t rounds = kDefaultRounds;
    std::int64_t prompt_pool = 0;
  };
  auto a = std::make_shared<ValidateArgs>();
  auto* validation_file_opt =
      validate_cmd
          ->add_option("--validation-file", a->file, "Measurement file (default: the built-in set)")
          ->type_name("FILE");
  validate_cmd->add_flag("--ideal", a->ideal, "Pure roofline instead of the realistic mode");
  validate_cmd
      ->add_option("--engine", a->engine,
                   "Engine for every case, or 'case': each case's own framework (roofline: the "
                   "reference, ideal kernels)")
      ->capture_default_str();
  validate_cmd->add_flag("--decode-steps", a->decode_steps,
                         "Decode steps against measured serving TPOT (the built-in development "
                         "set of NVIDIA AIConfigurator runs, aggregated rows; engine: each run's "
                         "own unless --engine)");
  validate_cmd->add_flag("--leave-one-out", a->leave_one_out,
                         "Each measured device's cases (with --engine case) or rows (with "
                         "--decode-steps) also without its own kernel tables");
  validate_cmd->add_flag(
      "--prefill-share", a->prefill_share,
      "With --decode-steps: steps also carry the prompts of arriving requests "
      "(batch / osl whole prompts a step), for the requests whose KV cache fits");
  auto* track_record_opt = validate_cmd->add_flag(
      "--track-record", a->track_record,
      "Print the snapshot of the built-in cases' errors that predictions quote as their engine's "
      "track record (the file data/validation/track-record.json; JSON)");
  auto* serving_file_opt =
      validate_cmd
          ->add_option("--serving-file", a->serving_file,
                       "Serving runs in the development set's CSV format (with --decode-steps)")
          ->type_name("FILE");
  auto* serving_opt =
      validate_cmd
          ->add_option("--serving", a->serving,
                       "The serving model (roofline serving) against measured TTFT and TPOT: the "
                       "built-in development set, or FILE in its CSV format")
          ->expected(0, 1)
          ->type_name("[FILE]");
  auto* recipe_opt =
      validate_cmd
          ->add_option("--recipe", a->recipe,
                       "With --serving: the engines' settings, aiconfigurator (the limits its "
                       "generator sets for the benchmark deployments these runs are), engine "
                       "(each engine's defaults) or trtllm-bench (TensorRT-LLM's rows with the "
                       "limits its own benchmark tunes, the others refused)")
          ->capture_default_str()
          ->type_name("NAME");
  auto* rounds_opt =
      validate_cmd
          ->add_option("--rounds", a->rounds,
                       "With --serving: requests each simulated client sends, to match the "
                       "benchmark that measured the runs (aiperf's --num-requests / concurrency)")
          ->check(CLI::Range(std::int64_t{1}, kMaxRounds))
          ->capture_default_str();
  auto* pool_opt =
      validate_cmd
          ->add_option("--prompt-pool", a->prompt_pool,
                       "With --serving: each simulated benchmark draws its prompts with "
                       "replacement from this many distinct ones (aiperf's default dataset: "
                       "100), repeats found in the engine's prefix cache; 0: every prompt unique")
          ->check(CLI::Range(std::int64_t{0}, kMaxPromptPool))
          ->capture_default_str();
  add_common(validate_cmd, &common, true);
  validate_cmd->callback([&common, a, validation_file_opt, serving_file_opt, serving_opt,
                          recipe_opt, rounds_opt, pool_opt, track_record_opt, validate_cmd] {
    if (track_record_opt->count() > 0) {
      if (serving_opt->count() > 0 || a->decode_steps || a->leave_one_out || a->prefill_share ||
          serving_file_opt->count() > 0 || a->ideal || validation_file_opt->count() > 0 ||
          recipe_opt->count() > 0 || rounds_opt->count() > 0 || pool_opt->count() > 0 ||
          a->engine != "case") {
        throw InvalidArgument(
            "--track-record: the built-in cases with their own engines; it takes no other "
            "option");
      }
      // The built-in devices, whatever --hardware-file or ROOFLINE_DATA_DIR add:
      // the snapshot is the shipped validation's.
      const Registry reg = Registry::built_in();
      const ValidationReport r = validate_cases(built_in_validation(), reg, {}, "case");
      std::cout << track_record_file_text(track_record_snapshot(r, reg));
      return;
    }
    if (serving_opt->count() > 0) {
      if (a->decode_steps || a->leave_one_out || a->prefill_share ||
          serving_file_opt->count() > 0 || a->ideal || validation_file_opt->count() > 0) {
        throw InvalidArgument(
            "--serving: takes only --engine, --recipe, --rounds, --prompt-pool and an output "
            "flag");
      }
      const std::string engine =
          validate_cmd->get_option("--engine")->count() > 0 ? a->engine : "case";
      serving_validation_command(load_registry(common), a->serving, engine,
                                 parse_serving_recipe(a->recipe),
                                 common.output() == Output::kJson  ? DecodeStepsOutput::kJson
                                 : common.output() == Output::kCsv ? DecodeStepsOutput::kCsv
                                                                   : DecodeStepsOutput::kTable,
                                 a->rounds, a->prompt_pool);
      return;
    }
    if (recipe_opt->count() > 0) throw InvalidArgument("--recipe: give it with --serving");
    if (rounds_opt->count() > 0) throw InvalidArgument("--rounds: give it with --serving");
    if (pool_opt->count() > 0) throw InvalidArgument("--prompt-pool: give it with --serving");
    if (a->decode_steps || a->prefill_share || serving_file_opt->count() > 0) {
      if (!a->decode_steps) {
        throw InvalidArgument("--serving-file and --prefill-share: give them with --decode-steps");
      }
      if (serving_file_opt->count() > 0 && a->serving_file.empty())
        throw InvalidArgument("--serving-file: the file name is empty");
      if (a->ideal || validation_file_opt->count() > 0)
        throw InvalidArgument("--decode-steps: takes neither --ideal nor --validation-file");
      const std::string engine =
          validate_cmd->get_option("--engine")->count() > 0 ? a->engine : "case";
      decode_steps_command(load_registry(common), a->serving_file, engine,
                           common.output() == Output::kJson  ? DecodeStepsOutput::kJson
                           : common.output() == Output::kCsv ? DecodeStepsOutput::kCsv
                                                             : DecodeStepsOutput::kTable,
                           a->leave_one_out, a->prefill_share);
      return;
    }
    cmd_validate(
        common,
        validation_file_opt->count() > 0 ? std::optional<std::string>(a->file) : std::nullopt,
        a->ideal, a->engine, a->leave_one_out);
  });
}

}  // namespace roofline::cli
