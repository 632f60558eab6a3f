// The commands that predict a model on a device in one scenario: `roofline
// predict`, `generate`, `kv` and `attention`.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "roofline/attention.h"
#include "roofline/engine.h"
#include "roofline/formats.h"
#include "roofline/predict.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

// " after N cached" for a prompt that follows cached tokens, else nothing.
std::string cached_note(const Scenario& s) {
  return s.cached > 0 ? fmt::format(" after {} cached", s.cached) : std::string();
}

// The capacity row's note on whose rule sized the KV cache ("" for none).
std::string kv_memory_rule(const Capacity& c) {
  if (!c.kv_memory_engine) return {};
  return fmt::format("; KV cache as {} sizes it: {}", c.kv_memory_engine->name,
                     kv_memory_text(c.kv_memory_share, c.kv_memory_of_free));
}

void print_op_table(const Prediction& p, Output out) {
  Table t({"op", "kind", "count", "FLOPs", "weights", "activations", "KV cache", "AI", "bound",
           "time", "share", "efficiency from"});
  for (int i = 0; i < p.graph.size; ++i) {
    const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
    const OpTiming& tm = p.timings[static_cast<std::size_t>(i)];
    std::string name(op_name(op.kind));
    if (op.moe_layer) name += " [moe]";
    if (op.sliding_layer) name += " [window]";
    if (op.draft_head) name += " [draft]";
    if (op.launches == 0) name = "+" + name;
    // Where its efficiency came from, and the fraction of the roofline it reaches.
    const std::string_view source = op_efficiency_source(op, tm);
    std::string from(source.empty() ? "-" : source);
    if (!source.empty() && tm.efficiency > 0) from += fmt::format(" {:.0f}%", 100 * tm.efficiency);
    if (out == Output::kCsv) {
      t.add_row({name, std::string(op_class_name(op.cls)), fmt::format("{}", op.count),
                 fmt::format("{:.6g}", op.count * op.flops),
                 fmt::format("{:.6g}", op.count * op.weight_bytes),
                 fmt::format("{:.6g}", op.count * op.act_bytes),
                 fmt::format("{:.6g}", op.count * op.kv_bytes), fmt::format("{:.4g}", tm.ai),
                 std::string(bound_name(tm.bound)), fmt::format("{:.6g}", tm.time_s),
                 fmt::format("{:.4f}", tm.time_s / p.time_s), std::string(source)});
    } else {
      t.add_row({name, std::string(op_class_name(op.cls)), fmt::format("{}", op.count),
                 human_count(op.count * op.flops), human_bytes(op.count * op.weight_bytes),
                 human_bytes(op.count * op.act_bytes), human_bytes(op.count * op.kv_bytes),
                 fmt::format("{:.3g}", tm.ai), std::string(bound_name(tm.bound)),
                 human_time(tm.time_s), fmt::format("{:.1f}%", 100 * tm.time_s / p.time_s), from});
    }
  }
  std::cout << (out == Output::kCsv ? t.csv() : t.text());
  if (out != Output::kCsv)
    std::cout << "+op: fused into the kernel of the op above it (no launch of its own)\n";
}

void cmd_predict(const Common& c, const ScenarioArgs& a) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.hardware);
  const ModelSpec m = load_model(a.model);
  std::vector<std::string> plan_notes;
  const Scenario s = make_scenario(a, m, &d, &plan_notes);
  const Prediction p = predict(m, d, s, make_options(a, &d));
  if (c.output() == Output::kJson) {
    print_json(predict_document(m, d, s, p, a.per_op, plan_notes, a.strategy, reg));
    return;
  }
  if (c.output() == Output::kCsv) {
    print_op_table(p, Output::kCsv);
    return;
  }
  std::cout << fmt::format(
      "{} {} on {} ({}): batch {}, {} {}, weights {}, act {}, KV {}, attention {}{}, {} mode\n\n",
      m.name, phase_name(s.phase), d.name, d.id, s.batch,
      s.phase == Phase::kDecode ? "context" : "prompt",
      fmt::format("{}{}", s.seq_len, cached_note(s)), format_id(p.graph.weights),
      format_id(s.precision.act), format_id(s.precision.kv), attention_kernel_id(p.graph.attention),
      s.tp > 1 || s.pp > 1 ? fmt::format(", tp {} pp {}", s.tp, s.pp) : "", mode_name(p.mode));
  if (a.per_op) {
    print_op_table(p, Output::kTable);
    std::cout << "\n";
  }
  Table t({"quantity", "value"});
  t.add_row({"time", human_time(p.time_s) + (s.phase == Phase::kDecode ? " per step" : "")});
  t.add_row({s.phase == Phase::kDecode ? "tokens/s (batch)" : "prompt tokens/s",
             fmt::format("{:.1f}", p.tokens_per_s)});
  t.add_row({"bound", std::string(bound_name(p.bound))});
  t.add_row({"FLOPs", human_count(p.flops)});
  t.add_row({"bytes moved", fmt::format("{} (weights {}, activations {}, KV cache {})",
                                        human_bytes(p.bytes), human_bytes(p.weight_bytes),
                                        human_bytes(p.act_bytes), human_bytes(p.kv_bytes))});
  t.add_row({"memory / compute / overhead",
             fmt::format("{} / {} / {}", human_time(p.memory_time_s), human_time(p.compute_time_s),
                         human_time(p.overhead_s))});
  if (p.communication_s > 0) t.add_row({"communication", human_time(p.communication_s)});
  t.add_row(
      {"memory needed",
       fmt::format("{} (weights {}, KV cache {}, activations {}) of {}: {}{}",
                   human_bytes(p.memory.total_bytes), human_bytes(p.memory.weights_bytes),
                   human_bytes(p.memory.kv_cache_bytes), human_bytes(p.memory.activation_bytes),
                   human_bytes(p.memory.capacity_bytes), p.memory.fits ? "fits" : "DOES NOT FIT",
                   p.memory.kv_rule_engine
                       ? fmt::format(" ({} leaves the KV cache {})", p.memory.kv_rule_engine->name,
                                     human_bytes(std::max(p.memory.kv_room_bytes, 0.0)))
                       : std::string())});
  const Capacity cap = capacity(m, d, s, p);
  t.add_row(
      {"capacity", fmt::format("max batch {} at this context; max context {} at this batch{}{}",
                               cap.max_batch, cap.max_context,
                               cap.max_context < cap.max_context_by_memory
                                   ? fmt::format(" (the model's window; memory allows {})",
                                                 cap.max_context_by_memory)
                                   : std::string(),
                               kv_memory_rule(cap))});
  std::cout << t.text() << "\n";
  print_notes(plan_notes);
  print_notes(explain(m, d, s, p));
}

void cmd_generate(const Common& c, const ScenarioArgs& a, const std::string& prompt_text,
                  const std::string& gen_text) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.hardware);
  const ModelSpec m = load_model(a.model);
  const std::int64_t prompt = parse_count("--prompt", prompt_text, 1, kMaxSeqLen);
  // generate() sets each pass's phase; the scenario is checked as its prefill.
  ScenarioArgs prefill = a;
  prefill.phase = "prefill";
  prefill.seq_len = std::to_string(prompt);
  Scenario s = make_scenario(prefill, m, &d);
  const std::int64_t gen = parse_count("--gen", gen_text, 1, kMaxSeqLen);
  const GenerateResult g = generate(m, d, s, prompt, gen, make_options(a, &d));
  if (c.output() == Output::kJson) {
    print_json(generate_document(m, d, s, g, prompt, gen, make_options(a, &d).mode, reg));
    return;
  }
  Table t({"quantity", "value"});
  t.add_row({"time to first token", human_time(g.ttft_s)});
  if (g.ttft_recomputed_s > 0) {
    t.add_row({"... recomputing the cached tokens",
               fmt::format("{} (a fresh prompt of {} tokens: no prefix cache)",
                           human_time(g.ttft_recomputed_s), s.cached + prompt)});
  }
  t.add_row({"time per output token", human_time(g.tpot_s)});
  t.add_row({"end to end", human_time(g.e2e_s)});
  t.add_row({"output tokens/s", fmt::format("{:.1f} (decode alone {:.1f})", g.output_tokens_per_s,
                                            g.decode_tokens_per_s)});
  t.add_row({"first / last decode step",
             human_time(g.first_decode.time_s) + " / " + human_time(g.last_decode.time_s)});
  t.add_row({"peak memory", fmt::format("{} of {}: {}", human_bytes(g.peak_memory.total_bytes),
                                        human_bytes(g.peak_memory.capacity_bytes),
                                        g.peak_memory.fits ? "fits" : "DOES NOT FIT")});
  if (c.output() == Output::kCsv) {
    std::cout << t.csv();
    return;
  }
  std::cout << fmt::format("{} on {} ({}): batch {}, prompt {}{}, generate {}, {} mode\n\n", m.name,
                           d.name, d.id, s.batch, prompt, cached_note(s), gen,
                           a.ideal ? "ideal" : "realistic");
  std::cout << t.text();
  print_notes(track_record_notes(g.prefill.mode == Mode::kRealistic ? g.prefill.engine : nullptr, d,
                                 {MetricKind::kPrompt, MetricKind::kGeneration}));
}

void cmd_kv(const Common& c, const ScenarioArgs& a) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.hardware);
  const ModelSpec m = load_model(a.model);
  // The decode step at this context with each KV format (weights and activations as given).
  const KvReport r = kv_report(m, d, make_scenario(a, m, &d), make_options(a, &d));
  if (c.output() == Output::kJson) {
    print_json(kv_document(m, d, r, reg));
    return;
  }
  Table t({"KV format", "bytes/token", "at context", "saving", "decode step", "speedup",
           "KV read > weights beyond"});
  for (const auto& row : r.rows) {
    t.add_row({std::string(format_id(row.format)), human_bytes(row.bytes_per_token),
               human_bytes(row.total_bytes), fmt::format("{:.0f}%", 100 * row.saving),
               human_time(row.decode_step_s), fmt::format("{:.2f}x", row.speedup),
               row.crossover_context > 0 ? fmt::format("{:.0f} tokens", row.crossover_context)
                                         : "never"});
  }
  if (c.output() == Output::kCsv) {
    std::cout << t.csv();
    return;
  }
  std::cout << fmt::format(
      "{} KV cache at {} tokens x batch {} on {}; weights {} ({}), read once per decode step\n\n",
      m.name, r.context, r.batch, d.id, human_bytes(r.weight_bytes),
      a.weights.empty() ? std::string(format_id(m.native_weights)) : a.weights);
  std::cout << t.text();
  if (r.state_bytes_per_sequence > 0) {
    std::cout << fmt::format(
        "\nplus the linear-attention layers' fixed state: {} a sequence ({} for the batch), "
        "whatever the KV format or the context\n",
        human_bytes(r.state_bytes_per_sequence),
        human_bytes(r.state_bytes_per_sequence * static_cast<double>(r.batch)));
  }
}

void cmd_attention(const Common& c, const ScenarioArgs& a) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.hardware);
  const ModelSpec m = load_model(a.model);
  const Scenario s = make_scenario(a, m, &d);
  const auto rows = compare_attention(m, d, s, make_options(a, &d));
  if (c.output() == Output::kJson) {
    print_json(attention_document(m, d, s, rows, reg));
    return;
  }
  Table t({"kernel", "attention time", "attention bytes", "step time", "speedup", "note"});
  for (const auto& row : rows) {
    const AttentionKernelInfo& k = *row.kernel;
    if (!row.supported) {
      t.add_row({k.id, "-", "-", "-", "-", "does not run on " + d.architecture});
      continue;
    }
    t.add_row({k.id, human_time(row.attention_time_s), human_bytes(row.attention_bytes),
               human_time(row.time_s), fmt::format("{:.2f}x", row.speedup_vs_first), k.name});
  }
  if (c.output() == Output::kCsv) {
    std::cout << t.csv();
    return;
  }
  std::cout << fmt::format("{} {} on {}: batch {}, {} {}{}\n\n", m.name, phase_name(s.phase), d.id,
                           s.batch, s.phase == Phase::kDecode ? "context" : "prompt", s.seq_len,
                           cached_note(s));
  std::cout << t.text();
}

}  // namespace

void register_scenario(CLI::App& app, Common& common) {
  auto* predict_cmd =
      app.add_subcommand("predict", "Predict one forward pass (prefill or a decode step)");
  auto predict_args = std::make_shared<ScenarioArgs>();
  add_scenario_options(predict_cmd, predict_args.get(), true);
  add_cached_option(predict_cmd, predict_args.get());
  add_engine_version_option(predict_cmd, predict_args.get());
  predict_cmd->add_flag("--per-op", predict_args->per_op, "Show every operator");
  add_common(predict_cmd, &common, true);
  predict_cmd->callback([&common, predict_args] { cmd_predict(common, *predict_args); });

  auto* generate_cmd =
      app.add_subcommand("generate", "TTFT, TPOT and end-to-end time of a generation");
  struct GenerateArgs {
    ScenarioArgs sc;
    std::string prompt = "512", gen = "128";
  };
  auto generate_args = std::make_shared<GenerateArgs>();
  add_scenario_options(generate_cmd, &generate_args->sc, false);
  add_cached_option(generate_cmd, &generate_args->sc);
  add_engine_version_option(generate_cmd, &generate_args->sc);
  generate_cmd->add_option("--prompt", generate_args->prompt, "Prompt tokens")
      ->capture_default_str()
      ->type_name("INT");
  generate_cmd->add_option("--gen", generate_args->gen, "Generated tokens")
      ->capture_default_str()
      ->type_name("INT");
  add_common(generate_cmd, &common, true);
  generate_cmd->callback([&common, generate_args] {
    cmd_generate(common, generate_args->sc, generate_args->prompt, generate_args->gen);
  });

  auto* kv_cmd =
      app.add_subcommand("kv", "KV-cache size per format and where it outweighs the weights");
  auto kv_args = std::make_shared<ScenarioArgs>();
  add_scenario_options(kv_cmd, kv_args.get(), true);
  add_engine_version_option(kv_cmd, kv_args.get());
  add_common(kv_cmd, &common, true);
  kv_cmd->callback([&common, kv_args] { cmd_kv(common, *kv_args); });
}

void register_attention(CLI::App& app, Common& common) {
  auto* attention_cmd = app.add_subcommand("attention", "Attention kernels side by side");
  auto args = std::make_shared<ScenarioArgs>();
  add_scenario_options(attention_cmd, args.get(), true);
  add_cached_option(attention_cmd, args.get());
  add_engine_version_option(attention_cmd, args.get());
  add_common(attention_cmd, &common, true);
  attention_cmd->callback([&common, args] { cmd_attention(common, *args); });
}

}  // namespace roofline::cli
