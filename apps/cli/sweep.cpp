// `roofline sweep`: every combination of the given lists, one row each.
#include "roofline/sweep.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "common.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/formats.h"
#include "roofline/strategy.h"

namespace roofline::cli {
namespace {

struct SweepArgs {
  std::string models = "llama-3.1-8b", hardware = "gb10", phases = "decode", batches = "1",
              seq_lens = "4096", weights = "native", acts = "bf16", kvs, attentions, tps = "1",
              strategies;
  std::string engine = "roofline";
  std::string format = "csv", out;
  std::string threads = "0";
  bool ideal = false;
};

void cmd_sweep(const Common& c, const SweepArgs& a) {
  const Registry reg = load_registry(c);
  SweepSpec spec;
  for (const auto& m : split_list("--model", a.models)) spec.models.push_back(load_model(m));
  for (const auto& h : split_list("--hardware", a.hardware)) spec.devices.push_back(&reg.get(h));
  spec.phases.clear();
  for (const auto& p : split_list("--phase", a.phases)) spec.phases.push_back(parse_phase(p));
  spec.batches.clear();
  for (const auto& b : split_list("--batch", a.batches))
    spec.batches.push_back(parse_count("--batch", b, 1, kMaxBatch));
  spec.seq_lens.clear();
  for (const auto& x : split_list("--seq-len", a.seq_lens))
    spec.seq_lens.push_back(parse_count("--seq-len", x, 1, kMaxSeqLen));
  spec.weights.clear();
  for (const auto& w : split_list("--weights", a.weights)) {
    spec.weights.push_back(w == "native" ? std::nullopt : std::optional<Format>(parse_format(w)));
  }
  spec.acts.clear();
  for (const auto& x : split_list("--act", a.acts)) spec.acts.push_back(parse_format(x));
  if (!a.kvs.empty()) {
    spec.kvs.clear();
    for (const auto& x : split_list("--kv", a.kvs)) spec.kvs.push_back(parse_format(x));
  }
  if (!a.attentions.empty()) {
    spec.attentions.clear();
    for (const auto& x : split_list("--attention", a.attentions)) {
      spec.attentions.push_back(
          x == "auto" ? std::nullopt : std::optional<AttentionKernel>(parse_attention_kernel(x)));
    }
  }
  spec.tps.clear();
  for (const auto& x : split_list("--tp", a.tps))
    spec.tps.push_back(parse_count("--tp", x, 1, kMaxParallel));
  if (!a.strategies.empty()) {
    if (a.weights != "native" || a.acts != "bf16" || !a.kvs.empty()) {
      throw InvalidArgument(
          "--strategy sets the formats; do not combine it with --weights, --act or --kv");
    }
    for (const auto& x : split_list("--strategy", a.strategies))
      spec.strategies.push_back(load_strategy(x));
  }
  spec.options.mode = a.ideal ? Mode::kIdeal : Mode::kRealistic;
  spec.options.engine = &EngineRegistry::built_in().get(a.engine);
  SweepFormat format = SweepFormat::kCsv;
  if (a.format == "json" || c.json)
    format = SweepFormat::kJson;
  else if (a.format == "jsonl")
    format = SweepFormat::kJsonLines;
  else if (a.format != "csv")
    throw InvalidArgument("--format: '" + clip_utf8(a.format, 20) + "' is not csv, json or jsonl");
  const std::uint64_t rows = sweep_rows(spec);
  const auto threads =
      static_cast<unsigned>(parse_count("--threads", a.threads, 0, kMaxSweepThreads));

  std::ofstream file;
  if (!a.out.empty()) {
    file.open(a.out, std::ios::binary | std::ios::trunc);
    if (!file) throw InvalidArgument("--out: cannot write '" + a.out + "'");
  }
  std::ostream& out = a.out.empty() ? std::cout : file;
  // Progress on stderr for sweeps that take more than a moment.
  const bool show_progress = rows >= 200'000;
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  run_sweep(
      spec, format,
      [&](std::string_view chunk) {
        out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      },
      [&](std::uint64_t done, std::uint64_t total) {
        const auto now = std::chrono::steady_clock::now();
        if (!show_progress || (now - last < std::chrono::milliseconds(500) && done < total)) return;
        last = now;
        const double secs = std::chrono::duration<double>(now - start).count();
        std::cerr << fmt::format("sweep: {} / {} rows ({:.0f}%), {:.2f} M rows/s\n", done, total,
                                 100.0 * static_cast<double>(done) / static_cast<double>(total),
                                 static_cast<double>(done) / secs / 1e6);
      },
      threads);
  out.flush();
  if (!out) throw InvalidArgument("writing the sweep output failed");
}

}  // namespace

void register_sweep(CLI::App& app, Common& common) {
  auto sw = std::make_shared<SweepArgs>();
  auto* sweep_cmd =
      app.add_subcommand("sweep", "Every combination of the given lists, one row each");
  sweep_cmd->add_option("--model", sw->models, "Models, comma-separated")->capture_default_str();
  sweep_cmd->add_option("--hardware", sw->hardware, "Devices, comma-separated")
      ->capture_default_str();
  sweep_cmd->add_option("--phase", sw->phases, "prefill,decode")->capture_default_str();
  sweep_cmd->add_option("--batch", sw->batches, "Batch sizes")->capture_default_str();
  sweep_cmd->add_option("--seq-len", sw->seq_lens, "Sequence lengths")->capture_default_str();
  sweep_cmd->add_option("--weights", sw->weights, "Weight formats ('native' = the checkpoint's)")
      ->capture_default_str();
  sweep_cmd->add_option("--act", sw->acts, "Activation formats")->capture_default_str();
  sweep_cmd->add_option("--kv", sw->kvs, "KV-cache formats (default: the activation format)");
  sweep_cmd->add_option("--attention", sw->attentions,
                        "Attention kernels ('auto' = the device's best)");
  sweep_cmd->add_option("--tp", sw->tps, "Tensor-parallel sizes")->capture_default_str();
  sweep_cmd->add_option("--strategy", sw->strategies,
                        "Named precision plans or plan files (replace the format lists)");
  sweep_cmd->add_option("--format", sw->format, "csv, json or jsonl")->capture_default_str();
  sweep_cmd->add_option("--out", sw->out, "Write to FILE instead of standard output")
      ->type_name("FILE");
  sweep_cmd->add_option("--threads", sw->threads, "Worker threads, 0 to 256 (0: all cores)")
      ->capture_default_str();
  sweep_cmd->add_flag("--ideal", sw->ideal, "Pure roofline instead of the realistic mode");
  sweep_cmd->add_option("--engine", sw->engine, "Serving engine for every row (roofline engines)")
      ->capture_default_str();
  add_common(sweep_cmd, &common, false);
  sweep_cmd->callback([&common, sw] { cmd_sweep(common, *sw); });
}

}  // namespace roofline::cli
