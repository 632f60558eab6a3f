// Mixed-precision strategies: named or custom per-operator precision plans,
// checked against a device (formats its tensor cores cannot compute become
// weight-only, and the plan says so).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "roofline/hardware.h"
#include "roofline/model.h"
#include "roofline/workload.h"

namespace roofline {

struct Strategy {
  std::string name;
  std::string description;
  Format weights = Format::kBf16;  // linear layers (and routed experts unless `experts`)
  std::optional<Format> experts;
  Format act = Format::kBf16;
  Format kv = Format::kBf16;
  std::optional<Format> expert_act;  // the routed experts' math (PrecisionPlan::expert_act)
  std::array<OpPrecision, kOpKindCount> ops{};  // per-operator overrides
  std::string origin;                           // "built-in" or the file
};

// Parses a strategy document: {"name", "description", "weights", "act", "kv",
// "ops": {"<op name>": {"weights"?, "act"?}}, "experts"?, "expert_act"?}. Unknown keys,
// unknown operator names or formats, and storage-only activation formats are
// ParseError naming the file and key.
[[nodiscard]] Strategy parse_strategy(std::string_view json_text, const std::string& origin);

// The named strategies shipped in data/strategies: fp16_baseline,
// bf16_baseline, fp8_balanced, int8_smoothquant, int4_weight_only,
// nvfp4_blackwell, long_context_kv.
[[nodiscard]] const std::vector<Strategy>& built_in_strategies();

// A built-in name, or a path to a strategy file. Throws NotFound / ParseError.
[[nodiscard]] Strategy load_strategy(std::string_view name_or_path);

// A strategy resolved for one device: the precision plan to predict with and
// what changed. An activation format the device cannot compute falls back to
// bf16 (its weights then run weight-only); weights the tensor cores cannot
// compute are weight-only with the dequantization counted.
struct ResolvedStrategy {
  std::string name;
  PrecisionPlan precision;
  std::vector<std::string> notes;
  bool weight_only = false;   // some weights are dequantized before the math
  bool act_fallback = false;  // an activation format was replaced
};
[[nodiscard]] ResolvedStrategy resolve(const Strategy& strategy, const ModelSpec& model,
                                       const Device& device);

// Parses an operator name ("q_proj", "lm_head"); throws NotFound listing them.
[[nodiscard]] OpKind parse_op_kind(std::string_view name);

}  // namespace roofline
