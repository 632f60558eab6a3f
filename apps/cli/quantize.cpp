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

nlohmann::json tensor_json(const TensorReport& t) {
  nlohmann::json j = {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
  if (!t.skipped.empty()) {
    j["skipped"] = t.skipped;
    return j;
  }
  nlohmann::json errors = nlohmann::json::array();
  auto err = [](const FormatError& e) {
    return nlohmann::json{{"format", format_id(e.format)},
                          {"bits_per_element", e.bits_per_element},
                          {"outliers_kept", e.outliers_kept},
                          {"sqnr_db", e.error.sqnr_db},
                          {"mse", e.error.mse},
                          {"max_abs_error", e.error.max_abs},
                          {"cosine", e.error.cosine}};
  };
  for (const auto& e : t.errors) errors.push_back(err(e));
  j.update({{"rows", t.rows},
            {"cols", t.cols},
            {"max_abs", t.max_abs},
            {"rms", t.rms},
            {"kurtosis", t.kurtosis},
            {"max_channel_ratio", t.max_channel_ratio},
            {"outlier_channels", t.outlier_channels},
            {"outlier_channel_count", t.outlier_channel_count},
            {"outlier_tokens", t.outlier_token_count},
            {"sampled_rows", t.sampled_rows},
            {"errors", errors},
            {"plan", err(t.plan)},
            {"meets_budget", t.meets_budget},
            {"sqnr_static_int8_db", t.sqnr_static_db},
            {"sqnr_per_token_int8_db", t.sqnr_per_token_db},
            {"needs_per_token_scales", t.needs_per_token_scales}});
  return j;
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
    nlohmann::json list = nlohmann::json::array();
    for (const auto& t : reports) list.push_back(tensor_json(t));
    print_json({{"version", std::string(version())},
                {"checkpoint", checkpoint},
                {"budget_sqnr_db", o.budget_sqnr_db},
                {"tensors", list},
                {"mean_bits_per_element", elements > 0 ? bits / elements : 0},
                {"size_vs_16bit", bits_plain > 0 ? bits / bits_plain : 0}});
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
