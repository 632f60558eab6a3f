// `roofline sweep`: every combination of the given lists, one row each; and
// `roofline sweep gemm`: every combination of GEMM shapes, formats and devices.
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

// --format (or --json) of a sweep.
SweepFormat sweep_format(const Common& c, const std::string& format) {
  if (format == "json" || c.json) return SweepFormat::kJson;
  if (format == "jsonl") return SweepFormat::kJsonLines;
  if (format != "csv")
    throw InvalidArgument("--format: '" + clip_utf8(format, 20) + "' is not csv, json or jsonl");
  return SweepFormat::kCsv;
}

// Runs a sweep of `rows` rows into --out (or standard output), with progress
// on stderr for sweeps that take more than a moment.
template <typename Spec>
void write_sweep(const Spec& spec, std::uint64_t rows, SweepFormat format,
                 const std::string& out_path, const std::string& threads_text) {
  const auto threads =
      static_cast<unsigned>(parse_count("--threads", threads_text, 0, kMaxSweepThreads));
  std::ofstream file;
  if (!out_path.empty()) {
    file.open(out_path, std::ios::binary | std::ios::trunc);
    if (!file) throw InvalidArgument("--out: cannot write '" + out_path + "'");
  }
  std::ostream& out = out_path.empty() ? std::cout : file;
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

struct SweepArgs {
  std::string models = "llama-3.1-8b", hardware = "gb10", phases = "decode", batches = "1",
              seq_lens = "4096", weights = "native", acts = "engine", kvs, attentions, tps = "1",
              strategies;
  std::string engine = "roofline", engine_build, engine_version, cuda_graphs = "engine";
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
  for (const auto& x : split_list("--act", a.acts)) spec.acts.push_back(parse_sweep_act(x));
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
    if (a.weights != "native" || a.acts != "engine" || !a.kvs.empty()) {
      throw InvalidArgument(
          "--strategy sets the formats; do not combine it with --weights, --act or --kv");
    }
    for (const auto& x : split_list("--strategy", a.strategies))
      spec.strategies.push_back(load_strategy(x));
  }
  spec.options.mode = a.ideal ? Mode::kIdeal : Mode::kRealistic;
  spec.options.engine = &EngineRegistry::built_in().get(a.engine);
  if (!a.engine_build.empty())
    spec.options.engine_build = parse_build_date(a.engine_build, "--engine-build");
  spec.options.graphs = parse_graph_policy(a.cuda_graphs, "--cuda-graphs");
  if (!a.engine_version.empty()) {
    check_engine_version(a.engine_version, "--engine-version");
    spec.engine_version = a.engine_version;
  }
  const SweepFormat format = sweep_format(c, a.format);
  write_sweep(spec, sweep_rows(spec), format, a.out, a.threads);
}

struct GemmSweepArgs {
  std::string hardware = "gb10", ms = "1", ns = "4096", ks = "4096", weights = "fp16",
              acts = "fp16";
  std::string format = "csv", out;
  std::string threads = "0";
  bool ideal = false;
};

void cmd_sweep_gemm(const Common& c, const GemmSweepArgs& a) {
  const Registry reg = load_registry(c);
  GemmSweepSpec spec;
  for (const auto& h : split_list("--hardware", a.hardware)) spec.devices.push_back(&reg.get(h));
  auto dimensions = [](const std::string& flag, const std::string& text) {
    std::vector<std::int64_t> v;
    for (const auto& x : split_list(flag, text)) v.push_back(parse_dimension(flag, x));
    return v;
  };
  spec.ms = dimensions("--m", a.ms);
  spec.ns = dimensions("--n", a.ns);
  spec.ks = dimensions("--k", a.ks);
  spec.weights.clear();
  for (const auto& x : split_list("--weights", a.weights)) spec.weights.push_back(parse_format(x));
  spec.acts.clear();
  for (const auto& x : split_list("--act", a.acts)) spec.acts.push_back(parse_format(x));
  spec.options.mode = a.ideal ? Mode::kIdeal : Mode::kRealistic;
  const SweepFormat format = sweep_format(c, a.format);
  write_sweep(spec, sweep_rows(spec), format, a.out, a.threads);
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
  sweep_cmd
      ->add_option("--act", sw->acts,
                   "Activation formats ('engine' = the engine's for the weights, e.g. fp8 "
                   "weights as W8A8 where it runs them so; else bf16)")
      ->capture_default_str();
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
  sweep_cmd
      ->add_option("--engine-build", sw->engine_build,
                   "The date of the engine's build for every row (YYYY-MM-DD or YYYY-MM; "
                   "default the current one): the profile's rules dated by build follow it")
      ->type_name("DATE");
  sweep_cmd
      ->add_option("--engine-version", sw->engine_version,
                   "The engine's release for every row (e.g. 0.11.0; default the current one): "
                   "the rules its profile dates by release follow it, on each row's device and "
                   "tensor-parallel size")
      ->type_name("TEXT");
  sweep_cmd
      ->add_option("--cuda-graphs", sw->cuda_graphs,
                   "Which steps replay CUDA graphs for every row: engine (its defaults), "
                   "decode-only or off; steps without graphs pay the engine's eager launch")
      ->capture_default_str()
      ->type_name("MODE");
  add_common(sweep_cmd, &common, false);

  auto gs = std::make_shared<GemmSweepArgs>();
  auto* gemm_cmd = sweep_cmd->add_subcommand(
      "gemm", "Every combination of GEMM shapes, formats and devices: one GEMM roofline each");
  gemm_cmd->add_option("--m", gs->ms, "Rows of A and C (tokens), comma-separated")
      ->capture_default_str()
      ->type_name("INT,...");
  gemm_cmd->add_option("--n", gs->ns, "Columns of B and C (output features)")
      ->capture_default_str()
      ->type_name("INT,...");
  gemm_cmd->add_option("--k", gs->ks, "Reduction dimensions (input features)")
      ->capture_default_str()
      ->type_name("INT,...");
  gemm_cmd->add_option("--weights", gs->weights, "Weight (B) formats")
      ->capture_default_str()
      ->type_name("FMT,...");
  gemm_cmd->add_option("--act", gs->acts, "Activation (A, C) formats")
      ->capture_default_str()
      ->type_name("FMT,...");
  gemm_cmd->add_option("--hardware", gs->hardware, "Devices, comma-separated")
      ->capture_default_str()
      ->type_name("ID,...");
  gemm_cmd->add_option("--format", gs->format, "csv, json or jsonl")->capture_default_str();
  gemm_cmd->add_option("--out", gs->out, "Write to FILE instead of standard output")
      ->type_name("FILE");
  gemm_cmd->add_option("--threads", gs->threads, "Worker threads, 0 to 256 (0: all cores)")
      ->capture_default_str();
  gemm_cmd->add_flag("--ideal", gs->ideal, "Pure roofline instead of the realistic mode");
  add_common(gemm_cmd, &common, false);
  gemm_cmd->callback([&common, gs, sweep_cmd] {
    // Flags given before 'gemm' are the model sweep's; they would be dropped silently.
    for (const CLI::Option* o : sweep_cmd->get_options()) {
      if (o->count() > 0) {
        throw InvalidArgument("sweep gemm: give its flags after 'gemm' (" + o->get_name() +
                              " came before it)");
      }
    }
    cmd_sweep_gemm(common, *gs);
  });

  sweep_cmd->callback([&common, sw, gemm_cmd] {
    if (!gemm_cmd->parsed()) cmd_sweep(common, *sw);
  });
}

}  // namespace roofline::cli
