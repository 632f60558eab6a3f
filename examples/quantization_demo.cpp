// A tour of the quantization API: quantize a tensor in three formats and
// measure the error, then ask for a recommendation for Llama-3 8B on GB10.
//   build/bin/quantization_demo
#include <cstdio>
#include <random>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/numerics.h"
#include "roofline/quantize.h"
#include "roofline/recommend.h"

int main() {
  // 1. A weight-like tensor with one outlier channel.
  const std::int64_t rows = 256, cols = 512;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> w(static_cast<std::size_t>(rows * cols));
  for (auto& x : w) x = dist(rng);
  for (std::int64_t r = 0; r < rows; ++r) w[static_cast<std::size_t>(r * cols + 17)] *= 40;

  std::vector<float> back(w.size());
  for (roofline::Format f :
       {roofline::Format::kFp8, roofline::Format::kNvfp4, roofline::Format::kInt4}) {
    roofline::numerics::round_trip(f, w, rows, cols, back);
    const auto e = roofline::numerics::compare(w, back);
    std::printf("%-6s %5.2f bits/element  SQNR %5.1f dB  cosine %.5f\n",
                std::string(roofline::format_id(f)).c_str(), roofline::bits_per_element(f),
                e.sqnr_db, e.cosine);
  }

  // 2. Outlier detection and the cheapest format meeting 25 dB.
  const roofline::TensorReport t = roofline::analyze_tensor("demo", w, rows, cols);
  std::printf("outlier channels:");
  for (auto c : t.outlier_channels) std::printf(" %lld", static_cast<long long>(c));
  std::printf("\nplan: %s%s, %.2f bits/element, %.1f dB\n",
              std::string(roofline::format_id(t.plan.format)).c_str(),
              t.plan.outliers_kept ? " with bf16 outlier channels" : "", t.plan.bits_per_element,
              t.plan.error.sqnr_db);

  // 3. The recommendation for the original description's example.
  const roofline::Registry registry = roofline::Registry::built_in();
  roofline::RecommendOptions o;
  o.phase = roofline::Phase::kDecode;
  o.seq_len = 4096;
  const auto rec = roofline::recommend(roofline::load_model("llama-3-8b"), registry.get("gb10"), o);
  std::printf("\nLlama-3 8B decode at 4K on GB10: %s, %.2fx over %s, quality loss %.1f%%\n",
              rec.best.strategy.c_str(), rec.best.predicted_speedup, rec.baseline.c_str(),
              rec.best.quality.loss_pct);
  for (const auto& line : rec.rationale) std::printf("  - %s\n", line.c_str());
  return 0;
}
