#include "cli.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../server/server.h"
#include "engines.h"
#include "gpu.h"
#include "roofline/calibrate.h"
#include "roofline/engine.h"
#include "roofline/error.h"
#include "roofline/formats.h"
#include "roofline/hardware.h"
#include "roofline/predict.h"
#include "roofline/quantize.h"
#include "roofline/recommend.h"
#include "roofline/report.h"
#include "roofline/request.h"
#include "roofline/roofline.h"
#include "roofline/strategy.h"
#include "roofline/sweep.h"
#include "roofline/validate.h"
#include "roofline/workload.h"

namespace roofline::cli {
namespace {

enum class Output { kTable, kJson, kCsv };

// Flags every command takes.
struct Common {
  bool json = false;
  bool csv = false;
  std::vector<std::string> hardware_files;

  [[nodiscard]] Output output() const {
    return json ? Output::kJson : (csv ? Output::kCsv : Output::kTable);
  }
};

void add_common(CLI::App* cmd, Common* c, bool with_csv) {
  auto* json = cmd->add_flag("--json", c->json, "Print JSON (SI units) instead of a table");
  if (with_csv) {
    auto* csv = cmd->add_flag("--csv", c->csv, "Print CSV instead of a table");
    json->excludes(csv);
  }
  cmd->add_option("--hardware-file", c->hardware_files,
                  "Extra device JSON file (adds or overrides by id); repeatable")
      ->type_name("FILE");
}

Registry load_registry(const Common& c) { return Registry::load(c.hardware_files); }

// Columns of the terminal stdout is, else $COLUMNS, else 0 (no wrapping).
std::size_t terminal_width() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  if (const char* cols = std::getenv("COLUMNS")) {
    const long v = std::strtol(cols, nullptr, 10);
    if (v >= 40 && v <= 1000) return static_cast<std::size_t>(v);
  }
  return 0;
}

// Text that is not UTF-8 (a name from a file) is replaced, not thrown about.
void print_json(const nlohmann::json& j) {
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// Decimal notation only: digits, an optional fraction and exponent ("4096",
// "4.096e3"). strtod alone would also take " 5" (leading space), "0x10" (hex),
// "inf" and "nan".
bool decimal_syntax(const std::string& text) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i > start;
  };
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  if (!digits()) return false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    digits();
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (!digits()) return false;
  }
  return i == text.size();
}

// Parses a GEMM dimension given as text: a whole number in [1, kMaxGemmDimension].
// Accepts "4096" and "4.096e3"; rejects NaN, fractions, hex, spaces and absurd sizes.
std::int64_t parse_dimension(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (!decimal_syntax(text) || end == text.c_str() || *end != '\0') {
    throw InvalidArgument(flag + ": '" + clip_utf8(text, 40) +
                          "' is not a whole number in decimal notation");
  }
  if (!std::isfinite(v) || v != std::floor(v) || v < 1 ||
      v > static_cast<double>(kMaxGemmDimension)) {
    throw InvalidArgument(fmt::format("{}: '{}' must be a whole number from 1 to {}", flag,
                                      clip_utf8(text, 40), kMaxGemmDimension));
  }
  return static_cast<std::int64_t>(v);
}

// A whole number in [lo, hi] given as text ("4096", "4.096e3", "32k" not accepted).
std::int64_t parse_count(const std::string& flag, const std::string& text, std::int64_t lo,
                         std::int64_t hi) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!decimal_syntax(text) || end == text.c_str() || *end != '\0') {
    throw InvalidArgument(flag + ": '" + clip_utf8(text, 40) +
                          "' is not a whole number in decimal notation");
  }
  if (!std::isfinite(v) || v != std::floor(v) || v < static_cast<double>(lo) ||
      v > static_cast<double>(hi)) {
    throw InvalidArgument(fmt::format("{}: '{}' must be a whole number from {} to {}", flag,
                                      clip_utf8(text, 40), lo, hi));
  }
  return static_cast<std::int64_t>(v);
}

double parse_fraction(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || !(v > 0 && v <= 1)) {
    throw InvalidArgument(flag + ": '" + clip_utf8(text, 40) + "' must be a number in (0, 1]");
  }
  return v;
}

std::string peak_text(const Device& d, Format f) {
  const auto& p = d.peaks[format_index(f)];
  if (!p) return "-";
  if (!p->known()) return "?";
  return fmt::format("{:.5g}", p->value / 1e12);
}

std::string tensor_formats(const Device& d) {
  std::string s;
  for (const auto& info : all_formats()) {
    const auto& p = d.peaks[format_index(info.format)];
    if (p && p->unit == ComputeUnit::kTensor) s += (s.empty() ? "" : " ") + std::string(info.id);
  }
  return s;
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : std::string(sep)) + x;
  return s;
}

// ---------------------------------------------------------------- commands

void cmd_hardware_list(const Common& c) {
  const Registry reg = load_registry(c);
  if (c.output() == Output::kJson) {
    print_json(hardware_list_document(reg));
    return;
  }
  // People get a compact table; CSV carries every column.
  const bool wide = c.output() == Output::kCsv;
  std::vector<std::string> header = {"id"};
  if (wide) header.push_back("name");
  for (const char* h : {"memory", "bandwidth", "fp16", "fp8", "nvfp4", "int8", "int4"})
    header.push_back(h);
  if (wide) header.push_back("tensor formats");
  header.push_back("aliases");
  Table t(header);
  for (const auto& d : reg.devices()) {
    std::vector<std::string> row = {d.id};
    if (wide) row.push_back(d.name);
    for (std::string cell :
         {human_bytes(d.memory_capacity_bytes.value),
          human_rate(d.memory_bandwidth_Bps.value, "B/s"), peak_text(d, Format::kFp16),
          peak_text(d, Format::kFp8), peak_text(d, Format::kNvfp4), peak_text(d, Format::kInt8),
          peak_text(d, Format::kInt4)}) {
      row.push_back(std::move(cell));
    }
    if (wide) row.push_back(tensor_formats(d));
    row.push_back(join(d.aliases, " "));
    t.add_row(std::move(row));
  }
  if (c.output() == Output::kCsv) {
    std::cout << t.csv();
  } else {
    std::cout << t.text()
              << "\nPeaks are dense tensor TFLOP/s (TOPS for int); '-' = no tensor support, "
                 "'?' = supported, rate unpublished.\n'roofline hardware show ID' gives every "
                 "figure with its source.\n";
  }
}

void cmd_hardware_show(const Common& c, const std::string& id) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(id);
  if (c.output() == Output::kJson) {
    print_json(hardware_document(d, reg));
    return;
  }
  auto row = [&](Table& t, const std::string& name, const Figure& f, const std::string& shown) {
    t.add_row({name, f.known() ? shown : "not published",
               std::string(confidence_name(f.confidence)),
               d.citation(f) + (f.note.empty() ? "" : " [" + f.note + "]")});
  };
  std::cout << d.name << " (" << d.id << "), " << d.architecture << " " << d.compute_capability
            << "\naliases: " << join(d.aliases, ", ") << "\norigin: " << d.origin << "\n\n";
  Table t({"figure", "value", "confidence", "source"});
  row(t, "memory", d.memory_capacity_bytes,
      human_bytes(d.memory_capacity_bytes.value) + " " + d.memory_type);
  row(t, "bandwidth", d.memory_bandwidth_Bps, human_rate(d.memory_bandwidth_Bps.value, "B/s"));
  row(t, "SMs / CUs", d.sm_count, fmt::format("{}", d.sm_count.value));
  row(t, "L2 cache", d.l2_bytes, human_bytes(d.l2_bytes.value));
  row(t, "shared memory / SM", d.shared_memory_per_sm_bytes,
      human_bytes(d.shared_memory_per_sm_bytes.value));
  row(t, "boost clock", d.boost_clock_hz, human_rate(d.boost_clock_hz.value, "Hz"));
  row(t, "TDP", d.tdp_w, fmt::format("{} W", d.tdp_w.value));
  row(t, "interconnect", d.interconnect_bandwidth_Bps,
      d.interconnect_name + " " + human_rate(d.interconnect_bandwidth_Bps.value, "B/s"));
  for (const auto& info : all_formats()) {
    const auto& p = d.peaks[format_index(info.format)];
    if (!p) continue;
    row(t,
        fmt::format("peak {} ({}, {} acc)", info.id, compute_unit_name(p->unit),
                    accumulate_name(p->accumulate)),
        *p, human_rate(p->value, "FLOP/s"));
  }
  row(t, "achievable bandwidth", d.bandwidth_fraction,
      fmt::format("{:.1f}%", 100 * d.bandwidth_fraction.value));
  row(t, "matmul fraction (default)", d.matmul_fraction_default,
      fmt::format("{:.1f}%", 100 * d.matmul_fraction_default.value));
  for (const auto& info : all_formats()) {
    if (const auto& m = d.matmul_fraction[format_index(info.format)]) {
      row(t, fmt::format("matmul fraction {}", info.id), *m,
          fmt::format("{:.1f}%", 100 * m->value));
    }
  }
  row(t, "launch overhead", d.launch_overhead_s, human_time(d.launch_overhead_s.value));
  std::cout << (c.output() == Output::kCsv ? t.csv() : t.text(terminal_width()));
}

void cmd_formats(const Common& c) {
  if (c.output() == Output::kJson) {
    print_json(formats_document());
    return;
  }
  Table t({"id", "bits/elem", "element", "block", "scale", "max", "min>0", "kind"});
  for (const auto& f : all_formats()) {
    t.add_row({std::string(f.id), fmt::format("{:.5g}", bits_per_element(f.format)),
               std::string(f.element), std::to_string(f.block_elements), std::string(f.scale),
               fmt::format("{:.5g}", f.max_finite), fmt::format("{:.4g}", f.min_positive),
               f.compute_format ? "compute" : "storage-only"});
  }
  if (c.output() == Output::kCsv) {
    std::cout << t.csv();
  } else {
    std::cout << t.text()
              << "\nbits/elem includes block scales (whole blocks; per-tensor fp32 scales are "
                 "counted once per tensor). 'compute' formats run on some GPU's tensor cores; "
                 "whether a given device does is in 'roofline hardware show ID'.\n";
  }
}

struct GemmArgs {
  std::string hardware;
  std::string m = "1", n, k;
  std::string weights = "fp16", act = "fp16";
  bool ideal = false;
};

void cmd_gemm(const Common& c, const GemmArgs& a) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.hardware);
  GemmProblem p;
  p.m = parse_dimension("--m", a.m);
  p.n = parse_dimension("--n", a.n);
  p.k = parse_dimension("--k", a.k);
  p.weights = parse_format(a.weights);
  p.act = parse_format(a.act);
  ModelOptions opt;
  opt.mode = a.ideal ? Mode::kIdeal : Mode::kRealistic;
  const RooflineResult r = predict_gemm(d, p, opt);

  if (c.output() == Output::kJson) {
    nlohmann::json out = to_json(d, p, r);
    out.update(stamp(reg));
    print_json(out);
    return;
  }
  if (c.output() == Output::kCsv) {
    Table t({"device", "mode", "m", "n", "k", "weights", "act", "compute_format", "time_s",
             "memory_time_s", "compute_time_s", "overhead_s", "flops", "bytes", "ai", "ridge_ai",
             "bound"});
    t.add_row({d.id, std::string(mode_name(r.mode)), std::to_string(p.m), std::to_string(p.n),
               std::to_string(p.k), std::string(format_id(p.weights)),
               std::string(format_id(p.act)), std::string(format_id(r.compute_format)),
               fmt::format("{:.6g}", r.time_s), fmt::format("{:.6g}", r.memory_time_s),
               fmt::format("{:.6g}", r.compute_time_s), fmt::format("{:.6g}", r.overhead_s),
               fmt::format("{:.6g}", r.flops), fmt::format("{:.6g}", r.bytes),
               fmt::format("{:.6g}", r.ai), fmt::format("{:.6g}", r.ridge_ai),
               std::string(bound_name(r.bound))});
    std::cout << t.csv();
    return;
  }
  std::cout << fmt::format("{} {}x{}x{} on {} ({}), weights {}, activations {}, {} mode\n\n",
                           p.m == 1 ? "GEMV" : "GEMM", p.m, p.n, p.k, d.name, d.id,
                           format_id(p.weights), format_id(p.act), mode_name(r.mode));
  Table t({"quantity", "value"});
  t.add_row({"time", human_time(r.time_s)});
  t.add_row({"  memory time", human_time(r.memory_time_s)});
  t.add_row({"  compute time", human_time(r.compute_time_s)});
  if (r.overhead_s > 0) t.add_row({"  launch overhead", human_time(r.overhead_s)});
  t.add_row({"bound", std::string(bound_name(r.bound))});
  t.add_row({"FLOPs", human_count(r.flops)});
  t.add_row({"bytes (read + written)",
             human_bytes(r.bytes) + fmt::format(" ({} + {})", human_bytes(r.bytes_read),
                                                human_bytes(r.bytes_written))});
  t.add_row({"arithmetic intensity", fmt::format("{:.4g} FLOP/B", r.ai)});
  t.add_row({"ridge intensity", fmt::format("{:.4g} FLOP/B", r.ridge_ai)});
  t.add_row({"attained", human_rate(r.attained_flops_per_s, "FLOP/s") + ", " +
                             human_rate(r.attained_bandwidth_Bps, "B/s")});
  t.add_row({"compute format", std::string(format_id(r.compute_format)) +
                                   (r.weight_only ? " (weights dequantized)" : "")});
  t.add_row({"peak used", human_rate(r.effective_flops_per_s, "FLOP/s") + " of " +
                              human_rate(r.peak_flops_per_s, "FLOP/s")});
  t.add_row({"bandwidth used", human_rate(r.effective_bandwidth_Bps, "B/s") + " of " +
                                   human_rate(r.peak_bandwidth_Bps, "B/s")});
  std::cout << t.text() << "\n";
  for (const auto& note : explain(d, p, r)) std::cout << "- " << note << "\n";
}

// ---------------------------------------------------------------- models

void cmd_model_list(const Common& c) {
  const auto& catalog = ModelCatalog::built_in();
  if (c.output() == Output::kJson) {
    print_json(model_list_document());
    return;
  }
  Table t({"id", "type", "params", "active", "layers", "hidden", "heads/kv", "experts", "weights",
           "aliases"});
  for (const auto& p : catalog.presets()) {
    const ModelSpec m = preset_model(p);
    const ParamCounts pc = count_parameters(m);
    t.add_row({p.id, m.model_type, fmt::format("{:.2f} B", pc.total / 1e9),
               fmt::format("{:.2f} B", pc.active_per_token / 1e9), std::to_string(m.layers),
               std::to_string(m.hidden), fmt::format("{}/{}", m.heads, m.kv_heads),
               m.moe ? fmt::format("{} top-{}", m.moe->num_experts, m.moe->top_k) : "-",
               m.native_experts == m.native_weights
                   ? std::string(format_id(m.native_weights))
                   : fmt::format("{} + {} experts", format_id(m.native_weights),
                                 format_id(m.native_experts)),
               join(p.aliases, " ")});
  }
  std::cout << (c.output() == Output::kCsv ? t.csv() : t.text());
}

void cmd_model_show(const Common& c, const std::string& arg) {
  const ModelSpec m = load_model(arg);
  const nlohmann::json j = model_document(m, ModelCatalog::built_in().find(arg));
  if (c.output() == Output::kJson) {
    print_json(j);
    return;
  }
  const ParamCounts pc = count_parameters(m);
  std::cout << fmt::format("{} ({}), model type {}, from {}\n", m.name, m.id, m.model_type,
                           m.origin);
  std::cout << fmt::format("{} layers, hidden {}, {} heads / {} KV heads of {}, vocab {}, {}\n",
                           m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.vocab,
                           m.attention == AttentionKind::kMla ? "multi-head latent attention"
                                                              : "grouped-query attention");
  if (m.moe) {
    std::cout << fmt::format(
        "MoE: {} routed experts, top-{}, expert intermediate {}, {} shared, {} of {} layers\n",
        m.moe->num_experts, m.moe->top_k, m.moe->expert_intermediate, m.moe->num_shared_experts,
        m.moe_layer_count(), m.layers);
  } else {
    std::cout << fmt::format("MLP: {} intermediate{}\n", m.intermediate,
                             m.gated_mlp ? ", gated" : "");
  }
  std::cout << fmt::format("parameters: {:.3f} B total, {:.3f} B active per token", pc.total / 1e9,
                           pc.active_per_token / 1e9);
  if (j.contains("published_params") && j["published_params"].get<double>() > 0) {
    std::cout << fmt::format(" (published: {:.3g} B)", j["published_params"].get<double>() / 1e9);
  }
  std::cout << "\n\n";
  Table t({"component", "params", "format", "bytes"});
  for (const auto& [name, comp] : j["components"].items()) {
    if (comp["params"].get<double>() <= 0) continue;
    t.add_row({name, human_count(comp["params"].get<double>()), comp["format"].get<std::string>(),
               human_bytes(comp["bytes"].get<double>())});
  }
  std::cout << t.text();
  if (m.checkpoint) {
    std::cout << fmt::format("\ncheckpoint: {} tensors, {} exact ({} mostly)\n",
                             m.checkpoint->tensors, human_bytes(m.checkpoint->total),
                             m.checkpoint->dominant_type);
  }
  for (const auto& n : m.notes) std::cout << "- " << n << "\n";
}

// ---------------------------------------------------------------- predictions

struct ScenarioArgs {
  std::string model = "llama-3.1-8b";
  std::string hardware = "gb10";
  std::string phase = "decode";
  std::string batch = "1";
  std::string seq_len = "4096";
  std::string weights, experts, act = "bf16", kv;
  std::string strategy;
  std::string attention;
  std::string block_sparsity = "1";
  std::string tp = "1", pp = "1";
  std::string engine = "roofline";
  bool ideal = false;
  bool per_op = false;
};

void add_scenario_options(CLI::App* cmd, ScenarioArgs* a, bool with_phase) {
  cmd->add_option("--model", a->model, "Preset id or alias, config.json, model directory or .gguf")
      ->capture_default_str()
      ->type_name("MODEL");
  cmd->add_option("--hardware", a->hardware, "Device id or alias")
      ->capture_default_str()
      ->type_name("ID");
  if (with_phase) {
    cmd->add_option("--phase", a->phase, "prefill or decode")->capture_default_str();
    cmd->add_option("--seq-len", a->seq_len,
                    "Prefill: prompt tokens per sequence; decode: tokens already cached")
        ->capture_default_str()
        ->type_name("INT");
  }
  cmd->add_option("--batch", a->batch, "Sequences in the batch")
      ->capture_default_str()
      ->type_name("INT");
  cmd->add_option("--weights", a->weights, "Weight format (default: the checkpoint's native)")
      ->type_name("FMT");
  cmd->add_option("--experts", a->experts,
                  "Routed-expert weight format (default: --weights or native)")
      ->type_name("FMT");
  cmd->add_option("--act", a->act, "Activation format")->capture_default_str()->type_name("FMT");
  cmd->add_option("--kv", a->kv, "KV-cache format (default: --act)")->type_name("FMT");
  cmd->add_option("--strategy", a->strategy,
                  "Named precision plan (roofline strategies) or a plan .json file")
      ->type_name("NAME|FILE");
  cmd->add_option("--attention", a->attention,
                  "naive, fa1, fa2, fa3, fa4, flash-decoding (default: the device's best)")
      ->type_name("KERNEL");
  cmd->add_option("--block-sparsity", a->block_sparsity,
                  "Fraction of attention blocks computed, (0, 1]")
      ->capture_default_str()
      ->type_name("F");
  cmd->add_option("--tp", a->tp, "Tensor-parallel ranks")->capture_default_str()->type_name("INT");
  cmd->add_option("--pp", a->pp, "Pipeline stages")->capture_default_str()->type_name("INT");
  cmd->add_option("--engine", a->engine,
                  "Serving engine: its launch and step costs and measured kernel efficiency "
                  "(roofline engines; roofline: the reference)")
      ->capture_default_str()
      ->type_name("ID");
  cmd->add_flag("--ideal", a->ideal, "Datasheet peaks, no overheads (pure roofline)");
}

// Builds the scenario; a strategy is resolved against the model and device
// (its notes say what fell back).
Scenario make_scenario(const ScenarioArgs& a, const ModelSpec& m, const Device* d,
                       std::vector<std::string>* notes = nullptr) {
  ScenarioRequest r;
  r.phase = a.phase;
  r.batch = parse_count("--batch", a.batch, 1, kMaxBatch);
  r.seq_len = parse_count("--seq-len", a.seq_len, 1, kMaxSeqLen);
  r.weights = a.weights;
  r.experts = a.experts;
  r.act = a.act;
  r.kv = a.kv;
  r.strategy = a.strategy;
  r.attention = a.attention;
  r.block_sparsity = parse_fraction("--block-sparsity", a.block_sparsity);
  r.tp = parse_count("--tp", a.tp, 1, kMaxParallel);
  r.pp = parse_count("--pp", a.pp, 1, kMaxParallel);
  return build_scenario(r, m, d, notes);
}

ModelOptions make_options(const ScenarioArgs& a) {
  ModelOptions o;
  o.mode = a.ideal ? Mode::kIdeal : Mode::kRealistic;
  o.engine = &EngineRegistry::built_in().get(a.engine);  // its table is resolved per device
  return o;
}

void print_notes(const std::vector<std::string>& notes) {
  for (const auto& n : notes) std::cout << "- " << n << "\n";
}

void print_op_table(const Prediction& p, Output out) {
  Table t({"op", "kind", "count", "FLOPs", "weights", "activations", "KV cache", "AI", "bound",
           "time", "share"});
  for (int i = 0; i < p.graph.size; ++i) {
    const Op& op = p.graph.ops[static_cast<std::size_t>(i)];
    const OpTiming& tm = p.timings[static_cast<std::size_t>(i)];
    std::string name(op_name(op.kind));
    if (op.moe_layer) name += " [moe]";
    if (op.sliding_layer) name += " [window]";
    if (op.launches == 0) name = "+" + name;
    if (out == Output::kCsv) {
      t.add_row({name, std::string(op_class_name(op.cls)), fmt::format("{}", op.count),
                 fmt::format("{:.6g}", op.count * op.flops),
                 fmt::format("{:.6g}", op.count * op.weight_bytes),
                 fmt::format("{:.6g}", op.count * op.act_bytes),
                 fmt::format("{:.6g}", op.count * op.kv_bytes), fmt::format("{:.4g}", tm.ai),
                 std::string(bound_name(tm.bound)), fmt::format("{:.6g}", tm.time_s),
                 fmt::format("{:.4f}", tm.time_s / p.time_s)});
    } else {
      t.add_row({name, std::string(op_class_name(op.cls)), fmt::format("{}", op.count),
                 human_count(op.count * op.flops), human_bytes(op.count * op.weight_bytes),
                 human_bytes(op.count * op.act_bytes), human_bytes(op.count * op.kv_bytes),
                 fmt::format("{:.3g}", tm.ai), std::string(bound_name(tm.bound)),
                 human_time(tm.time_s), fmt::format("{:.1f}%", 100 * tm.time_s / p.time_s)});
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
  const Prediction p = predict(m, d, s, make_options(a));
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
      s.phase == Phase::kDecode ? "context" : "prompt", s.seq_len, format_id(p.graph.weights),
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
       fmt::format("{} (weights {}, KV cache {}, activations {}) of {}: {}",
                   human_bytes(p.memory.total_bytes), human_bytes(p.memory.weights_bytes),
                   human_bytes(p.memory.kv_cache_bytes), human_bytes(p.memory.activation_bytes),
                   human_bytes(p.memory.capacity_bytes), p.memory.fits ? "fits" : "DOES NOT FIT")});
  const Capacity cap = capacity(m, d, s);
  t.add_row({"capacity", fmt::format("max batch {} at this context; max context {} at this batch{}",
                                     cap.max_batch, cap.max_context,
                                     cap.max_context < cap.max_context_by_memory
                                         ? fmt::format(" (the model's window; memory allows {})",
                                                       cap.max_context_by_memory)
                                         : std::string())});
  std::cout << t.text() << "\n";
  print_notes(plan_notes);
  print_notes(explain(m, d, s, p));
}

void cmd_generate(const Common& c, const ScenarioArgs& a, const std::string& prompt_text,
                  const std::string& gen_text) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.hardware);
  const ModelSpec m = load_model(a.model);
  Scenario s = make_scenario(a, m, &d);
  const std::int64_t prompt = parse_count("--prompt", prompt_text, 1, kMaxSeqLen);
  const std::int64_t gen = parse_count("--gen", gen_text, 1, kMaxSeqLen);
  const GenerateResult g = generate(m, d, s, prompt, gen, make_options(a));
  if (c.output() == Output::kJson) {
    print_json(generate_document(m, d, s, g, prompt, gen, make_options(a).mode, reg));
    return;
  }
  Table t({"quantity", "value"});
  t.add_row({"time to first token", human_time(g.ttft_s)});
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
  std::cout << fmt::format("{} on {} ({}): batch {}, prompt {}, generate {}, {} mode\n\n", m.name,
                           d.name, d.id, s.batch, prompt, gen, a.ideal ? "ideal" : "realistic");
  std::cout << t.text();
}

void cmd_kv(const Common& c, const ScenarioArgs& a) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.hardware);
  const ModelSpec m = load_model(a.model);
  // The decode step at this context with each KV format (weights and activations as given).
  const KvReport r = kv_report(m, d, make_scenario(a, m, &d), make_options(a));
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
}

void cmd_attention(const Common& c, const ScenarioArgs& a) {
  const Registry reg = load_registry(c);
  const Device& d = reg.get(a.hardware);
  const ModelSpec m = load_model(a.model);
  const Scenario s = make_scenario(a, m, &d);
  const auto rows = compare_attention(m, d, s, make_options(a));
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
  std::cout << fmt::format("{} {} on {}: batch {}, {} {}\n\n", m.name, phase_name(s.phase), d.id,
                           s.batch, s.phase == Phase::kDecode ? "context" : "prompt", s.seq_len);
  std::cout << t.text();
}

void cmd_validate(const Common& c, const std::optional<std::string>& file, bool ideal,
                  const std::string& engine) {
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
  if (c.output() == Output::kJson) {
    print_json(validation_document(r, o.mode, reg));
    return;
  }
  Table t({"case", "hardware", "model", "framework", "engine", "weights", "batch", "prompt/gen",
           "metric", "measured", "predicted", "error"});
  for (const auto& row : r.rows) {
    t.add_row({row.c.id, row.c.hardware, row.c.model, row.c.framework, row.engine, row.c.weights,
               std::to_string(row.c.batch), fmt::format("{}/{}", row.c.prompt, row.c.gen),
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
                   "median signed {:+.1f}% (positive: predicted higher)\n",
                   mode_name(o.mode), r.evaluated, r.rows.size(), r.median_abs_error_pct,
                   r.mean_abs_error_pct, r.max_abs_error_pct, r.median_signed_error_pct);
}

std::vector<std::string> split_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    if (item.empty()) throw InvalidArgument(flag + ": empty item in '" + clip_utf8(text, 80) + "'");
    out.push_back(item);
  }
  if (out.empty()) throw InvalidArgument(flag + ": give at least one value");
  return out;
}

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

double parse_positive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < 0) {
    throw InvalidArgument(flag + ": '" + clip_utf8(text, 40) + "' must be a number >= 0");
  }
  return v;
}

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
  if (!a.sc.weights.empty() || !a.sc.experts.empty() || !a.sc.kv.empty() || a.sc.act != "bf16" ||
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
  o.model_options = make_options(a.sc);
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

void cmd_quantize(const Common& c, const std::string& checkpoint, const std::string& budget) {
  QuantizeOptions o;
  o.budget_sqnr_db = parse_positive("--budget-sqnr-db", budget);
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  const std::vector<TensorReport> reports =
      quantize_checkpoint(checkpoint, o, [&](std::size_t done, std::size_t total) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last < std::chrono::seconds(1) && done < total) return;
        last = now;
        if (now - start > std::chrono::seconds(1))
          std::cerr << fmt::format("quantize: {} / {} tensors\n", done, total);
      });
  double bits = 0, elements = 0, bits_plain = 0;
  for (const auto& t : reports) {
    if (!t.skipped.empty()) continue;
    const double n = static_cast<double>(t.rows * t.cols);
    bits += n * t.plan.bits_per_element;
    bits_plain += n * 16;
    elements += n;
  }
  if (c.output() == Output::kJson) {
    print_json(quantize_document(checkpoint, o.budget_sqnr_db, reports));
    return;
  }
  Table t({"tensor", "shape", "max|x|", "kurtosis", "outlier ch.", "plan", "bits", "SQNR",
           "int8 static/per-token"});
  for (const auto& r : reports) {
    std::string shape;
    for (auto d : r.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    if (!r.skipped.empty()) {
      t.add_row({r.name, shape, "-", "-", "-", "skipped", "-", "-", r.skipped});
      continue;
    }
    t.add_row({r.name, shape, fmt::format("{:.3g}", r.max_abs), fmt::format("{:.2f}", r.kurtosis),
               std::to_string(r.outlier_channel_count),
               std::string(format_id(r.plan.format)) +
                   (r.plan.outliers_kept ? " + bf16 outliers" : "") +
                   (r.meets_budget ? "" : " (budget not met)"),
               fmt::format("{:.2f}", r.plan.bits_per_element),
               fmt::format("{:.1f} dB", r.plan.error.sqnr_db),
               fmt::format("{:.1f} / {:.1f} dB", r.sqnr_static_db, r.sqnr_per_token_db)});
  }
  if (c.output() == Output::kCsv) {
    std::cout << t.csv();
    return;
  }
  std::cout << t.text()
            << fmt::format(
                   "\nbudget {:.1f} dB SQNR: {:.2f} bits per element on average, {:.0f}% of the "
                   "16-bit size\n",
                   o.budget_sqnr_db, elements > 0 ? bits / elements : 0,
                   bits_plain > 0 ? 100 * bits / bits_plain : 0);
}

// ---------------------------------------------------------------- measurement

struct BenchArgs {
  std::string array_bytes = "0";
  std::string threads = "0";
  bool compare = false;
  bool gpu = false;
  std::string hardware = "host";
  // GPU only:
  std::string results;  // a saved roofline-gpu run instead of running now
  std::string l2 = "flushed";
  bool quick = false;
};

measure::Progress stderr_progress() {
  auto last = std::make_shared<std::string>();
  return [last](std::string_view stage, double fraction) {
    const std::string line = fmt::format("{} {:.0f}%", stage, fraction * 100);
    if (line == *last) return;
    *last = line;
    std::cerr << "\r" << line << "   " << std::flush;
    if (stage == "done" || fraction >= 1) std::cerr << "\n";
  };
}

// The host profile: from --hardware-file (id "host") when given, else measured now.
Device host_profile(const Common& c, const BenchArgs& a, bool* calibrated_now) {
  if (!c.hardware_files.empty()) {
    *calibrated_now = false;
    return load_registry(c).get(a.hardware);
  }
  *calibrated_now = true;
  std::cerr << "no --hardware-file: calibrating this machine first (roofline calibrate --out FILE "
               "saves it)\n";
  const measure::Calibration cal = measure::calibrate({}, stderr_progress());
  std::cerr << "\n";
  return parse_device(measure::host_device_json(cal, "now").dump(), "calibration");
}

// GPU benchmarks run in `roofline-gpu` (apps/cli/gpu.cpp).
GpuCommand gpu_command(const Common& c, const BenchArgs& a) {
  GpuCommand g;
  g.results_file = a.results;
  g.compare = a.compare;
  g.hardware = a.hardware == "host" ? std::string() : a.hardware;
  g.hardware_files = c.hardware_files;
  g.l2 = a.l2;
  g.quick = a.quick;
  g.json = c.output() == Output::kJson;
  return g;
}

void cmd_bench(const Common& c, const std::string& what, const BenchArgs& a) {
  if (a.gpu || !a.results.empty()) {
    GpuCommand g = gpu_command(c, a);
    g.what = what;
    gpu_bench(g);
    return;
  }
  const int threads =
      static_cast<int>(parse_count("--threads", a.threads, 0, measure::kMaxThreads));
  if (what == "stream") {
    measure::StreamOptions o;
    o.array_bytes = static_cast<std::size_t>(
        parse_count("--array-bytes", a.array_bytes, 0, std::int64_t{64} << 30));
    o.threads = threads;
    const measure::StreamReport r = measure::run_stream(o, stderr_progress());
    std::cerr << "\n";
    if (c.output() == Output::kJson) {
      nlohmann::json k = nlohmann::json::array();
      for (const auto& x : r.kernels) {
        k.push_back({{"name", x.name},
                     {"bandwidth_Bps", x.bandwidth_Bps},
                     {"best_Bps", x.best_Bps},
                     {"median_time_s", x.median_time_s},
                     {"bytes_per_iteration", x.bytes_per_iteration}});
      }
      print_json({{"bandwidth_Bps", r.bandwidth_Bps},
                  {"best_kernel", r.best_kernel},
                  {"kernels", k},
                  {"array_bytes", r.array_bytes},
                  {"threads", r.threads},
                  {"verified", r.verified}});
      return;
    }
    Table t({"kernel", "bandwidth (median)", "best", "bytes/element"});
    for (const auto& x : r.kernels) {
      t.add_row({x.name, human_rate(x.bandwidth_Bps, "B/s"), human_rate(x.best_Bps, "B/s"),
                 fmt::format("{}", x.bytes_per_iteration)});
    }
    std::cout << t.text()
              << fmt::format("\nbest sustained: {} ({}), {} threads, arrays of {} each, {}\n",
                             human_rate(r.bandwidth_Bps, "B/s"), r.best_kernel, r.threads,
                             human_bytes(static_cast<double>(r.array_bytes)),
                             r.verified ? "verified" : "NOT VERIFIED");
    return;
  }
  if (what == "peak") {
    measure::PeakOptions o;
    o.threads = threads;
    const measure::PeakReport r = measure::run_peak(o);
    if (c.output() == Output::kJson) {
      print_json({{"fp32_flops_per_s", r.fp32_flops_per_s},
                  {"fp64_flops_per_s", r.fp64_flops_per_s},
                  {"isa", r.isa},
                  {"threads", r.threads},
                  {"vector_bits", r.vector_bits}});
      return;
    }
    std::cout << fmt::format("fp32 {}, fp64 {} ({}, {}-bit vectors, {} threads)\n",
                             human_rate(r.fp32_flops_per_s, "FLOP/s"),
                             human_rate(r.fp64_flops_per_s, "FLOP/s"), r.isa, r.vector_bits,
                             r.threads);
    return;
  }
  if (what == "gemm" || what == "gemv") {
    const auto shapes =
        what == "gemm" ? measure::default_gemm_shapes() : measure::default_gemv_shapes();
    measure::GemmOptions o;
    o.threads = threads;
    if (a.compare) {
      bool calibrated_now = false;
      const Device host = host_profile(c, a, &calibrated_now);
      const measure::CompareReport r = measure::compare_gemms(host, shapes, o, stderr_progress());
      std::cerr << "\n";
      if (c.output() == Output::kJson) {
        nlohmann::json cases = nlohmann::json::array();
        for (const auto& x : r.cases) {
          cases.push_back({{"m", x.shape.m},
                           {"n", x.shape.n},
                           {"k", x.shape.k},
                           {"label", x.shape.label},
                           {"predicted_s", x.predicted_s},
                           {"measured_s", x.measured_s},
                           {"error_pct", x.error_pct}});
        }
        print_json({{"device", host.id},
                    {"calibrated_now", calibrated_now},
                    {"cases", cases},
                    {"median_abs_error_pct", r.median_abs_error_pct},
                    {"max_abs_error_pct", r.max_abs_error_pct}});
        return;
      }
      Table t({"shape", "label", "predicted", "measured", "error"});
      for (const auto& x : r.cases) {
        t.add_row({fmt::format("{}x{}x{}", x.shape.m, x.shape.n, x.shape.k), x.shape.label,
                   human_time(x.predicted_s), human_time(x.measured_s),
                   fmt::format("{:+.1f}%", x.error_pct)});
      }
      std::cout << t.text()
                << fmt::format("\nmedian |error| {:.1f}%, max {:.1f}% ({} profile)\n",
                               r.median_abs_error_pct, r.max_abs_error_pct,
                               calibrated_now ? "freshly calibrated" : "given");
      return;
    }
    nlohmann::json rows = nlohmann::json::array();
    Table t({"shape", "label", "time", "GFLOP/s", "GB/s", "verified"});
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      stderr_progress()(what, static_cast<double>(i) / static_cast<double>(shapes.size()));
      const measure::GemmMeasurement m = measure::measure_sgemm(shapes[i], o);
      rows.push_back({{"m", m.shape.m},
                      {"n", m.shape.n},
                      {"k", m.shape.k},
                      {"label", m.shape.label},
                      {"median_time_s", m.median_time_s},
                      {"flops_per_s", m.flops_per_s},
                      {"bandwidth_Bps", m.bandwidth_Bps},
                      {"max_rel_error", m.max_rel_error},
                      {"verified", m.verified}});
      t.add_row({fmt::format("{}x{}x{}", m.shape.m, m.shape.n, m.shape.k), m.shape.label,
                 human_time(m.median_time_s), fmt::format("{:.1f}", m.flops_per_s / 1e9),
                 fmt::format("{:.1f}", m.bandwidth_Bps / 1e9), m.verified ? "yes" : "NO"});
    }
    std::cerr << "\n";
    if (c.output() == Output::kJson) {
      print_json({{"shapes", rows}, {"openblas_threads", measure::openblas_threads()}});
    } else {
      std::cout << t.text();
    }
    return;
  }
  if (what == "layer") {
    bool calibrated_now = false;
    const Device host = host_profile(c, a, &calibrated_now);
    const measure::LayerReport r = measure::run_decoder_layer(host, {});
    const auto& g = r.config;
    if (c.output() == Output::kJson) {
      print_json({{"config",
                   {{"hidden", g.hidden},
                    {"heads", g.heads},
                    {"kv_heads", g.kv_heads},
                    {"head_dim", g.head_dim},
                    {"intermediate", g.intermediate},
                    {"context", g.context}}},
                  {"measured_s", r.measured_s},
                  {"predicted_s", r.predicted_s},
                  {"error_pct", r.error_pct},
                  {"weight_bytes", r.weight_bytes},
                  {"kv_bytes", r.kv_bytes}});
      return;
    }
    std::cout << fmt::format(
        "decoder layer decode step (hidden {}, {} heads / {} KV, intermediate {}, context {}, "
        "fp32):\n"
        "measured {}, predicted {} ({:+.1f}%); weights {}, KV cache {}\n",
        g.hidden, g.heads, g.kv_heads, g.intermediate, g.context, human_time(r.measured_s),
        human_time(r.predicted_s), r.error_pct, human_bytes(r.weight_bytes),
        human_bytes(r.kv_bytes));
    return;
  }
  throw InvalidArgument("unknown benchmark '" + clip_utf8(what, 20) +
                        "' (stream, peak, gemm, gemv, layer)");
}

void cmd_calibrate(const Common& c, const std::string& out, const BenchArgs& a) {
  if (a.gpu || !a.results.empty()) {
    GpuCommand g = gpu_command(c, a);
    g.out = out;
    gpu_calibrate(g);
    return;
  }
  // Fail on an unwritable path before spending seconds measuring.
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  if (!file) throw InvalidArgument("--out: cannot write '" + out + "'");
  const measure::Calibration cal = measure::calibrate({}, stderr_progress());
  std::cerr << "\n";
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const nlohmann::json doc = measure::host_device_json(cal, date);
  (void)parse_device(doc.dump(), "calibration");  // the profile must load like any device file
  file << doc.dump(2) << "\n";
  if (!file) throw InvalidArgument("--out: writing '" + out + "' failed");
  if (c.output() == Output::kJson) {
    print_json(doc);
    return;
  }
  std::cout << fmt::format(
      "wrote {}: bandwidth {} (STREAM {}), fp32 peak {} ({}), SGEMM at {:.0f}% of peak, "
      "SGEMV at {:.0f}% of STREAM, {} per call\nuse it with --hardware-file {} --hardware host\n",
      out, human_rate(cal.stream.bandwidth_Bps, "B/s"), cal.stream.best_kernel,
      human_rate(cal.peak.fp32_flops_per_s, "FLOP/s"), cal.peak.isa, 100 * cal.matmul_fraction,
      100 * cal.bandwidth_fraction, human_time(cal.overhead.median_time_s), out);
}

struct ServeArgs {
  server::Options options;
  std::string port = "8000";
};

// The built web app when --web-dir is not given: in the source tree the binary
// was built in (build/bin -> web/dist), or in its install prefix
// (bin -> share/roofline/web). Empty when neither has an index.html.
std::string default_web_dir() {
  std::error_code ec;
  const auto bin = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) return {};
  for (const auto& dir :
       {bin / ".." / ".." / "web" / "dist", bin / ".." / "share" / "roofline" / "web"}) {
    if (std::filesystem::is_regular_file(dir / "index.html", ec))
      return std::filesystem::weakly_canonical(dir, ec).string();
  }
  return {};
}

void cmd_serve(const Common& c, ServeArgs a) {
  a.options.port = static_cast<int>(parse_count("--port", a.port, 0, 65535));
  a.options.gpu_tool = gpu_tool_path();
  if (a.options.web_dir.empty()) a.options.web_dir = default_web_dir();
  server::Server srv(a.options, load_registry(c));
  const int port = srv.bind();
  std::cerr << fmt::format(
      "roofline {} serving http://{}:{}/ (API under /api, docs at /docs){}{}\n", version(),
      a.options.host, port, a.options.public_only ? ", public endpoints only" : "",
      a.options.web_dir.empty() ? "; no web app found (build it: make web, or --web-dir)"
                                : "; the web app from " + a.options.web_dir);
  srv.listen();
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"roofline: predict, explain and measure transformer inference speed on GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(version()));
  Common common;

  auto* hardware = app.add_subcommand("hardware", "The device registry");
  hardware->require_subcommand(1);
  auto* hw_list = hardware->add_subcommand("list", "List devices with key figures");
  add_common(hw_list, &common, true);
  auto* hw_show = hardware->add_subcommand("show", "Every figure of one device, with sources");
  std::string show_id;
  hw_show->add_option("id", show_id, "Device id or alias")->required();
  add_common(hw_show, &common, true);

  auto* formats = app.add_subcommand("formats", "The number-format table");
  add_common(formats, &common, true);

  GemmArgs gemm_args;
  auto add_gemm_options = [&](CLI::App* cmd, bool with_m) {
    cmd->add_option("--hardware", gemm_args.hardware, "Device id or alias")
        ->required()
        ->type_name("ID");
    if (with_m)
      cmd->add_option("--m", gemm_args.m, "Rows of A and C (tokens)")->required()->type_name("INT");
    cmd->add_option("--n", gemm_args.n, "Columns of B and C (output features)")
        ->required()
        ->type_name("INT");
    cmd->add_option("--k", gemm_args.k, "Reduction dimension (input features)")
        ->required()
        ->type_name("INT");
    cmd->add_option("--weights", gemm_args.weights, "Weight (B) format")
        ->capture_default_str()
        ->type_name("FMT");
    cmd->add_option("--act", gemm_args.act, "Activation (A, C) format")
        ->capture_default_str()
        ->type_name("FMT");
    cmd->add_flag("--ideal", gemm_args.ideal, "Datasheet peaks, no overheads (pure roofline)");
    add_common(cmd, &common, true);
  };
  auto* gemm = app.add_subcommand("gemm", "Roofline of one GEMM C[m,n] = A[m,k] B[k,n]");
  add_gemm_options(gemm, true);
  auto* gemv = app.add_subcommand("gemv", "Roofline of one GEMV (gemm with m = 1)");
  add_gemm_options(gemv, false);

  auto* model = app.add_subcommand("model", "Model presets and files");
  model->require_subcommand(1);
  auto* model_list = model->add_subcommand("list", "List the model presets");
  add_common(model_list, &common, true);
  auto* model_show = model->add_subcommand("show", "Architecture, parameters and bytes of a model");
  std::string model_arg;
  model_show->add_option("model", model_arg, "Preset id, config.json, model directory or .gguf")
      ->required();
  add_common(model_show, &common, false);

  ScenarioArgs sc;
  auto* predict_cmd =
      app.add_subcommand("predict", "Predict one forward pass (prefill or a decode step)");
  add_scenario_options(predict_cmd, &sc, true);
  predict_cmd->add_flag("--per-op", sc.per_op, "Show every operator");
  add_common(predict_cmd, &common, true);

  auto* generate_cmd =
      app.add_subcommand("generate", "TTFT, TPOT and end-to-end time of a generation");
  add_scenario_options(generate_cmd, &sc, false);
  std::string prompt_text = "512", gen_text = "128";
  generate_cmd->add_option("--prompt", prompt_text, "Prompt tokens")
      ->capture_default_str()
      ->type_name("INT");
  generate_cmd->add_option("--gen", gen_text, "Generated tokens")
      ->capture_default_str()
      ->type_name("INT");
  add_common(generate_cmd, &common, true);

  auto* kv_cmd =
      app.add_subcommand("kv", "KV-cache size per format and where it outweighs the weights");
  add_scenario_options(kv_cmd, &sc, true);
  add_common(kv_cmd, &common, true);

  SweepArgs sw;
  auto* sweep_cmd =
      app.add_subcommand("sweep", "Every combination of the given lists, one row each");
  sweep_cmd->add_option("--model", sw.models, "Models, comma-separated")->capture_default_str();
  sweep_cmd->add_option("--hardware", sw.hardware, "Devices, comma-separated")
      ->capture_default_str();
  sweep_cmd->add_option("--phase", sw.phases, "prefill,decode")->capture_default_str();
  sweep_cmd->add_option("--batch", sw.batches, "Batch sizes")->capture_default_str();
  sweep_cmd->add_option("--seq-len", sw.seq_lens, "Sequence lengths")->capture_default_str();
  sweep_cmd->add_option("--weights", sw.weights, "Weight formats ('native' = the checkpoint's)")
      ->capture_default_str();
  sweep_cmd->add_option("--act", sw.acts, "Activation formats")->capture_default_str();
  sweep_cmd->add_option("--kv", sw.kvs, "KV-cache formats (default: the activation format)");
  sweep_cmd->add_option("--attention", sw.attentions,
                        "Attention kernels ('auto' = the device's best)");
  sweep_cmd->add_option("--tp", sw.tps, "Tensor-parallel sizes")->capture_default_str();
  sweep_cmd->add_option("--strategy", sw.strategies,
                        "Named precision plans or plan files (replace the format lists)");
  sweep_cmd->add_option("--format", sw.format, "csv, json or jsonl")->capture_default_str();
  sweep_cmd->add_option("--out", sw.out, "Write to FILE instead of standard output")
      ->type_name("FILE");
  sweep_cmd->add_option("--threads", sw.threads, "Worker threads, 0 to 256 (0: all cores)")
      ->capture_default_str();
  sweep_cmd->add_flag("--ideal", sw.ideal, "Pure roofline instead of the realistic mode");
  sweep_cmd->add_option("--engine", sw.engine, "Serving engine for every row (roofline engines)")
      ->capture_default_str();
  add_common(sweep_cmd, &common, false);

  auto* strategies_cmd = app.add_subcommand("strategies", "The named mixed-precision strategies");
  add_common(strategies_cmd, &common, true);

  auto* engines_cmd = app.add_subcommand(
      "engines", "Serving engines: list, or show ID with every figure and source");
  std::string engines_what, engines_id;
  engines_cmd->add_option("what", engines_what, "show")->type_name("show");
  engines_cmd->add_option("id", engines_id, "Engine id")->type_name("ID");
  add_common(engines_cmd, &common, false);

  RecommendArgs rc;
  auto* recommend_cmd = app.add_subcommand(
      "recommend", "Rank precision strategies and kernels for a model and device");
  add_scenario_options(recommend_cmd, &rc.sc, true);
  recommend_cmd
      ->add_option("--max-quality-loss", rc.max_quality_loss,
                   "Largest estimated quality loss, percent")
      ->capture_default_str()
      ->type_name("PCT");
  recommend_cmd
      ->add_option("--memory-limit", rc.memory_limit,
                   "Bytes of memory available (default: the device's)")
      ->type_name("BYTES");
  recommend_cmd
      ->add_option("--latency-target", rc.latency_target,
                   "Longest acceptable time per pass, seconds")
      ->type_name("S");
  recommend_cmd
      ->add_option("--strategy-file", rc.strategy_files, "Extra candidate plan (.json); repeatable")
      ->type_name("FILE");
  recommend_cmd
      ->add_option("--checkpoint", rc.checkpoint,
                   "A .safetensors file whose measured errors inform quality")
      ->type_name("FILE");
  recommend_cmd
      ->add_option("--budget-sqnr-db", rc.budget, "SQNR budget for the checkpoint's tensors")
      ->capture_default_str()
      ->type_name("DB");
  add_common(recommend_cmd, &common, true);

  auto* quantize_cmd = app.add_subcommand(
      "quantize", "Per-tensor statistics, outliers, error per format and a plan");
  std::string checkpoint, budget = "25";
  quantize_cmd
      ->add_option("--checkpoint", checkpoint, "A .safetensors file (F32, F16 or BF16 tensors)")
      ->required()
      ->type_name("FILE");
  quantize_cmd->add_option("--budget-sqnr-db", budget, "Smallest acceptable SQNR per tensor")
      ->capture_default_str()
      ->type_name("DB");
  add_common(quantize_cmd, &common, true);

  BenchArgs bench_args;
  std::string bench_what;
  auto* bench_cmd =
      app.add_subcommand("bench", "Measure this machine: stream, peak, gemm, gemv, layer");
  bench_cmd->add_option("what", bench_what, "stream, peak, gemm, gemv or layer")->required();
  bench_cmd
      ->add_option("--array-bytes", bench_args.array_bytes,
                   "STREAM: bytes per array (0: 4x the last-level cache)")
      ->capture_default_str();
  bench_cmd->add_option("--threads", bench_args.threads, "Threads (0: all cores)")
      ->capture_default_str();
  bench_cmd->add_flag("--compare", bench_args.compare,
                      "gemm/gemv: predict each shape with the host profile and compare");
  bench_cmd->add_flag("--gpu", bench_args.gpu,
                      "Run on the GPU through the CUDA backend (what: bandwidth, gemv, gemm, all)");
  bench_cmd
      ->add_option("--results", bench_args.results,
                   "GPU: read a saved `roofline-gpu suite` run instead of running now")
      ->type_name("FILE");
  bench_cmd->add_option("--l2", bench_args.l2, "GPU: flushed (before each repetition) or warm")
      ->capture_default_str();
  bench_cmd->add_flag("--quick", bench_args.quick, "GPU: a small subset of the shapes");
  bench_cmd
      ->add_option("--hardware", bench_args.hardware,
                   "Profile id for --compare (with --hardware-file)")
      ->capture_default_str();
  add_common(bench_cmd, &common, false);

  auto* calibrate_cmd =
      app.add_subcommand("calibrate", "Measure this machine and write a device profile (id host)");
  std::string calibrate_out;
  calibrate_cmd->add_option("--out", calibrate_out, "Profile file to write")
      ->required()
      ->type_name("FILE");
  BenchArgs calibrate_args;
  calibrate_args.hardware = "";
  calibrate_cmd->add_flag(
      "--gpu", calibrate_args.gpu,
      "Measure the GPU (CUDA backend) and write a kernel table (data/kernels format)");
  calibrate_cmd
      ->add_option("--results", calibrate_args.results,
                   "GPU: make the table from a saved `roofline-gpu suite` run")
      ->type_name("FILE");
  calibrate_cmd->add_option(
      "--hardware", calibrate_args.hardware,
      "GPU: the registry device the efficiencies are against (default: the GPU's name)");
  calibrate_cmd->add_option("--l2", calibrate_args.l2, "GPU: flushed or warm")
      ->capture_default_str();
  calibrate_cmd->add_flag("--quick", calibrate_args.quick, "GPU: a small subset of the shapes");
  add_common(calibrate_cmd, &common, false);

  ServeArgs serve_args;
  auto* serve_cmd = app.add_subcommand("serve", "Serve the API (and the web app when built)");
  serve_cmd->add_option("--host", serve_args.options.host, "Address to bind")
      ->capture_default_str();
  serve_cmd->add_option("--port", serve_args.port, "Port (0: any free port)")
      ->capture_default_str();
  serve_cmd->add_flag("--public-only", serve_args.options.public_only,
                      "Only the prediction endpoints");
  serve_cmd->add_option("--web-dir", serve_args.options.web_dir, "The built web app (web/dist)");
  serve_cmd->add_option("--threads", serve_args.options.threads, "Worker threads")
      ->capture_default_str();
  serve_cmd
      ->add_option("--hardware-file", common.hardware_files,
                   "Extra device JSON file (adds or overrides by id); repeatable")
      ->type_name("FILE");  // serve prints no results: no --json

  auto* validate_cmd = app.add_subcommand("validate", "Predictions against published measurements");
  std::string validation_file;
  bool validate_ideal = false;
  auto* validation_file_opt = validate_cmd
                                  ->add_option("--validation-file", validation_file,
                                               "Measurement file (default: the built-in set)")
                                  ->type_name("FILE");
  validate_cmd->add_flag("--ideal", validate_ideal, "Pure roofline instead of the realistic mode");
  std::string validate_engine = "roofline";
  validate_cmd
      ->add_option("--engine", validate_engine,
                   "Engine for every case, or 'case': each case's own framework (roofline: the "
                   "reference)")
      ->capture_default_str();
  add_common(validate_cmd, &common, true);

  auto* attention_cmd = app.add_subcommand("attention", "Attention kernels side by side");
  add_scenario_options(attention_cmd, &sc, true);
  add_common(attention_cmd, &common, true);

  try {
    if (argc >= 2 && argv[1][0] != '-') {
      std::string names;
      bool known = false;
      for (const auto* sub : app.get_subcommands({})) {
        names += (names.empty() ? "" : ", ") + sub->get_name();
        known = known || sub->get_name() == argv[1];
      }
      if (!known)
        throw InvalidArgument("unknown command '" + clip_utf8(std::string(argv[1]), 40) +
                              "' (commands: " + names + ")");
    }
    app.parse(argc, argv);
    if (hw_list->parsed())
      cmd_hardware_list(common);
    else if (hw_show->parsed())
      cmd_hardware_show(common, show_id);
    else if (formats->parsed())
      cmd_formats(common);
    else if (gemm->parsed() || gemv->parsed())
      cmd_gemm(common, gemm_args);
    else if (model_list->parsed())
      cmd_model_list(common);
    else if (model_show->parsed())
      cmd_model_show(common, model_arg);
    else if (predict_cmd->parsed())
      cmd_predict(common, sc);
    else if (generate_cmd->parsed())
      cmd_generate(common, sc, prompt_text, gen_text);
    else if (kv_cmd->parsed())
      cmd_kv(common, sc);
    else if (attention_cmd->parsed())
      cmd_attention(common, sc);
    else if (validate_cmd->parsed())
      cmd_validate(common,
                   validation_file_opt->count() > 0 ? std::optional<std::string>(validation_file)
                                                    : std::nullopt,
                   validate_ideal, validate_engine);
    else if (sweep_cmd->parsed())
      cmd_sweep(common, sw);
    else if (engines_cmd->parsed()) {
      if (!engines_what.empty() && engines_what != "show")
        throw InvalidArgument("engines: 'show ID' or nothing (the list), not '" +
                              clip_utf8(engines_what, 20) + "'");
      if (engines_what == "show" && engines_id.empty())
        throw InvalidArgument("engines show: give an engine id");
      engines_command(engines_id, common.output() == Output::kJson);
    } else if (strategies_cmd->parsed())
      cmd_strategies(common);
    else if (recommend_cmd->parsed())
      cmd_recommend(common, rc);
    else if (quantize_cmd->parsed())
      cmd_quantize(common, checkpoint, budget);
    else if (bench_cmd->parsed())
      cmd_bench(common, bench_what, bench_args);
    else if (calibrate_cmd->parsed())
      cmd_calibrate(common, calibrate_out, calibrate_args);
    else if (serve_cmd->parsed())
      cmd_serve(common, serve_args);
    return kExitOk;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << " (see 'roofline --help')\n";
    return kExitBadInput;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const nlohmann::json::exception& e) {
    // A value of the wrong type deep in an input file: bad input, not a bug report.
    std::string what = e.what();
    const auto close = what.find("] ");
    if (close != std::string::npos) what = what.substr(close + 2);
    std::cerr << "error: malformed input: " << what << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace roofline::cli
