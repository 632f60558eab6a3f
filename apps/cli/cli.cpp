#include "cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "roofline/error.h"
#include "roofline/formats.h"
#include "roofline/hardware.h"
#include "roofline/report.h"
#include "roofline/roofline.h"

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

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

// Parses a GEMM dimension given as text: a whole number in [1, kMaxGemmDimension].
// Accepts "4096" and "4.096e3"; rejects NaN, fractions, and absurd sizes.
std::int64_t parse_dimension(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0') {
    throw InvalidArgument(flag + ": '" + text.substr(0, 40) + "' is not a number");
  }
  if (!std::isfinite(v) || v != std::floor(v) || v < 1 ||
      v > static_cast<double>(kMaxGemmDimension)) {
    throw InvalidArgument(fmt::format("{}: '{}' must be a whole number from 1 to {}", flag,
                                      text.substr(0, 40), kMaxGemmDimension));
  }
  return static_cast<std::int64_t>(v);
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
    if (p && p->engine == Engine::kTensor) s += (s.empty() ? "" : " ") + std::string(info.id);
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
    nlohmann::json list = nlohmann::json::array();
    for (const auto& d : reg.devices()) {
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
    nlohmann::json out = stamp(reg);
    out["devices"] = list;
    print_json(out);
    return;
  }
  // People get a compact table; CSV carries every column.
  const bool wide = c.output() == Output::kCsv;
  std::vector<std::string> header = {"id"};
  if (wide) header.push_back("name");
  for (const char* h : {"memory", "bandwidth", "fp16", "fp8", "nvfp4", "int8", "int4"}) header.push_back(h);
  if (wide) header.push_back("tensor formats");
  header.push_back("aliases");
  Table t(header);
  for (const auto& d : reg.devices()) {
    std::vector<std::string> row = {d.id};
    if (wide) row.push_back(d.name);
    for (std::string cell : {human_bytes(d.memory_capacity_bytes.value),
                             human_rate(d.memory_bandwidth_Bps.value, "B/s"),
                             peak_text(d, Format::kFp16), peak_text(d, Format::kFp8),
                             peak_text(d, Format::kNvfp4), peak_text(d, Format::kInt8),
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
    nlohmann::json out = stamp(reg);
    out["device"] = to_json(d);
    print_json(out);
    return;
  }
  auto row = [&](Table& t, const std::string& name, const Figure& f, const std::string& shown) {
    t.add_row({name, f.known() ? shown : "not published", std::string(confidence_name(f.confidence)),
               d.citation(f) + (f.note.empty() ? "" : " [" + f.note + "]")});
  };
  std::cout << d.name << " (" << d.id << "), " << d.architecture << " " << d.compute_capability
            << "\naliases: " << join(d.aliases, ", ") << "\norigin: " << d.origin << "\n\n";
  Table t({"figure", "value", "confidence", "source"});
  row(t, "memory", d.memory_capacity_bytes, human_bytes(d.memory_capacity_bytes.value) + " " + d.memory_type);
  row(t, "bandwidth", d.memory_bandwidth_Bps, human_rate(d.memory_bandwidth_Bps.value, "B/s"));
  row(t, "SMs / CUs", d.sm_count, fmt::format("{}", d.sm_count.value));
  row(t, "L2 cache", d.l2_bytes, human_bytes(d.l2_bytes.value));
  row(t, "boost clock", d.boost_clock_hz, human_rate(d.boost_clock_hz.value, "Hz"));
  row(t, "TDP", d.tdp_w, fmt::format("{} W", d.tdp_w.value));
  row(t, "interconnect", d.interconnect_bandwidth_Bps,
      d.interconnect_name + " " + human_rate(d.interconnect_bandwidth_Bps.value, "B/s"));
  for (const auto& info : all_formats()) {
    const auto& p = d.peaks[format_index(info.format)];
    if (!p) continue;
    row(t, fmt::format("peak {} ({}, {} acc)", info.id, engine_name(p->engine), accumulate_name(p->accumulate)),
        *p, human_rate(p->value, "FLOP/s"));
  }
  row(t, "achievable bandwidth", d.bandwidth_fraction, fmt::format("{:.1f}%", 100 * d.bandwidth_fraction.value));
  row(t, "matmul fraction (default)", d.matmul_fraction_default,
      fmt::format("{:.1f}%", 100 * d.matmul_fraction_default.value));
  for (const auto& info : all_formats()) {
    if (const auto& m = d.matmul_fraction[format_index(info.format)]) {
      row(t, fmt::format("matmul fraction {}", info.id), *m, fmt::format("{:.1f}%", 100 * m->value));
    }
  }
  row(t, "launch overhead", d.launch_overhead_s, human_time(d.launch_overhead_s.value));
  std::cout << (c.output() == Output::kCsv ? t.csv() : t.text());
}

void cmd_formats(const Common& c) {
  if (c.output() == Output::kJson) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : all_formats()) list.push_back(to_json(f));
    print_json({{"version", std::string(version())}, {"formats", list}});
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
               std::to_string(p.k), std::string(format_id(p.weights)), std::string(format_id(p.act)),
               std::string(format_id(r.compute_format)), fmt::format("{:.6g}", r.time_s),
               fmt::format("{:.6g}", r.memory_time_s), fmt::format("{:.6g}", r.compute_time_s),
               fmt::format("{:.6g}", r.overhead_s), fmt::format("{:.6g}", r.flops),
               fmt::format("{:.6g}", r.bytes), fmt::format("{:.6g}", r.ai),
               fmt::format("{:.6g}", r.ridge_ai), std::string(bound_name(r.bound))});
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
  t.add_row({"bytes (read + written)", human_bytes(r.bytes) + fmt::format(" ({} + {})",
             human_bytes(r.bytes_read), human_bytes(r.bytes_written))});
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
    cmd->add_option("--hardware", gemm_args.hardware, "Device id or alias")->required()->type_name("ID");
    if (with_m) cmd->add_option("--m", gemm_args.m, "Rows of A and C (tokens)")->required()->type_name("INT");
    cmd->add_option("--n", gemm_args.n, "Columns of B and C (output features)")->required()->type_name("INT");
    cmd->add_option("--k", gemm_args.k, "Reduction dimension (input features)")->required()->type_name("INT");
    cmd->add_option("--weights", gemm_args.weights, "Weight (B) format")->capture_default_str()->type_name("FMT");
    cmd->add_option("--act", gemm_args.act, "Activation (A, C) format")->capture_default_str()->type_name("FMT");
    cmd->add_flag("--ideal", gemm_args.ideal, "Datasheet peaks, no overheads (pure roofline)");
    add_common(cmd, &common, true);
  };
  auto* gemm = app.add_subcommand("gemm", "Roofline of one GEMM C[m,n] = A[m,k] B[k,n]");
  add_gemm_options(gemm, true);
  auto* gemv = app.add_subcommand("gemv", "Roofline of one GEMV (gemm with m = 1)");
  add_gemm_options(gemv, false);

  try {
    if (argc >= 2 && argv[1][0] != '-') {
      std::string names;
      bool known = false;
      for (const auto* sub : app.get_subcommands({})) {
        names += (names.empty() ? "" : ", ") + sub->get_name();
        known = known || sub->get_name() == argv[1];
      }
      if (!known)
      throw InvalidArgument("unknown command '" + std::string(argv[1]).substr(0, 40) +
                            "' (commands: " + names + ")");
    }
    app.parse(argc, argv);
    if (hw_list->parsed()) cmd_hardware_list(common);
    else if (hw_show->parsed()) cmd_hardware_show(common, show_id);
    else if (formats->parsed()) cmd_formats(common);
    else if (gemm->parsed() || gemv->parsed()) cmd_gemm(common, gemm_args);
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
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace roofline::cli
