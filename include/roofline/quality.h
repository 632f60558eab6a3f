// Estimated quality loss of a precision plan, from published results
// (data/quality) and the share of the model each format covers.
#pragma once

#include <string>
#include <vector>

#include "roofline/model.h"
#include "roofline/workload.h"

namespace roofline {

struct QualityEstimate {
  double loss_pct = 0;             // estimated relative quality loss, percent
  double linear_loss_pct = 0;      // from the linear layers' formats
  double kv_loss_pct = 0;          // from the KV-cache format
  bool quantified = true;          // false when a part has no published number
  std::vector<std::string> basis;  // the published results used, in words
};

// Loss in percent: perplexity increase (value / baseline - 1), accuracy drop
// ((baseline - value) / baseline), or a stated drop. Rules:
// - 16-bit linear layers and KV cache lose nothing.
// - Linear layers: the published result with the same weight and activation
//   formats, from the same model family if there is one, else the nearest in
//   parameter count; scaled by the share of linear parameters the plan
//   quantizes (published results keep the LM head in 16 bits).
// - KV cache: the published bound for its format, added.
// With no result for a format pair, the estimate says so (quantified = false)
// and uses the nearest result with the same weight bits.
[[nodiscard]] QualityEstimate estimate_quality(const ModelSpec& model, const PrecisionPlan& plan);

}  // namespace roofline
