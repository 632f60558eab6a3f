// `roofline quantize`: per-tensor statistics, outliers, error per format and
// a plan for a checkpoint.
#include "roofline/quantize.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "roofline/formats.h"
#include "roofline/report.h"

namespace roofline::cli {
namespace {

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

}  // namespace

void register_quantize(CLI::App& app, Common& common) {
  auto* quantize_cmd = app.add_subcommand(
      "quantize", "Per-tensor statistics, outliers, error per format and a plan");
  struct QuantizeArgs {
    std::string checkpoint, budget = "25";
  };
  auto a = std::make_shared<QuantizeArgs>();
  quantize_cmd
      ->add_option("--checkpoint", a->checkpoint, "A .safetensors file (F32, F16 or BF16 tensors)")
      ->required()
      ->type_name("FILE");
  quantize_cmd->add_option("--budget-sqnr-db", a->budget, "Smallest acceptable SQNR per tensor")
      ->capture_default_str()
      ->type_name("DB");
  add_common(quantize_cmd, &common, true);
  quantize_cmd->callback([&common, a] { cmd_quantize(common, a->checkpoint, a->budget); });
}

}  // namespace roofline::cli
