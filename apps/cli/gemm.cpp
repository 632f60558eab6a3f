// `roofline gemm` and `roofline gemv`: the roofline of one GEMM.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "common.h"
#include "roofline/formats.h"
#include "roofline/report.h"
#include "roofline/roofline.h"

namespace roofline::cli {
namespace {

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

}  // namespace

void register_gemm(CLI::App& app, Common& common) {
  auto gemm_args = std::make_shared<GemmArgs>();
  auto add_gemm_options = [&](CLI::App* cmd, bool with_m) {
    cmd->add_option("--hardware", gemm_args->hardware, "Device id or alias")
        ->required()
        ->type_name("ID");
    if (with_m)
      cmd->add_option("--m", gemm_args->m, "Rows of A and C (tokens)")
          ->required()
          ->type_name("INT");
    cmd->add_option("--n", gemm_args->n, "Columns of B and C (output features)")
        ->required()
        ->type_name("INT");
    cmd->add_option("--k", gemm_args->k, "Reduction dimension (input features)")
        ->required()
        ->type_name("INT");
    cmd->add_option("--weights", gemm_args->weights, "Weight (B) format")
        ->capture_default_str()
        ->type_name("FMT");
    cmd->add_option("--act", gemm_args->act, "Activation (A, C) format")
        ->capture_default_str()
        ->type_name("FMT");
    cmd->add_flag("--ideal", gemm_args->ideal, "Datasheet peaks, no overheads (pure roofline)");
    add_common(cmd, &common, true);
    cmd->callback([&common, gemm_args] { cmd_gemm(common, *gemm_args); });
  };
  auto* gemm = app.add_subcommand("gemm", "Roofline of one GEMM C[m,n] = A[m,k] B[k,n]");
  add_gemm_options(gemm, true);
  auto* gemv = app.add_subcommand("gemv", "Roofline of one GEMV (gemm with m = 1)");
  add_gemm_options(gemv, false);
}

}  // namespace roofline::cli
