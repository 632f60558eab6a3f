// The recommendation engine: for a model, device, phase and context, rank the
// precision strategies and attention kernels by predicted time under memory,
// quality and latency constraints, and say why.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "roofline/predict.h"
#include "roofline/quality.h"
#include "roofline/quantize.h"
#include "roofline/strategy.h"

namespace roofline {

struct RecommendOptions {
  Phase phase = Phase::kDecode;
  std::int64_t seq_len = 4096;
  std::int64_t batch = 1;
  std::int64_t tp = 1;  // tensor-parallel ranks
  std::int64_t pp = 1;  // pipeline stages
  // Largest acceptable estimated quality loss. 3% admits the published
  // lossless-to-light schemes (FP8 and INT8 W8A8 at ~1-2%) and rejects those
  // that measurably hurt small models (INT4 W4A16 ~6.5% and NVFP4 W4A4 RTN ~6%
  // on Llama-3-8B); raise it to trade quality for speed.
  double max_quality_loss_pct = 3.0;
  std::optional<double> memory_limit_bytes;  // default: the device's memory
  std::optional<double> latency_target_s;    // time per forward pass
  // Candidates whose times differ by less than this fraction count as equally
  // fast, and the one with the smaller quality loss ranks first: differences
  // this small are below what the model resolves (docs/VALIDATION.md).
  double time_tie_fraction = 0.05;
  ModelOptions model_options;
  std::vector<Strategy> strategies;  // empty: the built-in ones
  // Measured errors of the user's checkpoint (from quantize_checkpoint): each
  // candidate's weight format is looked up and its SQNR reported next to the
  // published estimate.
  std::vector<TensorReport> checkpoint_reports;
  double checkpoint_budget_sqnr_db = 25.0;
};

struct Candidate {
  std::string strategy;
  AttentionKernel attention = AttentionKernel::kFa2;
  double time_s = 0;
  double baseline_time_s = 0;
  double predicted_speedup = 0;  // baseline time / time
  double memory_bytes = 0;
  double memory_saving = 0;  // 1 - memory / baseline memory
  QualityEstimate quality;
  bool feasible = true;
  std::vector<std::string> rejected_because;  // constraints it misses
  std::vector<std::string> notes;             // device fallbacks
  Bound bound = Bound::kMemory;
  double weight_bytes = 0;  // streamed per pass
  double kv_bytes = 0;
  // From checkpoint_reports, when given: the weight format's mean SQNR over
  // the analyzed tensors and how many fall below the budget (NaN: no data).
  double measured_sqnr_db = std::nan("");
  int measured_tensors = 0;
  int tensors_below_budget = 0;
};

struct Recommendation {
  Candidate best;                       // the fastest feasible candidate
  std::vector<Candidate> alternatives;  // every candidate, fastest feasible first
  std::string baseline;                 // the 16-bit strategy speedups are against
  std::vector<std::string> rationale;   // plain-language reasons
  bool any_feasible = true;
};

// Throws like predict() for a bad model, device or scenario.
[[nodiscard]] Recommendation recommend(const ModelSpec& model, const Device& device,
                                       const RecommendOptions& options);

}  // namespace roofline
